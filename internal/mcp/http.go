package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/api"
)

// DefaultIdle is how long an MCP session over HTTP lives with none of its
// client's requests open.
const DefaultIdle = 30 * time.Minute

// DefaultMaxSessions is how many MCP sessions one token holds on a replica
// at once: far more than the clients one agent runs, few enough that
// sessions piled up by one token (each lives up to Idle) stay small.
const DefaultMaxSessions = 1000

// CodeTooManySessions is the code of an initialize refused (HTTP 429)
// because its token holds HTTPOptions.MaxSessions sessions on this
// replica, each with a request open.
const CodeTooManySessions = "TOO_MANY_SESSIONS"

// HTTPOptions configures an HTTP.
type HTTPOptions struct {
	// Bridge is the URL of the bridge's own API, on loopback. Every tool
	// call goes there under the bearer token the MCP client sent, so the
	// API's scopes and "a client sees only its own requests" hold as for
	// any other caller.
	Bridge string
	// Tokens says the bridge has api.tokens: every request carries one.
	Tokens bool
	// Idle is how long a session lives with no request of its client
	// open (a tool call waiting for a person holds its POST open).
	// Default DefaultIdle.
	Idle time.Duration
	// MaxSessions bounds the sessions one token holds on this replica,
	// counting those whose initialize succeeded. A new one past it closes
	// the token's session idle longest (no request open), once its own
	// initialize has succeeded; while every one has a request open, an
	// initialize is refused (429 TOO_MANY_SESSIONS). Default
	// DefaultMaxSessions.
	MaxSessions int
	// Server configures the Server of each session.
	Server Options
}

// HTTP serves the tools over MCP's Streamable HTTP transport, for MCP
// clients that reach the bridge by URL. Each MCP session has a Server of
// its own, as bridge mcp's process has, and when the session ends (the
// client deletes it, it stays idle for Options.Idle, it is closed for a
// newer one of its token past MaxSessions, the bridge stops) the questions
// it still waits for are withdrawn, as bridge mcp's are when its client
// goes.
//
// The SDK's own SessionTimeout is not used: its timer runs while a tool
// call whose POST went away still waits for a person, and closing the
// session then waits for that call, which waits for the person. Here the
// idle timer runs only while no request of the session is open, and when
// it fires the questions are withdrawn first, which ends the calls.
type HTTP struct {
	sdk  *mcp.StreamableHTTPHandler
	opts HTTPOptions

	mu       sync.Mutex
	sessions map[string]*session                         // by Mcp-Session-Id, from their first POST
	live     map[[sha256.Size]byte]map[*session]struct{} // those initialized, by their token's digest
	idles    uint64                                      // times a session's open fell to 0
	closed   bool
	// closing counts the sessions taken out of sessions to be closed by
	// others than Close (eviction, the idle timer, a client's DELETE, an
	// initialize that failed or found no room), until they are: Close
	// waits for them, or their withdrawals would find the listener gone.
	// Added to under mu, while not closed.
	closing sync.WaitGroup
}

// A session is one MCP session and its Server.
type session struct {
	id    string
	srv   *Server
	token [sha256.Size]byte // digest of the bearer token that opened it

	// Guarded by HTTP.mu.
	posts map[string]*post // its POSTs being served, or gone before their call began, by tag
	open  int              // requests being served
	idle  *time.Timer      // runs while open is 0
	armed uint64           // generation of idle; a firing of an older one does nothing
	quiet uint64           // HTTP.idles when open last fell to 0: the lowest is the longest idle
}

// newSession is the context key of the session a POST opens.
type newSession struct{}

// NewHTTP returns the handler of the MCP endpoint; mount it behind the
// API's authentication (the ask scope).
func NewHTTP(opts HTTPOptions) *HTTP {
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.Server.Logger == nil {
		opts.Server.Logger = slog.New(slog.DiscardHandler)
	}
	h := &HTTP{opts: opts, sessions: map[string]*session{}, live: map[[sha256.Size]byte]map[*session]struct{}{}}
	h.sdk = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		// Asked for every request; only the POST that opens a session
		// has a Server of its own. For the others nil means the SDK's
		// protocol versions, which are the Server's too.
		if s, ok := r.Context().Value(newSession{}).(*session); ok {
			return s.srv.mcp
		}
		return nil
	}, &mcp.StreamableHTTPOptions{
		Logger: opts.Server.Logger,
		// The SDK refuses a call that reached a loopback address under a
		// Host that is not loopback (DNS rebinding). A bridge behind a
		// reverse proxy on its machine receives exactly that. With
		// api.tokens every call carries a bearer token, which a page
		// rebound to the bridge cannot know: the check is off. With an
		// open API (no tokens, loopback only) it stays on, besides the
		// API's own refusal of such a Host.
		DisableLocalhostProtection: opts.Tokens,
	})
	return h
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		if r.Method == http.MethodPost {
			h.openSession(w, r)
			return
		}
		h.sdk.ServeHTTP(w, r) // the SDK refuses it
		return
	}
	h.mu.Lock()
	s := h.sessions[id]
	if s == nil || s.token != digest(r) {
		// None, or another token's: as if there were none, and the
		// client opens a new one (the spec's 404). Never passed to the
		// SDK, which still holds a session this one has dropped until
		// its withdrawals are done.
		h.mu.Unlock()
		api.WriteError(w, &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: errNoSuchSession})
		return
	}
	h.begin(s)
	var tag string
	if r.Method == http.MethodPost {
		tag = rand.Text()
		s.posts[tag] = &post{}
	}
	h.mu.Unlock()
	defer h.end(s)
	switch r.Method {
	case http.MethodDelete:
		// The client ends the session: its questions are withdrawn
		// before the SDK closes it, which waits for the calls.
		taken := h.forget(s) // or another took it: it waits for this too
		s.srv.closeFor(errClientGone)
		if taken {
			h.closing.Done()
		}
	case http.MethodPost:
		r.Header.Set(postHeader, tag) // a client's own is replaced
		r.Header.Del(batchHeader)
		if batched(r) {
			r.Header.Set(batchHeader, "1")
		}
	}
	h.sdk.ServeHTTP(w, r)
	if tag != "" {
		h.posted(s, tag, r.Context().Err() != nil)
	}
}

// postHeader tags each POST of a session, as the tool calls it carries
// see it (their request's Extra.Header): the SDK goes on with a call
// whose POST ended before its response (a client may resume the stream,
// under protocol versions before 2026-07-28), and nothing would tell the
// call that nobody reads its outcome any more.
const postHeader = "Askbridge-Mcp-Post"

// batchHeader marks a POST that carries a JSON-RPC batch, which protocol
// versions before 2025-06-18 allow: its calls share the POST's stream,
// which a cancelled one must not end (noReply).
const batchHeader = "Askbridge-Mcp-Batch"

// batched reports whether r's body is a JSON array, keeping the body for
// the SDK to read (but the whitespace before it).
func batched(r *http.Request) bool {
	br := bufio.NewReader(r.Body)
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	for {
		c, err := br.ReadByte()
		if err != nil {
			return false
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		br.UnreadByte()
		return c == '['
	}
}

// A post is a POST of a session, for the tool call it carries.
type post struct {
	gone   bool                    // its client went away before its response ended
	cancel context.CancelCauseFunc // the call's, once it began
}

// errPostGone is why a call ends whose POST's client went away.
var errPostGone = errors.New("the MCP client went away before the call's response (its POST ended)")

// posted says that the POST tagged tag of s was served; gone, that its
// client went away first: the call it carries ends as a call whose client
// cancelled it does, and a call it carries that has not begun yet ends as
// it begins (callContext).
func (h *HTTP) posted(s *session, tag string, gone bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := s.posts[tag]
	switch {
	case p == nil:
		// Its call ended and took it out (callContext's done) just as
		// the client went away: nothing is left to end.
	case !gone:
		delete(s.posts, tag)
	case p.cancel != nil:
		p.cancel(errPostGone)
		delete(s.posts, tag)
	default:
		p.gone = true // kept for its call, until it begins or s ends
	}
}

// callContext is ctx for a tool call of s, ended when the client of the
// POST that carried it goes away before its response; done ends it.
func (h *HTTP) callContext(s *session, ctx context.Context, req *mcp.CallToolRequest) (_ context.Context, done func()) {
	if req.Extra == nil {
		return ctx, func() {}
	}
	tag := req.Extra.Header.Get(postHeader)
	h.mu.Lock()
	defer h.mu.Unlock()
	p := s.posts[tag]
	if p == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if p.gone {
		cancel(errPostGone)
		delete(s.posts, tag)
	} else {
		p.cancel = cancel
	}
	return ctx, func() {
		h.mu.Lock()
		if s.posts[tag] == p {
			delete(s.posts, tag)
		}
		h.mu.Unlock()
		cancel(nil)
	}
}

// openSession serves a POST without a session id, which opens one
// (initialize) with a Server of its own. The go-sdk client sends another
// before each initialize (server/discover, which a stateful handler does
// not serve): the SDK has it open a session too, closed as it ends. Only
// a session whose initialize succeeded counts for MaxSessions. One that
// carries only messages of a session is refused (400).
func (h *HTTP) openSession(w http.ResponseWriter, r *http.Request) {
	tok, _ := api.Bearer(r.Header.Get("Authorization"))
	bc, err := client.New(h.opts.Bridge, client.WithToken(tok))
	if err != nil {
		// Says nothing of the token.
		api.WriteError(w, &api.Error{Status: http.StatusBadRequest, Code: client.CodeInvalidRequest, Message: err.Error()})
		return
	}
	carries, err := firstPOST(r)
	if err != nil {
		api.WriteError(w, api.BodyError(err))
		return
	}
	if carries == inSession {
		// The spec's 400, in the API's shape; the SDK would open a
		// session for it and answer as an uninitialized one does (a
		// request: an error of code 0; a notification: 202, dropped).
		api.WriteError(w, &api.Error{Status: http.StatusBadRequest, Code: client.CodeInvalidRequest, Message: errNoSession})
		return
	}
	initialize := carries == opens
	s := &session{id: rand.Text(), token: digest(r), posts: map[string]*post{}}
	opts := h.opts.Server
	opts.sessionID = func() string { return s.id }
	opts.callContext = func(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func()) {
		return h.callContext(s, ctx, req)
	}
	opts.overHTTP = true
	r.Header.Del(postHeader) // an initialize carries no tool call
	s.srv = New(bc, opts)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		api.WriteError(w, &api.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "the bridge is stopping: try again, and another replica answers"})
		return
	}
	if initialize && !h.room(s.token) {
		h.mu.Unlock()
		h.opts.Server.Logger.Debug("an MCP session refused: its token holds as many as it may on this replica, each with a request open", "max_sessions", h.opts.MaxSessions)
		w.Header().Set("Retry-After", "30")
		api.WriteError(w, &api.Error{Status: http.StatusTooManyRequests, Code: CodeTooManySessions,
			Message: fmt.Sprintf("this token holds %d MCP sessions on this replica, as many as it may, each with a request open: end one (its client quits, or sends DELETE /mcp), or try again once one has none open", h.opts.MaxSessions)})
		return
	}
	h.sessions[s.id] = s
	h.begin(s)
	h.mu.Unlock()
	defer h.end(s)
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), newSession{}, s)))
	initialized := false
	for ss := range s.srv.mcp.Sessions() {
		if ss.InitializeParams() != nil {
			initialized = true
		}
	}
	switch evict, how := h.opened(s, initialized); how {
	case openStopped:
		// Close closes it too, but may have looked at its MCP sessions
		// before the SDK had this one.
		s.close(errStopping)
	case openDeleted:
		// The DELETE withdrew its questions; its MCP session is closed
		// here, as above.
		s.close(errClientGone)
	case openFailed:
		// Not an initialize, or it failed: the SDK closed the session.
		s.srv.closeFor(errClientGone)
		h.closing.Done()
	case openFull:
		// Its client has its session id, and gets 404 with it, as for
		// any session that ended: the one it then opens is refused (429)
		// while all are still busy.
		s.close(errFull)
		h.closing.Done()
	case openKept:
		if evict != nil {
			// Not waited for: this initialize's response ends as the
			// handler returns, and the withdrawals may take long (the
			// bridge slow or down). Close waits for them.
			go func() {
				defer h.closing.Done()
				evict.close(errEvicted)
			}()
		}
	}
}

// An opening is what became of a session once the POST that opened it was
// served.
type opening int

const (
	openKept    opening = iota // initialized, and counted
	openStopped                // Close ran meanwhile, which took it out (before the SDK had it, maybe)
	openDeleted                // its client deleted it meanwhile (DELETE, with the id of the initialize's response)
	openFailed                 // not an initialize, or it failed
	openFull                   // initialized, but its token's sessions all had a request open by then
)

// opened counts s, whose first POST was served, as one of its token's
// sessions when initialized says its initialize succeeded, and takes out
// of the sessions the one it makes room for (evict), or s itself (failed,
// full). The caller closes the one taken out, and then calls
// h.closing.Done.
func (h *HTTP) opened(s *session, initialized bool) (evict *session, _ opening) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] != s {
		if h.closed {
			return nil, openStopped
		}
		return nil, openDeleted
	}
	if !initialized {
		h.take(s)
		return nil, openFailed
	}
	mine := h.live[s.token]
	if len(mine) >= h.opts.MaxSessions {
		if evict = h.longestIdle(mine); evict == nil {
			// Each came to have a request open since room let s in.
			h.take(s)
			return nil, openFull
		}
		h.take(evict)
	}
	if mine == nil {
		mine = map[*session]struct{}{}
		h.live[s.token] = mine
	}
	mine[s] = struct{}{}
	return evict, openKept
}

// room reports whether a session of token may open: its token holds fewer
// than MaxSessions, or one of them has no request open (the new one, once
// initialized, closes it). h.mu is held.
func (h *HTTP) room(token [sha256.Size]byte) bool {
	mine := h.live[token]
	return len(mine) < h.opts.MaxSessions || h.longestIdle(mine) != nil
}

// longestIdle is the session of mine idle longest, or nil when each has
// a request open. h.mu is held.
func (h *HTTP) longestIdle(mine map[*session]struct{}) *session {
	var idlest *session
	for s := range mine {
		if s.open == 0 && (idlest == nil || s.quiet < idlest.quiet) {
			idlest = s
		}
	}
	return idlest
}

// maxPeek is the longest body initializes reads: the SDK's own limit.
// A longer one is passed on unread, and the SDK refuses it.
const maxPeek = mcp.DefaultMaxRequestBodyBytes

// errNoSuchSession is the message of a request for a session this replica
// does not hold (the spec's 404): the client opens a new one.
const errNoSuchSession = "no such MCP session: it ended (its client deleted it, it stayed idle, another of its token took its place, the bridge stopped), is another token's, or lives on another replica: send initialize for a new one"

// errNoSession is the message of a POST refused for want of a session id.
const errNoSession = "no Mcp-Session-Id: send initialize first. A POST without the Mcp-Session-Id header carries an initialize, which opens a session; its response's Mcp-Session-Id header names it, and every later request of the session carries that header"

// What a POST without a session id carries.
type first int

const (
	// What the SDK answers without a session: server/discover (the
	// go-sdk client's probe before its initialize), a request of the
	// sessionless protocol (2026-07-28, by its Mcp-Protocol-Version
	// header or its _meta), which the SDK refuses in words a client
	// falls back to initialize on, or a body it can't read.
	toSDK     first = iota
	opens           // an initialize: it opens a session
	inSession       // messages of a session only (requests, notifications, responses): refused
)

// firstPOST reads what the POST r, without a session id, carries, as the
// SDK reads its body; r's body is read again from its start after.
func firstPOST(r *http.Request) (first, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek+1))
	if err != nil {
		return toSDK, err
	}
	if len(body) > maxPeek {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return toSDK, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var raws []json.RawMessage // a batch's messages
	if json.Unmarshal(body, &raws) != nil {
		raws = []json.RawMessage{body} // one message
	}
	// sdk: any message that the SDK answers without a session, or that
	// it can't read (it answers the body).
	initialize, sdk := false, len(raws) == 0 || r.Header.Get("Mcp-Protocol-Version") >= sessionless
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case err != nil:
			sdk = true
		case ok:
			initialize = initialize || req.Method == "initialize"
			sdk = sdk || req.Method == "server/discover" || sessionlessMeta(req)
		}
	}
	switch {
	case initialize:
		return opens, nil
	case sdk:
		return toSDK, nil
	}
	return inSession, nil
}

// digest is the digest of r's bearer token, or of "" without one.
func digest(r *http.Request) [sha256.Size]byte {
	tok, _ := api.Bearer(r.Header.Get("Authorization"))
	return sha256.Sum256([]byte(tok))
}

// begin counts a request of s being served, which stops its idle timer.
// h.mu is held.
func (h *HTTP) begin(s *session) {
	s.open++
	s.armed++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

// end counts a request of s served; with none left open, s's idle timer
// starts.
func (h *HTTP) end(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.open--
	if s.open > 0 || h.sessions[s.id] != s {
		return
	}
	h.idles++
	s.quiet = h.idles
	n := s.armed
	s.idle = time.AfterFunc(h.opts.Idle, func() {
		h.mu.Lock()
		if s.armed != n || h.sessions[s.id] != s {
			h.mu.Unlock()
			return // a request came, or the session ended, since
		}
		h.take(s)
		h.mu.Unlock()
		defer h.closing.Done()
		s.close(errIdle)
	})
}

// errIdle is why the questions of a session that stayed idle are
// withdrawn.
var errIdle = errors.New("the MCP client's session stayed idle (no request open) and was closed")

// errEvicted is why the questions of a session closed for a newer one of
// its token are withdrawn.
var errEvicted = errors.New("the MCP client's session was idle (no request open), and closed for a newer session of its token: a token holds a limited number on a replica (HTTPOptions.MaxSessions)")

// errFull is why a session is closed as its initialize succeeds when every
// session of its token has come to have a request open meanwhile.
var errFull = errors.New("the token of the MCP client's new session holds as many as it may on this replica, each with a request open (HTTPOptions.MaxSessions)")

// errStopping is why the questions of every session are withdrawn as the
// bridge stops.
var errStopping = errors.New("the bridge is stopping, and the MCP sessions with it")

// forget takes s out of the sessions, as take does, and reports whether
// it was there: then the caller closes it, and calls h.closing.Done.
func (h *HTTP) forget(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] != s {
		h.remove(s)
		return false
	}
	h.take(s)
	return true
}

// take removes s, to be closed by its caller, which Close waits for
// (h.closing). s is in the sessions, and h.mu is held.
func (h *HTTP) take(s *session) {
	h.remove(s)
	h.closing.Add(1)
}

// remove takes s out of the sessions, and out of its token's count, and
// stops its idle timer. h.mu is held.
func (h *HTTP) remove(s *session) {
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	if mine := h.live[s.token]; mine != nil {
		delete(mine, s)
		if len(mine) == 0 {
			delete(h.live, s.token)
		}
	}
	s.armed++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

// close withdraws the questions of s, which ends its tool calls, then
// closes its MCP session.
func (s *session) close(cause error) {
	s.srv.closeFor(cause)
	var open []*mcp.ServerSession
	for ss := range s.srv.mcp.Sessions() {
		open = append(open, ss)
	}
	for _, ss := range open {
		ss.Close()
	}
}

// Close ends every session, withdrawing their questions, and refuses new
// ones; it returns once the sessions others were closing (evicted, idle,
// deleted) are closed too. Call it before the HTTP server shuts down: the
// withdrawals go through its listener, and the calls' open POSTs end.
func (h *HTTP) Close() {
	h.mu.Lock()
	h.closed = true
	all := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	for _, s := range all {
		h.remove(s)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.close(errStopping) })
	}
	wg.Wait()
	h.closing.Wait()
}

// Package mcpserver is askbridge's MCP server (bridge mcp): it gives an MCP
// client (Claude Desktop, Claude Code, Cursor, VS Code, ...) the tools
// ask_user_question and request_approval, and forwards every call to a
// bridge through the client package, so that the question reaches a person
// on Slack or Discord and the answer comes back as the tool's result.
//
// Waiting for a person takes minutes; MCP clients give up on a tool call
// after about one. While a call waits the server sends progress
// notifications (when the client sent a progressToken), which keeps clients
// that reset their timeout on progress waiting, and a call repeated with the
// same arguments re-attaches to the question already asked instead of asking
// it twice (see asks.go).
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/seam"
)

// Defaults of Options.
const (
	DefaultProgressInterval = 15 * time.Second
	DefaultReattach         = time.Minute
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// Route, ExpiresIn and Caller go into every request. An empty Caller
	// becomes the MCP client's name (its clientInfo), shown to the people
	// who answer.
	Route     string
	ExpiresIn time.Duration
	Caller    *client.Caller

	// ProgressInterval is how often a waiting call sends a progress
	// notification (when its client sent a progressToken). Default
	// DefaultProgressInterval.
	ProgressInterval time.Duration

	// Reattach is how long a question stays asked after every call waiting
	// for it went away, and how long an answer that arrived meanwhile is
	// kept, for an identical call to pick up. Default DefaultReattach;
	// negative: withdraw at once and keep nothing.
	Reattach time.Duration

	Logger  *slog.Logger // default: discard
	Version string       // the server's version in its MCP serverInfo

	sessionID   func() string                                                                // over HTTP: the id of the server's one session
	callContext func(context.Context, *mcp.CallToolRequest) (_ context.Context, done func()) // over HTTP: a call's, ended when its POST's client goes
	overHTTP    bool                                                                         // the bridge's own /mcp (HTTP), not bridge mcp: what its errors tell to check
}

// sessionless is the first MCP protocol version without sessions or
// initialize (SEP-2575): a request that names it, or a later one, needs
// none.
const sessionless = "2026-07-28"

// sessionlessMeta reports whether req names the sessionless protocol in
// its _meta, as a request of it does. The SDK reads _meta by its name as
// written ("_META" is no _meta to it), as jsonrpc.DecodeMessage read
// params: encoding/json's struct fields would match any case.
func sessionlessMeta(req *jsonrpc.Request) bool {
	var params map[string]json.RawMessage
	_ = json.Unmarshal(req.Params, &params)
	var meta map[string]any
	_ = json.Unmarshal(params["_meta"], &meta)
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= sessionless
}

// Server is the MCP server. Run serves one MCP session over a transport.
type Server struct {
	mcp      *mcp.Server
	bridge   *client.Client
	opts     Options
	log      *slog.Logger
	instance string // random, names this process's tool_call_ids

	mu      sync.Mutex
	asks    map[askKey]*ask   // what an identical call attaches to
	running map[*ask]struct{} // asks whose bridge request has not ended
	seq     uint64
	closed  bool
	wg      sync.WaitGroup // forward goroutines
	// waitingGrew is called when a tool call may have come to wait for
	// a person (waitingCalls), for a transport that waits for the others
	// to be answered as its input ends (a drainer); nil for another.
	waitingGrew func()

	trace func(event string) // test hook: "detached" (a call went away), "ended" (a request), "settled" (its withdrawal too, if it needed one); s.mu is held
}

// New returns a server that forwards tool calls to bridge.
func New(bridge *client.Client, opts Options) *Server {
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Reattach == 0 {
		opts.Reattach = DefaultReattach
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	var b [4]byte
	rand.Read(b[:])
	s := &Server{
		bridge:   bridge,
		opts:     opts,
		log:      opts.Logger,
		instance: hex.EncodeToString(b[:]),
		asks:     map[askKey]*ask{},
		running:  map[*ask]struct{}{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "askbridge", Title: "askbridge", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		// Tools only, and a list that never changes: no listChanged.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		GetSessionID: opts.sessionID,
	})
	s.mcp.AddTool(askTool, s.askUserQuestion)
	s.mcp.AddTool(approvalTool, s.requestApproval)
	return s
}

// Run serves one session over t until the client disconnects or ctx ends,
// then withdraws every question still pending (Close). A Server runs once.
//
// When ctx ends, the log gives its cause (context.Cause) as the reason the
// requests were withdrawn; bridge mcp's is the signal. Run returns ctx's
// error then.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	// The SDK's shutdown waits for the tool calls in flight, and theirs
	// wait for people: withdrawing the questions first lets them end.
	stop := context.AfterFunc(ctx, func() { s.closeFor(context.Cause(ctx)) })
	defer stop()
	if d, ok := t.(drainer); ok {
		grew := d.drainWith(s.waitingCalls)
		s.mu.Lock()
		s.waitingGrew = grew
		s.mu.Unlock()
	}
	err := s.serve(ctx, t)
	s.closeFor(errClientGone)
	return err
}

// errClientGone is why the requests still pending are withdrawn when the
// session ends.
var errClientGone = errors.New("the MCP client disconnected")

// serve is the SDK's Server.Run, which logs a ctx that ended as an error
// in Go's words ("server run cancelled" error="context canceled"): here
// that is how bridge mcp stops on Ctrl-C, and closeFor has said why.
func (s *Server) serve(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-closed
		s.log.Info("MCP session closed", "why", context.Cause(ctx))
		return ctx.Err()
	case err := <-closed:
		if err != nil {
			s.log.Error("MCP session ended", "err", err)
		} else {
			s.log.Info("MCP session ended: the client disconnected")
		}
		return err
	}
}

func (s *Server) askUserQuestion(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Questions []client.Question `json:"questions"`
	}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return toolError(client.CodeInvalidRequest, strayArgs(req)+err.Error()), nil
	}
	return s.call(ctx, req, client.QuestionRequest{
		Questions: args.Questions,
		Caller:    s.caller(req.Session),
		Route:     s.opts.Route,
		ExpiresIn: s.opts.ExpiresIn,
	})
}

func (s *Server) requestApproval(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		ToolName  string          `json:"tool_name"`
		Reason    string          `json:"reason"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return toolError(client.CodeInvalidRequest, strayArgs(req)+err.Error()), nil
	}
	if string(args.Arguments) == "null" {
		args.Arguments = nil
	}
	return s.call(ctx, req, client.ApprovalRequest{
		Approval:  client.Approval{ToolName: args.ToolName, Reason: args.Reason, Arguments: args.Arguments},
		Caller:    s.caller(req.Session),
		Route:     s.opts.Route,
		ExpiresIn: s.opts.ExpiresIn,
	})
}

// call asks the bridge r, or re-attaches to an identical pending ask, and
// waits for the outcome, sending progress notifications meanwhile.
func (s *Server) call(ctx context.Context, req *mcp.CallToolRequest, r client.Request) (*mcp.CallToolResult, error) {
	k, err := key(req.Session, r)
	if err != nil {
		return toolError(client.CodeInvalidRequest, err.Error()), nil
	}
	a, err := s.attach(k, r)
	if err != nil {
		return toolError("", err.Error()), nil
	}
	if s.opts.callContext != nil {
		var done func()
		ctx, done = s.opts.callContext(ctx, req)
		defer done()
	}
	out, err := s.wait(ctx, a, s.progress(ctx, req))
	if err != nil {
		// The client cancelled the call (or timed out): it reads no result.
		noReply(req)
		return nil, err
	}
	if out.err != nil {
		return s.errorResult(out.err, req), nil
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(out.result)}},
		StructuredContent: out.result,
	}, nil
}

// noReply leaves out the reply to req, a call whose client cancelled it or
// went away: the spec asks no reply to a cancelled request, and the SDK's,
// an error of code 0 ("context canceled"), reaches a client that has
// forgotten the id. Over HTTP it ends the stream of the POST that carried
// req, with nothing on it: the SDK's reply, written as the handler
// returns, finds it closed and is dropped (no EventStore keeps it). But
// not a batch's (batchHeader), whose other calls' replies would go with
// it: a call cancelled in a batch gets the SDK's reply. Over stdio,
// Stdio's writer leaves it out.
func noReply(req *mcp.CallToolRequest) {
	if req.Extra != nil && req.Extra.CloseSSEStream != nil && req.Extra.Header.Get(batchHeader) == "" {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{}) // no RetryAfter: no event that asks the client to come back
	}
}

// progress returns the progress reporter of req, or nil when its client
// sent no progressToken.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) func(time.Duration, string) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(waited time.Duration, requestID string) {
		// Until the bridge has created the request (requestID), nobody has
		// been asked: the bridge may be slow or down, its client retrying.
		msg := fmt.Sprintf("asking the bridge (%s so far)", waited.Round(time.Second))
		if requestID != "" {
			msg = fmt.Sprintf("waiting for a person to answer request %s (%s so far)", requestID, waited.Round(time.Second))
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      waited.Seconds(), // grows with every notification; no total
			Message:       msg,
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("progress notification failed", "err", err)
		}
	}
}

// caller is who asks: Options.Caller, or the MCP client's name.
func (s *Server) caller(ss *mcp.ServerSession) *client.Caller {
	if s.opts.Caller != nil {
		return s.opts.Caller
	}
	if ss == nil {
		return nil
	}
	p := ss.InitializeParams()
	if p == nil || p.ClientInfo == nil {
		return nil
	}
	name := p.ClientInfo.Title
	if name == "" {
		name = p.ClientInfo.Name
	}
	if name == "" {
		return nil
	}
	// The bridge refuses a longer one, and with it every call: the client
	// chose it, not whoever can change it.
	name, _ = cutRunes(name, seam.MaxCallerFieldLen)
	return &client.Caller{Name: name}
}

// cutRunes is s cut to its first n runes, and whether it was longer.
func cutRunes(s string, n int) (string, bool) {
	for i := range s {
		if n == 0 {
			return s[:i], true
		}
		n--
	}
	return s, false
}

// takes holds the top-level arguments of each tool, in the order its
// input schema lists them: what the handlers read. The schemas leave
// additionalProperties open (true), so a call with others goes through.
var takes = map[string][]string{askTool.Name: properties(askTool), approvalTool.Name: properties(approvalTool)}

// properties are the names of the properties of t's input schema, in
// their order.
func properties(t *mcp.Tool) []string {
	var schema struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(t.InputSchema.(json.RawMessage), &schema); err != nil {
		panic(fmt.Sprintf("mcpserver: the input schema of %s: %v", t.Name, err))
	}
	dec := json.NewDecoder(bytes.NewReader(schema.Properties))
	var names []string
	dec.Token() // {
	for dec.More() {
		name, _ := dec.Token()
		names = append(names, name.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			panic(fmt.Sprintf("mcpserver: the input schema of %s: %v", t.Name, err))
		}
	}
	return names
}

// Of the unknown keys strayArgs names: at most maxStrayNamed, the first by
// name, each cut to maxStrayLen characters; the others it counts. A model
// may send anything, at any length.
const (
	maxStrayNamed = 5
	maxStrayLen   = 64
)

// strayArgs is what begins the message of an error in the arguments of
// req's call when they hold top-level keys its tool does not take: it
// names them, and what the tool takes; else "". Such a key is otherwise
// ignored, but a misspelt one is likely the cause of the error: a call
// with "questons" has no questions.
func strayArgs(req *mcp.CallToolRequest) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(req.Params.Arguments, &args) != nil {
		return "" // not an object: its error says so
	}
	known := takes[req.Params.Name]
	var stray []string
	for k := range args {
		// As encoding/json reads them into the handlers' structs:
		// "Questions" is questions.
		if !slices.ContainsFunc(known, func(name string) bool { return strings.EqualFold(name, k) }) {
			stray = append(stray, k)
		}
	}
	if len(stray) == 0 {
		return ""
	}
	slices.Sort(stray)
	noun := "argument"
	if len(stray) > 1 {
		noun = "arguments"
	}
	var named []string
	for _, k := range stray[:min(len(stray), maxStrayNamed)] {
		cut, more := cutRunes(k, maxStrayLen)
		q := strconv.Quote(cut)
		if more {
			q += "…"
		}
		named = append(named, q)
	}
	list := strings.Join(named, ", ")
	if n := len(stray) - len(named); n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("unknown %s %s (%s takes %s); ", noun, list, req.Params.Name, strings.Join(known, ", "))
}

// namesArgument reports whether msg, the message of a refusal of a call
// to tool, names a top-level argument the tool takes, as the bridge's do
// (questions[0] has no id; question "web": ...; an approval needs
// tool_name). The bridge's refusals of what the server sends itself
// (caller, route, expires_in, tool_call_id) name none.
func namesArgument(tool, msg string) bool {
	for _, name := range takes[tool] {
		stem := strings.TrimSuffix(name, "s") // question "web" is one of questions
		for i := 0; ; i++ {
			j := strings.Index(msg[i:], stem)
			if j < 0 {
				break
			}
			if i += j; i == 0 || !isNamePart(msg[i-1]) {
				return true
			}
		}
	}
	return false
}

// isNamePart reports whether b can be part of a name in a message before
// an argument's: display_reason, caller.name are not reason, tool_name.
func isNamePart(b byte) bool {
	return b == '_' || b == '.' || b == '-' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// argumentCodes are the codes of a call refused for its arguments.
var argumentCodes = []string{client.CodeEmptyQuestions, client.CodeInvalidRequest, client.CodeBadIntent}

// decodeArgs reads a tool call's arguments into v.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// In the words of the tool's schema, not of Go's types: the
			// model reads this and tries again.
			return errors.New(seam.TypeErrorMessage(raw, te, "arguments"))
		}
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// Codes of tool errors that are not the bridge's, as the DeepSeek Harness
// plugin (integrations/dsh) names them.
const (
	codeUnreachable = "ASKBRIDGE_UNREACHABLE" // nothing answers at the bridge's URL
	codeBridgeError = "ASKBRIDGE_ERROR"       // the bridge answered with an error that has no code
)

// errorResult is the tool error of req's request that ended without an
// answer or failed: the bridge's code and message (the seam's for ASK_*),
// or one of the codes above. strayArgs begins the message of a refusal an
// unknown key can be the cause of, as the key a misspelling left missing:
// EMPTY_QUESTIONS, and a refusal that names a top-level argument the tool
// takes (namesArgument). One of what the server sends itself, such as the
// caller, gets none: the model can do nothing about it.
func (s *Server) errorResult(err error, req *mcp.CallToolRequest) *mcp.CallToolResult {
	var (
		e  *client.Error
		ue *url.Error
	)
	switch {
	case errors.As(err, &e) && e.Code == client.CodeUnauthorized:
		// The bridge speaks of an Authorization header; whoever reads this
		// set an environment variable, or, over /mcp, the header itself.
		return toolError(e.Code, e.Message+s.hints().unauthorized)
	case errors.As(err, &e) && slices.Contains(argumentCodes, e.Code):
		var stray string
		if e.Code == client.CodeEmptyQuestions || namesArgument(req.Params.Name, e.Message) {
			stray = strayArgs(req)
		}
		return toolError(e.Code, stray+e.Message)
	case errors.As(err, &e) && e.Code != "":
		return toolError(e.Code, e.Message)
	case errors.As(err, &e):
		return toolError(codeBridgeError, err.Error())
	case errors.Is(err, client.ErrUnreachable), errors.As(err, &ue):
		// As the CLI does, say what to check: for bridge mcp the URL comes
		// from the client's config, which whoever reads this can change.
		return toolError(codeUnreachable, err.Error()+s.hints().unreachable)
	}
	return toolError(codeBridgeError, err.Error())
}

// hints are what errorResult tells to check, after the bridge's message.
type hints struct{ unauthorized, unreachable string }

// hints are the server's: bridge mcp's flags and environment, or, over
// the bridge's own /mcp, the MCP client's header and the bridge itself.
func (s *Server) hints() hints {
	if s.opts.overHTTP {
		// The calls go to the API of the bridge that serves /mcp, on
		// loopback, under the token the MCP client sent there.
		return hints{
			unauthorized: "; the bridge refused the token this MCP client sends to /mcp in its Authorization header (missing, or not one of its api.tokens): the header in the client's MCP server settings says which",
			unreachable:  "; that is the bridge's own API, which serves this /mcp: it may be stopping (call again: the client opens a new session if this one ends), else its log says why",
		}
	}
	return hints{
		unauthorized: "; the bridge refused the BRIDGE_TOKEN that bridge mcp runs with (missing, or not one of its api.tokens)",
		unreachable:  "; is `bridge serve` running there? bridge mcp's --server (or BRIDGE_SERVER) in the MCP client's config says where it is",
	}
}

// toolError is a tool result with isError set: "CODE: message", or the
// message alone when there is no code.
func toolError(code, message string) *mcp.CallToolResult {
	text := message
	if code != "" {
		text = code + ": " + message
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

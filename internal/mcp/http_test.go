package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// A POST whose call ended, taking its entry out, as its client went away
// is nothing to end: posted must not expect the entry.
func TestPostedAfterItsCallEnded(t *testing.T) {
	h := NewHTTP(HTTPOptions{Bridge: "http://127.0.0.1:1"})
	s := &session{posts: map[string]*post{}}
	h.posted(s, "gone-with-its-call", true)
	if len(s.posts) != 0 {
		t.Errorf("posts = %v, want none", s.posts)
	}
}

const (
	askToken    = "http-ask-6d2f8a41c9"
	otherToken  = "http-other-3e9b7c05d1"
	answerToken = "http-answer-a47c1e92f6"
	httpTokens  = "api:\n  tokens:\n" +
		"    - {name: agent, token: " + askToken + ", scopes: [ask]}\n" +
		"    - {name: other, token: " + otherToken + ", scopes: [ask]}\n" +
		"    - {name: person, token: " + answerToken + ", scopes: [answer]}\n"
)

// startHTTP starts a replica with httpTokens whose /mcp is an HTTP with
// opts, and returns it, the replica's URL and a person's client of it.
func startHTTP(t *testing.T, opts HTTPOptions) (h *HTTP, url string, person *client.Client) {
	t.Helper()
	redisURL, prefix := apptest.Redis(t)
	a, _ := apptest.StartWatched(t, apptest.Config(t, httpTokens, redisURL, prefix), app.Options{MCP: func(apiURL string, tokens bool, log *slog.Logger) app.MCP {
		opts.Bridge, opts.Tokens, opts.Server.Logger = apiURL, tokens, log
		h = NewHTTP(opts)
		return h
	}}, askToken, otherToken, answerToken)
	// Run before it stops: a connection dialled for a request that
	// another connection served sits unused, and holds the HTTP server's
	// shutdown 5 s (net/http waits that long for its first request).
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	person, err := client.New(a.URL(), client.WithToken(answerToken), client.WithPollWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return h, a.URL(), person
}

// seeing sends every request with Authorization: Bearer token (none when
// it is ""), and has see look at each, its body and its response.
type seeing struct {
	token string
	see   func(r *http.Request, body []byte, resp *http.Response)
}

func (s seeing) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if s.token != "" {
		r.Header.Set("Authorization", "Bearer "+s.token)
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && s.see != nil {
		s.see(r, body, resp)
	}
	return resp, err
}

// connectHTTP connects the SDK's client to the /mcp of url with token,
// with no standalone GET stream (which would keep its session busy), and
// see (if not nil) looking at its requests.
func connectHTTP(t *testing.T, url, token string, see func(*http.Request, []byte, *http.Response)) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             url + "/mcp",
		HTTPClient:           &http.Client{Transport: seeing{token, see}},
		DisableStandaloneSSE: true,
	}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mustConnect is connectHTTP, which must succeed.
func mustConnect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, url, token, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	return cs
}

// connectCancelling is mustConnect, with a channel that gets a value each
// time the client's notifications/cancelled has been served. The SDK's
// client sends it after the call it cancels has returned (go-sdk#1150),
// as a POST of its own: its session, idle once the call's POST ended, is
// busy again while it is served, and idle for good only after it.
func connectCancelling(t *testing.T, url, token string) (*mcp.ClientSession, <-chan struct{}) {
	t.Helper()
	cancels := make(chan struct{}, 16)
	cs, err := connectHTTP(t, url, token, func(_ *http.Request, body []byte, _ *http.Response) {
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			select {
			case cancels <- struct{}{}:
			default: // one waiting is as good as more
			}
		}
	})
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	return cs, cancels
}

// waitSessions waits until h holds exactly the sessions of ids (as the SDK
// client names them), each as want says (say says how, for the failure).
func waitSessions(t *testing.T, h *HTTP, say string, want func(*session) bool, ids ...string) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(within); ; <-tick.C {
		h.mu.Lock()
		var held []string
		ok := len(h.sessions) == len(ids)
		for id, s := range h.sessions {
			held = append(held, id)
			ok = ok && slices.Contains(ids, id) && want(s)
		}
		h.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the replica holds sessions %v, want %v, each %s", within, held, ids, say)
		}
	}
}

func idle(s *session) bool { return s.open == 0 }
func busy(s *session) bool { return s.open > 0 }

// postStatus is the status of a tools/list in cs's session, under token.
func postStatus(t *testing.T, url string, cs *mcp.ClientSession, token string) int {
	t.Helper()
	resp := mcpPost(t, url, token, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, map[string]string{
		"Mcp-Session-Id":       cs.ID(),
		"Mcp-Protocol-Version": cs.InitializeResult().ProtocolVersion,
	})
	resp.Body.Close()
	return resp.StatusCode
}

// mcpPost sends body to the /mcp of url with token and headers, as an MCP
// client does.
func mcpPost(t *testing.T, url, token, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := mcpRequest(url, token, body, headers)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// mcpRequest is the POST of body to the /mcp of url with token and
// headers, as an MCP client sends it.
func mcpRequest(url, token, body string, headers map[string]string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// A token at MaxSessions that opens another session closes its session
// idle longest, once the new one's initialize succeeded: its next request
// is 404, and the question it still held (for a call to re-attach to) is
// withdrawn. The others stay, other tokens' too, which don't count.
func TestHTTPMaxSessionsClosesTheLongestIdle(t *testing.T) {
	h, url, person := startHTTP(t, HTTPOptions{MaxSessions: 2, Server: Options{Reattach: time.Hour}})
	first, cancels := connectCancelling(t, url, askToken)
	// A call its client gave up on: its question stays asked, for an
	// identical call to re-attach to.
	ctx, giveUp := context.WithCancel(context.Background())
	call := make(chan error, 1)
	go func() {
		_, err := first.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: questions(yesNo("web"))})
		call <- err
	}()
	rec := waitPending(t, person, 1)[0]
	giveUp()
	if err := await(t, "the call given up on", call); err == nil {
		t.Fatal("the call given up on succeeded")
	}
	await(t, "the client's notifications/cancelled", cancels)
	waitSessions(t, h, "idle", idle, first.ID())
	other := mustConnect(t, url, otherToken)
	waitSessions(t, h, "idle", idle, first.ID(), other.ID())
	second := mustConnect(t, url, askToken)
	waitSessions(t, h, "idle", idle, first.ID(), other.ID(), second.ID())

	third := mustConnect(t, url, askToken)
	waitSessions(t, h, "there", func(*session) bool { return true }, other.ID(), second.ID(), third.ID())
	for _, tc := range []struct {
		name   string
		cs     *mcp.ClientSession
		token  string
		status int
	}{
		{"the longest idle", first, askToken, http.StatusNotFound},
		{"the other idle one", second, askToken, http.StatusOK},
		{"the new one", third, askToken, http.StatusOK},
		{"another token's", other, otherToken, http.StatusOK},
	} {
		if got := postStatus(t, url, tc.cs, tc.token); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
	}
	got, err := person.Get(context.Background(), rec.ID, within)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != client.StatusCancelled {
		t.Errorf("the closed session's question: status %s, want %s", got.Status, client.StatusCancelled)
	}
}

// waitPending waits until n questions are pending, as person sees them.
func waitPending(t *testing.T, person *client.Client, n int) []client.Record {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(within); ; <-tick.C {
		list, err := person.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Questions) == n {
			return list.Questions
		}
		if len(list.Questions) > n || time.Now().After(deadline) {
			t.Fatalf("%d questions pending, want %d", len(list.Questions), n)
		}
	}
}

// The SDK's client sends a POST without a session id before its
// initialize (server/discover), and a failed initialize is one too:
// neither is a session of its token, and neither closes one. The
// initialize that follows does.
func TestHTTPMaxSessionsCountsOnlyInitializedSessions(t *testing.T) {
	h, url, _ := startHTTP(t, HTTPOptions{MaxSessions: 1})
	first := mustConnect(t, url, askToken)
	waitSessions(t, h, "idle", idle, first.ID())

	// Without text/event-stream in Accept, the SDK refuses it.
	resp := mcpPost(t, url, askToken, initialize, map[string]string{"Accept": "application/json"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an initialize the SDK refuses: status %d, want 400", resp.StatusCode)
	}
	waitSessions(t, h, "idle", idle, first.ID()) // the failed one's gone; first stays

	var mu sync.Mutex
	var before []string // methods of the POSTs without a session id before the initialize
	var gone bool       // first went as one of them was served
	see := func(r *http.Request, body []byte, resp *http.Response) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || req.Method == "initialize" {
			return
		}
		// Read to its end, then wait until the session it opened is
		// gone: first must be there still.
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(within); ; <-tick.C {
			h.mu.Lock()
			_, there := h.sessions[first.ID()]
			others := len(h.sessions)
			if there {
				others--
			}
			h.mu.Unlock()
			if others == 0 || time.Now().After(deadline) {
				mu.Lock()
				before = append(before, req.Method)
				gone = gone || !there
				mu.Unlock()
				return
			}
		}
	}
	second, err := connectHTTP(t, url, askToken, see)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	mu.Lock()
	if len(before) == 0 {
		t.Error("the SDK's client sent no POST without a session id before its initialize; this test no longer tests that")
	}
	if gone {
		t.Errorf("the session of the token was closed as %v was served, before any initialize", before)
	}
	mu.Unlock()
	waitSessions(t, h, "there", func(*session) bool { return true }, second.ID())
	if got := postStatus(t, url, first, askToken); got != http.StatusNotFound {
		t.Errorf("the session idle as the new one opened: status %d, want 404", got)
	}
}

// While each session of a token at MaxSessions has a request open (a
// call waiting for its person), a new initialize is refused, 429 in the
// API's shape, and closes none. Another token's opens.
func TestHTTPMaxSessionsRefusesWhileEachIsBusy(t *testing.T) {
	h, url, person := startHTTP(t, HTTPOptions{MaxSessions: 2})
	first := mustConnect(t, url, askToken)
	second := mustConnect(t, url, askToken)
	var calls []<-chan result
	for _, cs := range []*mcp.ClientSession{first, second} {
		ch := make(chan result, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question", Arguments: questions(yesNo("web"))})
			ch <- result{res, err}
		}()
		calls = append(calls, ch)
	}
	recs := waitPending(t, person, 2)
	waitSessions(t, h, "busy", busy, first.ID(), second.ID())

	if _, err := connectHTTP(t, url, askToken, nil); err == nil {
		t.Error("a third session of the token opened")
	}
	resp := mcpPost(t, url, askToken, initialize, nil)
	var body struct {
		Error struct{ Code, Message string }
	}
	err := json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || body.Error.Code != CodeTooManySessions || body.Error.Message == "" {
		t.Errorf("an initialize with both busy: status %d, body %+v (%v); want 429 %s in the API's shape", resp.StatusCode, body, err, CodeTooManySessions)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("the 429 has no Retry-After")
	}
	mustConnect(t, url, otherToken)
	for i, ch := range calls {
		select {
		case r := <-ch:
			t.Fatalf("call %d ended before its answer: %v %v", i, r.res, r.err)
		default:
		}
	}
	for _, rec := range recs {
		if _, err := person.Answer(context.Background(), rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range calls {
		answerJSON(t, await(t, "the call", ch), `{"answers":[{"id":"web","selected":["No"]}]}`)
	}
}

// Over the bridge's own /mcp, the tool errors that tell what to check
// speak of the MCP client's token and of the bridge, not of bridge mcp's
// BRIDGE_TOKEN and --server.
func TestHTTPToolErrorsSpeakOfMCP(t *testing.T) {
	locked := newBridge(t, "api:\n  tokens:\n    - {name: agent, token: ask-secret-7f3c9e21b4, scopes: [ask]}\n")
	down := downURL(t)
	want := (&Server{opts: Options{overHTTP: true}}).hints()

	for _, tc := range []struct {
		name, bridge, code, hint string
	}{
		{"refused token", locked, api.CodeUnauthorized, want.unauthorized},
		{"bridge unreachable", down, codeUnreachable, want.unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Served without the API in front: the calls reach the
			// bridge without a token.
			h := NewHTTP(HTTPOptions{Bridge: tc.bridge})
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			t.Cleanup(h.Close)
			cs := mustConnect(t, srv.URL, "")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question", Arguments: questions(yesNo("web"))})
			got := text(t, result{res, err}, true)
			if !strings.HasPrefix(got, tc.code+": ") || !strings.HasSuffix(got, tc.hint) || !strings.Contains(got, "/mcp") {
				t.Errorf("error text = %q, want %s: ... ending %q, which names /mcp", got, tc.code, tc.hint)
			}
			for _, stdio := range []string{"BRIDGE_TOKEN", "BRIDGE_SERVER", "--server", "bridge mcp"} {
				if strings.Contains(got, stdio) {
					t.Errorf("error text = %q, which speaks of %s", got, stdio)
				}
			}
		})
	}
}

// A POST without a session id that carries no initialize is refused: the
// spec's 400, in the API's shape, saying to initialize first, and no
// session is opened for it. (The SDK opened one, uninitialized, and
// answered a request in it with an error of code 0, HTTP 200.) What the
// SDK answers without a session still reaches it: server/discover, which
// the go-sdk client sends before its initialize, and a request of the
// sessionless protocol, which it refuses in words a client falls back to
// initialize on.
func TestHTTPPostWithoutSessionID(t *testing.T) {
	h, url, _ := startHTTP(t, HTTPOptions{})
	const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_user_question","arguments":{"questions":[{"id":"a","question":"Go?"}]}}}`
	for _, tc := range []struct {
		name, body string
	}{
		{"tools/call", call},
		{"tools/list", `{"jsonrpc":"2.0","id":"x","method":"tools/list"}`},
		{"ping", `{"jsonrpc":"2.0","id":4,"method":"ping"}`},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"response", `{"jsonrpc":"2.0","id":5,"result":{}}`},
		{"batch", `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":6,"method":"tools/list"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := mcpPost(t, url, askToken, tc.body, nil)
			var body struct {
				Error struct{ Code, Message string }
			}
			err := json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || err != nil || body.Error.Code != client.CodeInvalidRequest ||
				!strings.HasPrefix(body.Error.Message, "no Mcp-Session-Id: send initialize first") {
				t.Errorf("status %d, body %+v (%v); want 400 %s in the API's shape, saying to send initialize first", resp.StatusCode, body, err, client.CodeInvalidRequest)
			}
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
				t.Errorf("the refusal names session %s", id)
			}
			waitSessions(t, h, "", nil)
		})
	}

	for _, tc := range []struct {
		name, body string
		headers    map[string]string
		status     int
		code       int64 // of the JSON-RPC error in the body, 0 for none
	}{
		{"server/discover", `{"jsonrpc":"2.0","id":7,"method":"server/discover"}`, nil, http.StatusOK, jsonrpc.CodeMethodNotFound},
		{"sessionless protocol", call, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, http.StatusBadRequest, mcp.CodeUnsupportedProtocolVersion},
		{"initialize", initialize, nil, http.StatusOK, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := mcpPost(t, url, askToken, tc.body, tc.headers)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if data, ok := bytes.CutPrefix(bytes.TrimSpace(b), []byte("event: message\ndata: ")); ok {
				b = data
			}
			msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(b))
			res, _ := msg.(*jsonrpc.Response)
			var code int64
			if res != nil && res.Error != nil {
				var we *jsonrpc.Error
				if errors.As(res.Error, &we) {
					code = we.Code
				}
			}
			if resp.StatusCode != tc.status || err != nil || res == nil || code != tc.code {
				t.Errorf("status %d, body %s; want %d with a JSON-RPC response of error code %d (0: a result), the SDK's", resp.StatusCode, b, tc.status, tc.code)
			}
		})
	}
}

// A session closed while the bridge stops, by another than Close (for a
// newer one of its token, or idle), withdraws its questions before Close
// returns: the withdrawals go through the listener, which closes once
// Close returns. And the initialize that closes a session for room does
// not wait for that session's withdrawals.
func TestHTTPCloseWaitsForSessionsBeingClosed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(t *testing.T, h *HTTP, srvURL string, first *mcp.ClientSession, held <-chan struct{}) (own *session)
	}{
		{"evicted", func(t *testing.T, h *HTTP, srvURL string, _ *mcp.ClientSession, held <-chan struct{}) *session {
			// Its response must end (the POST no longer open) while
			// the evicted session's withdrawal is held.
			type served struct {
				id  string
				err error
			}
			opened := make(chan served, 1)
			go func() {
				req, err := http.NewRequest(http.MethodPost, srvURL, strings.NewReader(initialize))
				if err != nil {
					opened <- served{err: err}
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					opened <- served{err: err}
					return
				}
				defer resp.Body.Close()
				_, err = io.ReadAll(resp.Body)
				opened <- served{resp.Header.Get("Mcp-Session-Id"), err}
			}()
			await(t, "the evicted session's withdrawal", held)
			second := await(t, "the end of the response of the initialize that evicted a session, while the evicted one's withdrawal is held", opened)
			if second.err != nil || second.id == "" {
				t.Fatalf("the initialize that evicted a session: session %q, %v", second.id, second.err)
			}
			h.mu.Lock()
			own := h.sessions[second.id]
			h.mu.Unlock()
			if own == nil {
				t.Fatalf("the session of the initialize that evicted one (%s) is not held", second.id)
			}
			return own
		}},
		{"idle", func(t *testing.T, h *HTTP, _ string, first *mcp.ClientSession, held <-chan struct{}) *session {
			h.mu.Lock()
			h.sessions[first.ID()].idle.Reset(0) // its idle timer fires now
			h.mu.Unlock()
			await(t, "the idle session's withdrawal", held)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bridgeURL := newBridge(t, "")
			direct, err := client.New(bridgeURL)
			if err != nil {
				t.Fatal(err)
			}
			held := make(chan struct{}, 1) // a withdrawal (DELETE) reached the API, and is held
			release := make(chan struct{}) // lets it through
			stopped := make(chan struct{}) // Close returned: the listener is gone, nothing reaches the API
			proxy := proxyTo(t, bridgeURL, func(w http.ResponseWriter, r *http.Request) bool {
				select {
				case <-stopped:
					dropConnection(w)
					return true
				default:
				}
				if r.Method != http.MethodDelete {
					return false
				}
				select {
				case held <- struct{}{}:
				default:
				}
				select {
				case <-release:
					return false
				case <-stopped:
					dropConnection(w)
					return true
				}
			})
			h := NewHTTP(HTTPOptions{Bridge: proxy, MaxSessions: 1, Server: Options{Reattach: time.Hour}})
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			t.Cleanup(free)

			// A call its client gave up on: its question stays asked,
			// for an identical call to re-attach to.
			first, cancels := connectCancelling(t, srv.URL, "")
			ctx, giveUp := context.WithCancel(context.Background())
			call := make(chan error, 1)
			go func() {
				_, err := first.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: questions(yesNo("web"))})
				call <- err
			}()
			rec := waitPending(t, direct, 1)[0]
			giveUp()
			await(t, "the call given up on", call)
			await(t, "the client's notifications/cancelled", cancels)
			waitSessions(t, h, "idle", idle, first.ID())

			own := tc.close(t, h, srv.URL, first, held)
			closed := make(chan struct{})
			go func() {
				h.Close()
				close(stopped)
				close(closed)
			}()
			// Once Close has closed the sessions it holds itself, it
			// waits for the withdrawal held.
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for deadline := time.Now().Add(within); ; <-tick.C {
				h.mu.Lock()
				done := h.closed && len(h.sessions) == 0
				h.mu.Unlock()
				if done && own != nil {
					done = len(slices.Collect(own.srv.mcp.Sessions())) == 0
				}
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Close did not close its own sessions within %s", within)
				}
			}
			select {
			case <-closed:
				t.Fatal("Close returned while a session it did not hold still withdrew its question")
			default:
			}
			free()
			await(t, "Close, once the withdrawal went through", closed)
			got, err := direct.Get(context.Background(), rec.ID, 0)
			if err != nil || got.Status != client.StatusCancelled {
				t.Errorf("the closed session's question after Close: %+v, %v; want it %s", got, err, client.StatusCancelled)
			}
		})
	}
}

// opened, as the POST that opened a session was served: what became of
// the session, which one it took out for room, which the token holds
// after, and that each one taken out to be closed counts once in closing.
func TestOpened(t *testing.T) {
	token := sha256.Sum256([]byte("a token"))
	other := sha256.Sum256([]byte("another token"))
	type held struct {
		id    string
		token [sha256.Size]byte
		open  int    // requests open
		quiet uint64 // when it last went idle: the lowest is the longest idle
	}
	for _, tc := range []struct {
		name        string
		max         int
		held        []held // sessions initialized before
		initialized bool
		meanwhile   func(t *testing.T, h *HTTP, s *session) (taken int) // what happened to s as its POST was served
		want        opening
		evict       string   // the session taken out for room
		live        []string // the token's sessions after
	}{
		{"kept", 2, []held{{"a", token, 0, 1}}, true, nil, openKept, "", []string{"a", "new"}},
		{"kept, another token's not counted", 1, []held{{"b", other, 0, 1}}, true, nil, openKept, "", []string{"new"}},
		{"kept, closing the longest idle", 3,
			[]held{{"busy", token, 1, 1}, {"idle-long", token, 0, 2}, {"idle-short", token, 0, 5}, {"b", other, 0, 0}},
			true, nil, openKept, "idle-long", []string{"busy", "idle-short", "new"}},
		{"failed", 1, []held{{"a", token, 0, 1}}, false, nil, openFailed, "", []string{"a"}},
		{"full", 1, []held{{"busy", token, 2, 1}, {"b", other, 0, 1}}, true, nil, openFull, "", []string{"busy"}},
		{"stopped", 1, []held{{"a", token, 0, 1}}, true, func(t *testing.T, h *HTTP, s *session) int {
			h.mu.Lock() // as Close does
			defer h.mu.Unlock()
			h.closed = true
			for _, s := range h.sessions {
				h.remove(s)
			}
			return 0
		}, openStopped, "", nil},
		{"deleted", 1, nil, true, func(t *testing.T, h *HTTP, s *session) int {
			if !h.forget(s) { // as a DELETE does
				t.Fatal("forget: the session was not held")
			}
			return 1
		}, openDeleted, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHTTP(HTTPOptions{Bridge: "http://127.0.0.1:1", MaxSessions: tc.max})
			others := 0
			for _, o := range tc.held {
				s := &session{id: o.id, token: o.token, posts: map[string]*post{}, open: o.open, quiet: o.quiet}
				h.sessions[s.id] = s
				if h.live[s.token] == nil {
					h.live[s.token] = map[*session]struct{}{}
				}
				h.live[s.token][s] = struct{}{}
				if o.token == other {
					others++
				}
			}
			s := &session{id: "new", token: token, posts: map[string]*post{}}
			h.sessions[s.id] = s
			taken := 0
			if tc.meanwhile != nil {
				taken = tc.meanwhile(t, h, s)
			}

			evict, got := h.opened(s, tc.initialized)
			if got != tc.want {
				t.Errorf("opened = %d, want %d", got, tc.want)
			}
			var evicted string
			if evict != nil {
				evicted = evict.id
				taken++
				if h.sessions[evicted] != nil {
					t.Errorf("session %s, taken out for room, is still held", evicted)
				}
			}
			if evicted != tc.evict {
				t.Errorf("took out %q for room, want %q", evicted, tc.evict)
			}
			if got == openFailed || got == openFull {
				taken++
			}
			if kept := h.sessions[s.id] == s; kept != (got == openKept) {
				t.Errorf("the new session held after: %v, want %v", kept, got == openKept)
			}
			var live []string
			for l := range h.live[token] {
				live = append(live, l.id)
				if h.sessions[l.id] != l {
					t.Errorf("counted session %s is not held", l.id)
				}
			}
			slices.Sort(live)
			if !slices.Equal(live, tc.live) {
				t.Errorf("the token's sessions: %v, want %v", live, tc.live)
			}
			if n := len(h.live[other]); n != others && !h.closed {
				t.Errorf("another token holds %d sessions after, want its %d", n, others)
			}
			for range taken {
				h.closing.Done() // panics if it was not counted
			}
			waited := make(chan struct{})
			go func() { h.closing.Wait(); close(waited) }()
			await(t, "closing, once each taken out was closed (counted more than once?)", waited)
		})
	}
}

// firstPOST tells what a POST without a session id carries, and leaves
// its body to be read again from its start, whole.
func TestFirstPOST(t *testing.T) {
	const (
		list   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		note   = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		answer = `{"jsonrpc":"2.0","id":5,"result":{}}`
	)
	long := `[` + strings.Repeat(note+",", maxPeek/len(note)) + initialize + `]` // past maxPeek, an initialize at its end
	for _, tc := range []struct {
		name, body, version string
		want                first
	}{
		{"initialize", initialize, "", opens},
		{"a batch with an initialize", `[` + note + `,` + initialize + `]`, "", opens},
		{"a batch without", `[` + note + `,` + list + `]`, "", inSession},
		{"a request", list, "", inSession},
		{"a notification", note, "", inSession},
		{"a response", answer, "", inSession},
		{"an empty batch", `[]`, "", toSDK},
		{"not JSON", `{"jsonrpc":`, "", toSDK},
		{"a batch with what is no message", `[` + list + `,{"x":1}]`, "", toSDK},
		{"server/discover", `{"jsonrpc":"2.0","id":7,"method":"server/discover"}`, "", toSDK},
		{"the sessionless protocol, by its header", list, sessionless, toSDK},
		{"the sessionless protocol, by its _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + sessionless + `"}}}`, "", toSDK},
		{"a _meta named in another case", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_META":{"` + mcp.MetaKeyProtocolVersion + `":"` + sessionless + `"}}}`, "", inSession}, // the SDK reads names as written
		{"past maxPeek, unread", long, "", toSDK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
			if tc.version != "" {
				r.Header.Set("Mcp-Protocol-Version", tc.version)
			}
			got, err := firstPOST(r)
			if err != nil || got != tc.want {
				t.Errorf("firstPOST = %d, %v; want %d", got, err, tc.want)
			}
			if body, err := io.ReadAll(r.Body); err != nil || string(body) != tc.body {
				t.Errorf("the body read again: %d bytes, %v; want the %d sent", len(body), err, len(tc.body))
			}
		})
	}

	t.Run("a body that fails to read", func(t *testing.T) {
		cut := errors.New("connection reset")
		r := httptest.NewRequest(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader(`{"jsonrpc":`), failing{cut}))
		if _, err := firstPOST(r); !errors.Is(err, cut) {
			t.Errorf("firstPOST: %v, want %v", err, cut)
		}
	})
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// An initialize that reaches a replica once Close began is refused in the
// API's shape, as UNAVAILABLE with a Retry-After: another replica, or
// this one restarted, opens the session.
func TestHTTPOpenWhileStopping(t *testing.T) {
	h := NewHTTP(HTTPOptions{Bridge: "http://127.0.0.1:1"})
	h.Close()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initialize))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); w.Code != http.StatusServiceUnavailable || err != nil ||
		body.Error.Code != api.CodeUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("got %d %q (Retry-After %q); want 503 UNAVAILABLE with a Retry-After", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
}

// A call its client cancels (notifications/cancelled on another POST)
// gets no reply on its POST, whose stream ends, as over bridge mcp: the
// spec asks none, and the SDK's, an error of code 0 ("context canceled"),
// reaches a client that has forgotten the id. Its question stays asked
// for the re-attach window: an identical call picks it up and gets the
// answer.
func TestHTTPCancelledCallGetsNoReply(t *testing.T) {
	_, url, person := startHTTP(t, HTTPOptions{Server: Options{Reattach: time.Hour}})
	headers := rawSession(t, url, "2025-06-18")
	call := func(id string) <-chan []*jsonrpc.Response {
		return postStream(url, headers, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":`+askParams("web")+`}`)
	}

	first := call("11")
	rec := waitPending(t, person, 1)[0]
	notifyRaw(t, url, headers, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11,"reason":"timed out"}}`)
	for _, r := range await(t, "the cancelled call's stream to end", first) {
		t.Errorf("the cancelled call's stream carried a reply: id %v, error %v; want none", r.ID.Raw(), r.Error)
	}

	// Still asked, for an identical call to re-attach to.
	if got, err := person.Get(context.Background(), rec.ID, 0); err != nil || got.Status != client.StatusPending {
		t.Fatalf("the cancelled call's question: %+v, %v; want it still pending", got, err)
	}
	second := call("12")
	if _, err := person.Answer(context.Background(), rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}}); err != nil {
		t.Fatal(err)
	}
	replies := await(t, "the identical call", second)
	if len(replies) != 1 || replies[0].ID.Raw() != int64(12) || replies[0].Error != nil || !strings.Contains(string(replies[0].Result), `{"answers":[{"id":"web","selected":["No"]}]}`) {
		t.Errorf("the identical call got %+v; want one result under id 12 with the answer", replies)
	}
}

// A call cancelled in a batch (protocol 2025-03-26 allows them) leaves
// the batch's stream open: the other call of the batch gets its answer.
// (Ending the stream, as for a call alone on its POST, took that answer
// with it, while the question read as answered.)
func TestHTTPCancelledCallInABatch(t *testing.T) {
	_, url, person := startHTTP(t, HTTPOptions{Server: Options{Reattach: time.Hour}})
	headers := rawSession(t, url, "2025-03-26")
	batch := postStream(url, headers, `[{"jsonrpc":"2.0","id":11,"method":"tools/call","params":`+askParams("a")+`},`+
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":`+askParams("b")+`}]`)
	recs := waitPending(t, person, 2)
	notifyRaw(t, url, headers, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}`)
	var b client.Record
	for _, rec := range recs {
		if rec.Questions[0].ID == "b" {
			b = rec
		}
	}
	if _, err := person.Answer(context.Background(), b.ID, client.Answer{Answers: []client.AnswerItem{{ID: "b", Selected: []string{"Yes"}}}}); err != nil {
		t.Fatal(err)
	}
	var got bool
	for _, r := range await(t, "the batch's stream to end", batch) {
		if r.ID.Raw() == int64(12) && r.Error == nil && strings.Contains(string(r.Result), `{"answers":[{"id":"b","selected":["Yes"]}]}`) {
			got = true
		}
	}
	if !got {
		t.Error("the call of the batch that was not cancelled did not get its answer")
	}
}

// askParams is the params of an ask_user_question call of one yes-or-no
// question id.
func askParams(id string) string {
	return `{"name":"ask_user_question","arguments":{"questions":[{"id":"` + id + `","question":"Ship it?","options":[{"label":"Yes"},{"label":"No"}]}]}}`
}

// rawSession opens an MCP session on the /mcp of url with askToken, at
// protocol version, by hand, and returns the headers its requests carry.
func rawSession(t *testing.T, url, version string) map[string]string {
	t.Helper()
	init := strings.Replace(initialize, "2025-06-18", version, 1)
	resp := mcpPost(t, url, askToken, init, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	headers := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": version}
	if resp.StatusCode != http.StatusOK || headers["Mcp-Session-Id"] == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, headers["Mcp-Session-Id"])
	}
	notifyRaw(t, url, headers, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return headers
}

// notifyRaw POSTs the notification body in the session of headers.
func notifyRaw(t *testing.T, url string, headers map[string]string, body string) {
	t.Helper()
	resp := mcpPost(t, url, askToken, body, headers)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: status %d, want 202", body, resp.StatusCode)
	}
}

// postStream POSTs body in the session of headers, and sends the
// responses its stream carries once it ends.
func postStream(url string, headers map[string]string, body string) <-chan []*jsonrpc.Response {
	ch := make(chan []*jsonrpc.Response, 1)
	go func() {
		var replies []*jsonrpc.Response
		defer func() { ch <- replies }()
		req, err := mcpRequest(url, askToken, body, headers)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for line := range strings.Lines(string(b)) {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				if msg, err := jsonrpc.DecodeMessage([]byte(strings.TrimSpace(data))); err == nil {
					if r, ok := msg.(*jsonrpc.Response); ok {
						replies = append(replies, r)
					}
				}
			}
		}
	}()
	return ch
}

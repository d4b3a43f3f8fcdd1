package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	mcpserver "github.com/askbridge/askbridge/internal/mcp"
)

const (
	mcpTokens = "api:\n  tokens:\n" +
		"    - {name: agent, token: mcp-agent-3b9f1c, scopes: [ask]}\n" +
		"    - {name: person, token: mcp-person-8e2d4a, scopes: [answer]}\n" +
		"    - {name: other, token: mcp-other-5c7e2b, scopes: [ask]}\n"
	agentToken  = "mcp-agent-3b9f1c"
	personToken = "mcp-person-8e2d4a"
	otherToken  = "mcp-other-5c7e2b"
)

// mcpOptions are the app options of a replica that serves /mcp with
// opts, its Bridge and Tokens filled in by the app.
func mcpOptions(opts mcpserver.HTTPOptions) app.Options {
	return app.Options{MCP: func(apiURL string, tokens bool, log *slog.Logger) app.MCP {
		opts.Bridge, opts.Tokens, opts.Server.Logger = apiURL, tokens, log
		return mcpserver.NewHTTP(opts)
	}}
}

// startMCP starts a replica of yaml serving /mcp with opts, whose log
// must not show the tokens.
func startMCP(t *testing.T, yaml string, opts mcpserver.HTTPOptions) *app.App {
	t.Helper()
	url, prefix := apptest.Redis(t)
	a, _ := apptest.StartWatched(t, apptest.Config(t, yaml, url, prefix), mcpOptions(opts), agentToken, personToken, otherToken)
	return a
}

// bearerTransport sends every request with Authorization: Bearer token.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP connects an MCP client over Streamable HTTP to a's /mcp with
// token; every progress notification it gets goes to progress.
func connectMCP(t *testing.T, a *app.App, token string, progress chan<- float64, noGET bool) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params.Progress:
			default:
			}
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             a.URL() + "/mcp",
		HTTPClient:           &http.Client{Transport: bearerTransport{token}},
		DisableStandaloneSSE: noGET,
	}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type toolResult struct {
	res *mcp.CallToolResult
	err error
}

func callTool(cs *mcp.ClientSession, name string, args any) <-chan toolResult {
	ch := make(chan toolResult, 1)
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	p.SetProgressToken("p1")
	go func() {
		res, err := cs.CallTool(context.Background(), p)
		ch <- toolResult{res, err}
	}()
	return ch
}

// pendingOne waits until one request is pending on the bridge, as the
// person sees it, and returns it.
func pendingOne(t *testing.T, person *client.Client) client.Record {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		list, err := person.Pending(context.Background())
		if err != nil {
			t.Fatalf("pending: %v", err)
		}
		if all := append(list.Questions, list.Approvals...); len(all) == 1 {
			return all[0]
		} else if len(all) > 1 || time.Now().After(deadline) {
			t.Fatalf("%d requests pending, want 1", len(all))
		}
	}
}

// resultText is the text of a tool call's result, which must not be an
// error.
func resultText(t *testing.T, ch <-chan toolResult) string {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("tool call: %v", r.err)
		}
		text := r.res.Content[0].(*mcp.TextContent).Text
		if r.res.IsError {
			t.Fatalf("tool call failed: %s", text)
		}
		return text
	case <-time.After(10 * time.Second):
		t.Fatal("no tool result within 10s")
	}
	return ""
}

func TestMCPOverHTTP(t *testing.T) {
	// A held tool call outlives the API's body deadline: its POST stays
	// open while a person takes their time.
	old := api.BodyTimeout
	api.BodyTimeout = time.Millisecond
	t.Cleanup(func() { api.BodyTimeout = old })

	for _, tc := range []struct {
		name, yaml, agent, person string
	}{
		{"with tokens", mcpTokens, agentToken, personToken},
		{"open API", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startMCP(t, tc.yaml, mcpserver.HTTPOptions{Server: mcpserver.Options{ProgressInterval: 20 * time.Millisecond}})
			person, err := client.New(a.URL(), client.WithToken(tc.person))
			if err != nil {
				t.Fatal(err)
			}
			progress := make(chan float64, 100)
			cs := connectMCP(t, a, tc.agent, progress, false)
			ctx := context.Background()

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if want := []string{"ask_user_question", "request_approval"}; !slices.Equal(names, want) {
				t.Errorf("tools = %v, want %v", names, want)
			}

			call := callTool(cs, "ask_user_question", map[string]any{"questions": []map[string]any{{
				"id": "web", "question": "Deploy web?", "options": []map[string]any{{"label": "Yes"}, {"label": "No"}},
			}}})
			rec := pendingOne(t, person)
			if rec.Caller == nil || rec.Caller.Name != "test-agent" {
				t.Errorf("caller = %+v, want the MCP client's name", rec.Caller)
			}
			// Waited through progress notifications, for longer than the
			// body deadline.
			for waited := 0.0; waited < 0.05; {
				select {
				case waited = <-progress:
				case <-time.After(10 * time.Second):
					t.Fatal("no progress notification within 10s")
				}
			}
			if _, err := person.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"Yes"}}}}); err != nil {
				t.Fatalf("answer: %v", err)
			}
			if got, want := resultText(t, call), `{"answers":[{"id":"web","selected":["Yes"]}]}`; got != want {
				t.Errorf("answer = %s, want %s", got, want)
			}

			call = callTool(cs, "request_approval", map[string]any{"tool_name": "rm", "reason": "clean up", "arguments": map[string]any{"path": "/tmp/x"}})
			rec = pendingOne(t, person)
			if rec.Kind != client.KindApproval || rec.ToolName != "rm" {
				t.Errorf("request = %s %q, want an approval of rm", rec.Kind, rec.ToolName)
			}
			if _, err := person.Decide(ctx, rec.ID, client.Decision{Outcome: client.OutcomeRejected, Note: "not now"}); err != nil {
				t.Fatalf("decide: %v", err)
			}
			if got, want := resultText(t, call), `{"outcome":"rejected","note":"not now"}`; got != want {
				t.Errorf("decision = %s, want %s", got, want)
			}
		})
	}
}

// A call waits for its person however long the session's idle timeout:
// a request open (the call's POST) holds it off.
func TestMCPIdleTimeoutSparesAWaitingCall(t *testing.T) {
	// Long enough for the call to reach the bridge after the connection
	// on a loaded machine: the session is idle in between.
	idle := time.Second
	a := startMCP(t, mcpTokens, mcpserver.HTTPOptions{Idle: idle, Server: mcpserver.Options{ProgressInterval: 50 * time.Millisecond}})
	person, _ := client.New(a.URL(), client.WithToken(personToken))
	progress := make(chan float64, 100)
	cs := connectMCP(t, a, agentToken, progress, true)
	call := callTool(cs, "ask_user_question", map[string]any{"questions": []map[string]any{{"id": "go", "question": "Go?"}}})
	rec := pendingOne(t, person)
	for waited := 0.0; waited < 2*idle.Seconds(); {
		select {
		case waited = <-progress:
		case <-time.After(10 * time.Second):
			t.Fatal("no progress notification within 10s")
		}
	}
	if _, err := person.Answer(context.Background(), rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "go", Custom: "yes"}}}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	if got, want := resultText(t, call), `{"answers":[{"id":"go","selected":[],"custom":"yes"}]}`; got != want {
		t.Errorf("answer = %s, want %s", got, want)
	}
}

func TestMCPAuth(t *testing.T) {
	locked := startMCP(t, mcpTokens, mcpserver.HTTPOptions{})
	open := startMCP(t, "", mcpserver.HTTPOptions{})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct {
		name   string
		a      *app.App
		token  string
		host   string
		status int
		code   string
	}{
		{"no token", locked, "", "", http.StatusUnauthorized, api.CodeUnauthorized},
		{"unknown token", locked, "not-a-token", "", http.StatusUnauthorized, api.CodeUnauthorized},
		{"token without ask", locked, personToken, "", http.StatusForbidden, api.CodeForbidden},
		{"open API, not addressed to loopback", open, "", "bridge.example.com", http.StatusForbidden, api.CodeForbidden},
		{"token with ask", locked, agentToken, "", http.StatusOK, ""},
		{"token with ask, through a proxy", locked, agentToken, "bridge.example.com", http.StatusOK, ""},
		{"open API", open, "", "", http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, tc.a.URL()+"/mcp", strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.code == "" {
				if id := resp.Header.Get("Mcp-Session-Id"); id == "" {
					t.Error("no Mcp-Session-Id: no session opened")
				}
				return
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != tc.code {
				t.Errorf("body: code %q (%v), want the API's error %s", body.Error.Code, err, tc.code)
			}
		})
	}
}

// A session that ends withdraws the questions its calls wait for, as
// bridge mcp does when its client goes.
func TestMCPSessionEndWithdraws(t *testing.T) {
	a := startMCP(t, mcpTokens, mcpserver.HTTPOptions{})
	person, _ := client.New(a.URL(), client.WithToken(personToken))
	cs := connectMCP(t, a, agentToken, nil, false)
	callTool(cs, "ask_user_question", map[string]any{"questions": []map[string]any{{"id": "go", "question": "Go?"}}})
	rec := pendingOne(t, person)
	// The client ends its session, as one does when it quits. (The SDK's
	// ClientSession.Close waits for the call first.)
	resp, err := rawDelete(context.Background(), a, cs, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: status %d, want 204", resp.StatusCode)
	}
	wantCancelled(t, person, rec.ID, 10*time.Second, "the session ended")
}

// A replica that stops withdraws the questions of its MCP sessions, and
// its held POSTs do not keep the HTTP server's shutdown waiting.
func TestMCPStopWithdraws(t *testing.T) {
	url, prefix := apptest.Redis(t)
	cfg := apptest.Config(t, mcpTokens, url, prefix)
	r := apptest.Run(t, cfg, mcpOptions(mcpserver.HTTPOptions{}), slog.New(slog.NewTextHandler(&apptest.LogBuffer{}, nil)))
	person, _ := client.New(r.URL(), client.WithToken(personToken))
	cs := connectMCP(t, r.App, agentToken, nil, false)
	callTool(cs, "ask_user_question", map[string]any{"questions": []map[string]any{{"id": "go", "question": "Go?"}}})
	rec := pendingOne(t, person)
	r.Stop()
	select {
	case err := <-r.Done:
		if err != nil {
			t.Fatalf("app.Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the replica did not stop within 15s")
	}
	b := apptest.Start(t, cfg, app.Options{})
	person, _ = client.New(b.URL(), client.WithToken(personToken))
	wantCancelled(t, person, rec.ID, 0, "the replica stopped")
}

// rawPost sends body to a's /mcp in session (cs's, unless given) with
// token, as an MCP client does, under ctx.
func rawPost(ctx context.Context, a *app.App, cs *mcp.ClientSession, session, token, body string) (*http.Response, error) {
	return rawRequest(ctx, a, http.MethodPost, cs, session, token, strings.NewReader(body))
}

// rawDelete ends cs's session at a's /mcp with token, as an MCP client
// does as it quits, under ctx.
func rawDelete(ctx context.Context, a *app.App, cs *mcp.ClientSession, token string) (*http.Response, error) {
	return rawRequest(ctx, a, http.MethodDelete, cs, "", token, nil)
}

// rawRequest sends a request of method, with body unless it is nil, to
// a's /mcp in session (cs's, unless given) with token, as an MCP client
// does, under ctx.
func rawRequest(ctx context.Context, a *app.App, method string, cs *mcp.ClientSession, session, token string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.URL()+"/mcp", body)
	if err != nil {
		return nil, err
	}
	if session == "" {
		session = cs.ID()
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultClient.Do(req)
}

// wantCancelled checks that the request id is withdrawn, as person sees
// it (waiting up to wait for it to end), after what happened.
func wantCancelled(t *testing.T, person *client.Client, id string, wait time.Duration, after string) {
	t.Helper()
	got, err := person.Get(context.Background(), id, wait)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != client.StatusCancelled {
		t.Errorf("status after %s = %s, want %s", after, got.Status, client.StatusCancelled)
	}
}

// A tool call whose POST's client goes away, its session still open (its
// GET stream too), is a call whose client cancelled it: its question is
// withdrawn once its re-attach window passes (at once here), not left
// asked for an answer nobody would read.
func TestMCPCutPostWithdraws(t *testing.T) {
	a := startMCP(t, mcpTokens, mcpserver.HTTPOptions{Server: mcpserver.Options{Reattach: -1}})
	person, _ := client.New(a.URL(), client.WithToken(personToken))
	cs := connectMCP(t, a, agentToken, nil, false)
	ctx, cut := context.WithCancel(context.Background())
	defer cut()
	posted := make(chan error, 1)
	go func() {
		resp, err := rawPost(ctx, a, cs, "", agentToken, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_user_question","arguments":{"questions":[{"id":"go","question":"Go?"}]}}}`)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body) // held until the call ends
			resp.Body.Close()
		}
		posted <- err
	}()
	rec := pendingOne(t, person)
	cut()
	<-posted
	wantCancelled(t, person, rec.ID, 10*time.Second, "the call's POST went away")
}

// A session is its token's: a request under another token, or for a
// session the bridge does not hold, is 404, as if there were none, and
// reaches no session.
func TestMCPSessionIsItsTokens(t *testing.T) {
	a := startMCP(t, mcpTokens, mcpserver.HTTPOptions{})
	cs := connectMCP(t, a, agentToken, nil, true)
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	for _, tc := range []struct {
		name, token, session string
	}{
		{"another token", otherToken, cs.ID()},
		{"an unknown session", agentToken, "NO-SUCH-SESSION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := rawPost(context.Background(), a, cs, tc.session, tc.token, list)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("status %d, want 404", resp.StatusCode)
			}
			// In the API's shape, with its stable code.
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != "NOT_FOUND" {
				t.Errorf("body: code %q, %v; want the API's error NOT_FOUND", body.Error.Code, err)
			}
		})
	}
	// The session's own token still reaches it.
	resp, err := rawPost(context.Background(), a, cs, "", agentToken, list)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the session's own token: status %d, want 200", resp.StatusCode)
	}
}

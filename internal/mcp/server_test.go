package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/seam"
)

// within is how long a test waits for something that should take
// milliseconds before it fails.
const within = 10 * time.Second

// env is an MCP client session connected in-process to a Server that
// forwards to a real bridge, and a client of that bridge to answer with.
type env struct {
	srv      *Server
	cs       *mcp.ClientSession
	bridge   *client.Client      // the answerer's view of the bridge
	progress chan progressReport // every progress notification the client got
	events   chan string         // the server's trace events
}

type progressReport struct {
	token    any
	progress float64
	message  string
}

// newBridge starts a bridge with the config yaml ("": the default) and
// returns its URL.
func newBridge(t *testing.T, yaml string) string {
	t.Helper()
	url, prefix := apptest.Redis(t)
	return apptest.Start(t, apptest.Config(t, yaml, url, prefix), app.Options{}).URL()
}

// start connects an MCP client to a new Server with opts on the bridge at
// url, or on a new bridge when url is "", through a bridge client with
// copts.
func start(t *testing.T, url string, opts Options, copts ...client.ClientOption) *env {
	t.Helper()
	return startAs(t, &mcp.Implementation{Name: "test-agent", Version: "1.0"}, url, opts, copts...)
}

// startAs is start with an MCP client that names itself as impl.
func startAs(t *testing.T, impl *mcp.Implementation, url string, opts Options, copts ...client.ClientOption) *env {
	t.Helper()
	if url == "" {
		url = newBridge(t, "")
	}
	bc, err := client.New(url, append([]client.ClientOption{client.WithPollWait(time.Second)}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		bridge:   bc,
		progress: make(chan progressReport, 1000),
		events:   make(chan string, 1000),
	}
	e.srv = New(bc, opts)
	e.srv.trace = func(event string) { e.events <- event }

	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.srv.mcp.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(impl, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			e.progress <- progressReport{req.Params.ProgressToken, req.Params.Progress, req.Params.Message}
		},
	})
	e.cs, err = c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.cs.Close()
		ss.Wait()
		e.srv.Close()
	})
	return e
}

// result is what a tool call returned.
type result struct {
	res *mcp.CallToolResult
	err error
}

// call calls tool with args; with a non-empty token it asks for progress.
func (e *env) call(ctx context.Context, tool string, args any, token string) <-chan result {
	ch := make(chan result, 1)
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != "" {
		p.SetProgressToken(token)
	}
	go func() {
		res, err := e.cs.CallTool(ctx, p)
		ch <- result{res, err}
	}()
	return ch
}

// pending polls the bridge until n requests of kind are pending and returns
// them; it fails if more turn up.
func (e *env) pending(t *testing.T, kind client.Kind, n int) []client.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := e.bridge.Pending(ctx)
		if err != nil {
			t.Fatalf("waiting for %d pending %s: %v", n, kind, err)
		}
		recs := list.Questions
		if kind == client.KindApproval {
			recs = list.Approvals
		}
		if len(recs) > n {
			t.Fatalf("%d %ss pending, want %d: %+v", len(recs), kind, n, recs)
		}
		if len(recs) == n {
			return recs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d %ss pending after %s, want %d", len(recs), kind, within, n)
		case <-tick.C:
		}
	}
}

// progressFrom waits for the next progress notification with token.
func (e *env) progressFrom(t *testing.T, token string) progressReport {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case p := <-e.progress:
			if p.token == token {
				return p
			}
		case <-deadline:
			t.Fatalf("no progress notification for %q within %s", token, within)
		}
	}
}

// event waits for the server's next trace event named what.
func (e *env) event(t *testing.T, what string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-e.events:
			if ev == what {
				return
			}
		case <-deadline:
			t.Fatalf("no %q event within %s", what, within)
		}
	}
}

func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("%s: nothing within %s", what, within)
		panic("unreachable")
	}
}

// text is the result's text content, failing unless the call succeeded
// (isError or not, as want says) with one text item.
func text(t *testing.T, r result, wantError bool) string {
	t.Helper()
	if r.err != nil {
		t.Fatalf("CallTool: %v", r.err)
	}
	if r.res.IsError != wantError {
		t.Fatalf("isError = %v, want %v; content %s", r.res.IsError, wantError, mustJSON(t, r.res.Content))
	}
	if len(r.res.Content) != 1 {
		t.Fatalf("content = %s, want one text item", mustJSON(t, r.res.Content))
	}
	tc, ok := r.res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content = %T, want text", r.res.Content[0])
	}
	return tc.Text
}

// answerJSON checks a successful result: its text is want, verbatim, and
// its structured content is the same JSON.
func answerJSON(t *testing.T, r result, want string) {
	t.Helper()
	if got := text(t, r, false); got != want {
		t.Errorf("text = %s\nwant   %s", got, want)
	}
	var got, wantV any
	if err := json.Unmarshal([]byte(mustJSON(t, r.res.StructuredContent)), &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(want), &wantV)
	if !reflect.DeepEqual(got, wantV) {
		t.Errorf("structuredContent = %s, want %s", mustJSON(t, r.res.StructuredContent), want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func yesNo(id string) map[string]any {
	return map[string]any{"id": id, "question": "Deploy " + id + "?", "header": "Deploy",
		"options": []map[string]any{{"label": "Yes (Recommended)", "description": "ships v2"}, {"label": "No"}}}
}

func questions(qs ...map[string]any) map[string]any { return map[string]any{"questions": qs} }

func TestTools(t *testing.T) {
	e := start(t, "", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	// Tools, and nothing else; the list never changes, so no listChanged.
	if caps := e.cs.InitializeResult().Capabilities; caps.Tools == nil || caps.Tools.ListChanged || caps.Prompts != nil || caps.Resources != nil {
		t.Errorf("capabilities %+v, want tools without listChanged", caps)
	}
	res, err := e.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	for name, required := range map[string][]string{
		"ask_user_question": {"questions"},
		"request_approval":  {"tool_name"},
	} {
		tool := got[name]
		if tool == nil {
			t.Errorf("no tool %s; tools: %s", name, mustJSON(t, res.Tools))
			continue
		}
		var schema struct {
			Type     string   `json:"type"`
			Required []string `json:"required"`
		}
		json.Unmarshal([]byte(mustJSON(t, tool.InputSchema)), &schema)
		if schema.Type != "object" || !reflect.DeepEqual(schema.Required, required) || tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s: input schema %s, output schema %v", name, mustJSON(t, tool.InputSchema), tool.OutputSchema)
		}
	}
	if len(got) != 2 {
		t.Errorf("%d tools, want 2", len(got))
	}
}

func TestAskUserQuestion(t *testing.T) {
	e := start(t, "", Options{})
	multi := map[string]any{"id": "envs", "question": "Which environments?", "multi_select": true,
		"options": []map[string]any{{"label": "dev"}, {"label": "staging"}, {"label": "prod <eu>"}}}

	for _, tc := range []struct {
		name    string
		args    map[string]any
		check   func(t *testing.T, rec client.Record)
		respond func(ctx context.Context, id string) (*client.Record, error)
		want    string // the result's text
		isError bool
	}{{
		name: "single answer",
		args: questions(yesNo("web")),
		check: func(t *testing.T, rec client.Record) {
			want := []client.Question{{ID: "web", Question: "Deploy web?", Header: "Deploy",
				Options: []client.Option{{Label: "Yes (Recommended)", Description: "ships v2"}, {Label: "No"}}}}
			if !reflect.DeepEqual(rec.Questions, want) {
				t.Errorf("questions on the bridge = %+v, want %+v", rec.Questions, want)
			}
		},
		respond: func(ctx context.Context, id string) (*client.Record, error) {
			return e.bridge.Answer(ctx, id, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"Yes (Recommended)"}}}})
		},
		want: `{"answers":[{"id":"web","selected":["Yes (Recommended)"]}]}`,
	}, {
		name: "multi-select and free text",
		args: questions(multi, map[string]any{"id": "why", "question": "Why now?", "detail": "**v2** is ready"}),
		check: func(t *testing.T, rec client.Record) {
			if len(rec.Questions) != 2 || !rec.Questions[0].MultiSelect || rec.Questions[1].Detail != "**v2** is ready" {
				t.Errorf("questions on the bridge = %+v, want envs multi-select and why with its detail", rec.Questions)
			}
		},
		respond: func(ctx context.Context, id string) (*client.Record, error) {
			return e.bridge.Answer(ctx, id, client.Answer{Answers: []client.AnswerItem{
				{ID: "envs", Selected: []string{"prod <eu>", "dev"}},
				{ID: "why", Custom: " the freeze ends today "},
			}})
		},
		want: `{"answers":[{"id":"envs","selected":["dev","prod <eu>"]},{"id":"why","selected":[],"custom":"the freeze ends today"}]}`,
	}, {
		name:    "dismissed",
		args:    questions(yesNo("web")),
		respond: func(ctx context.Context, id string) (*client.Record, error) { return e.bridge.Dismiss(ctx, id) },
		want:    "ASK_CANCELLED: the user cancelled ask_user_question",
		isError: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			done := e.call(ctx, "ask_user_question", tc.args, "")
			rec := e.pending(t, client.KindQuestion, 1)[0]
			if rec.Caller == nil || rec.Caller.Name != "test-agent" {
				t.Errorf("caller = %+v, want the MCP client's name", rec.Caller)
			}
			if !strings.HasPrefix(rec.ToolCallID, "mcp-") {
				t.Errorf("tool_call_id = %q, want one derived by the MCP server", rec.ToolCallID)
			}
			if tc.check != nil {
				tc.check(t, rec)
			}
			if _, err := tc.respond(ctx, rec.ID); err != nil {
				t.Fatal(err)
			}
			r := await(t, "the tool call", done)
			if tc.isError {
				if got := text(t, r, true); got != tc.want {
					t.Errorf("error text = %q, want %q", got, tc.want)
				}
				if r.res.StructuredContent != nil {
					t.Errorf("structuredContent = %v on an error", r.res.StructuredContent)
				}
				return
			}
			answerJSON(t, r, tc.want)
		})
	}
}

// downURL is a bridge URL where nothing listens.
func downURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // nothing listens there once it returns
	return "http://" + ln.Addr().String()
}

func TestErrors(t *testing.T) {
	url := newBridge(t, "")
	locked := newBridge(t, "api:\n  tokens:\n    - {name: agent, token: ask-secret-7f3c9e21b4, scopes: [ask]}\n")
	down := downURL(t)

	for _, tc := range []struct {
		name string
		url  string
		opts Options
		args any
		want string // prefix of the error text
	}{
		{"no provider", url, Options{Route: "nope"}, questions(yesNo("web")), "NO_PROVIDER: no user-questions answerer accepted the request"},
		{"no questions", url, Options{}, map[string]any{}, "EMPTY_QUESTIONS: ask_user_question requires at least one question"},
		{"duplicate ids", url, Options{}, questions(yesNo("web"), yesNo("web")), "INVALID_REQUEST: "},
		{"arguments of the wrong type", url, Options{}, map[string]any{"questions": "deploy?"}, "INVALID_REQUEST: arguments.questions must be an array, not a JSON string"},
		{"an option of the wrong type", url, Options{}, map[string]any{"questions": []any{map[string]any{"id": "a", "question": "Go?", "options": []any{"yes"}}}}, "INVALID_REQUEST: arguments.questions[0].options[0] must be an object, not a JSON string"},
		{"a second question's option of the wrong type", url, Options{}, map[string]any{"questions": []any{yesNo("web"), map[string]any{"id": "b", "question": "Go?", "options": []any{map[string]any{"label": "yes"}, map[string]any{"label": true}}}}}, "INVALID_REQUEST: arguments.questions[1].options[1].label must be a string, not a JSON boolean"},
		{"no token", locked, Options{}, questions(yesNo("web")), "UNAUTHORIZED: send Authorization: Bearer <token>; the bridge refused the BRIDGE_TOKEN that bridge mcp runs with"},
		{"bridge down", down, Options{}, questions(yesNo("web")), "ASKBRIDGE_UNREACHABLE: create question: can't reach the bridge at " + down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, tc.url, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			r := await(t, "the tool call", e.call(ctx, "ask_user_question", tc.args, ""))
			got := text(t, r, true)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("error text = %q, want it to start %q", got, tc.want)
			}
			// Whoever reads it is told what to check, as the CLI tells.
			if hint := "; is `bridge serve` running there? bridge mcp's --server (or BRIDGE_SERVER) in the MCP client's config says where it is"; tc.url == down && !strings.HasSuffix(got, hint) {
				t.Errorf("error text = %q, want it to end %q", got, hint)
			}
			if tc.url == url {
				e.pending(t, client.KindQuestion, 0)
			}
		})
	}
}

// A call refused for its arguments names the top-level keys its tool does
// not take, and what it takes: a misspelt "questions" reads as no
// questions at all. Such a key fails no call (the schemas leave
// additionalProperties open), and is read as encoding/json reads it.
func TestUnknownArguments(t *testing.T) {
	e := start(t, "", Options{})
	for _, tc := range []struct {
		name, tool string
		args       any
		want       string // the error text
	}{
		{"misspelt questions", "ask_user_question", map[string]any{"questons": []any{yesNo("web")}},
			`EMPTY_QUESTIONS: unknown argument "questons" (ask_user_question takes questions); ask_user_question requires at least one question`},
		{"two, and another spelling of questions", "ask_user_question", map[string]any{"Questions": []any{}, "q": 1, "extra": true},
			`EMPTY_QUESTIONS: unknown arguments "extra", "q" (ask_user_question takes questions); ask_user_question requires at least one question`},
		{"with a bad question", "ask_user_question", map[string]any{"questions": []any{yesNo("web"), yesNo("web")}, "why": "x"},
			`INVALID_REQUEST: unknown argument "why" (ask_user_question takes questions); `},
		{"with arguments of the wrong type", "ask_user_question", map[string]any{"questions": "deploy?", "why": "x"},
			`INVALID_REQUEST: unknown argument "why" (ask_user_question takes questions); arguments.questions must be an array, not a JSON string`},
		{"misspelt tool_name", "request_approval", map[string]any{"toolName": "rm", "reason": "cleanup"},
			`INVALID_REQUEST: unknown argument "toolName" (request_approval takes tool_name, reason, arguments); an approval needs tool_name`},
		{"none unknown", "request_approval", map[string]any{"reason": "cleanup"}, `INVALID_REQUEST: an approval needs tool_name`},
		// At most five are named, each cut to 64 characters; the others
		// are counted.
		{"many, one long", "ask_user_question", map[string]any{"a": 1, "a" + strings.Repeat("é", 99): 1, "b": 1, "c": 1, "d": 1, "e": 1, "f" + strings.Repeat("x", 500): 1},
			`EMPTY_QUESTIONS: unknown arguments "a", "a` + strings.Repeat("é", 63) + `"…, "b", "c", "d" and 2 more (ask_user_question takes questions); ask_user_question requires at least one question`},
		{"six", "request_approval", map[string]any{"tool": "rm", "a": 1, "b": 1, "c": 1, "d": 1, "e": 1},
			`INVALID_REQUEST: unknown arguments "a", "b", "c", "d", "e" and 1 more (request_approval takes tool_name, reason, arguments); an approval needs tool_name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			got := text(t, await(t, "the tool call", e.call(ctx, tc.tool, tc.args, "")), true)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("error text = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a call that is otherwise good", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		done := e.call(ctx, "ask_user_question", map[string]any{"questions": []any{yesNo("web")}, "priority": "high"}, "")
		rec := e.pending(t, client.KindQuestion, 1)[0]
		if _, err := e.bridge.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}}); err != nil {
			t.Fatal(err)
		}
		answerJSON(t, await(t, "the tool call", done), `{"answers":[{"id":"web","selected":["No"]}]}`)
	})
	for tool, want := range map[string][]string{"ask_user_question": {"questions"}, "request_approval": {"tool_name", "reason", "arguments"}} {
		if !reflect.DeepEqual(takes[tool], want) {
			t.Errorf("%s takes %q, want %q", tool, takes[tool], want)
		}
	}
	for _, tool := range []*mcp.Tool{askTool, approvalTool} {
		var schema map[string]json.RawMessage
		json.Unmarshal(tool.InputSchema.(json.RawMessage), &schema)
		if v, ok := schema["additionalProperties"]; ok && string(v) != "true" {
			t.Errorf("%s: additionalProperties %s, yet a call with other arguments goes through", tool.Name, v)
		}
	}
}

// An unknown key is named only in a refusal it can be the cause of, one
// that names an argument the tool takes (as above): not in a refusal of
// what the server sends itself, here a caller the bridge takes too long.
func TestUnknownArgumentsOnlyWhereTheyCanBeTheCause(t *testing.T) {
	e := start(t, "", Options{Caller: &client.Caller{Name: strings.Repeat("n", seam.MaxCallerFieldLen+1)}})
	want := fmt.Sprintf("INVALID_REQUEST: caller.name is longer than %d characters", seam.MaxCallerFieldLen)
	for tool, args := range map[string]any{
		"ask_user_question": map[string]any{"questions": []any{yesNo("web")}, "why": "x"},
		"request_approval":  map[string]any{"tool_name": "rm", "reason": "cleanup", "why": "x"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		if got := text(t, await(t, "the tool call", e.call(ctx, tool, args, "")), true); got != want {
			t.Errorf("%s: error text = %q, want %q", tool, got, want)
		}
	}
	for _, tc := range []struct {
		tool, msg string
		names     bool
	}{
		{"ask_user_question", "questions[0] has no id", true},
		{"ask_user_question", `question "web": header is longer than 100 characters`, true},
		{"ask_user_question", `question id "web" is used twice; ids must be unique in a request`, true},
		{"ask_user_question", "a request holds at most 10 questions, this one has 11", true},
		{"ask_user_question", "caller.name is longer than 200 characters", false},
		{"ask_user_question", "route is longer than 100 bytes", false},
		{"ask_user_question", "tool_call_id is longer than 200 bytes", false},
		{"ask_user_question", `expires_in: "x" is not a duration; write 30s, 10m or a number of seconds`, false},
		{"request_approval", "an approval needs tool_name", true},
		{"request_approval", "reason is longer than 4000 characters", true},
		{"request_approval", "arguments are larger than 256 KiB", true},
		{"request_approval", "display_reason is longer than 4000 characters", false},
		{"request_approval", "call_id is longer than 200 bytes", false},
		{"request_approval", "caller.agent is longer than 200 characters", false},
	} {
		if got := namesArgument(tc.tool, tc.msg); got != tc.names {
			t.Errorf("namesArgument(%s, %q) = %v, want %v", tc.tool, tc.msg, got, tc.names)
		}
	}
}

// An MCP client's name longer than the bridge takes as a caller's is cut
// to its limit, on a rune boundary: else every tool call failed with
// INVALID_REQUEST.
func TestLongClientNameIsCut(t *testing.T) {
	long := strings.Repeat("é", seam.MaxCallerFieldLen)
	e := startAs(t, &mcp.Implementation{Name: "n", Title: long + "ü, and more", Version: "1"}, "", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
	rec := e.pending(t, client.KindQuestion, 1)[0] // before: none, the call refused
	if rec.Caller == nil || rec.Caller.Name != long {
		t.Errorf("caller = %+v, want the client's title cut to %d characters", rec.Caller, seam.MaxCallerFieldLen)
	}
	if _, err := e.bridge.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}}); err != nil {
		t.Fatal(err)
	}
	answerJSON(t, await(t, "the tool call", done), `{"answers":[{"id":"web","selected":["No"]}]}`)
}

// A create the bridge refuses is logged as refused, with its code: nothing
// was asked, so nothing "ended without an answer".
func TestRefusedCreateIsLoggedAsRefused(t *testing.T) {
	var logs apptest.LogBuffer
	e := start(t, "", Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for _, tc := range []struct {
		args any
		code string
	}{
		{map[string]any{"questions": []any{}}, "EMPTY_QUESTIONS"},
		{questions(yesNo("web"), yesNo("web")), "INVALID_REQUEST"},
	} {
		text(t, await(t, "the tool call", e.call(ctx, "ask_user_question", tc.args, "")), true)
		logs.WaitFor(t, "code="+tc.code, within)
	}
	got := logs.String()
	if n := strings.Count(got, `level=INFO msg="the bridge refused the request"`); n != 2 || strings.Contains(got, "ended without an answer") {
		t.Errorf("log:\n%s\nwant both creates logged as refused (with their codes), and none as ended", got)
	}
}

func TestRequestApproval(t *testing.T) {
	e := start(t, "", Options{})
	for _, tc := range []struct {
		name     string
		decision client.Decision
		want     string
	}{
		{"allowed", client.Decision{Outcome: client.OutcomeAllowedOnce}, `{"outcome":"allowed-once"}`},
		{"rejected with a note", client.Decision{Outcome: client.OutcomeRejected, Note: " not on a Friday "}, `{"outcome":"rejected","note":"not on a Friday"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			done := e.call(ctx, "request_approval", json.RawMessage(`{"tool_name":"kubectl_apply","reason":"roll out v2","arguments":{"file":"v2.yaml","replicas":3}}`), "")
			rec := e.pending(t, client.KindApproval, 1)[0]
			if rec.ToolName != "kubectl_apply" || rec.Reason != "roll out v2" || rec.CallID != rec.ToolCallID {
				t.Errorf("approval on the bridge = %+v", rec)
			}
			var args map[string]any
			if err := json.Unmarshal(rec.Arguments, &args); err != nil || args["file"] != "v2.yaml" || args["replicas"] != 3.0 {
				t.Errorf("arguments on the bridge = %s (%v)", rec.Arguments, err)
			}
			if _, err := e.bridge.Decide(ctx, rec.ID, tc.decision); err != nil {
				t.Fatal(err)
			}
			answerJSON(t, await(t, "the tool call", done), tc.want)
		})
	}
	t.Run("dismissed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		done := e.call(ctx, "request_approval", map[string]any{"tool_name": "rm"}, "")
		rec := e.pending(t, client.KindApproval, 1)[0]
		if _, err := e.bridge.Dismiss(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
		if got := text(t, await(t, "the tool call", done), true); !strings.HasPrefix(got, "ASK_CANCELLED: ") {
			t.Errorf("error text = %q, want ASK_CANCELLED", got)
		}
	})
}

func TestProgress(t *testing.T) {
	e := start(t, "", Options{ProgressInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := e.call(ctx, "ask_user_question", questions(yesNo("web")), "tok-1")
	rec := e.pending(t, client.KindQuestion, 1)[0]

	// Notifications keep coming while the question waits, each further on,
	// and name the request once it is created.
	var last float64
	for n := 1; ; n++ {
		p := e.progressFrom(t, "tok-1")
		if p.progress <= last {
			t.Errorf("progress %v after %v, want it to grow", p.progress, last)
		}
		last = p.progress
		if n >= 3 && strings.Contains(p.message, rec.ID) {
			break
		}
	}
	if _, err := e.bridge.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}}); err != nil {
		t.Fatal(err)
	}
	answerJSON(t, await(t, "the tool call", done), `{"answers":[{"id":"web","selected":["No"]}]}`)
}

// TestProgressBeforeTheRequestExists: while the bridge has not answered
// the create, nobody has been asked, and the progress says so.
func TestProgressBeforeTheRequestExists(t *testing.T) {
	release := make(chan struct{})
	bridge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select { // the create is taken, never answered
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json") // the withdrawal
		io.WriteString(w, `{"id":"abcdefghijklmnop","kind":"question","status":"cancelled"}`)
	}))
	t.Cleanup(bridge.Close)
	t.Cleanup(func() { close(release) })
	e := start(t, bridge.URL, Options{ProgressInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := e.call(ctx, "ask_user_question", questions(yesNo("web")), "tok-1")
	for range 3 {
		if p := e.progressFrom(t, "tok-1"); !strings.HasPrefix(p.message, "asking the bridge (") {
			t.Errorf("progress %q before the bridge answered; want \"asking the bridge (...)\"", p.message)
		}
	}
	cancel()
	await(t, "the call", done)
}

// TestReattach checks that identical calls share one bridge request while
// it is pending, and that an answer no call received goes to the retry.
func TestReattach(t *testing.T) {
	answer := func(t *testing.T, e *env, id string) {
		t.Helper()
		if _, err := e.bridge.Answer(context.Background(), id, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"Yes (Recommended)"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	const want = `{"answers":[{"id":"web","selected":["Yes (Recommended)"]}]}`
	// The same question, as another client might serialise it.
	same := json.RawMessage(`{"questions":[{"options":[{"description":"ships v2","label":"Yes (Recommended)"},{"label":"No"}],
		"header":"Deploy","question":"Deploy web?","id":"web"}]}`)

	t.Run("while another identical call waits", func(t *testing.T) {
		e := start(t, "", Options{ProgressInterval: 10 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		first := e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
		rec := e.pending(t, client.KindQuestion, 1)[0]
		second := e.call(ctx, "ask_user_question", same, "second")
		e.progressFrom(t, "second") // it is waiting
		if got := e.pending(t, client.KindQuestion, 1)[0]; got.ID != rec.ID {
			t.Fatalf("pending request %s, want %s", got.ID, rec.ID)
		}
		answer(t, e, rec.ID)
		answerJSON(t, await(t, "the first call", first), want)
		answerJSON(t, await(t, "the second call", second), want)
	})

	t.Run("after the client gave up on the first call", func(t *testing.T) {
		e := start(t, "", Options{ProgressInterval: 10 * time.Millisecond})
		ctx1, giveUp := context.WithCancel(context.Background())
		first := e.call(ctx1, "ask_user_question", questions(yesNo("web")), "")
		rec := e.pending(t, client.KindQuestion, 1)[0]
		giveUp()
		if r := await(t, "the first call", first); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("first call = %+v, %v; want it cancelled", r.res, r.err)
		}
		e.event(t, "detached")

		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		retry := e.call(ctx, "ask_user_question", same, "retry")
		e.progressFrom(t, "retry")
		if got := e.pending(t, client.KindQuestion, 1)[0]; got.ID != rec.ID {
			t.Fatalf("pending request %s, want the first one, %s, still pending", got.ID, rec.ID)
		}
		answer(t, e, rec.ID)
		answerJSON(t, await(t, "the retry", retry), want)
	})

	t.Run("answered after the client gave up", func(t *testing.T) {
		e := start(t, "", Options{})
		ctx1, giveUp := context.WithCancel(context.Background())
		e.call(ctx1, "ask_user_question", questions(yesNo("web")), "")
		rec := e.pending(t, client.KindQuestion, 1)[0]
		giveUp()
		e.event(t, "detached")
		answer(t, e, rec.ID)
		e.event(t, "ended")

		// The retry gets the answer the first call missed; had it asked
		// again, nobody would answer and it would not return.
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		answerJSON(t, await(t, "the retry", e.call(ctx, "ask_user_question", same, "")), want)
		e.pending(t, client.KindQuestion, 0)
	})

	t.Run("asked again once answered", func(t *testing.T) {
		e := start(t, "", Options{})
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		first := e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
		rec := e.pending(t, client.KindQuestion, 1)[0]
		answer(t, e, rec.ID)
		answerJSON(t, await(t, "the first call", first), want)

		second := e.call(ctx, "ask_user_question", same, "")
		again := e.pending(t, client.KindQuestion, 1)[0]
		if again.ID == rec.ID || again.ToolCallID == rec.ToolCallID {
			t.Fatalf("second request %s (%s), want a new one after %s (%s)", again.ID, again.ToolCallID, rec.ID, rec.ToolCallID)
		}
		if _, err := e.bridge.Dismiss(ctx, again.ID); err != nil {
			t.Fatal(err)
		}
		await(t, "the second call", second)
	})

	t.Run("different questions are different requests", func(t *testing.T) {
		e := start(t, "", Options{})
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		web := e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
		api := e.call(ctx, "ask_user_question", questions(yesNo("api")), "")
		for _, rec := range e.pending(t, client.KindQuestion, 2) {
			if _, err := e.bridge.Dismiss(ctx, rec.ID); err != nil {
				t.Fatal(err)
			}
		}
		await(t, "the web call", web)
		await(t, "the api call", api)
	})
}

// TestCancel checks that a call the client cancelled withdraws its bridge
// request: at once, or once the re-attach window passed with no retry.
func TestCancel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reattach time.Duration
	}{
		{"at once", -1},
		{"after the re-attach window", 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, "", Options{Reattach: tc.reattach})
			ctx, cancel := context.WithCancel(context.Background())
			done := e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
			rec := e.pending(t, client.KindQuestion, 1)[0]
			cancel()
			if r := await(t, "the call", done); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("call = %+v, %v; want it cancelled", r.res, r.err)
			}
			wctx, wcancel := context.WithTimeout(context.Background(), within)
			defer wcancel()
			got, err := e.bridge.Get(wctx, rec.ID, within)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != client.StatusCancelled || got.Error == nil || got.Error.Code != client.CodeAborted {
				t.Errorf("request after the cancel = %s %+v, want cancelled with ASK_ABORTED", got.Status, got.Error)
			}
		})
	}
}

// TestClose checks that closing the server withdraws what is pending and
// ends the calls waiting for it.
func TestClose(t *testing.T) {
	e := start(t, "", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
	rec := e.pending(t, client.KindQuestion, 1)[0]
	e.srv.Close()
	if got := text(t, await(t, "the call", done), true); !strings.HasPrefix(got, "ASK_ABORTED: ") {
		t.Errorf("error text = %q, want ASK_ABORTED", got)
	}
	got, err := e.bridge.Get(ctx, rec.ID, 0)
	if err != nil || got.Status != client.StatusCancelled {
		t.Errorf("request after Close = %+v, %v; want cancelled", got, err)
	}
	r := await(t, "a call after Close", e.call(ctx, "ask_user_question", questions(yesNo("web")), ""))
	if got := text(t, r, true); got != errClosed.Error() {
		t.Errorf("call after Close = %q, want %q", got, errClosed)
	}
}

func TestKeys(t *testing.T) {
	s := New(nil, Options{})
	req := client.QuestionRequest{Questions: []client.Question{{ID: "a", Question: "A?"}}}
	k1, err := key(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := key(nil, client.QuestionRequest{Questions: []client.Question{{ID: "a", Question: "A?"}}})
	k3, _ := key(nil, client.QuestionRequest{Questions: []client.Question{{ID: "a", Question: "B?"}}})
	if k1 != k2 || k1 == k3 {
		t.Errorf("keys: same request %v, different request %v; want equal and different", k1 == k2, k1 == k3)
	}
	ap := func(args string) askKey {
		k, err := key(nil, client.ApprovalRequest{Approval: client.Approval{ToolName: "x", Arguments: json.RawMessage(args)}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if ap(`{"a":1,"b":[1.50,"<"]}`) != ap(`{ "b": [1.50, "\u003c"], "a": 1 }`) || ap(`{"a":1}`) == ap(`{"a":2}`) {
		t.Error("approval keys don't follow the arguments' meaning")
	}
	if s.opts.Reattach != DefaultReattach || s.opts.ProgressInterval != DefaultProgressInterval {
		t.Errorf("defaults: reattach %s, progress %s", s.opts.Reattach, s.opts.ProgressInterval)
	}
}

// A wait that gives up (the bridge unreachable for the client's whole retry
// window) fails the tool call, and its request is withdrawn once the bridge
// answers again: the model's retry asks anew, and the first request is not
// left for someone to answer for nobody.
func TestGivenUpWaitWithdrawsItsRequest(t *testing.T) {
	bridgeURL := newBridge(t, "")
	var down atomic.Bool
	proxy := proxyTo(t, bridgeURL, func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			dropConnection(w)
		}
		return down.Load()
	})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	_, direct, call, rec := askThenGoAway(ctx, t, proxy, bridgeURL, &down)
	if got := text(t, await(t, "the tool call", call), true); !strings.HasPrefix(got, "ASKBRIDGE_UNREACHABLE: ") {
		t.Fatalf("the tool call = %q; want ASKBRIDGE_UNREACHABLE", got)
	}
	down.Store(false)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := direct.Get(ctx, rec.ID, 0)
		if err == nil && got.Status == client.StatusCancelled {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("request %s: %+v, %v after %s; want it withdrawn", rec.ID, got, err, within)
		case <-tick.C:
		}
	}
}

// A create given up on (its replies lost for the client's whole retry
// window) whose first withdrawal the bridge refused is withdrawn by the
// server after all: nothing may say its message keeps live buttons.
func TestGivenUpCreateWithdrawnLaterIsNotWarnedOf(t *testing.T) {
	bridgeURL := newBridge(t, "")
	target, err := url.Parse(bridgeURL)
	if err != nil {
		t.Fatal(err)
	}
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	var deletes atomic.Int32
	proxy := proxyTo(t, bridgeURL, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.Method {
		case http.MethodPost: // made, its reply lost
			forward.ServeHTTP(httptest.NewRecorder(), r)
			dropConnection(w)
			return true
		case http.MethodDelete:
			if deletes.Add(1) == 1 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
				return true
			}
		}
		return false
	})
	var logs apptest.LogBuffer
	e := start(t, proxy, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, client.WithRetryFor(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if got := text(t, await(t, "the tool call", e.call(ctx, "ask_user_question", questions(yesNo("web")), "")), true); got == "" {
		t.Fatal("the tool call succeeded; want it failed")
	}
	e.event(t, "settled")
	if n := deletes.Load(); n < 2 {
		t.Fatalf("%d DELETEs; want the refused one and the server's own", n)
	}
	if got := logs.String(); strings.Contains(got, "live buttons") || strings.Contains(got, "failed; it stays pending") {
		t.Errorf("a request withdrawn in the end was logged as one that may stay live:\n%s", got)
	}
}

// A wait that ends for good (here 503 NO_PROVIDER: its request was
// discarded) is not one that gave up: nothing is withdrawn.
func TestEndedWaitWithdrawsNothing(t *testing.T) {
	var deletes atomic.Int32
	proxy := proxyTo(t, newBridge(t, ""), func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodDelete:
			deletes.Add(1)
		case r.Method == http.MethodGet && r.URL.Query().Has("wait"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"NO_PROVIDER","message":"no user-questions answerer accepted the request: no target took it"}}`)
			return true
		}
		return false
	})
	e := start(t, proxy, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if got := text(t, await(t, "the tool call", e.call(ctx, "ask_user_question", questions(yesNo("web")), "")), true); !strings.HasPrefix(got, "NO_PROVIDER: ") {
		t.Fatalf("the tool call = %q; want NO_PROVIDER", got)
	}
	e.event(t, "settled")
	if n := deletes.Load(); n != 0 {
		t.Errorf("%d DELETEs after a wait that ended for good; want none", n)
	}
}

// Closed while it still withdraws a request whose wait gave up (the bridge
// away), the server tries a last time before it returns.
func TestCloseTriesTheLastWithdrawal(t *testing.T) {
	bridgeURL := newBridge(t, "")
	var down, closing atomic.Bool
	refused := make(chan struct{}, 100) // a DELETE the bridge, away, did not take
	proxy := proxyTo(t, bridgeURL, func(w http.ResponseWriter, r *http.Request) bool {
		if !down.Load() || closing.Load() && r.Method == http.MethodDelete {
			return false
		}
		dropConnection(w)
		if r.Method == http.MethodDelete {
			refused <- struct{}{}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	e, direct, call, rec := askThenGoAway(ctx, t, proxy, bridgeURL, &down)
	await(t, "the tool call", call)
	await(t, "a refused withdrawal", refused)
	closing.Store(true) // the bridge takes DELETEs again, as the server closes
	e.srv.Close()
	if got, err := direct.Get(ctx, rec.ID, 0); err != nil || got.Status != client.StatusCancelled {
		t.Errorf("request %s after Close: %+v, %v; want it withdrawn", rec.ID, got, err)
	}
}

// proxyTo serves a proxy in front of the bridge at bridgeURL: each call is
// first handed to intercept, which answers it itself (true) or lets it
// through. It sends no X-Forwarded-For, which an open bridge refuses.
func proxyTo(t *testing.T, bridgeURL string, intercept func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	target, err := url.Parse(bridgeURL)
	if err != nil {
		t.Fatal(err)
	}
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			forward.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL
}

// dropConnection answers r as a bridge that went away does: the connection
// drops.
func dropConnection(w http.ResponseWriter) {
	if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
		c.Close()
	}
}

// askThenGoAway starts a server on the bridge behind proxy, whose client
// gives up after 300 ms of failures, makes a tool call, and once its
// request is pending takes the bridge away (down). direct reaches the
// bridge itself.
func askThenGoAway(ctx context.Context, t *testing.T, proxy, bridgeURL string, down *atomic.Bool) (e *env, direct *client.Client, call <-chan result, rec client.Record) {
	t.Helper()
	e = start(t, proxy, Options{}, client.WithRetryFor(300*time.Millisecond))
	direct, err := client.New(bridgeURL)
	if err != nil {
		t.Fatal(err)
	}
	call = e.call(ctx, "ask_user_question", questions(yesNo("web")), "")
	rec = e.pending(t, client.KindQuestion, 1)[0]
	down.Store(true)
	return e, direct, call, rec
}

// A wait that fails with an error of the bridge's (500 INTERNAL, say) fails
// the tool call, and the request, still pending, is withdrawn.
func TestFailedWaitWithdrawsItsRequest(t *testing.T) {
	bridgeURL := newBridge(t, "")
	proxy := proxyTo(t, bridgeURL, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !r.URL.Query().Has("wait") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
		return true
	})
	e := start(t, proxy, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if got := text(t, await(t, "the tool call", e.call(ctx, "ask_user_question", questions(yesNo("web")), "")), true); !strings.HasPrefix(got, "INTERNAL: ") {
		t.Fatalf("the tool call = %q; want INTERNAL", got)
	}
	e.event(t, "settled")
	direct, err := client.New(bridgeURL)
	if err != nil {
		t.Fatal(err)
	}
	list, err := direct.Pending(ctx)
	if err != nil || len(list.Questions) != 0 {
		t.Errorf("pending after the failed wait: %+v, %v; want it withdrawn", list, err)
	}
}

// Closed while a withdrawal waits on a bridge that never answers, the
// server stops within its last try's bound, not the client's 30 s grace.
func TestCloseDoesNotWaitOnASilentBridge(t *testing.T) {
	bridgeURL := newBridge(t, "")
	var down atomic.Bool
	silent := make(chan struct{}, 100) // a DELETE held unanswered
	proxy := proxyTo(t, bridgeURL, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case !down.Load():
			return false
		case r.Method == http.MethodDelete:
			silent <- struct{}{}
			<-r.Context().Done()
		default:
			dropConnection(w)
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	e, _, call, _ := askThenGoAway(ctx, t, proxy, bridgeURL, &down)
	await(t, "the tool call", call)
	await(t, "a withdrawal the bridge holds", silent)
	closed := make(chan struct{})
	go func() { e.srv.Close(); close(closed) }()
	await(t, "Close", closed)
}

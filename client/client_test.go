package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
)

// within is how long a test waits for something that should take
// milliseconds before it fails.
const within = 10 * time.Second

// newBridge runs a bridge on a free loopback port with the config yaml
// (nil: the defaults) until the test ends, and returns its URL.
func newBridge(t *testing.T, yaml []byte, opt app.Options, adjust ...func(*config.Config)) string {
	t.Helper()
	return apptest.StartYAML(t, yaml, opt, adjust...).URL()
}

func newClient(t *testing.T, url string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// awaitPending polls until a request of kind is pending and returns it.
func awaitPending(t *testing.T, c *client.Client, kind client.Kind) client.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := c.Pending(ctx)
		if err != nil {
			t.Fatalf("waiting for a pending %s: %v", kind, err)
		}
		recs := list.Questions
		if kind == client.KindApproval {
			recs = list.Approvals
		}
		if len(recs) > 0 {
			return recs[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s turned up pending within %s", kind, within)
		case <-tick.C:
		}
	}
}

// result is what Ask returned, delivered from its goroutine.
type result struct {
	ans client.Answer
	rec *client.Record
	err error
}

func askAsync(ctx context.Context, c *client.Client, req client.QuestionRequest) <-chan result {
	ch := make(chan result, 1)
	go func() {
		ans, rec, err := c.Ask(ctx, req)
		ch <- result{ans, rec, err}
	}()
	return ch
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

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func yesNo(id string) client.Question {
	return client.Question{ID: id, Question: "Deploy " + id + "?", Options: []client.Option{{Label: "Yes (Recommended)"}, {Label: "No"}}}
}

// TestAskInProcess is the package's Example, which needs a bridge at
// 127.0.0.1:8080 and is only compiled, against a bridge with its defaults
// (embedded Redis, open API, a "default" route answered through the API)
// run in the test; the test stands in for the person who answers.
func TestAskInProcess(t *testing.T) {
	c := newClient(t, newBridge(t, nil, app.Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := askAsync(ctx, c, client.QuestionRequest{Questions: []client.Question{{
		ID:       "deploy",
		Question: "Deploy to prod?",
		Options:  []client.Option{{Label: "Yes"}, {Label: "No"}},
	}}})
	p := awaitPending(t, c, client.KindQuestion)
	if _, err := c.Answer(ctx, p.ID, client.Answer{Answers: []client.AnswerItem{{ID: "deploy", Selected: []string{"Yes"}}}}); err != nil {
		t.Fatalf("answering: %v", err)
	}
	r := await(t, "Ask", done)
	if r.err != nil {
		t.Fatalf("Ask: %v", r.err)
	}
	if got, want := mustJSON(t, r.ans), `{"answers":[{"id":"deploy","selected":["Yes"]}]}`; got != want {
		t.Errorf("answer = %s\nwant     %s", got, want)
	}
	if r.rec.Status != client.StatusAnswered || r.rec.AnsweredBy == nil || r.rec.AnsweredBy.Surface != "api" {
		t.Errorf("record = %+v, want answered through the api", r.rec)
	}
}

// TestExamplesAreCopyable keeps the package's examples
// copyable into a program of its own: a file with an Example imports the
// standard library and this package only, never one under internal/ (go
// refuses that to another module) nor a test helper's.
func TestExamplesAreCopyable(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		examples := 0
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				examples++
			}
		}
		if examples == 0 {
			continue
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path != "github.com/askbridge/askbridge/client" && strings.Contains(strings.Split(path, "/")[0], ".") {
				t.Errorf("%s, which holds examples, imports %s: a user's program can't copy them", name, path)
			}
		}
	}
}

func TestAsk(t *testing.T) {
	url := newBridge(t, nil, app.Options{})
	c := newClient(t, url)
	multi := client.Question{ID: "envs", Question: "Which environments?", MultiSelect: true,
		Options: []client.Option{{Label: "dev"}, {Label: "staging"}, {Label: "prod"}}}

	for _, tc := range []struct {
		name      string
		questions []client.Question
		respond   func(ctx context.Context, id string) (*client.Record, error)
		want      string // the answer's JSON, when answered
		wantErr   error
		wantCode  string
	}{{
		name:      "answered",
		questions: []client.Question{yesNo("web")},
		respond: func(ctx context.Context, id string) (*client.Record, error) {
			return c.Answer(ctx, id, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"Yes (Recommended)"}}}})
		},
		want: `{"answers":[{"id":"web","selected":["Yes (Recommended)"]}]}`,
	}, {
		name:      "multi",
		questions: []client.Question{multi},
		respond: func(ctx context.Context, id string) (*client.Record, error) {
			return c.Answer(ctx, id, client.Answer{Answers: []client.AnswerItem{{ID: "envs", Selected: []string{"prod", "dev"}, Custom: " and qa "}}})
		},
		want: `{"answers":[{"id":"envs","selected":["dev","prod"],"custom":"and qa"}]}`, // the options' order
	}, {
		name:      "custom overrides a single choice, skipped question",
		questions: []client.Question{yesNo("web"), yesNo("api")},
		respond: func(ctx context.Context, id string) (*client.Record, error) {
			return c.Answer(ctx, id, client.Answer{Answers: []client.AnswerItem{{ID: "api", Selected: []string{"No"}, Custom: "  only after 6pm "}}})
		},
		want: `{"answers":[{"id":"web","selected":[]},{"id":"api","selected":[],"custom":"only after 6pm"}]}`,
	}, {
		name:      "every question skipped",
		questions: []client.Question{yesNo("web"), yesNo("api")},
		respond: func(ctx context.Context, id string) (*client.Record, error) {
			return c.Answer(ctx, id, client.Answer{})
		},
		want: `{"answers":[{"id":"web","selected":[]},{"id":"api","selected":[]}]}`,
	}, {
		name:      "dismissed",
		questions: []client.Question{yesNo("web")},
		respond:   func(ctx context.Context, id string) (*client.Record, error) { return c.Dismiss(ctx, id) },
		wantErr:   client.ErrCancelled,
		wantCode:  client.CodeCancelled,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			done := askAsync(ctx, c, client.QuestionRequest{Questions: tc.questions})
			p := awaitPending(t, c, client.KindQuestion)
			if _, err := tc.respond(ctx, p.ID); err != nil {
				t.Fatalf("responding: %v", err)
			}
			r := await(t, "Ask", done)
			if tc.wantErr != nil {
				if !errors.Is(r.err, tc.wantErr) {
					t.Fatalf("Ask error = %v, want %v", r.err, tc.wantErr)
				}
				var e *client.Error
				if !errors.As(r.err, &e) || e.Code != tc.wantCode || e.Message == "" {
					t.Fatalf("Ask error = %#v, want an *Error with code %s and the seam's message", e, tc.wantCode)
				}
				if r.rec == nil || r.rec.ID != p.ID || !r.rec.Status.Final() {
					t.Fatalf("Ask record = %+v, want the ended request %s", r.rec, p.ID)
				}
				return
			}
			if r.err != nil {
				t.Fatalf("Ask: %v", r.err)
			}
			if got := mustJSON(t, r.ans); got != tc.want {
				t.Errorf("answer = %s\nwant     %s", got, tc.want)
			}
			if r.rec.Status != client.StatusAnswered || r.rec.AnsweredBy == nil || r.rec.AnsweredBy.Surface != "api" {
				t.Errorf("record = %+v, want answered through the api", r.rec)
			}
		})
	}
}

func TestApprove(t *testing.T) {
	url := newBridge(t, nil, app.Options{})
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	type decided struct {
		d   client.Decision
		rec *client.Record
		err error
	}
	done := make(chan decided, 1)
	go func() {
		d, rec, err := c.Approve(ctx, client.ApprovalRequest{
			Approval:   client.Approval{ToolName: "kubectl_apply", Reason: "roll out v2", Arguments: json.RawMessage(`{"file":"v2.yaml"}`)},
			ToolCallID: "call-7",
		})
		done <- decided{d, rec, err}
	}()
	p := awaitPending(t, c, client.KindApproval)
	if p.ToolName != "kubectl_apply" || p.CallID != "call-7" {
		t.Fatalf("pending approval = %+v", p)
	}
	if _, err := c.Decide(ctx, p.ID, client.Decision{Outcome: client.OutcomeRejected, Note: " not on a Friday "}); err != nil {
		t.Fatal(err)
	}
	r := await(t, "Approve", done)
	if r.err != nil {
		t.Fatalf("Approve: %v", r.err)
	}
	if want := (client.Decision{Outcome: client.OutcomeRejected, Note: "not on a Friday"}); r.d != want {
		t.Errorf("decision = %+v, want %+v", r.d, want)
	}
}

func TestAskExpired(t *testing.T) {
	clock := apptest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	url := newBridge(t, nil, app.Options{Now: clock.Now}, func(cfg *config.Config) {
		cfg.Store.SweepInterval = config.Duration(10 * time.Millisecond)
	})
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := askAsync(ctx, c, client.QuestionRequest{Questions: []client.Question{yesNo("web")}, ExpiresIn: time.Hour})
	p := awaitPending(t, c, client.KindQuestion)
	if p.ExpiresAt == nil || !p.ExpiresAt.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("expires_at = %v, want an hour after %v", p.ExpiresAt, clock.Now())
	}
	clock.Advance(time.Hour + time.Second)
	r := await(t, "Ask", done)
	if !errors.Is(r.err, client.ErrTimedOut) {
		t.Fatalf("Ask error = %v, want ErrTimedOut", r.err)
	}
	var e *client.Error
	if errors.As(r.err, &e); e.Message != "ask_user_question timed out before the user answered" {
		t.Errorf("message = %q, want the seam's", e.Message)
	}
	if r.rec.Status != client.StatusExpired {
		t.Errorf("status = %s, want expired", r.rec.Status)
	}
}

// recorder is an http.RoundTripper that keeps every call, "METHOD /path
// STATUS", and reports each on calls.
type recorder struct {
	calls chan string
	mu    sync.Mutex
	log   []string
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	status := "error"
	if err == nil {
		status = resp.Status[:3]
	}
	call := req.Method + " " + req.URL.Path + " " + status
	r.mu.Lock()
	r.log = append(r.log, call)
	r.mu.Unlock()
	select {
	case r.calls <- call:
	default:
	}
	return resp, err
}

// TestAskCancelled checks that a caller giving up withdraws its question,
// whether it gave up while the create was held open or during a later poll.
func TestAskCancelled(t *testing.T) {
	url := newBridge(t, nil, app.Options{})
	observer := newClient(t, url)
	for _, tc := range []struct {
		name     string
		pollWait time.Duration
		cancelOn string // the call after which the test cancels
	}{
		{"during the create's wait", time.Minute, "POST"},
		{"during a poll", 20 * time.Millisecond, "GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{calls: make(chan string, 100)}
			c := newClient(t, url, client.WithPollWait(tc.pollWait), client.WithHTTPClient(&http.Client{Transport: rec}))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := askAsync(ctx, c, client.QuestionRequest{Questions: []client.Question{yesNo("web")}})
			p := awaitPending(t, observer, client.KindQuestion)
			if tc.cancelOn == "GET" {
				for call := await(t, "a poll", rec.calls); call[:3] != "GET"; call = await(t, "a poll", rec.calls) {
				}
			}
			cancel()
			r := await(t, "Ask", done)
			if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, client.ErrAborted) {
				t.Fatalf("Ask error = %v, want context.Canceled and ErrAborted", r.err)
			}
			calls := rec.all()
			want := map[string]int{
				"POST /v1/questions 201":                1, // one request made, never two
				"DELETE /v1/questions/" + p.ID + " 200": 1,
			}
			if tc.cancelOn == "POST" {
				// The create's response never came: the request is cancelled
				// by its tool_call_id (which, had the create not landed yet,
				// would have withdrawn it before it could ask anyone).
				want["DELETE /v1/questions 200"] = 1
				want["DELETE /v1/questions/"+p.ID+" 200"] = 0
				want["POST /v1/questions 201"] = 0
			}
			for call, n := range want {
				if got := count(calls, call); got != n {
					t.Errorf("%d calls %q, want %d; calls: %q", got, call, n, calls)
				}
			}
			got, err := observer.Get(context.Background(), p.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != client.StatusCancelled || got.Error == nil || got.Error.Code != client.CodeAborted {
				t.Errorf("record after cancel = %s %+v, want cancelled with ASK_ABORTED", got.Status, got.Error)
			}
			if list, err := observer.Pending(context.Background()); err != nil || len(list.Questions) != 0 {
				t.Errorf("pending after cancel = %+v, %v; want none (no second request made)", list, err)
			}
		})
	}
}

func count(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

func TestCreateErrors(t *testing.T) {
	url := newBridge(t, nil, app.Options{})
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	t.Run("no provider", func(t *testing.T) {
		_, _, err := c.Ask(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web")}, Route: "nope"})
		var e *client.Error
		if !errors.Is(err, client.ErrNoProvider) || !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
			t.Fatalf("Ask error = %v (%#v), want ErrNoProvider with 503", err, e)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		_, _, err := c.Ask(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web"), yesNo("web")}})
		if !errors.Is(err, client.ErrInvalidRequest) {
			t.Fatalf("Ask error = %v, want ErrInvalidRequest", err)
		}
		if _, _, err := c.Ask(ctx, client.QuestionRequest{}); !errors.Is(err, client.ErrEmptyQuestions) {
			t.Fatalf("Ask error = %v, want ErrEmptyQuestions", err)
		}
	})
	t.Run("same tool_call_id re-attaches, different body conflicts", func(t *testing.T) {
		req := client.QuestionRequest{Questions: []client.Question{yesNo("db")}, ToolCallID: "call-42"}
		first, err := c.Create(ctx, req, 0)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.Create(ctx, req, 0)
		if err != nil || again.ID != first.ID {
			t.Fatalf("second create = %+v, %v; want the record %s", again, err, first.ID)
		}
		req.Questions[0].Question = "Drop the database?"
		if _, err := c.Create(ctx, req, 0); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("create with a different body = %v, want ErrConflict", err)
		}
		if _, err := c.Cancel(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		if _, err := c.Get(ctx, "nosuchrequest", 0); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Get = %v, want ErrNotFound", err)
		}
	})
	t.Run("already resolved", func(t *testing.T) {
		rec, err := c.Create(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web")}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Dismiss(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
		_, err = c.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}})
		if !errors.Is(err, client.ErrAlreadyResolved) {
			t.Fatalf("late answer = %v, want ErrAlreadyResolved", err)
		}
	})
}

// An empty request id is refused before any call: sent, it made paths such
// as /v1/questions//answer, which the bridge redirected elsewhere (it now
// answers no such endpoint), and the error blamed the bridge's URL.
func TestEmptyIDIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a call with an empty id reached the bridge: %s %s", r.Method, r.URL.Path)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Get":    func() error { _, err := c.Get(ctx, "", 0); return err },
		"Cancel": func() error { _, err := c.Cancel(ctx, ""); return err },
		"Answer": func() error { _, err := c.Answer(ctx, "", client.Answer{}); return err },
		"Decide": func() error {
			_, err := c.Decide(ctx, "", client.Decision{Outcome: client.OutcomeRejected})
			return err
		},
		"Dismiss": func() error { _, err := c.Dismiss(ctx, ""); return err },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "request id is empty") {
			t.Errorf("%s with an empty id = %v; want it to say the id is empty", name, err)
		}
	}
}

func TestBridgeDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newClient(t, "http://"+addr)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	start := time.Now()
	_, _, err = c.Ask(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web")}})
	if !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("Ask error = %v, want ErrUnreachable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Ask took %s to find the bridge down; want at once", took)
	}
	if ctx.Err() != nil {
		t.Error("Ask waited for its context to end")
	}
}

func TestTokens(t *testing.T) {
	url := newBridge(t, []byte(`
api:
  tokens:
    - {name: agent, token: ask-secret-7f3c9e21b4, scopes: [ask]}
    - {name: person, token: answer-secret-7f3c9e21b4, scopes: [answer]}
`), app.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req := client.QuestionRequest{Questions: []client.Question{yesNo("web")}}

	if _, err := newClient(t, url).Create(ctx, req, 0); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("create without a token = %v, want ErrUnauthorized", err)
	}
	if _, err := newClient(t, url, client.WithToken("wrong")).Create(ctx, req, 0); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("create with a wrong token = %v, want ErrUnauthorized", err)
	}
	agent := newClient(t, url, client.WithToken("ask-secret-7f3c9e21b4"))
	if _, err := agent.Pending(ctx); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("pending with an ask token = %v, want ErrForbidden", err)
	}
	person := newClient(t, url, client.WithToken("answer-secret-7f3c9e21b4"))
	done := askAsync(ctx, agent, req)
	p := awaitPending(t, person, client.KindQuestion)
	if _, err := person.Answer(ctx, p.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"No"}}}}); err != nil {
		t.Fatal(err)
	}
	if r := await(t, "Ask", done); r.err != nil || r.rec.AnsweredBy.Name != "person" {
		t.Fatalf("Ask = %+v, %v; want answered by person", r.rec, r.err)
	}
}

// A password in the bridge's URL (a proxy's basic auth) is a secret: the
// errors that name the URL hide it.
func TestErrorsHideTheURLsPassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	_, _, err = newClient(t, "http://bob:pw-secret-7f3c@"+addr).Ask(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web")}})
	if !errors.Is(err, client.ErrUnreachable) || strings.Contains(err.Error(), "pw-secret") || !strings.Contains(err.Error(), addr) {
		t.Errorf("Ask error = %v; want ErrUnreachable naming %s, not the password", err, addr)
	}
	for _, u := range []string{"http://bob:pw-secret-7f3c@", "bob:pw-secret-7f3c@127.0.0.1:8080"} {
		if _, err := client.New(u); err == nil || strings.Contains(err.Error(), "pw-secret") {
			t.Errorf("New(%q) = %v; want an error without the password", u, err)
		}
	}
}

// A bridge URL that redirects (http:// where a proxy sends everything to
// https://) is refused with the URL to use instead. Followed, a 301 turns
// the create into a GET of the request list (FORBIDDEN for an asker, as if
// its token were wrong), and a redirect to another host drops the token.
func TestRedirectNamesTheURLToUse(t *testing.T) {
	url := newBridge(t, nil, app.Options{})
	for _, status := range []int{http.StatusMovedPermanently, http.StatusPermanentRedirect} {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, url+r.URL.RequestURI(), status)
		}))
		defer proxy.Close()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		_, _, err := newClient(t, proxy.URL).Ask(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web")}})
		if err == nil || errors.Is(err, client.ErrForbidden) || client.Transient(err) || !strings.Contains(err.Error(), "use "+url+" as the bridge's URL") {
			t.Errorf("Ask through a %d = %v; want an error naming %s as the URL to use", status, err, url)
		}
		if ctx.Err() != nil {
			t.Errorf("Ask through a %d waited for its context to end", status)
		}
	}
	if list, err := newClient(t, url).Pending(context.Background()); err != nil || len(list.Questions) != 0 {
		t.Errorf("pending on the bridge = %+v, %v; want nothing asked", list, err)
	}
}

// A bridge URL that leads to something other than the bridge's API says
// what answered there and, where it can tell, the URL to use: not Go's
// "EOF" or "server gave HTTP response to HTTPS client", nor a bare "no
// such endpoint". The error names the URL, never its password or the
// token; what can't change with time is not retried.
func TestWrongURLSaysWhatIsThere(t *testing.T) {
	bridge := newBridge(t, nil, app.Options{})
	// serveTCP answers every connection with reply (nothing: it reads the
	// request and hangs up, as Postgres and Redis do).
	serveTCP := func(reply string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer conn.Close()
					conn.SetDeadline(time.Now().Add(within))
					buf := make([]byte, 4096)
					conn.Read(buf)
					io.WriteString(conn, reply)
				}()
			}
		}()
		return ln.Addr().String()
	}
	pg := serveTCP("")
	mysql := serveTCP("J\x00\x00\x00\x0a8.0.36\x00garbage that is not HTTP\r\n\r\n")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	tlsWeb := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsWeb.Close()
	bridgeHost := strings.TrimPrefix(bridge, "http://")
	const token = "tok-secret-7f3c9e21b4"

	for _, tc := range []struct {
		name, url string
		wrongURL  bool     // errors.Is(err, client.ErrWrongURL)
		want      []string // in the error's text
	}{
		{"a database", "http://bob:pw-secret-7f3c@" + pg, true,
			[]string{"wrong bridge URL: http://bob:xxxxx@" + pg + " closed the connection without an HTTP response", "GET /healthz", "no bridge"}},
		{"https to a plain-http bridge", "https://" + bridgeHost, true,
			[]string{"wrong bridge URL: https://" + bridgeHost + " answers in plain HTTP, not HTTPS: use " + bridge}},
		{"https to a database", "https://" + mysql, true, []string{"wrong bridge URL: what answers at https://" + mysql + " does not speak TLS"}},
		{"not HTTP", "http://" + mysql, true, []string{"wrong bridge URL: what answers at http://" + mysql + " does not speak HTTP"}},
		{"http to an https server", "http://" + strings.TrimPrefix(tlsWeb.URL, "https://"), true,
			[]string{"takes HTTPS: use " + tlsWeb.URL}},
		{"a web server", web.URL, true, []string{"wrong bridge URL: " + web.URL + " has no bridge API (HTTP 404 Not Found)"}},
		{"the bridge under a path", bridge + "/askbridge/", true,
			[]string{"wrong bridge URL: no such endpoint: GET /askbridge/v1/questions; the bridge serves its API at /v1/, not under /askbridge: use " + bridge + " as its URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.url, client.WithToken(token))
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			_, err := c.Pending(ctx)
			if err == nil {
				t.Fatal("Pending succeeded")
			}
			if errors.Is(err, client.ErrWrongURL) != tc.wrongURL {
				t.Errorf("error %q: errors.Is(ErrWrongURL) = %v, want %v", err, !tc.wrongURL, tc.wrongURL)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "<") {
				t.Errorf("error %q shows a secret or a page's HTML", err)
			}
			if tc.wrongURL && client.Transient(err) {
				t.Errorf("error %q is transient; the URL won't change by itself", err)
			}
		})
	}

	// A create that met a wrong URL asked nothing (ErrUnreachable), and
	// says what it met once, at once.
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for _, url := range []string{"https://" + bridgeHost, "http://" + pg, web.URL} {
		_, err := newClient(t, url).Create(ctx, client.QuestionRequest{Questions: []client.Question{yesNo("web")}}, 0)
		if !errors.Is(err, client.ErrUnreachable) || !errors.Is(err, client.ErrWrongURL) || strings.Count(err.Error(), url) != 1 {
			t.Errorf("Create at %s = %v; want ErrUnreachable and ErrWrongURL, naming the URL once", url, err)
		}
	}
	// The bridge's NOT_FOUND stays one (its code), under a path as well.
	// It names the call that met the wrong URL, the question's lookup:
	// the approval's, which follows an unknown question, is not made.
	if _, err := newClient(t, bridge+"/askbridge").Get(ctx, "abc", 0); !errors.Is(err, client.ErrNotFound) || !errors.Is(err, client.ErrWrongURL) ||
		!strings.Contains(err.Error(), "GET /askbridge/v1/questions/abc") || strings.Contains(err.Error(), "approvals") {
		t.Errorf("Get under a path = %v; want ErrNotFound and ErrWrongURL, naming the question's lookup only", err)
	}
	if _, err := newClient(t, bridge).Get(ctx, "abc", 0); !errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrWrongURL) {
		t.Errorf("Get of an unknown id = %v; want ErrNotFound, not ErrWrongURL", err)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"127.0.0.1:8080", "ftp://x", "http://", ""} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) = nil error", u)
		}
	}
}

// A token no header can carry (a final newline from a file) is refused by
// New, naming the problem but not the token, instead of every call failing
// as if the bridge were unreachable.
func TestNewRejectsBadToken(t *testing.T) {
	for _, tok := range []string{"tok-secret\n", "tok-secret\r\n", " tok-secret", "tok\x00secret"} {
		_, err := client.New("http://127.0.0.1:8080", client.WithToken(tok))
		if err == nil {
			t.Errorf("New with token %q = nil error", tok)
			continue
		}
		if !strings.Contains(err.Error(), "white space") || strings.Contains(err.Error(), "secret") {
			t.Errorf("New with token %q = %q; want it to name the white space, not the token", tok, err)
		}
	}
	if _, err := client.New("http://127.0.0.1:8080", client.WithToken("tok-secret")); err != nil {
		t.Errorf("New with a good token = %v", err)
	}
}

func TestQuestionRequestJSON(t *testing.T) {
	var req client.QuestionRequest
	in := `{"questions":[{"id":"a","question":"A?","multi_select":true,"options":[{"label":"x"},{"label":"y"}]}],"tool_call_id":"t1","route":"ops","expires_in":90}`
	if err := json.Unmarshal([]byte(in), &req); err != nil {
		t.Fatal(err)
	}
	if req.ExpiresIn != 90*time.Second || !req.Questions[0].MultiSelect || req.Route != "ops" || req.ToolCallID != "t1" {
		t.Fatalf("decoded %+v", req)
	}
	want := `{"questions":[{"id":"a","question":"A?","options":[{"label":"x"},{"label":"y"}],"multiSelect":true}],"tool_call_id":"t1","route":"ops","expires_in":"1m30s"}`
	if got := mustJSON(t, req); got != want {
		t.Errorf("encoded %s\nwant    %s", got, want)
	}
}

// A base URL with a query or fragment is refused, as the dsh plugin
// refuses it, rather than every call going to a URL with /v1/... after
// the query; the error shows no part of the URL, the query least (it may
// hold a secret). A path stays fine.
func TestNewRejectsQueryOrFragment(t *testing.T) {
	for _, u := range []string{
		"http://127.0.0.1:1/?x=SECRETPW", "http://127.0.0.1:1?x=SECRETPW", "https://h/#SECRETPW",
		"http://127.0.0.1:1/?", "http://127.0.0.1:1/#", "ftp://127.0.0.1:1/?x=SECRETPW", "http://SECRETPW:1?@h",
	} {
		_, err := client.New(u)
		if err == nil {
			t.Errorf("New(%q) = nil error", u)
			continue
		}
		if !strings.Contains(err.Error(), "has a query or fragment") || strings.Contains(err.Error(), "SECRETPW") || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("New(%q) = %q; want it to name the query or fragment, and show no part of the URL", u, err)
		}
	}
	if _, err := client.New("https://tools.example.com/askbridge/"); err != nil {
		t.Errorf("New with a path = %v", err)
	}
}

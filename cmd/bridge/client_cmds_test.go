package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// within is how long a test waits for something that should take
// milliseconds before it fails.
const within = 10 * time.Second

// startBridge runs a bridge with the default config on a free loopback port.
func startBridge(t *testing.T, opt app.Options, adjust ...func(*config.Config)) string {
	t.Helper()
	return apptest.StartYAML(t, nil, opt, adjust...).URL()
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs the bridge command with args.
func cli(args ...string) cliResult {
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	return cliResult{code, stdout.String(), stderr.String()}
}

func cliAsync(args ...string) <-chan cliResult {
	ch := make(chan cliResult, 1)
	go func() { ch <- cli(args...) }()
	return ch
}

func await(t *testing.T, what string, ch <-chan cliResult) cliResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		t.Fatalf("%s: no result within %s", what, within)
		panic("unreachable")
	}
}

// awaitWaiting polls the bridge's /metrics until a call waits on it
// (askbridge_waiters): a command that asked is past its create, which a
// signal would cut short otherwise, the request stored but not yet known
// to the command by its id.
func awaitWaiting(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for line := range strings.Lines(string(body)) {
				if n, ok := strings.CutPrefix(line, "askbridge_waiters "); ok && strings.TrimSpace(n) != "0" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call waiting on the bridge within %s (%v)", within, err)
		}
		time.Sleep(5 * time.Millisecond) // nothing signals the metric
	}
}

// awaitPending polls the bridge until a request is pending and returns it.
func awaitPending(t *testing.T, url string) client.Record {
	t.Helper()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := c.Pending(ctx)
		if err != nil {
			t.Fatalf("waiting for a pending request: %v", err)
		}
		if recs := append(list.Questions, list.Approvals...); len(recs) > 0 {
			return recs[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nothing turned up pending within %s", within)
		case <-tick.C:
		}
	}
}

// tempFile writes body to a file of its own and returns its path.
func tempFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// requesters are bridge ask and bridge approve, each with the flags of a
// request (all but --server) and how it names the request, for the tests
// of what the two share.
var requesters = []struct {
	args          []string
	noun, unnamed string // "question" ID; "the question", before it has an id
}{
	{[]string{"ask", "--question", "Deploy?"}, "question", "the question"},
	{[]string{"approve", "--tool", "deploy"}, "approval", "the approval request"},
}

// askAndAnswer runs the command of args against the bridge at url until
// its request is pending, checks it with checkAsked (when not nil),
// answers it with bridge answer ID and answer (flags after the id, as
// people type them), and returns how the command ended, and what it asked.
func askAndAnswer(t *testing.T, url string, args []string, checkAsked func(t *testing.T, p client.Record), answer []string) (cliResult, client.Record) {
	t.Helper()
	asked := cliAsync(slices.Concat(args[:1], []string{"--server", url}, args[1:])...)
	p := awaitPending(t, url)
	if checkAsked != nil {
		checkAsked(t, p)
	}
	ans := cli(slices.Concat([]string{"answer", p.ID, "--server", url}, answer)...)
	if ans.code != exitOK {
		t.Fatalf("answer exit %d, stderr %s", ans.code, ans.stderr)
	}
	var rec client.Record
	if err := json.Unmarshal([]byte(ans.stdout), &rec); err != nil || rec.ID != p.ID || !rec.Status.Final() {
		t.Errorf("answer printed %s (%v), want the ended record %s", ans.stdout, err, p.ID)
	}
	return await(t, args[0], asked), p
}

func TestAskAndAnswer(t *testing.T) {
	url := startBridge(t, app.Options{})
	multiReq := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(multiReq, []byte(`{"questions":[
		{"id":"env","question":"Which environment?","options":[{"label":"staging"},{"label":"prod"}]},
		{"id":"why","question":"Why now?"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		ask        []string
		answer     []string // after "answer ID"
		checkAsked func(t *testing.T, p client.Record)
		wantCode   int
		wantStdout string
		wantStderr string
	}{{
		name: "answered",
		ask:  []string{"--question", "Deploy v2?", "--header", "Deploy", "--option", "Yes (Recommended) :: ships it to prod", "--option", "No: not yet"},
		checkAsked: func(t *testing.T, p client.Record) {
			want := []client.Option{{Label: "Yes (Recommended)", Description: "ships it to prod"}, {Label: "No: not yet"}}
			if q := p.Questions[0]; q.ID != "q1" || q.Header != "Deploy" || !equalOptions(q.Options, want) {
				t.Errorf("asked %+v, want id q1, header Deploy, options %+v", q, want)
			}
		},
		answer:     []string{"--select", "Yes (Recommended)"},
		wantStdout: `{"answers":[{"id":"q1","selected":["Yes (Recommended)"]}]}` + "\n",
	}, {
		name:       "multi-select with custom",
		ask:        []string{"--question", "Which?", "--multi-select", "--option", "a", "--option", "b", "--option", "c", "--id", "pick"},
		checkAsked: askedMultiSelect,
		answer:     []string{"--select", "c", "--select", "a", "--custom", " and d "},
		wantStdout: `{"answers":[{"id":"pick","selected":["a","c"],"custom":"and d"}]}` + "\n", // the options' order
	}, {
		name:       "--multi, multi-select's first name",
		ask:        []string{"--question", "Which?", "--multi", "--option", "a", "--option", "b"},
		checkAsked: askedMultiSelect,
		answer:     []string{"--select", "a", "--select", "b"},
		wantStdout: `{"answers":[{"id":"q1","selected":["a","b"]}]}` + "\n",
	}, {
		name: "free text",
		ask:  []string{"--question", "Release name?", "--expires", "1h", "--caller", "ci"},
		checkAsked: func(t *testing.T, p client.Record) {
			if p.Caller == nil || p.Caller.Name != "ci" || p.ExpiresAt == nil {
				t.Errorf("asked %+v, want caller ci and an expiry", p)
			}
		},
		answer:     []string{"--custom", "Ganymede"},
		wantStdout: `{"answers":[{"id":"q1","selected":[],"custom":"Ganymede"}]}` + "\n",
	}, {
		name:       "several questions, one answered",
		ask:        []string{"--json-request", multiReq},
		answer:     []string{"--question-id", "why", "--custom", "the freeze ends"},
		wantStdout: `{"answers":[{"id":"env","selected":[]},{"id":"why","selected":[],"custom":"the freeze ends"}]}` + "\n",
	}, {
		name: "several questions, all answered",
		ask:  []string{"--json-request", multiReq, "--tool-call-id", "call-1"},
		checkAsked: func(t *testing.T, p client.Record) {
			if p.ToolCallID != "call-1" {
				t.Errorf("tool_call_id = %q, want call-1", p.ToolCallID)
			}
		},
		answer:     []string{"--json", `{"answers":[{"id":"why","custom":"because"},{"id":"env","selected":["prod"]}]}`},
		wantStdout: `{"answers":[{"id":"env","selected":["prod"]},{"id":"why","selected":[],"custom":"because"}]}` + "\n",
	}, {
		name:       "dismissed",
		ask:        []string{"--question", "Deploy?", "--option", "Yes"},
		answer:     []string{"--dismiss"},
		wantCode:   exitDismissed,
		wantStderr: "ASK_CANCELLED",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, p := askAndAnswer(t, url, append([]string{"ask"}, tc.ask...), tc.checkAsked, tc.answer)
			if r.code != tc.wantCode {
				t.Errorf("ask exit %d, want %d; stderr: %s", r.code, tc.wantCode, r.stderr)
			}
			if r.stdout != tc.wantStdout {
				t.Errorf("ask stdout = %q\nwant           %q", r.stdout, tc.wantStdout)
			}
			if !strings.Contains(r.stderr, "asked: question id "+p.ID) || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("ask stderr = %q, want the id %s and %q", r.stderr, p.ID, tc.wantStderr)
			}
		})
	}
}

// askedMultiSelect checks that the question asked is a multi-select one.
func askedMultiSelect(t *testing.T, p client.Record) {
	t.Helper()
	if q := p.Questions[0]; !q.MultiSelect {
		t.Errorf("asked %+v, want a multi-select question", q)
	}
}

func equalOptions(a, b []client.Option) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRequestFlagsRefused: what ask's and approve's request flags can't
// mean is refused before anything is sent, in the flags' terms. A flag
// given an empty value (--route "$ROUTE" with ROUTE unset) is not read as
// left out: the request would go to the default route (over the request
// file's own), or be asked anew under a random tool_call_id.
func TestRequestFlagsRefused(t *testing.T) {
	bodies := map[string]string{
		"ask":     `{"questions":[{"id":"a","question":"A?"}],"route":"ops"}`,
		"approve": `{"tool_name":"deploy","route":"ops"}`,
	}
	for _, tc := range requesters {
		cmd, made := tc.args[0], tc.args[1] // --question, --tool
		req := tempFile(t, bodies[cmd])
		with := func(more ...string) []string { return slices.Concat(tc.args[1:], more) }
		for _, c := range []struct {
			args []string
			want string
		}{
			{with("--route", ""), "--route is empty; leave it out for the request's route, or the bridge's default one"},
			{[]string{"--json-request", req, "--route="}, "--route is empty"},
			{with("--tool-call-id", ""), "--tool-call-id is empty; leave it out for a random one"},
			{with("--caller", ""), "--caller is empty; leave it out for no caller"},
			{with("--expires", "5"), `invalid value "5" for flag -expires: a duration needs a unit`},
			{with("--expires", "-1m"), "--expires must not be negative"},
			{with("prod"), `unexpected argument "prod"`},
			{with("--bogus"), "flag provided but not defined: -bogus"},
			{[]string{"--json-request", "-", made, "x"}, made + " can't be combined with --json-request; put it in the request"},
		} {
			// Nothing listens there: without the check, exit 1.
			r := await(t, cmd, cliAsync(slices.Concat([]string{cmd, "--server", "http://127.0.0.1:1"}, c.args)...))
			if want := "bridge " + cmd + ": " + c.want; r.code != exitUsage || !strings.Contains(r.stderr, want) || r.stdout != "" {
				t.Errorf("%s %q = %+v; want exit %d saying %q", cmd, c.args, r, exitUsage, want)
			}
		}
	}
}

// TestAskMultiWithoutOptions: --multi-select (or --multi) with no
// --option is refused before anything is sent, naming the flag given: the
// bridge would ask for free text, silently.
func TestAskMultiWithoutOptions(t *testing.T) {
	for _, flag := range []string{"--multi-select", "--multi"} {
		r := cli("ask", "--server", "http://127.0.0.1:1", "--question", "Which?", flag)
		if want := "bridge ask: " + flag + " lets the person select several options: give them with --option"; r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("ask %s = %+v; want exit %d saying %q", flag, r, exitUsage, want)
		}
	}
}

// TestAskMultiSelectFlag: bridge ask -h lists --multi-select, the API's
// name, once, and names --multi in its help rather than listing it as a
// flag of its own; beside --json-request either is refused by the name
// given.
func TestAskMultiSelectFlag(t *testing.T) {
	r := cli("ask", "-h")
	var listed []string
	for line := range strings.Lines(r.stdout) {
		if name, ok := strings.CutPrefix(line, "  -multi"); ok {
			listed = append(listed, "-multi"+strings.TrimSpace(name))
		}
	}
	if r.code != exitOK || !slices.Equal(listed, []string{"-multi-select"}) || !strings.Contains(r.stdout, "--multi is another name for it") {
		t.Errorf("bridge ask -h lists %q (exit %d); want -multi-select alone, its help naming --multi:\n%s", listed, r.code, r.stdout)
	}
	for _, flag := range []string{"--multi-select", "--multi"} {
		r := cli("ask", "--server", "http://127.0.0.1:1", "--json-request", "-", flag)
		if want := "bridge ask: " + flag + " can't be combined with --json-request"; r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("ask --json-request - %s = %+v; want exit %d saying %q", flag, r, exitUsage, want)
		}
	}
}

func TestAskNoProvider(t *testing.T) {
	url := startBridge(t, app.Options{})
	r := await(t, "ask", cliAsync("ask", "--server", url, "--question", "Deploy?", "--route", "nope"))
	if r.code != exitError || !strings.Contains(r.stderr, "NO_PROVIDER") || r.stdout != "" {
		t.Errorf("ask = %+v, want exit 1 with NO_PROVIDER", r)
	}
}

// A request no answerer took (NO_PROVIDER) is spoken of as the command's
// request, not in the seam's words for the harness ("no user-questions
// answerer"), and the person is told what to set: --route, or the
// bridge's routes and their targets.
func TestNoProviderSaysWhatToDo(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, "xoxb-test-bot")
	fake.SetChannel("C1", slacktest.FakeChannel{Name: "deploys"}) // the bot is not in it
	withRoutes := func(routes ...config.Route) func(*config.Config) {
		return func(cfg *config.Config) {
			cfg.Slack = &config.Slack{BotToken: "xoxb-test-bot", SigningSecret: "test-signing-secret", APIURL: fake.URL}
			cfg.Routes = routes
		}
	}
	refusing := config.Route{Name: "ops", Mode: config.ModeAll, Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}}
	for _, tc := range []struct {
		name  string
		url   string
		route []string // --route, or none
		want  string   // after the bridge's words
	}{
		{"an unknown route", startBridge(t, app.Options{}), []string{"--route", "nope"},
			`no route named "nope" is configured (NO_PROVIDER); give --route a route of the bridge's config (routes:), or leave --route out for its default one`},
		{"no default route", startBridge(t, app.Options{}, withRoutes(refusing)), nil,
			`no route named "default" is configured (NO_PROVIDER); the bridge has no route named default: give --route one of its routes (routes: in its config), or add one named default`},
		{"no target took it", startBridge(t, app.Options{}, withRoutes(refusing)), []string{"--route", "ops"},
			`no target of route "ops" took the request (`},
	} {
		for _, rq := range requesters {
			t.Run(tc.name+"/"+rq.args[0], func(t *testing.T) {
				r := await(t, rq.args[0], cliAsync(slices.Concat(rq.args[:1], []string{"--server", tc.url}, rq.args[1:], tc.route)...))
				said := "bridge: " + rq.args[0] + ": create " + rq.noun + ": no answerer accepted " + rq.unnamed + ": " + tc.want
				if r.code != exitError || !strings.Contains(r.stderr, said) || strings.Contains(r.stderr, "user-questions") {
					t.Errorf("stderr %q; want exit 1 saying %q", r.stderr, said)
				}
				// The target's error is in the same line, in parentheses,
				// and its fix may lie on the platform's side, not the config.
				if tc.name == "no target took it" && (!strings.Contains(r.stderr, "(NO_PROVIDER); the first parentheses hold its first target's error: what it names may need fixing on Slack's or Discord's side (a token, a permission, the channel) or in route \"ops\"'s targets in the bridge's config") ||
					strings.Contains(r.stderr, "above")) {
					t.Errorf("stderr %q; want it to point at the target's error in the line and not presume the config is wrong", r.stderr)
				}
			})
		}
	}
}

func TestAskBridgeDown(t *testing.T) {
	r := await(t, "ask", cliAsync("ask", "--server", "http://127.0.0.1:1", "--question", "Deploy?"))
	if r.code != exitError || !strings.Contains(r.stderr, "can't reach the bridge") || !strings.Contains(r.stderr, "BRIDGE_SERVER") ||
		strings.Count(r.stderr, "can't reach") != 1 {
		t.Errorf("ask = %+v, want exit 1 saying once that the bridge can't be reached, and how to point at it", r)
	}
}

// The commands a person runs by hand say the bridge can't be reached
// and where to point them, not only net's dial error.
func TestCommandsBridgeDown(t *testing.T) {
	for _, args := range [][]string{
		{"pending", "--server", "http://127.0.0.1:1"},
		{"answer", "--server", "http://127.0.0.1:1", "0123456789abcdef", "--select", "Yes"},
	} {
		r := await(t, args[0], cliAsync(args...))
		if r.code != exitError || !strings.Contains(r.stderr, "can't reach the bridge") || !strings.Contains(r.stderr, "BRIDGE_SERVER") {
			t.Errorf("%s = %+v, want exit 1 saying the bridge can't be reached and how to point at it", args[0], r)
		}
	}
}

// --server pointing at something that is no bridge (a database, the
// bridge over https://, the bridge under a path) says what is there and
// to check --server, naming the URL and never the token.
func TestCommandsWrongServer(t *testing.T) {
	url := startBridge(t, app.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a database: it reads the request and hangs up
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Read(make([]byte, 4096))
			conn.Close()
		}
	}()
	db := "http://" + ln.Addr().String()
	t.Setenv("BRIDGE_TOKEN", "tok-secret-7f3c9e21b4")
	for _, tc := range []struct {
		server string
		want   string
	}{
		{db, db + " closed the connection without an HTTP response"},
		{"https://" + strings.TrimPrefix(url, "http://"), "answers in plain HTTP, not HTTPS: use " + url},
		{url + "/askbridge", "use " + url + " as its URL"},
	} {
		for _, args := range [][]string{
			{"pending", "--server", tc.server},
			{"answer", "--server", tc.server, "0123456789abcdef", "--select", "Yes"},
			// At once, not after the two minutes a bridge restarting is
			// retried for.
			{"ask", "--server", tc.server, "--question", "Deploy?"},
			{"approve", "--server", tc.server, "--tool", "deploy"},
		} {
			r := await(t, args[0], cliAsync(args...))
			if r.code != exitError || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "check --server (or BRIDGE_SERVER)") ||
				strings.Contains(r.stderr, "tok-secret") {
				t.Errorf("%q = %+v; want exit 1 saying %q and to check --server, without the token", args, r, tc.want)
			}
		}
	}
}

// bridge answer pointed at the bridge under a path says that the call it
// made, the lookup of a question, found no endpoint there: not the
// approvals' endpoint it would have looked up next had the question been
// unknown.
func TestAnswerWrongURLNamesWhatWasCalled(t *testing.T) {
	url := startBridge(t, app.Options{})
	const id = "0123456789abcdef"
	for _, args := range [][]string{
		{"--select", "Yes"},
		{"--allow"},
		{"--dismiss"},
	} {
		r := cli(slices.Concat([]string{"answer", "--server", url + "/some/prefix", id}, args)...)
		if r.code != exitError || !strings.Contains(r.stderr, "no such endpoint: ") || !strings.Contains(r.stderr, " /some/prefix/v1/questions/"+id) ||
			strings.Contains(r.stderr, "approvals") {
			t.Errorf("answer %q = %+v; want exit 1 naming the question's endpoint it called, not the approvals'", args, r)
		}
	}
}

// A password in --server (a proxy's basic auth) is a secret: what the
// commands print and log names the bridge without it.
func TestServerPasswordNotShown(t *testing.T) {
	r := await(t, "ask", cliAsync("ask", "--server", "http://bob:pw-secret-7f3c@127.0.0.1:1", "--question", "Deploy?"))
	if r.code != exitError || !strings.Contains(r.stderr, "can't reach the bridge") || strings.Contains(r.stderr, "pw-secret") {
		t.Errorf("ask = %+v; want exit 1 saying the bridge can't be reached, without the password", r)
	}
	u, err := neturl.Parse(startBridge(t, app.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.UserPassword("bob", "pw-secret-7f3c")
	p := startMCP(t, "--server", u.String())
	p.stdin.Close()
	p.exited(t, exitOK)
	if log := p.stderr.String(); !strings.Contains(log, "serving MCP on stdio") || strings.Contains(log, "pw-secret") {
		t.Errorf("bridge mcp stderr = %q; want its start-up line without the password", log)
	}
}

// A BRIDGE_TOKEN read from a file with its final newline is named as the
// problem, not reported as a bridge that can't be reached.
func TestBadTokenIsNotUnreachable(t *testing.T) {
	url := startBridge(t, app.Options{})
	t.Setenv("BRIDGE_TOKEN", "tok-secret\n")
	for _, args := range [][]string{
		{"ask", "--server", url, "--question", "Deploy?"},
		{"pending", "--server", url},
		{"mcp", "--server", url},
	} {
		r := await(t, args[0], cliAsync(args...))
		if r.code != exitError || !strings.Contains(r.stderr, "API token: starts or ends with white space") ||
			strings.Contains(r.stderr, "can't reach") || strings.Contains(r.stderr, "tok-secret") {
			t.Errorf("%s = %+v, want exit 1 naming the token's white space, not the token", args[0], r)
		}
	}
}

// UNAUTHORIZED tells a user of the commands about BRIDGE_TOKEN, not only
// about the Authorization header they never write.
func TestUnauthorizedNamesBridgeToken(t *testing.T) {
	url := startBridge(t, app.Options{}, func(cfg *config.Config) {
		cfg.API.Tokens = []config.Token{{Name: "inbox", Token: "tok-inbox-7f3c9e21b4", Scopes: []string{config.ScopeAnswer}}}
	})
	for _, tc := range []struct{ token, want string }{
		{"", "set BRIDGE_TOKEN"},
		{"wrong", "BRIDGE_TOKEN is not one of the bridge's API tokens"},
	} {
		t.Setenv("BRIDGE_TOKEN", tc.token)
		for _, args := range [][]string{
			{"ask", "--server", url, "--question", "Deploy?"},
			{"approve", "--server", url, "--tool", "deploy"},
			{"pending", "--server", url},
			{"answer", "--server", url, "abc", "--dismiss"},
			{"answer", "--server", url, "abc", "--allow"},
		} {
			r := await(t, args[0], cliAsync(args...))
			if r.code != exitError || !strings.Contains(r.stderr, "UNAUTHORIZED") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("BRIDGE_TOKEN=%q %s = %+v; want exit 1, UNAUTHORIZED and %q", tc.token, args, r, tc.want)
			}
		}
	}
}

// TestExpired: nobody answered before --expires passed: exit 5, with the
// seam's error; bridge approve --json prints the record.
func TestExpired(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		checkStdout func(t *testing.T, stdout string)
	}{
		{[]string{"ask", "--question", "Deploy?"}, func(t *testing.T, stdout string) {
			if stdout != "" {
				t.Errorf("ask printed %q; want nothing", stdout)
			}
		}},
		{[]string{"approve", "--tool", "deploy", "--json"}, func(t *testing.T, stdout string) {
			var rec client.Record
			if err := json.Unmarshal([]byte(stdout), &rec); err != nil || rec.Status != client.StatusExpired || rec.Error == nil || rec.Error.Code != client.CodeTimedOut {
				t.Errorf("approve --json printed %q (%v); want the expired record", stdout, err)
			}
		}},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			var mu sync.Mutex
			now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			url := startBridge(t, app.Options{Now: clock}, func(cfg *config.Config) {
				cfg.Store.SweepInterval = config.Duration(10 * time.Millisecond)
			})
			asked := cliAsync(append(tc.args, "--server", url, "--expires", "30m")...)
			awaitPending(t, url)
			mu.Lock()
			now = now.Add(31 * time.Minute)
			mu.Unlock()
			r := await(t, tc.args[0], asked)
			if r.code != exitExpired || !strings.Contains(r.stderr, "ASK_TIMED_OUT") {
				t.Errorf("%s = %+v, want exit %d with ASK_TIMED_OUT", tc.args[0], r, exitExpired)
			}
			tc.checkStdout(t, r.stdout)
		})
	}
}

// TestInterrupted sends the test process SIGINT while bridge ask or
// bridge approve waits: its signal handler catches it, and the command
// says it is withdrawing the request, withdraws it and exits 3, saying
// that Ctrl-C withdrew it (not Go's "context canceled").
func TestInterrupted(t *testing.T) {
	for _, tc := range requesters {
		t.Run(tc.args[0], func(t *testing.T) {
			url := startBridge(t, app.Options{})
			asked := cliAsync(append(tc.args, "--server", url)...)
			p := awaitPending(t, url)
			awaitWaiting(t, url)
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			r := await(t, tc.args[0], asked)
			if r.code != exitCancelled || !strings.Contains(r.stderr, "ASK_ABORTED") || r.stdout != "" {
				t.Errorf("%s = %+v, want exit %d with ASK_ABORTED", tc.args[0], r, exitCancelled)
			}
			want := []string{
				"bridge: " + tc.args[0] + ": withdrawing " + tc.unnamed + " (up to 10s)…\n",
				tc.noun + " " + p.ID + " withdrawn: interrupted by Ctrl-C (SIGINT): ",
			}
			if !strings.Contains(r.stderr, want[0]) || !strings.Contains(r.stderr, want[1]) || strings.Contains(r.stderr, "context canceled") {
				t.Errorf("%s stderr = %q; want %q, %q, and no \"context canceled\"", tc.args[0], r.stderr, want[0], want[1])
			}
			c, _ := client.New(url)
			if rec, err := c.Get(context.Background(), p.ID, 0); err != nil || rec.Status != client.StatusCancelled {
				t.Errorf("%s after Ctrl-C = %+v, %v; want cancelled", tc.noun, rec, err)
			}
		})
	}
}

// TestInterruptedNotWithdrawn: Ctrl-C, and the bridge refuses the
// withdrawal. The command said it was withdrawing the request, and now
// says that it could not, so that the person knows its message may still
// be answered.
func TestInterruptedNotWithdrawn(t *testing.T) {
	for _, tc := range requesters {
		t.Run(tc.args[0], func(t *testing.T) {
			url := startBridge(t, app.Options{})
			proxy := failing(t, url, http.MethodDelete, http.StatusInternalServerError, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
			asked := cliAsync(append(tc.args, "--server", proxy.URL)...)
			p := awaitPending(t, url)
			awaitWaiting(t, url)
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			r := await(t, tc.args[0], asked)
			want := []string{
				"bridge: " + tc.args[0] + ": withdrawing " + tc.unnamed + " (up to 10s)…\n",
				"bridge: " + tc.args[0] + ": " + tc.noun + " " + p.ID + " could not be withdrawn: its message may keep live buttons until it expires\n",
			}
			if r.code != exitError || !strings.Contains(r.stderr, want[0]) || !strings.HasSuffix(r.stderr, want[1]) {
				t.Errorf("%s = %+v; want exit %d, saying %q and then %q", tc.args[0], r, exitError, want[0], want[1])
			}
			c, _ := client.New(url)
			if rec, err := c.Get(context.Background(), p.ID, 0); err != nil || rec.Status != client.StatusPending {
				t.Errorf("%s = %+v, %v; want it pending, as the command said", tc.noun, rec, err)
			}
		})
	}
}

// TestUnderAnEndedToolCallID: run again under the --tool-call-id of a
// request that ended (withdrawn by Ctrl-C, decided), the command says it
// found that request ended, with its outcome, rather than that it asked
// and waits. A different request under that id is the bridge's CONFLICT.
func TestUnderAnEndedToolCallID(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	for _, tc := range []struct {
		req        client.Request
		end        func(id string) error
		args       []string // the same request
		other      []string // another under the same id
		wantCode   int
		wantStdout string
		wantFound  string // found: LABEL, then the id
		wantStderr string // after the id
	}{{
		req:        client.QuestionRequest{Questions: []client.Question{{ID: "q1", Question: "Deploy?"}}, ToolCallID: "deploy-42"},
		end:        func(id string) error { _, err := c.Cancel(ctx, id); return err },
		args:       []string{"ask", "--question", "Deploy?", "--tool-call-id", "deploy-42"},
		other:      []string{"ask", "--question", "Deploy now?", "--tool-call-id", "deploy-42"},
		wantCode:   exitCancelled,
		wantFound:  "found: question id ",
		wantStderr: " (tool_call_id deploy-42) ended already, cancelled; give another --tool-call-id",
	}, {
		req: client.ApprovalRequest{Approval: client.Approval{ToolName: "deploy"}, ToolCallID: "deploy-43"},
		end: func(id string) error {
			_, err := c.Decide(ctx, id, client.Decision{Outcome: client.OutcomeAllowedOnce, Note: "go"})
			return err
		},
		args:  []string{"approve", "--tool", "deploy", "--tool-call-id", "deploy-43"},
		other: []string{"approve", "--tool", "deploy", "--arg", "env=staging", "--tool-call-id", "deploy-43"},
		// Allowed for a run before this one, which may have made the
		// call: not 0, or a script under a fixed id runs its step on
		// every run.
		wantCode:   exitAllowedBefore,
		wantStdout: "allowed-once: go\n",
		wantFound:  "found: approval id ",
		wantStderr: " (tool_call_id deploy-43) ended already, allowed-once; give another --tool-call-id",
	}} {
		t.Run(tc.args[0], func(t *testing.T) {
			rec, err := c.Create(ctx, tc.req, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.end(rec.ID); err != nil {
				t.Fatal(err)
			}
			r := cli(append(tc.args, "--server", url)...)
			if want := tc.wantFound + rec.ID + tc.wantStderr; r.code != tc.wantCode || r.stdout != tc.wantStdout ||
				strings.Contains(r.stderr, "asked:") || !strings.Contains(r.stderr, want) {
				t.Errorf("%s = %+v; want exit %d, %q, saying %q", tc.args[0], r, tc.wantCode, tc.wantStdout, want)
			}
			r = cli(append(tc.other, "--server", url)...)
			if r.code != exitError || !strings.Contains(r.stderr, "CONFLICT") || r.stdout != "" {
				t.Errorf("%s of another request under the id = %+v; want exit 1 with CONFLICT", tc.args[0], r)
			}
		})
	}
}

// TestAskCallerFlagKeepsTheRequestsCaller: --caller names who asks; the
// rest of the caller of a --json-request (agent, session, delegated) stays.
// Dropped, a delegated child's request would be asked instead of refused.
func TestAskCallerFlagKeepsTheRequestsCaller(t *testing.T) {
	url := startBridge(t, app.Options{})
	req := tempFile(t, `{"questions":[{"id":"a","question":"A?"}],"caller":{"agent":"a-7","name":"file-bot","session":"run-9"}}`)
	asked := cliAsync("ask", "--server", url, "--json-request", req, "--caller", "cli-bot")
	p := awaitPending(t, url)
	if want := (client.Caller{Agent: "a-7", Name: "cli-bot", Session: "run-9"}); p.Caller == nil || *p.Caller != want {
		t.Errorf("caller = %+v, want %+v", p.Caller, want)
	}
	if r := cli("answer", "--server", url, p.ID, "--dismiss"); r.code != exitOK {
		t.Fatalf("dismiss: %+v", r)
	}
	await(t, "ask", asked)

	delegated := tempFile(t, `{"questions":[{"id":"a","question":"A?"}],"caller":{"agent":"a-8","delegated":true}}`)
	r := await(t, "ask", cliAsync("ask", "--server", url, "--json-request", delegated, "--caller", "cli-bot"))
	if r.code != exitError || !strings.Contains(r.stderr, "DELEGATED_CALLER") || strings.Contains(r.stderr, "asked:") {
		t.Errorf("ask of a delegated caller = %+v; want exit %d with DELEGATED_CALLER", r, exitError)
	}
}

func TestAnswerApproval(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	for _, tc := range []struct {
		flags []string
		want  client.Decision
	}{
		{[]string{"--allow"}, client.Decision{Outcome: client.OutcomeAllowedOnce}},
		{[]string{"--reject", "--note", "not on a Friday"}, client.Decision{Outcome: client.OutcomeRejected, Note: "not on a Friday"}},
	} {
		rec, err := c.Create(ctx, client.ApprovalRequest{Approval: client.Approval{ToolName: "kubectl_apply"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r := cli("answer", "--server", url, rec.ID, "--select", "Yes"); r.code != exitUsage {
			t.Errorf("--select on an approval: exit %d, want %d", r.code, exitUsage)
		}
		r := cli(append([]string{"answer", "--server", url, rec.ID}, tc.flags...)...)
		if r.code != exitOK {
			t.Fatalf("answer %v: exit %d, %s", tc.flags, r.code, r.stderr)
		}
		var got client.Record
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Decision == nil || *got.Decision != tc.want {
			t.Errorf("answer %v printed %s (%v), want decision %+v", tc.flags, r.stdout, err, tc.want)
		}
	}
}

func TestAnswerUsage(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	rec, err := c.Create(context.Background(), client.QuestionRequest{Questions: []client.Question{
		{ID: "a", Question: "A?"}, {ID: "b", Question: "B?"},
	}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(t.TempDir(), "typo.json")
	if err := os.WriteFile(typo, []byte(`{"questions":[{"id":"a","question":"A?"}],"expire_in":"1h"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"answer"}, exitUsage},
		{[]string{"answer", rec.ID}, exitUsage},
		{[]string{"answer", rec.ID, "--allow", "--reject"}, exitUsage},
		{[]string{"answer", rec.ID, "--note", "x"}, exitUsage},
		{[]string{"answer", rec.ID, "--dismiss", "--custom", "x"}, exitUsage},
		{[]string{"answer", rec.ID, "--json", "{}", "--custom", "x"}, exitUsage},
		{[]string{"answer", rec.ID, "--custom", "x"}, exitUsage},                                      // two questions: which?
		{[]string{"answer", rec.ID, "--allow"}, exitUsage},                                            // a question, not an approval
		{[]string{"answer", rec.ID, "--json", `{"answers":[{"id":"a","selcted":["x"]}]}`}, exitUsage}, // misspelt: not a skip
		{[]string{"answer", rec.ID, "--json", `{}`}, exitUsage},                                       // no answers: not a skip
		{[]string{"answer", rec.ID, "--json", `null`}, exitUsage},
		{[]string{"answer", "nosuchid", "--custom", "x"}, exitError},
		{[]string{"answer", rec.ID, "--question-id", "c", "--custom", "x"}, exitUsage}, // no such question: found before answering
		{[]string{"answer", "-h"}, exitOK},
		{[]string{"ask"}, exitUsage},
		{[]string{"ask", "--question", "Q?", "extra"}, exitUsage},
		{[]string{"ask", "--json-request", "-", "--option", "x"}, exitUsage},
		{[]string{"ask", "--bogus"}, exitUsage},
		{[]string{"ask", "--question", "Q?", "--expires", "-1m"}, exitUsage},
		{[]string{"ask", "--question", "Q?", "--expires", "1000000h"}, exitUsage},
		{[]string{"pending", "extra"}, exitUsage},
	} {
		r := cli(append(tc.args, "--server", url)...)
		if r.code != tc.code {
			t.Errorf("%q: exit %d, want %d; stderr: %s", tc.args, r.code, tc.code, r.stderr)
		}
	}
	r := await(t, "ask with a misspelt key", cliAsync("ask", "--server", url, "--json-request", typo))
	if r.code != exitError || !strings.Contains(r.stderr, `unknown key "expire_in"`) {
		t.Errorf("ask --json-request with a misspelt key = %+v, want exit 1 naming the key", r)
	}
	// The help says so: it points at the API's body, which ignores an
	// unknown key, and names the keys --json-request takes.
	help := strings.Join(strings.Fields(cli("ask", "-h").stdout), " ")
	for _, want := range []string{"more strictly than the API", "other than questions, tool_call_id, caller, route and expires_in is refused", "the API ignores unknown keys"} {
		if !strings.Contains(help, want) {
			t.Errorf("bridge ask -h does not say %q", want)
		}
	}
	if got, err := c.Get(context.Background(), rec.ID, 0); err != nil || got.Status != client.StatusPending {
		t.Errorf("after usage errors the question is %+v, %v; want it still pending", got, err)
	}
}

// TestRefusedBeforeSent: what the bridge would refuse of a request or an
// answer made of the flags is found before anything is sent, by the
// seam's own rules: a usage error (exit 2) in the flags' terms, not the
// API's (options[0], custom, tool_name), with the pointer to -h. A
// --json-request's is the file's to fix: sent, the bridge's refusal
// (exit 1), in the API's terms; so is an answer's --json
// (TestAnswerJSONLeftToTheBridge).
func TestRefusedBeforeSent(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	free := mustAsk(t, c, []client.Question{{ID: "why", Question: "Why now?"}})
	single := mustAsk(t, c, []client.Question{{ID: "env", Question: "Where?", Options: []client.Option{{Label: "staging"}, {Label: "prod"}}}})
	approval, err := c.Create(ctx, client.ApprovalRequest{Approval: client.Approval{ToolName: "deploy"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 201)
	for _, tc := range []struct {
		args []string
		want string
		not  string
	}{
		{[]string{"ask", "--question", "Go?", "--option", "Yes", "--option", ""}, `question "q1": --option 2 has an empty label`, "options["},
		{[]string{"ask", "--question", "Go?", "--option", "Yes", "--option", "Yes"}, `question "q1": --option "Yes" appears twice`, "option label"},
		{[]string{"ask", "--question", "Go?", "--option", "a\tb"}, `question "q1": --option "a\tb" contains control characters`, "option label"},
		{[]string{"ask", "--question", strings.Repeat("x", 2001)}, `question "q1": --question is longer than 2000 characters`, "question text"},
		{[]string{"ask", "--question", "Go?", "--header", long}, `question "q1": --header is longer than 100 characters`, ": header"},
		{[]string{"ask", "--question", "Go?", "--id", ""}, "--id is empty", "questions[0]"},
		{[]string{"ask", "--question", "Go?", "--id", " "}, `--id " " is blank`, "questions[0]"},
		{[]string{"ask", "--question", "Go?", "--caller", long}, "--caller is longer than 200 characters", "caller.name"},
		{[]string{"ask", "--question", "Go?", "--tool-call-id", long}, "--tool-call-id is longer than 200 bytes", "tool_call_id"},
		{[]string{"ask", "--question", "Go?", "--route", long}, "--route is longer than 100 bytes", " route is"},
		{[]string{"approve", "--tool", long}, "--tool must be at most 200 characters without control characters", "tool_name"},
		{[]string{"approve", "--tool", "de\nploy"}, "--tool must be at most 200 characters without control characters", "tool_name"},
		{[]string{"approve", "--tool", "deploy", "--args", `["prod"]`}, `--args must be a JSON object of the tool call's arguments, such as {"file": "prod.yaml"}`, "arguments must"},
		{[]string{"approve", "--tool", "deploy", "--args", `"prod"`}, "--args must be a JSON object", "arguments must"},
		{[]string{"approve", "--tool", "deploy", "--arg", "manifest=" + strings.Repeat("x", 256<<10)}, "the arguments of --args and --arg are larger than 256 KiB", "arguments are"},
		{[]string{"approve", "--tool", "deploy", "--reason", strings.Repeat("x", 4001)}, "--reason is longer than 4000 characters", " reason is"},
		{[]string{"approve", "--tool", "deploy", "--display-reason", strings.Repeat("x", 4001)}, "--display-reason is longer than 4000 characters", "display_reason"},
		{[]string{"approve", "--tool", "deploy", "--caller", long}, "--caller is longer than 200 characters", "caller.name"},
		{[]string{"approve", "--tool", "deploy", "--tool-call-id", long}, "--tool-call-id is longer than 200 bytes", "tool_call_id"},
		// Flags that apply to a --json-request are the flags' to fix.
		{[]string{"approve", "--json-request", tempFile(t, `{"tool_name":"deploy"}`), "--caller", long}, "--caller is longer than 200 characters", "caller.name"},
		{[]string{"answer", free.ID, "--select", "Later"}, `"Later" is not an option of question "why", which has none: answer it in free text, with --custom TEXT`, "with custom"},
		{[]string{"answer", single.ID, "--select", "staging", "--select", "prod"}, `question "env" takes one option, --select is given 2 times`, "the answer selects"},
		{[]string{"answer", free.ID, "--custom", strings.Repeat("x", 10001)}, `the answer to "why" is longer than 10000 characters`, "INVALID_REQUEST"},
		{[]string{"answer", approval.ID, "--allow", "--note", strings.Repeat("x", 2001)}, "--note is longer than 2000 characters", "INVALID_REQUEST"},
	} {
		r := await(t, tc.args[0], cliAsync(slices.Concat(tc.args[:1], []string{"--server", url}, tc.args[1:])...))
		want, hint := "bridge "+tc.args[0]+": "+tc.want, "\nRun \"bridge "+tc.args[0]+" -h\" for its flags.\n"
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, want) || !strings.HasSuffix(r.stderr, hint) || strings.Count(r.stderr, "\n") != 2 ||
			strings.Contains(r.stderr, tc.not) || r.stdout != "" {
			t.Errorf("%.80q = %+v; want exit %d, stderr %.200q ... %q", tc.args, r, exitUsage, want, hint)
		}
	}
	// Nothing was asked, answered or decided.
	list, err := c.Pending(ctx)
	if err != nil || len(list.Questions) != 2 || len(list.Approvals) != 1 {
		t.Errorf("after refused requests pending = %+v, %v; want the 2 questions and the approval made here", list, err)
	}

	req := tempFile(t, `{"questions":[{"id":"q1","question":"Go?","options":[{"label":"Yes"},{"label":" "}]}]}`)
	r := await(t, "ask", cliAsync("ask", "--server", url, "--json-request", req))
	if r.code != exitError || !strings.Contains(r.stderr, `options[1] has an empty label (INVALID_REQUEST)`) || strings.Contains(r.stderr, "--option") {
		t.Errorf("ask --json-request with an empty label = %+v; want exit 1, the bridge's refusal in the API's terms", r)
	}
}

// TestRefusalsInFlagTerms: where the bridge's refusal speaks of the API
// (options[0], ?tool_call_id=, "this token", tool_name) and a flag or
// variable of the command corresponds, the command says the flag or the
// variable, keeping the code. Given as JSON (--json-request), the API's
// terms are the ones to use, and stay. (What the seam's rules refuse of
// the flags is found before it is sent: TestRefusedBeforeSent; a bridge of
// another version may refuse more.)
func TestRefusalsInFlagTerms(t *testing.T) {
	url := startBridge(t, app.Options{})
	long := strings.Repeat("x", 201)
	approval := tempFile(t, `{"tool_name":"`+long+`"}`)
	locked := startBridge(t, app.Options{}, func(cfg *config.Config) {
		cfg.API.Tokens = []config.Token{
			{Name: "agent", Token: "tok-ask-7f3c9e21b4", Scopes: []string{config.ScopeAsk}},
			{Name: "inbox", Token: "tok-answer-7f3c9e21b4", Scopes: []string{config.ScopeAnswer}},
		}
	})
	refusing := func(msg string) string {
		return failing(t, url, http.MethodPost, http.StatusBadRequest, `{"error":{"code":"INVALID_REQUEST","message":`+strconv.Quote(msg)+`}}`).URL
	}
	for _, tc := range []struct {
		token string
		args  []string
		want  []string
		not   string
	}{
		{"tok-ask-7f3c9e21b4", []string{"pending", "--server", locked},
			[]string{"listing requests needs the answer scope; BRIDGE_TOKEN holds a token without it", "(FORBIDDEN)"}, "?tool_call_id="},
		{"tok-answer-7f3c9e21b4", []string{"ask", "--server", locked, "--question", "Go?"},
			[]string{"BRIDGE_TOKEN holds a token that lacks the ask scope (FORBIDDEN)"}, "this token"},
		{"", []string{"ask", "--server", refusing(`question "q1": options[1] has an empty label`), "--question", "Go?", "--option", "Yes", "--option", "No"},
			[]string{`question "q1": --option 2 has an empty label (INVALID_REQUEST)`}, "options["},
		{"", []string{"ask", "--server", refusing("caller.name is longer than 100 characters"), "--question", "Go?", "--caller", "bot"},
			[]string{"--caller is longer than 100 characters (INVALID_REQUEST)"}, "caller.name"},
		{"tok-answer-7f3c9e21b4", []string{"approve", "--server", locked, "--tool", "deploy"},
			[]string{"BRIDGE_TOKEN holds a token that lacks the ask scope (FORBIDDEN)"}, "this token"},
		{"", []string{"approve", "--server", refusing("tool_name must be at most 100 characters without control characters"), "--tool", "deploy"},
			[]string{"--tool must be at most 100 characters without control characters (INVALID_REQUEST)"}, "tool_name"},
		{"", []string{"approve", "--server", url, "--json-request", approval},
			[]string{"tool_name must be at most 200 characters without control characters (INVALID_REQUEST)"}, "--tool"},
	} {
		t.Setenv("BRIDGE_TOKEN", tc.token)
		r := await(t, tc.args[0], cliAsync(tc.args...))
		if r.code != exitError || strings.Contains(r.stderr, tc.not) {
			t.Errorf("%.80q = %+v; want exit 1, without %q", tc.args, r, tc.not)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%.80q stderr = %q; want %q", tc.args, r.stderr, w)
			}
		}
	}
}

// TestMalformedServerIsUsage: a --server, or a BRIDGE_SERVER in its
// stead, that is no bridge URL is a usage error of every command that
// takes it, named with where it came from and the pointer to -h, and
// without the password a URL may hold, or its query or fragment (the
// bridge URL is a base URL, and a query may hold a secret).
func TestMalformedServerIsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"ask", "--question", "Deploy?"},
		{"approve", "--tool", "deploy"},
		{"answer", "0123456789abcdef", "--allow"},
		{"pending"},
		{"signin-link"},
		{"mcp"},
	} {
		cmd := args[0]
		hint := "\nRun \"bridge " + cmd + " -h\" for its flags.\n"
		for _, tc := range []struct{ flag, env, want string }{
			{"foo", "", `bridge ` + cmd + `: --server: bridge URL "foo": write it as http://host:port or https://host` + hint},
			{"ftp://127.0.0.1:1", "", `bridge ` + cmd + `: --server: bridge URL "ftp://127.0.0.1:1": write it as`},
			{"", "127.0.0.1:8080", `bridge ` + cmd + `: BRIDGE_SERVER (the default of --server): bridge URL "127.0.0.1:8080": write it as`},
			{"http://bob:pw-secret-7f3c@", "", `bridge ` + cmd + `: --server: bridge URL "http://bob:xxxxx@": write it as`},
			{"", "http://127.0.0.1:1/?x=pw-secret-7f3c", `bridge ` + cmd + `: BRIDGE_SERVER (the default of --server): the bridge URL has a query or fragment (not shown: it may hold a secret); write the bridge's base URL alone`},
			{"http://127.0.0.1:1/#pw-secret-7f3c", "", `bridge ` + cmd + `: --server: the bridge URL has a query or fragment (not shown`},
		} {
			t.Setenv("BRIDGE_SERVER", tc.env)
			full := slices.Clone(args)
			if tc.flag != "" {
				full = append(full, "--server", tc.flag)
			}
			// Without the check mcp would serve stdin (empty: exit 0).
			r := await(t, cmd, cliAsync(full...))
			if r.code != exitUsage || !strings.HasPrefix(r.stderr, tc.want) || !strings.HasSuffix(r.stderr, hint) || strings.Contains(r.stderr, "pw-secret") {
				t.Errorf("BRIDGE_SERVER=%q %q = %+v; want exit %d, stderr starting %q", tc.env, full, r, exitUsage, tc.want)
			}
		}
	}
	// The help of the commands that list their exit statuses says so.
	for _, cmd := range []string{"ask", "approve", "answer"} {
		help := strings.Join(strings.Fields(cli(cmd, "-h").stdout), " ")
		if want := "a --server or BRIDGE_SERVER that is no URL or has a query or fragment"; !strings.Contains(help, want) {
			t.Errorf("bridge %s -h does not say %q", cmd, want)
		}
	}
}

// TestAnswerSelectAndCustom: on a single-select question --custom answers
// in place of an option, so the two together are refused before anything
// is sent, rather than the option dropped unsaid; on a multi-select
// question the text adds to the options (TestAskAndAnswer).
func TestAnswerSelectAndCustom(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	rec := mustAsk(t, c, []client.Question{
		{ID: "env", Question: "Which environment?", Options: []client.Option{{Label: "staging"}, {Label: "prod"}}},
		{ID: "svc", Question: "Which services?", MultiSelect: true, Options: []client.Option{{Label: "web"}, {Label: "api"}}},
	})
	one := mustAsk(t, c, []client.Question{
		{ID: "q1", Question: "Deploy?", Options: []client.Option{{Label: "Yes"}, {Label: "No"}}},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{one.ID, "--select", "Yes", "--custom", "only after lunch"}, "question q1 takes one answer: --select picks an option, --custom answers in its place; give one of them"},
		{[]string{rec.ID, "--question-id", "env", "--custom", "qa", "--select", "prod"}, "question env takes one answer"},
	} {
		r := cli(append([]string{"answer", "--server", url}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("answer %q = %+v; want exit %d saying %q", tc.args, r, exitUsage, tc.want)
		}
	}
	for _, id := range []string{rec.ID, one.ID} {
		if got, err := c.Get(ctx, id, 0); err != nil || got.Status != client.StatusPending {
			t.Errorf("after a refused answer %s is %+v, %v; want it still pending", id, got, err)
		}
	}
	// The multi-select question of the same request takes both.
	r := cli("answer", "--server", url, rec.ID, "--question-id", "svc", "--select", "api", "--custom", "and the worker")
	if r.code != exitOK {
		t.Fatalf("a multi-select question's --select with --custom: exit %d, %s", r.code, r.stderr)
	}
	got, err := c.Get(ctx, rec.ID, 0)
	if err != nil || got.Answer == nil || len(got.Answer.Answers) != 2 {
		t.Fatalf("answered %+v, %v", got, err)
	}
	if a := got.Answer.Answers[1]; a.ID != "svc" || !slices.Equal(a.Selected, []string{"api"}) || a.Custom != "and the worker" {
		t.Errorf("svc answered %+v; want api and the text", a)
	}
}

// TestAnswerEmpty: an answer the flags leave empty (an empty --custom
// "$TEXT", --question-id alone) is refused before anything is sent: the
// bridge would record the question as skipped, for good.
func TestAnswerEmpty(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	rec := mustAsk(t, c, []client.Question{
		{ID: "env", Question: "Which environment?", Options: []client.Option{{Label: "staging"}, {Label: "prod"}}},
		{ID: "why", Question: "Why now?"},
	})
	one := mustAsk(t, c, []client.Question{{ID: "q1", Question: "Release name?"}})
	for _, args := range [][]string{
		{one.ID, "--custom", ""},
		{one.ID, "--custom", " \t"},
		{rec.ID, "--question-id", "env"},
		{rec.ID, "--question-id", "why", "--custom", " "},
	} {
		r := cli(append([]string{"answer", "--server", url}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "no answer given") {
			t.Errorf("answer %q = %+v; want exit %d saying no answer was given", args, r, exitUsage)
		}
	}
	// An empty --json ("$ANSWER" unset) is no answer either, not a skip.
	for _, j := range []string{"", " \n"} {
		r := cli("answer", "--server", url, one.ID, "--json", j)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, "bridge answer: --json is empty") {
			t.Errorf("answer --json %q = %+v; want exit %d saying --json is empty", j, r, exitUsage)
		}
	}
	for _, id := range []string{rec.ID, one.ID} {
		if got, err := c.Get(ctx, id, 0); err != nil || got.Status != client.StatusPending {
			t.Errorf("after an empty answer %s is %+v, %v; want it still pending", id, got, err)
		}
	}
}

// answeredQuestion is a question request on c, "Which environment?"
// (staging or prod), answered prod.
// mustAsk creates a question request of qs through c, waiting for nothing.
func mustAsk(t *testing.T, c *client.Client, qs []client.Question) *client.Record {
	t.Helper()
	rec, err := c.Create(context.Background(), client.QuestionRequest{Questions: qs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func answeredQuestion(t *testing.T, c *client.Client) *client.Record {
	t.Helper()
	ctx := context.Background()
	rec := mustAsk(t, c, []client.Question{
		{ID: "env", Question: "Which environment?", Options: []client.Option{{Label: "staging"}, {Label: "prod"}}},
	})
	if _, err := c.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "env", Selected: []string{"prod"}}}}); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestAnswerEnded: a request that ended already is told as ended
// (ALREADY_RESOLVED, exit 1) whatever the answer flags say of its
// questions, as the bridge tells it before it looks at the answer: not a
// usage error over an option, a question id, or questions the record no
// longer has. A --note too long is a usage error even so: the bridge
// checks a decision before it looks at the approval.
func TestAnswerEnded(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	answered := answeredQuestion(t, c)
	two := mustAsk(t, c, []client.Question{
		{ID: "a", Question: "A?"}, {ID: "b", Question: "B?"},
	})
	if _, err := c.Dismiss(ctx, two.ID); err != nil {
		t.Fatal(err)
	}
	// Withdrawn before its create landed: a record without questions.
	req, _ := http.NewRequest(http.MethodDelete, url+"/v1/questions?tool_call_id=tc-withdrawn-first", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var withdrawn client.Record
	err = json.NewDecoder(resp.Body).Decode(&withdrawn)
	resp.Body.Close()
	if err != nil || withdrawn.ID == "" || withdrawn.Status != client.StatusCancelled || len(withdrawn.Questions) != 0 {
		t.Fatalf("withdrawn before created: %+v, %v; want a cancelled record without questions", withdrawn, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{answered.ID, "--select", "dev"}, "already ended: answered"},
		{[]string{answered.ID, "--select", "staging", "--select", "prod"}, "already ended: answered"},
		{[]string{answered.ID, "--question-id", "nope", "--custom", "x"}, "already ended: answered"},
		{[]string{two.ID, "--custom", "x"}, "already ended: dismissed"},
		{[]string{withdrawn.ID, "--question-id", "q1", "--custom", "x"}, "already ended: cancelled"},
		{[]string{withdrawn.ID, "--select", "Yes"}, "already ended: cancelled"},
		// An answer body is the bridge's to fit to the questions, and it
		// tells the question ended first.
		{[]string{answered.ID, "--json", `{"answers":[{"id":"nope","selected":["dev"]}]}`}, "already ended: answered"},
		{[]string{withdrawn.ID, "--json", `{"answers":[]}`}, "already ended: cancelled"},
	} {
		r := cli(append([]string{"answer", "--server", url}, tc.args...)...)
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "ALREADY_RESOLVED") ||
			strings.Contains(r.stderr, "-h\" for its flags") || r.stdout != "" {
			t.Errorf("answer %q = %+v; want exit %d saying %q (ALREADY_RESOLVED)", tc.args, r, exitError, tc.want)
		}
	}

	approval, err := c.Create(ctx, client.ApprovalRequest{Approval: client.Approval{ToolName: "deploy"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, approval.ID, client.Decision{Outcome: client.OutcomeAllowedOnce}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 2001)
	// What the bridge says of it: the note, not the approval's end.
	if _, err := c.Decide(ctx, approval.ID, client.Decision{Outcome: client.OutcomeRejected, Note: long}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("bridge: a note too long on a decided approval: %v; want INVALID_REQUEST", err)
	}
	r := cli("answer", "--server", url, approval.ID, "--reject", "--note", long)
	if r.code != exitUsage || !strings.HasPrefix(r.stderr, "bridge answer: --note is longer than 2000 characters\n") {
		t.Errorf("answer --note too long on a decided approval = %+v; want exit %d naming --note", r, exitUsage)
	}
	if r := cli("answer", "--server", url, approval.ID, "--reject"); r.code != exitError || !strings.Contains(r.stderr, "already ended: answered") {
		t.Errorf("answer --reject on a decided approval = %+v; want exit %d, already ended", r, exitError)
	}
}

// TestAnswerJSONBeforeLookup: a --json that is no answer body (an unset
// "$ANSWER" among them) is a usage error found before anything is sent,
// as the bridge refuses such a body before it looks at the question:
// whether the bridge is down, ID unknown, or its question ended.
func TestAnswerJSONBeforeLookup(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ended := answeredQuestion(t, c)
	var (
		mu   sync.Mutex
		sent []string
	)
	recording := proxyTo(t, url, func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, r.Method+" "+r.URL.Path)
		return false
	})
	bodies := map[string]string{
		"":    "bridge answer: --json is empty",
		" \n": "bridge answer: --json is empty",
		`{"answers":[{"id":"env","selected":["prod"]}]`:                "bridge answer: --json is not valid JSON: unexpected EOF",
		`{"answers":[{"id":"env","selcted":["prod"]}]}`:                `bridge answer: --json: answers[0] has no field "selcted"`,
		`{"answers":[{"id":"env","selected":["prod"],"selected":[]}]}`: `bridge answer: --json: answers[0] holds "selected" twice`,
		`{"answers":[{"id":"env","selected":"prod"}]}`:                 "bridge answer: --json: answers[0].selected must be an array",
		`{}`: `bridge answer: --json has no "answers"`,
	}
	for _, tc := range []struct{ name, server, id string }{
		{"bridge down", "http://127.0.0.1:1", "0123456789abcdef"},
		{"unknown id", recording.URL, "0123456789abcdef"},
		{"ended question", recording.URL, ended.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			sent = nil
			mu.Unlock()
			for body, want := range bodies {
				r := await(t, "answer", cliAsync("answer", "--server", tc.server, tc.id, "--json", body))
				if r.code != exitUsage || !strings.HasPrefix(r.stderr, want) || r.stdout != "" {
					t.Errorf("answer --json %q = %+v; want exit %d saying %q", body, r, exitUsage, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(sent) != 0 {
				t.Errorf("sent %q; want nothing sent", sent)
			}
		})
	}
}

// TestAnswerJSONLeftToTheBridge: whether a --json answer fits the
// questions is the bridge's to say, as a --json-request's content is: sent,
// its refusal exits 1 in the API's terms, and what a bridge of another
// version takes (a longer custom) is answered, where the seam's rules of
// this build would refuse it.
func TestAnswerJSONLeftToTheBridge(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	free := mustAsk(t, c, []client.Question{{ID: "why", Question: "Why now?"}})
	r := cli("answer", "--server", url, free.ID, "--json", `{"answers":[{"id":"why","selected":["Later"]}]}`)
	if want := `"Later" is not an option of question "why", which has none: answer it in free text, with custom (INVALID_REQUEST)`; r.code != exitError ||
		!strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "--custom") || r.stdout != "" {
		t.Errorf("answer --json with an option the question lacks = %+v; want exit %d, the bridge's %q", r, exitError, want)
	}
	if got, err := c.Get(ctx, free.ID, 0); err != nil || got.Status != client.StatusPending {
		t.Fatalf("after a refused answer %s is %+v, %v; want it still pending", free.ID, got, err)
	}

	// A newer bridge that takes a longer custom: it answers.
	longer := strings.Repeat("x", 10001)
	newer := proxyTo(t, url, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost {
			return false
		}
		var a client.Answer
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || len(a.Answers) != 1 || a.Answers[0].Custom != longer {
			t.Errorf("the bridge got %+v, %v; want the --json answer", a, err)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(client.Record{ID: free.ID, Kind: client.KindQuestion, Status: client.StatusAnswered, Answer: &a})
		return true
	})
	r = cli("answer", "--server", newer.URL, free.ID, "--json", `{"answers":[{"id":"why","custom":"`+longer+`"}]}`)
	if r.code != exitOK || !strings.Contains(r.stdout, `"status": "answered"`) {
		t.Errorf("answer --json with a custom a newer bridge takes = exit %d, stdout %.300q, stderr %.300q; want exit 0, the answered record", r.code, r.stdout, r.stderr)
	}
}

// TestAnswerJSONDuplicateKey: --json that names a field twice is refused
// before anything is sent, as the API refuses such a body. Decoded and sent
// again, it would keep the last of the two: a skip, recorded for good.
func TestAnswerJSONDuplicateKey(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	rec := mustAsk(t, c, []client.Question{
		{ID: "env", Question: "Which environment?", Options: []client.Option{{Label: "staging"}, {Label: "prod"}}},
	})
	r := cli("answer", "--server", url, rec.ID, "--json", `{"answers":[{"id":"env","selected":["prod"],"selected":[]}]}`)
	if want := `answers[0] holds "selected" twice; send it once`; r.code != exitUsage || !strings.Contains(r.stderr, want) || r.stdout != "" {
		t.Errorf("answer = %+v; want exit %d saying %q", r, exitUsage, want)
	}
	if got, err := c.Get(ctx, rec.ID, 0); err != nil || got.Status != client.StatusPending {
		t.Errorf("after a refused answer %s is %+v, %v; want it still pending", rec.ID, got, err)
	}
}

// TestAnswerJSONSaysWhere: --json that is not an answer says where, in the
// answer's own terms, as the API does: not in encoding/json's, which names
// Go's types ("Go struct field AnswerItem.answers.selected of type
// []string") and, for a misspelt key, not where it is.
func TestAnswerJSONSaysWhere(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	rec := mustAsk(t, c, []client.Question{
		{ID: "env", Question: "Which environment?", Options: []client.Option{{Label: "staging"}, {Label: "prod"}}},
		{ID: "why", Question: "Why?"},
	})
	for answer, want := range map[string]string{
		`{"answers":[{"id":"why","custom":"x"},{"id":"env","selcted":["prod"]}]}`: `bridge answer: --json: answers[1] has no field "selcted"; its fields are id, selected and custom`,
		`{"answers":[{"id":"env","selected":"prod"}]}`:                            `bridge answer: --json: answers[0].selected must be an array, not a JSON string`,
		`{"answers":[{"id":"env","selected":["prod"]}]`:                           `bridge answer: --json is not valid JSON: unexpected EOF`,
	} {
		r := cli("answer", "--server", url, rec.ID, "--json", answer)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, want+"\n") || r.stdout != "" {
			t.Errorf("answer --json %s = %+v; want exit %d saying %q", answer, r, exitUsage, want)
		}
	}
	if got, err := c.Get(ctx, rec.ID, 0); err != nil || got.Status != client.StatusPending {
		t.Errorf("after refused answers %s is %+v, %v; want it still pending", rec.ID, got, err)
	}
}

func TestPending(t *testing.T) {
	url := startBridge(t, app.Options{})
	if r := cli("pending", "--server", url); r.code != exitOK || r.stdout != "nothing pending\n" {
		t.Errorf("pending with nothing = %+v", r)
	}
	c, _ := client.New(url)
	ctx := context.Background()
	q := mustAsk(t, c, []client.Question{
		{ID: "a", Question: "Deploy\nnow?", MultiSelect: true, Options: []client.Option{{Label: "web"}, {Label: "api"}}},
		{ID: "b", Question: "Why?"},
	})
	a, err := c.Create(ctx, client.ApprovalRequest{Approval: client.Approval{ToolName: "kubectl_apply"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	yn := mustAsk(t, c, []client.Question{
		{ID: "dry", Question: "Dry run first?", Input: &client.Input{Type: client.InputBoolean}},
	})

	r := cli("pending", "--server", url)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitOK || len(lines) != 4 {
		t.Fatalf("pending = %+v, want a header and three rows", r)
	}
	// Rows are oldest first; these two may share a millisecond, so each is
	// found by its id.
	for _, want := range [][]string{
		{"ID", "AGE", "KIND", "ASKED", "OPTIONS"},
		{q.ID, "question", "Deploy now? (+1 more)", "web | api (multi)"},
		{a.ID, "approval", "kubectl_apply", "--allow | --reject"},
		{yn.ID, "question", "Dry run first?", "(true or false)"},
	} {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, want[0]) })
		if i < 0 {
			t.Errorf("no row starts with %q in %q", want[0], lines)
			continue
		}
		for _, w := range want[1:] {
			if !strings.Contains(lines[i], w) {
				t.Errorf("row %d = %q, want %q in it", i, lines[i], w)
			}
		}
	}

	r = cli("pending", "--server", url, "--json")
	var list client.PendingList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != exitOK {
		t.Fatalf("pending --json = %+v (%v)", r, err)
	}
	ids := []string{}
	for _, r := range list.Questions {
		ids = append(ids, r.ID)
	}
	if slices.Sort(ids); !slices.Equal(ids, slices.Sorted(slices.Values([]string{q.ID, yn.ID}))) || len(list.Approvals) != 1 || list.Approvals[0].ID != a.ID {
		t.Errorf("pending --json = %+v", list)
	}
}

// TestPendingSaysWhenCut: with more pending than the API lists, the table
// holds the newest and says, on stderr, that older ones wait too.
func TestPendingSaysWhenCut(t *testing.T) {
	url := startBridge(t, app.Options{})
	c, _ := client.New(url)
	ctx := context.Background()
	for range client.PendingLimit + 1 {
		if _, err := c.Create(ctx, client.ApprovalRequest{Approval: client.Approval{ToolName: "kubectl_apply"}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	r := cli("pending", "--server", url)
	if rows := strings.Count(r.stdout, "kubectl_apply"); r.code != exitOK || rows != client.PendingLimit {
		t.Fatalf("pending: exit %d, %d rows; want %d", r.code, rows, client.PendingLimit)
	}
	if want := "500 pending approvals listed, the most the API lists"; !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "questions") {
		t.Errorf("stderr %q; want %q and nothing of questions", r.stderr, want)
	}
	if r := cli("pending", "--server", url, "--json"); !strings.Contains(r.stderr, "the most the API lists") {
		t.Errorf("pending --json: stderr %q; want the same note", r.stderr)
	}
}

// TestSignInLink: a bridge without tokens issues a new one-time sign-in
// link on demand, so a used or expired one needs no restart (which would
// lose an embedded Redis's requests). Each link signs in once.
func TestSignInLink(t *testing.T) {
	url := startBridge(t, app.Options{})
	var links []string
	for range 2 {
		r := cli("signin-link", "--server", url)
		link := strings.TrimSpace(r.stdout)
		if r.code != exitOK || !strings.HasPrefix(link, url+"/web/signin/") || slices.Contains(links, link) {
			t.Fatalf("signin-link = %+v; want a new link under %s/web/signin/", r, url)
		}
		links = append(links, link)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func(link string) int {
		req, _ := http.NewRequest(http.MethodPost, link, nil)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, link := range links {
		if status := signIn(link); status != http.StatusSeeOther {
			t.Errorf("signing in with %s: %d, want 303", link, status)
		}
		if status := signIn(link); status != http.StatusForbidden {
			t.Errorf("signing in with %s again, from another browser: %d, want 403", link, status)
		}
	}

}

// TestSignInLinkWithTokens: a bridge with API tokens gives no sign-in
// links, whatever the token; signin-link says at once to sign in to its
// web inbox with an answer-scoped token, and never to set BRIDGE_TOKEN,
// which leads nowhere. -h says the same.
func TestSignInLinkWithTokens(t *testing.T) {
	url := startBridge(t, app.Options{}, func(cfg *config.Config) {
		cfg.API.Tokens = []config.Token{
			{Name: "inbox", Token: "tok-inbox-7f3c9e21b4", Scopes: []string{config.ScopeAnswer}},
			{Name: "agent", Token: "tok-agent-LEAK-0d5a8e", Scopes: []string{config.ScopeAsk}},
		}
	})
	inbox := "open its web inbox, " + url + "/, and sign in there with an answer-scoped token"
	for _, tc := range []struct {
		name, token, want string
	}{
		{"no token", "", inbox},
		{"a token it does not know", "tok-wrong-LEAK-3e9b1c", inbox},
		{"an ask-scoped token", "tok-agent-LEAK-0d5a8e", inbox},
		{"an answer-scoped token", "tok-inbox-7f3c9e21b4", "sign in to the web inbox with an answer-scoped token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BRIDGE_TOKEN", tc.token)
			r := cli("signin-link", "--server", url)
			if r.code != exitError || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "set BRIDGE_TOKEN") {
				t.Errorf("signin-link = %+v; want exit 1 saying %q", r, tc.want)
			}
			if strings.Contains(r.stderr, "LEAK") {
				t.Errorf("a token is in the output: %s", r.stderr)
			}
		})
	}
	r := cli("signin-link", "-h")
	if r.code != exitOK || !strings.Contains(r.stdout, "open its web inbox") || !strings.Contains(r.stdout, "answer-scoped token") {
		t.Errorf("signin-link -h = %+v; want it to say how to sign in to a bridge with tokens", r)
	}
}

// A duration flag given a bare number says to write a unit, as the
// config's durations do, rather than "parse error".
func TestDurationFlagsNameTheUnit(t *testing.T) {
	for _, args := range [][]string{
		{"ask", "--server", "http://127.0.0.1:1", "--question", "Deploy?", "--expires", "5"},
		{"mcp", "--server", "http://127.0.0.1:1", "--reattach", "5"},
	} {
		r := cli(args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "a duration needs a unit: write 5s, 5m or 5h") {
			t.Errorf("%v = %+v; want exit 2 saying to write 5s", args, r)
		}
	}
	r := cli("ask", "--server", "http://127.0.0.1:1", "--question", "Deploy?", "--expires", "soon")
	if r.code != exitUsage || !strings.Contains(r.stderr, "not a duration such as 90s, 30m or 2h") {
		t.Errorf("--expires soon = %+v; want exit 2 giving examples", r)
	}
}

// proxyTo is a proxy in front of the bridge at url that hands each call
// to handle, and forwards it unless handle answered it (returned true). It
// adds no X-Forwarded-For (Rewrite adds none): an open bridge refuses a
// call a proxy forwarded.
func proxyTo(t *testing.T, url string, handle func(w http.ResponseWriter, r *http.Request) bool) *httptest.Server {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host }}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !handle(w, r) {
			forward.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(proxy.Close)
	return proxy
}

// failing is a proxy in front of the bridge at url that answers every call
// of method with status and body, and forwards the rest.
func failing(t *testing.T, url, method string, status int, body string) *httptest.Server {
	t.Helper()
	return proxyTo(t, url, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != method {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
		return true
	})
}

// failingWaits is a proxy in front of the bridge at url that answers every
// GET (a wait) with status and body, and forwards the rest.
func failingWaits(t *testing.T, url string, status int, body string) *httptest.Server {
	t.Helper()
	return failing(t, url, http.MethodGet, status, body)
}

// holdingWithdrawals is a proxy in front of the bridge at url that holds
// every withdrawal (DELETE) until release is called (or the caller goes
// away), after it has said on withdrawing that one arrived; it forwards
// the rest.
func holdingWithdrawals(t *testing.T, url string) (proxy string, withdrawing <-chan struct{}, release func()) {
	t.Helper()
	arrived, released := make(chan struct{}, 1), make(chan struct{})
	srv := proxyTo(t, url, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodDelete {
			select {
			case arrived <- struct{}{}:
			default:
			}
			select {
			case <-released:
			case <-r.Context().Done(): // the caller killed as the test failed
			}
		}
		return false
	})
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release) // before srv.Close, which waits for the calls it holds
	return srv.URL, arrived, release
}

// noticingWaits is a proxy in front of the bridge at url that says on
// waiting when a wait (a GET with ?wait=) arrives, and forwards every call.
func noticingWaits(t *testing.T, url string) (proxy string, waiting <-chan struct{}) {
	t.Helper()
	arrived := make(chan struct{}, 1)
	srv := proxyTo(t, url, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && r.URL.Query().Has("wait") {
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
		return false
	})
	return srv.URL, arrived
}

// TestWaitFailedSaysHowToWaitAgain: when the wait fails for good (here a
// proxy that answers every wait 500; in life also a bridge down for
// longer than the client's retries), the request stays asked on the
// bridge. The command says so, and how to wait for it again: the same
// command under the request's tool_call_id, which re-attaches to it
// rather than asking a second time.
func TestWaitFailedSaysHowToWaitAgain(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		noun       string
		answer     []string // after "answer ID"
		wantStdout string
	}{
		{[]string{"ask", "--question", "Deploy?"}, "question", []string{"--custom", "yes"}, `{"answers":[{"id":"q1","selected":[],"custom":"yes"}]}` + "\n"},
		{[]string{"approve", "--tool", "deploy", "--arg", "env=prod", "--reason", "ship 1.4"}, "approval", []string{"--allow", "--note", "go"}, "allowed-once: go\n"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			url := startBridge(t, app.Options{})
			broken := failingWaits(t, url, http.StatusInternalServerError, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
			r := await(t, tc.args[0], cliAsync(append(tc.args, "--server", broken.URL)...))
			p := awaitPending(t, url)
			want := "run it again with --tool-call-id " + p.ToolCallID + " to wait for it"
			if r.code != exitError || !strings.Contains(r.stderr, "INTERNAL") || !strings.Contains(r.stderr, tc.noun+" "+p.ID+" is still pending") || !strings.Contains(r.stderr, want) {
				t.Fatalf("%s = %+v; want exit 1, the error, and that the %s is still pending: %q", tc.args[0], r, tc.noun, want)
			}

			// As it says: run again under that tool_call_id, it waits for
			// the same request.
			proxy, waiting := noticingWaits(t, url)
			again := cliAsync(append(tc.args, "--server", proxy, "--tool-call-id", p.ToolCallID)...)
			select {
			case <-waiting:
			case <-time.After(within):
				t.Fatalf("%s run again did not wait", tc.args[0])
			}
			c, _ := client.New(url)
			if list, err := c.Pending(context.Background()); err != nil || len(list.Questions)+len(list.Approvals) != 1 {
				t.Fatalf("pending %+v, %v; want the one asked", list, err)
			}
			if a := cli(append([]string{"answer", p.ID, "--server", url}, tc.answer...)...); a.code != exitOK {
				t.Fatalf("answer: %+v", a)
			}
			if r := await(t, tc.args[0]+" again", again); r.code != exitOK || r.stdout != tc.wantStdout || !strings.Contains(r.stderr, "asked: ") {
				t.Errorf("%s again = %+v; want %q, the answer to the request already asked", tc.args[0], r, tc.wantStdout)
			}
		})
	}
}

// blockedReader is a stdin nobody writes to: Read says it was called, then
// blocks until the reader is closed.
type blockedReader struct {
	reading chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (r *blockedReader) Read([]byte) (int, error) {
	r.once.Do(func() { close(r.reading) })
	<-r.closed
	return 0, io.EOF
}

// TestInterruptedReadingRequest: Ctrl-C while ask or approve waits for
// the request on stdin (--json-request -, and nothing piped in yet) stops
// it at once, as it does once the request is asked, rather than being
// swallowed until a second Ctrl-C kills it.
func TestInterruptedReadingRequest(t *testing.T) {
	for _, cmd := range []string{"ask", "approve"} {
		t.Run(cmd, func(t *testing.T) {
			stdin := &blockedReader{reading: make(chan struct{}), closed: make(chan struct{})}
			defer close(stdin.closed)
			done := make(chan cliResult, 1)
			go func() {
				var stdout, stderr bytes.Buffer
				code := run([]string{cmd, "--server", "http://127.0.0.1:1", "--json-request", "-"}, stdin, &stdout, &stderr)
				done <- cliResult{code, stdout.String(), stderr.String()}
			}()
			select {
			case <-stdin.reading:
			case <-time.After(within):
				t.Fatalf("%s did not read stdin", cmd)
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			r := await(t, cmd, done)
			if r.code != exitError || !strings.Contains(r.stderr, "interrupted while reading the request from stdin; nothing was asked") {
				t.Errorf("%s = %+v; want exit 1, interrupted", cmd, r)
			}
		})
	}
}

// TestAskWaitEndedByTheBridgeSaysNoMore: a wait the bridge answers with
// NO_PROVIDER (the request was discarded: no target took it) or
// NOT_FOUND (it is gone) did not fail for want of the bridge: the question
// is no longer pending there, and ask does not say it is, nor to wait for
// it again, which would ask it anew under that tool_call_id.
func TestAskWaitEndedByTheBridgeSaysNoMore(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
	}{{"NO_PROVIDER", http.StatusServiceUnavailable}, {"NOT_FOUND", http.StatusNotFound}} {
		t.Run(tc.code, func(t *testing.T) {
			url := startBridge(t, app.Options{})
			proxy := failingWaits(t, url, tc.status, `{"error":{"code":"`+tc.code+`","message":"the bridge has it no more"}}`)

			r := await(t, "ask", cliAsync("ask", "--server", proxy.URL, "--question", "Deploy?"))
			if r.code != exitError || !strings.Contains(r.stderr, tc.code) {
				t.Fatalf("ask = %+v; want exit 1 with the bridge's %s", r, tc.code)
			}
			if strings.Contains(r.stderr, "still pending") || strings.Contains(r.stderr, "to wait for it") {
				t.Errorf("ask said the question is still pending after the bridge answered %s:\n%s", tc.code, r.stderr)
			}
		})
	}
}

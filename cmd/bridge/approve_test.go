package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
)

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

func TestApprove(t *testing.T) {
	url := startBridge(t, app.Options{})
	for _, tc := range []struct {
		name        string
		approve     []string
		checkAsked  func(t *testing.T, p client.Record)
		decide      []string // after "answer ID"
		wantCode    int
		wantStdout  string
		checkStdout func(t *testing.T, stdout string)
		wantStderr  string // besides the id
	}{{
		name: "allowed",
		approve: []string{"--tool", "deploy", "--arg", "env=prod", "--arg", "replicas=3", "--args", `{"force":false,"tags":["v1.4"]}`,
			"--reason", "ship 1.4", "--display-reason", "Ship **1.4** to prod", "--caller", "ci", "--expires", "1h"},
		checkAsked: func(t *testing.T, p client.Record) {
			if p.Kind != client.KindApproval || p.ToolName != "deploy" || p.Reason != "ship 1.4" || p.DisplayReason != "Ship **1.4** to prod" ||
				p.Caller == nil || p.Caller.Name != "ci" || p.ExpiresAt == nil {
				t.Errorf("asked %+v; want an approval of deploy, its reasons, caller ci and an expiry", p)
			}
			if want := `{"env":"prod","replicas":"3","force":false,"tags":["v1.4"]}`; !sameJSON(t, p.Arguments, []byte(want)) {
				t.Errorf("arguments %s, want %s", p.Arguments, want)
			}
		},
		decide:     []string{"--allow"},
		wantCode:   exitOK,
		wantStdout: "allowed-once\n",
		wantStderr: "allowed-once by anonymous (api)",
	}, {
		name:       "rejected with a reason",
		approve:    []string{"--tool", "deploy", "--args", `{"env":"prod"}`},
		decide:     []string{"--reject", "--note", "not on a Friday.\nTry Monday."},
		wantCode:   exitRejected,
		wantStdout: "rejected: not on a Friday. Try Monday.\n", // one line
		wantStderr: "rejected by anonymous (api)",
	}, {
		name:       "rejected without a reason",
		approve:    []string{"--tool", "deploy"},
		decide:     []string{"--reject"},
		wantCode:   exitRejected,
		wantStdout: "rejected\n",
	}, {
		name:    "rejected, the record",
		approve: []string{"--tool", "deploy", "--json"},
		decide:  []string{"--reject", "--note", "not on a Friday.\nTry Monday."},
		checkStdout: func(t *testing.T, stdout string) {
			var rec client.Record
			if err := json.Unmarshal([]byte(stdout), &rec); err != nil || rec.Decision == nil ||
				*rec.Decision != (client.Decision{Outcome: client.OutcomeRejected, Note: "not on a Friday.\nTry Monday."}) || rec.AnsweredBy == nil {
				t.Errorf("stdout %s (%v); want the record with the decision, its note as it is", stdout, err)
			}
		},
		wantCode: exitRejected,
	}, {
		name:       "dismissed",
		approve:    []string{"--tool", "deploy"},
		decide:     []string{"--dismiss"},
		wantCode:   exitDismissed,
		wantStderr: "ASK_CANCELLED",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			asked := cliAsync(append([]string{"approve", "--server", url}, tc.approve...)...)
			p := awaitPending(t, url)
			if tc.checkAsked != nil {
				tc.checkAsked(t, p)
			}
			if d := cli(append([]string{"answer", p.ID, "--server", url}, tc.decide...)...); d.code != exitOK {
				t.Fatalf("answer exit %d, stderr %s", d.code, d.stderr)
			}
			r := await(t, "approve", asked)
			if r.code != tc.wantCode {
				t.Errorf("approve exit %d, want %d; stderr: %s", r.code, tc.wantCode, r.stderr)
			}
			if tc.checkStdout != nil {
				tc.checkStdout(t, r.stdout)
			} else if r.stdout != tc.wantStdout {
				t.Errorf("approve stdout = %q\nwant               %q", r.stdout, tc.wantStdout)
			}
			if !strings.Contains(r.stderr, "asked: approval id "+p.ID) || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("approve stderr = %q, want the id %s and %q", r.stderr, p.ID, tc.wantStderr)
			}
		})
	}
}

// TestApproveExpired: nobody decided before --expires passed: exit 5, and
// --json prints the record, with the seam's error.
func TestApproveExpired(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	url := startBridge(t, app.Options{Now: clock}, func(cfg *config.Config) {
		cfg.Store.SweepInterval = config.Duration(10 * time.Millisecond)
	})
	asked := cliAsync("approve", "--server", url, "--tool", "deploy", "--expires", "30m", "--json")
	awaitPending(t, url)
	mu.Lock()
	now = now.Add(31 * time.Minute)
	mu.Unlock()
	r := await(t, "approve", asked)
	if r.code != exitExpired || !strings.Contains(r.stderr, "ASK_TIMED_OUT") {
		t.Errorf("approve = %+v, want exit %d with ASK_TIMED_OUT", r, exitExpired)
	}
	var rec client.Record
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec.Status != client.StatusExpired || rec.Error == nil || rec.Error.Code != client.CodeTimedOut {
		t.Errorf("approve --json printed %q (%v); want the expired record", r.stdout, err)
	}
}

// TestApproveInterrupted: Ctrl-C while approve waits withdraws the request,
// saying so first, and exits 3, as ask does.
func TestApproveInterrupted(t *testing.T) {
	url := startBridge(t, app.Options{})
	asked := cliAsync("approve", "--server", url, "--tool", "deploy")
	p := awaitPending(t, url)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := await(t, "approve", asked)
	if r.code != exitCancelled || !strings.Contains(r.stderr, "bridge: approve: withdrawing the approval request (up to 10s)…\n") ||
		!strings.Contains(r.stderr, "ASK_ABORTED") || r.stdout != "" {
		t.Errorf("approve = %+v, want exit %d, saying it withdraws the request, with ASK_ABORTED", r, exitCancelled)
	}
	c, _ := client.New(url)
	if rec, err := c.Get(context.Background(), p.ID, 0); err != nil || rec.Status != client.StatusCancelled {
		t.Errorf("approval after Ctrl-C = %+v, %v; want cancelled", rec, err)
	}
}

// TestApproveSignalledTwiceWithdraws: as bridge ask, a bridge approve that
// gets its signal twice (timeout(1) sends SIGTERM twice) withdraws its
// request and exits 3 rather than dying at the second.
func TestApproveSignalledTwiceWithdraws(t *testing.T) {
	if os.Getenv("BRIDGE_TEST_APPROVE_SIG_CHILD") == "1" {
		os.Exit(run([]string{"approve", "--server", os.Getenv("BRIDGE_TEST_APPROVE_SIG_SERVER"), "--tool", "deploy"}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	url := startBridge(t, app.Options{})
	proxy, withdrawing, release := holdingWithdrawals(t, url)
	child := exec.Command(os.Args[0], "-test.run=^TestApproveSignalledTwiceWithdraws$")
	child.Env = append(os.Environ(), "BRIDGE_TEST_APPROVE_SIG_CHILD=1", "BRIDGE_TEST_APPROVE_SIG_SERVER="+proxy)
	stderr := &apptest.LogBuffer{}
	child.Stderr = stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	rec := awaitPending(t, url)
	child.Process.Signal(syscall.SIGTERM)
	select {
	case <-withdrawing:
	case <-time.After(within):
		t.Fatal("bridge approve did not withdraw its request after SIGTERM")
	}
	stderr.WaitFor(t, "bridge: approve: withdrawing the approval request (up to 10s)…", within)
	child.Process.Signal(syscall.SIGTERM)
	release()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitCancelled {
			t.Errorf("bridge approve after SIGTERM twice: %v, want exit %d; stderr:\n%s", err, exitCancelled, stderr.String())
		}
	case <-time.After(within):
		t.Fatal("bridge approve still runs after SIGTERM twice")
	}
	c, _ := client.New(url)
	if got, err := c.Get(context.Background(), rec.ID, 0); err != nil || got.Status != client.StatusCancelled {
		t.Errorf("approval after SIGTERM twice = %+v, %v; want cancelled", got, err)
	}
}

// noticingWaits is a proxy in front of the bridge at url that says on
// waiting when a wait (a GET with ?wait=) arrives, and forwards every call.
func noticingWaits(t *testing.T, url string) (proxy string, waiting <-chan struct{}) {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan struct{}, 1)
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Has("wait") {
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, arrived
}

// TestApproveReattach: a wait that fails for good leaves the request
// pending, and approve says to run it again under its --tool-call-id; run
// so, with the same --arg, it waits for the same request instead of
// asking a second time. Run again once decided, it finds the decision; a
// different tool call under that id is the bridge's CONFLICT.
func TestApproveReattach(t *testing.T) {
	url := startBridge(t, app.Options{})
	broken := failingWaits(t, url, http.StatusInternalServerError, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
	cmd := []string{"approve", "--tool", "deploy", "--arg", "env=prod", "--reason", "ship 1.4"}

	r := await(t, "approve", cliAsync(append(cmd, "--server", broken.URL)...))
	p := awaitPending(t, url)
	want := "run it again with --tool-call-id " + p.ToolCallID + " to wait for it"
	if r.code != exitError || !strings.Contains(r.stderr, "INTERNAL") || !strings.Contains(r.stderr, "approval "+p.ID+" is still pending") || !strings.Contains(r.stderr, want) {
		t.Fatalf("approve = %+v; want exit 1, the error, and that the approval is still pending: %q", r, want)
	}

	proxy, waiting := noticingWaits(t, url)
	again := cliAsync(append(cmd, "--server", proxy, "--tool-call-id", p.ToolCallID)...)
	select {
	case <-waiting:
	case <-time.After(within):
		t.Fatal("approve run again did not wait")
	}
	c, _ := client.New(url)
	ctx := context.Background()
	if list, err := c.Pending(ctx); err != nil || len(list.Approvals) != 1 {
		t.Fatalf("pending approvals %+v, %v; want the one asked", list, err)
	}
	if _, err := c.Decide(ctx, p.ID, client.Decision{Outcome: client.OutcomeAllowedOnce, Note: "go"}); err != nil {
		t.Fatal(err)
	}
	if r := await(t, "approve again", again); r.code != exitOK || r.stdout != "allowed-once: go\n" || !strings.Contains(r.stderr, "asked: approval id "+p.ID) {
		t.Errorf("approve again = %+v; want the decision on the approval already asked", r)
	}

	r = cli(append(cmd, "--server", url, "--tool-call-id", p.ToolCallID)...)
	if r.code != exitOK || r.stdout != "allowed-once: go\n" || strings.Contains(r.stderr, "asked:") ||
		!strings.Contains(r.stderr, "found: approval id "+p.ID+" (tool_call_id "+p.ToolCallID+") ended already, allowed-once") {
		t.Errorf("approve once decided = %+v; want exit 0, saying it found the decision", r)
	}

	r = cli("approve", "--server", url, "--tool", "deploy", "--arg", "env=staging", "--tool-call-id", p.ToolCallID)
	if r.code != exitError || !strings.Contains(r.stderr, "CONFLICT") || r.stdout != "" {
		t.Errorf("approve of another call under the id = %+v; want exit 1 with CONFLICT", r)
	}
}

// TestApproveBadArgs: flags that can't make a request are refused before
// anything is sent, in the flags' terms; a request the bridge refuses
// exits 1 with the bridge's code and message.
func TestApproveBadArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arg", "env=prod"}, "--tool is required"},
		{[]string{"--tool", " "}, "--tool is required"},
		{[]string{"--tool", "deploy", "--arg", "env"}, `--arg "env" is not KEY=VALUE`},
		{[]string{"--tool", "deploy", "--arg", "=prod"}, `--arg "=prod" is not KEY=VALUE`},
		{[]string{"--tool", "deploy", "--arg", "env=prod", "--arg", "env=dev"}, "--arg env is given twice"},
		{[]string{"--tool", "deploy", "--args", `{"env":"prod"}`, "--arg", "env=dev"}, "--arg env is in --args too"},
		{[]string{"--tool", "deploy", "--args", `["prod"]`, "--arg", "env=dev"}, "--arg adds to the JSON object of --args, and --args is not one"},
		{[]string{"--tool", "deploy", "--args", `{"env":`}, "--args is not valid JSON: unexpected end of JSON input"},
		{[]string{"--tool", "deploy", "--args", `{env: prod}`}, "--args is not valid JSON: invalid character 'e'"},
		{[]string{"--json-request", "-", "--tool", "deploy"}, "--tool can't be combined with --json-request"},
		{[]string{"--json-request", "-", "--arg", "a=b"}, "--arg can't be combined with --json-request"},
		{[]string{"--tool", "deploy", "--route", ""}, "--route is empty"},
		{[]string{"--tool", "deploy", "--tool-call-id", ""}, "--tool-call-id is empty; leave it out for a random one"},
		{[]string{"--tool", "deploy", "--expires", "5"}, `invalid value "5" for flag -expires: a duration needs a unit`},
		{[]string{"--tool", "deploy", "--expires", "-1m"}, "--expires must not be negative"},
		{[]string{"--tool", "deploy", "prod"}, `unexpected argument "prod"`},
		{[]string{"--tool", "deploy", "--bogus"}, "flag provided but not defined: -bogus"},
	} {
		// Nothing listens there: without the check, exit 1.
		r := await(t, "approve", cliAsync(append([]string{"approve", "--server", "http://127.0.0.1:1"}, tc.args...)...))
		if r.code != exitUsage || !strings.Contains(r.stderr, "bridge approve: "+tc.want) || r.stdout != "" {
			t.Errorf("approve %q = %+v; want exit %d saying %q", tc.args, r, exitUsage, tc.want)
		}
	}

	url := startBridge(t, app.Options{})
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tool", "deploy", "--args", `["prod"]`}, []string{"INVALID_REQUEST", "--args must be a JSON object"}},
		{[]string{"--tool", "deploy", "--args", `"prod"`}, []string{"INVALID_REQUEST", "--args must be a JSON object"}},
		{[]string{"--tool", strings.Repeat("x", 201)}, []string{"INVALID_REQUEST", "--tool must be at most 200 characters"}},
		{[]string{"--tool", "deploy", "--route", "nope"}, []string{"NO_PROVIDER"}},
		{[]string{"--json-request", write("typo.json", `{"tool_name":"deploy","expire_in":"1h"}`)}, []string{`unknown key "expire_in"`}},
		{[]string{"--json-request", write("delegated.json", `{"tool_name":"deploy","caller":{"agent":"a-8","delegated":true}}`), "--caller", "cli-bot"}, []string{"DELEGATED_CALLER"}},
	} {
		r := await(t, "approve", cliAsync(append([]string{"approve", "--server", url}, tc.args...)...))
		if r.code != exitError || r.stdout != "" || strings.Contains(r.stderr, "asked:") {
			t.Errorf("approve %.80q = %+v; want exit %d, nothing asked", tc.args, r, exitError)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("approve %.80q: stderr %q; want %q", tc.args, r.stderr, w)
			}
		}
	}
	c, _ := client.New(url)
	if list, err := c.Pending(context.Background()); err != nil || len(list.Approvals) != 0 {
		t.Errorf("after refused requests pending approvals = %+v, %v; want none", list, err)
	}
}

// TestApproveJSONRequest: --json-request sends the whole body, call_id
// included; --caller names who asks and keeps the rest of its caller.
func TestApproveJSONRequest(t *testing.T) {
	url := startBridge(t, app.Options{})
	req := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(req, []byte(`{"tool_name":"kubectl_apply","call_id":"call-7","reason":"rolls out web",
		"arguments":{"file":"web.yaml","replicas":3},"caller":{"agent":"a-7","name":"file-bot"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	asked := cliAsync("approve", "--server", url, "--json-request", req, "--caller", "cli-bot", "--tool-call-id", "run-9")
	p := awaitPending(t, url)
	if p.ToolName != "kubectl_apply" || p.CallID != "call-7" || p.ToolCallID != "run-9" || p.Reason != "rolls out web" ||
		p.Caller == nil || *p.Caller != (client.Caller{Agent: "a-7", Name: "cli-bot"}) || !sameJSON(t, p.Arguments, []byte(`{"file":"web.yaml","replicas":3}`)) {
		t.Errorf("asked %+v; want the file's request, under tool_call_id run-9, named cli-bot", p)
	}
	if d := cli("answer", "--server", url, p.ID, "--allow"); d.code != exitOK {
		t.Fatalf("answer: %+v", d)
	}
	if r := await(t, "approve", asked); r.code != exitOK || r.stdout != "allowed-once\n" {
		t.Errorf("approve = %+v; want allowed", r)
	}
}

// TestApproveInterruptedReadingRequest: Ctrl-C while approve waits for its
// request on stdin stops it at once, as ask's does.
func TestApproveInterruptedReadingRequest(t *testing.T) {
	stdin := &blockedReader{reading: make(chan struct{}), closed: make(chan struct{})}
	defer close(stdin.closed)
	done := make(chan cliResult, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run([]string{"approve", "--server", "http://127.0.0.1:1", "--json-request", "-"}, stdin, &stdout, &stderr)
		done <- cliResult{code, stdout.String(), stderr.String()}
	}()
	select {
	case <-stdin.reading:
	case <-time.After(within):
		t.Fatal("approve did not read stdin")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := await(t, "approve", done)
	if r.code != exitError || !strings.Contains(r.stderr, "interrupted while reading the request from stdin") {
		t.Errorf("approve = %+v; want exit 1, interrupted", r)
	}
}

// TestApproveUnauthorized: a token the bridge refuses is named, with what
// to do about it, as for the other commands.
func TestApproveUnauthorized(t *testing.T) {
	url := startBridge(t, app.Options{}, func(cfg *config.Config) {
		cfg.API.Tokens = []config.Token{{Name: "agents", Token: "tok-agents-7f3c9e21b4", Scopes: []string{config.ScopeAsk}}}
	})
	for _, tc := range []struct{ token, want string }{
		{"", "set BRIDGE_TOKEN"},
		{"wrong", "BRIDGE_TOKEN is not one of the bridge's API tokens"},
	} {
		t.Setenv("BRIDGE_TOKEN", tc.token)
		r := await(t, "approve", cliAsync("approve", "--server", url, "--tool", "deploy"))
		if r.code != exitError || !strings.Contains(r.stderr, "UNAUTHORIZED") || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "tok-agents") {
			t.Errorf("BRIDGE_TOKEN=%q approve = %+v; want exit 1, UNAUTHORIZED and %q", tc.token, r, tc.want)
		}
	}
}

func TestApproveHelp(t *testing.T) {
	r := cli("approve", "-h")
	help := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{
		"bridge approve --tool deploy --arg env=prod --reason \"ship 1.4\" && ./deploy.sh",
		"0 allowed (allowed-once)", "3 cancelled (ASK_ABORTED)", "4 dismissed (ASK_CANCELLED)", "5 expired (ASK_TIMED_OUT)", "6 rejected",
		"-tool-call-id", "-json-request",
	} {
		if r.code != exitOK || !strings.Contains(help, want) {
			t.Errorf("bridge approve -h (exit %d) does not say %q", r.code, want)
		}
	}
	if r := cli("help"); !strings.Contains(r.stdout, "\n  approve ") {
		t.Errorf("bridge help does not list approve:\n%s", r.stdout)
	}
}

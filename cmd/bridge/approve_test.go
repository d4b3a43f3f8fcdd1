package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
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
			r, p := askAndAnswer(t, url, append([]string{"approve"}, tc.approve...), tc.checkAsked, tc.decide)
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

// TestApproveBadArgs: flags that can't make an approval, or make one the
// bridge would refuse, are refused before anything is sent, in the flags'
// terms (the request flags it shares with ask: TestRequestFlagsRefused);
// a request the bridge refuses exits 1 with the bridge's code and message.
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
		{[]string{"--json-request", "-", "--arg", "a=b"}, "--arg can't be combined with --json-request"},
		// JSON, and not an object: the bridge would refuse it.
		{[]string{"--tool", "deploy", "--args", `["prod"]`}, "--args must be a JSON object"},
		{[]string{"--tool", "deploy", "--args", `"prod"`}, "--args must be a JSON object"},
		{[]string{"--tool", strings.Repeat("x", 201)}, "--tool must be at most 200 characters"},
	} {
		// Nothing listens there: without the check, exit 1.
		r := await(t, "approve", cliAsync(append([]string{"approve", "--server", "http://127.0.0.1:1"}, tc.args...)...))
		if r.code != exitUsage || !strings.Contains(r.stderr, "bridge approve: "+tc.want) || r.stdout != "" {
			t.Errorf("approve %q = %+v; want exit %d saying %q", tc.args, r, exitUsage, tc.want)
		}
	}

	url := startBridge(t, app.Options{})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tool", "deploy", "--route", "nope"}, []string{"NO_PROVIDER"}},
		{[]string{"--json-request", tempFile(t, `{"tool_name":"deploy","expire_in":"1h"}`)}, []string{`unknown key "expire_in"`}},
		{[]string{"--json-request", tempFile(t, `{"tool_name":"deploy","caller":{"agent":"a-8","delegated":true}}`), "--caller", "cli-bot"}, []string{"DELEGATED_CALLER"}},
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

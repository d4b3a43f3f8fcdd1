package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// mcpProcess is bridge mcp running with its stdin and stdout piped to an
// MCP client session.
type mcpProcess struct {
	cs     *mcp.ClientSession
	stdin  io.Closer // the client's end of the command's stdin
	stderr *apptest.LogBuffer
	exit   chan int
}

func startMCP(t *testing.T, args ...string) *mcpProcess {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	p := &mcpProcess{stdin: stdinW, stderr: &apptest.LogBuffer{}, exit: make(chan int, 1)}
	go func() {
		p.exit <- run(append([]string{"mcp"}, args...), stdinR, stdoutW, p.stderr)
		stdoutW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var err error
	p.cs, err = mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdinW.Close()
		p.cs.Close()
	})
	return p
}

type called struct {
	res *mcp.CallToolResult
	err error
}

// ask calls ask_user_question with one yes/no question.
func (p *mcpProcess) ask(ctx context.Context, id string) <-chan called {
	ch := make(chan called, 1)
	go func() {
		res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
			"questions": []map[string]any{{"id": id, "question": "Ship " + id + "?", "options": []map[string]any{{"label": "Yes"}, {"label": "No"}}}},
		}})
		ch <- called{res, err}
	}()
	return ch
}

// exited waits for the command to exit and checks its status.
func (p *mcpProcess) exited(t *testing.T, want int) {
	t.Helper()
	select {
	case code := <-p.exit:
		if code != want {
			t.Errorf("exit status %d, want %d; stderr:\n%s", code, want, p.stderr.String())
		}
	case <-time.After(within):
		t.Fatal("bridge mcp did not exit within", within)
	}
}

// TestMCP runs bridge mcp as an MCP client would: a question asked through
// it is answered on the bridge, and a question still pending when the
// client goes away (its end of stdin closes) is withdrawn as the command
// exits.
func TestMCP(t *testing.T) {
	url := startBridge(t, app.Options{})
	bridge, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	p := startMCP(t, "--server", url, "--caller", "ci-agent")
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	done := p.ask(ctx, "web")
	rec := awaitPending(t, url)
	if rec.Caller == nil || rec.Caller.Name != "ci-agent" {
		t.Errorf("caller = %+v, want --caller's", rec.Caller)
	}
	if _, err := bridge.Answer(ctx, rec.ID, client.Answer{Answers: []client.AnswerItem{{ID: "web", Selected: []string{"Yes"}}}}); err != nil {
		t.Fatal(err)
	}
	var r called
	select {
	case r = <-done:
	case <-time.After(within):
		t.Fatal("no tool result within", within)
	}
	if r.err != nil || len(r.res.Content) != 1 {
		t.Fatalf("tool result = %+v, %v", r.res, r.err)
	}
	if got, want := r.res.Content[0].(*mcp.TextContent).Text, `{"answers":[{"id":"web","selected":["Yes"]}]}`; r.res.IsError || got != want {
		t.Errorf("tool result = %s (isError %v), want %s", got, r.res.IsError, want)
	}

	p.ask(ctx, "api")
	rec = awaitPending(t, url)
	p.stdin.Close()
	p.exited(t, exitOK)
	got, err := bridge.Get(ctx, rec.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != client.StatusCancelled {
		t.Errorf("pending question after exit: %s, want cancelled", got.Status)
	}
	if !strings.Contains(p.stderr.String(), "serving MCP on stdio") {
		t.Errorf("stderr = %q, want the start-up line", p.stderr.String())
	}
}

// TestMCPInterrupted sends the test process SIGINT while a tool call waits:
// the command says on stderr that it is withdrawing the question (which
// can take a while: here the withdrawal is held until it has said so),
// withdraws it, the call ends, and the command exits 0. (The SDK writes no
// responses once its connection is closing, so the call ends with the
// connection rather than with ASK_ABORTED.)
func TestMCPInterrupted(t *testing.T) {
	url := startBridge(t, app.Options{})
	proxy, withdrawing, release := holdingWithdrawals(t, url)
	p := startMCP(t, "--server", proxy)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := p.ask(ctx, "web")
	rec := awaitPending(t, url)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-withdrawing:
	case <-time.After(within):
		t.Fatal("bridge mcp did not withdraw its question after SIGINT")
	}
	p.stderr.WaitFor(t, `msg="withdrawing the pending requests…"`, within)
	release()
	p.exited(t, exitOK)
	select {
	case r := <-done:
		if r.err == nil && (!r.res.IsError || !strings.HasPrefix(r.res.Content[0].(*mcp.TextContent).Text, "ASK_ABORTED: ")) {
			t.Errorf("tool result = %+v, want ASK_ABORTED or the connection's end", r.res)
		}
	case <-time.After(within):
		t.Fatal("the tool call did not end within", within)
	}
	c, _ := client.New(url)
	if got, err := c.Get(ctx, rec.ID, 0); err != nil || got.Status != client.StatusCancelled {
		t.Errorf("question after Ctrl-C = %+v, %v; want cancelled", got, err)
	}
	// Why, in a person's words: not Go's "context canceled", nor at ERROR.
	log := p.stderr.String()
	if want := "withdrawn: interrupted by Ctrl-C (SIGINT): "; !strings.Contains(log, want) || strings.Contains(log, "context canceled") || strings.Contains(log, "level=ERROR") {
		t.Errorf("stderr:\n%s\nwant %q, and no \"context canceled\" or ERROR", log, want)
	}
}

// TestMCPInterruptedNotWithdrawn: SIGINT, and the bridge refuses the
// withdrawal: bridge mcp says on stderr that the question's message may
// keep live buttons.
func TestMCPInterruptedNotWithdrawn(t *testing.T) {
	url := startBridge(t, app.Options{})
	proxy := failing(t, url, http.MethodDelete, http.StatusInternalServerError, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
	p := startMCP(t, "--server", proxy.URL)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	p.ask(ctx, "web")
	rec := awaitPending(t, url)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.exited(t, exitOK)
	if want := `level=WARN msg="could not withdraw the request: its message may keep live buttons until it expires"`; !strings.Contains(p.stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant %s", p.stderr.String(), want)
	}
	c, _ := client.New(url)
	if got, err := c.Get(ctx, rec.ID, 0); err != nil || got.Status != client.StatusPending {
		t.Errorf("question = %+v, %v; want it pending, as bridge mcp said", got, err)
	}
}

func TestMCPUsage(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "extra"},
		{"mcp", "--progress-interval", "0s"},
		{"mcp", "--expires", "-1m"},
		{"mcp", "--expires", "1000000h"}, // the bridge would refuse every call
		{"mcp", "--reattach", "-1m"},     // not read as 0
		{"mcp", "--no-such-flag"},
		{"mcp", "--route", ""},  // "$ROUTE" unset: not the default route
		{"mcp", "--caller", ""}, // nor the client's name
		// Longer than the bridge takes: every call would be refused.
		{"mcp", "--route", strings.Repeat("r", 101)},
		{"mcp", "--caller", strings.Repeat("c", 201)},
	} {
		if r := cli(args...); r.code != exitUsage {
			t.Errorf("bridge %s: exit %d, want %d; stderr %q", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
	// Worded as bridge ask and approve word them (TestRefusedBeforeSent).
	for flag, want := range map[string]string{
		"--route":  "bridge mcp: --route is longer than 100 bytes\n",
		"--caller": "bridge mcp: --caller is longer than 200 characters\n",
	} {
		if r := cli("mcp", flag, strings.Repeat("x", 201)); r.code != exitUsage || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("bridge mcp %s too long: exit %d, stderr %q; want %q", flag, r.code, r.stderr, want)
		}
	}
	if r := cli("mcp", "-h"); r.code != exitOK || !strings.Contains(r.stdout, "ask_user_question") {
		t.Errorf("bridge mcp -h: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestMCPClientDiesWithdraws: an MCP client that dies (kill -9, a crash)
// closes every pipe of bridge mcp at once. Writing to a closed stdout or
// stderr must not kill the command with SIGPIPE before it has withdrawn
// what its calls waited for: it sees stdin end, withdraws, and exits 0.
func TestMCPClientDiesWithdraws(t *testing.T) {
	if os.Getenv("BRIDGE_TEST_MCP_CHILD") == "1" {
		os.Exit(run([]string{"mcp", "--server", os.Getenv("BRIDGE_TEST_MCP_SERVER")}, os.Stdin, os.Stdout, os.Stderr))
	}
	url := startBridge(t, app.Options{})
	child := exec.Command(os.Args[0], "-test.run=^TestMCPClientDiesWithdraws$")
	child.Env = append(os.Environ(), "BRIDGE_TEST_MCP_CHILD=1", "BRIDGE_TEST_MCP_SERVER="+url)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := child.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"dying-agent","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_user_question","arguments":{"questions":[{"id":"go","question":"Ship?"}]}}}`,
	} {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	rec := awaitPending(t, url)

	// The client dies: its ends of the three pipes close together.
	stdout.(*os.File).Close()
	stderr.(*os.File).Close()
	stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("bridge mcp exited with %v when its client died, want 0", err)
		}
	case <-time.After(within):
		t.Fatal("bridge mcp still runs after its client died")
	}
	c, _ := client.New(url)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if got, err := c.Get(ctx, rec.ID, 0); err != nil || got.Status != client.StatusCancelled {
		t.Errorf("question after the client died = %s, %v; want cancelled", got.Status, err)
	}
}

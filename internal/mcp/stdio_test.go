package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/client"
)

// A client's malformed line is answered with a JSON-RPC error, and the
// session goes on: the SDK's own stdio transport ended it there, and the
// server withdrew every question it had asked.
func TestStdioSurvivesAMalformedLine(t *testing.T) {
	bc, err := client.New(newBridge(t, ""), client.WithPollWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(bc, Options{Logger: slog.New(slog.DiscardHandler)})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, Stdio(inR, outW, slog.New(slog.DiscardHandler))) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-ran
	})
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			lines <- m
		}
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case m := <-lines:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %s", what)
			return nil
		}
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}

	send(`this is not json`)
	if m := next("a line that is not JSON"); code(m) != -32700 || m["id"] != nil {
		t.Errorf("answered %v, want a -32700 parse error with a null id", m)
	}
	send(`{"id": 7, "hello": "world"}`)
	if m := next("JSON that is not a message"); code(m) != -32600 || m["id"] != float64(7) {
		t.Errorf("answered %v, want a -32600 invalid request for id 7", m)
	}
	for _, tc := range []struct {
		line string
		id   any
	}{
		{`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, nil}, // a batch
		{`[]`, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil},
		{`{"JSONRPC":"2.0","id":4,"method":"ping"}`, float64(4)},
		{`{"jsonrpc":"1.0","id":"five","method":"ping"}`, "five"},
	} {
		send(tc.line)
		if m := next(tc.line); code(m) != -32600 || m["id"] != tc.id {
			t.Errorf("%s: answered %v, want a -32600 invalid request for id %v", tc.line, m, tc.id)
		}
	}
	// A response that answers nothing is dropped, not answered.
	send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`)
	// A line longer than the SDK takes is answered, and not held whole:
	// under its id when it names one before the bulk, so that its caller
	// is not left waiting.
	for _, tc := range []struct {
		start string
		id    any
	}{
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{"x":[1,{"y":2}],"pad":"`, float64(6)},
		{`{"jsonrpc":"2.0","method":"tools/call","meta":{"a":[{}]},"id":"six","params":{"pad":"`, "six"},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"pad":"`, nil},
	} {
		if _, err := io.WriteString(inW, tc.start+strings.Repeat("x", maxLine)+`"}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		if m := next("a line too long"); code(m) != -32600 || m["id"] != tc.id {
			t.Errorf("a line too long, starting %s: answered %v, want -32600 under id %v", tc.start, m, tc.id)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next("initialize"); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := next("tools/list"); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("tools/list answered %v", m)
	}
}

// TestSDKReads: a numeric id is passed on only when the SDK, which reads it
// through a float64 into an int64, answers under the value the client
// wrote; a whole number in any notation is.
func TestSDKReads(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"1", true}, {"1.0", true}, {"1e3", true}, {"7E0", true}, {"-0", true},
		{"9007199254740992", true}, {"0e999999999", true}, {"1.5e1", true}, {`"x"`, true}, {"null", true},
		{"1.5", false}, {"9007199254740993", false}, {"9007199254740993.0", false},
		{"1.0000000000000000001", false}, {"1e-99999", false}, {"1e400", false},
	} {
		if got := sdkReads(json.RawMessage(tc.id)); got != tc.want {
			t.Errorf("sdkReads(%s) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestCancelledCallGetsNoReply: a tools/call the client cancels is
// withdrawn and gets no reply (the SDK's own is an error of code 0 that a
// client which has forgotten the id reports as one); the requests around
// it are answered, and an id used again after a cancellation is answered.
func TestCancelledCallGetsNoReply(t *testing.T) {
	bc, err := client.New(newBridge(t, ""), client.WithPollWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(bc, Options{Logger: slog.New(slog.DiscardHandler), Reattach: -1})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(context.Background(), Stdio(inR, outW, slog.New(slog.DiscardHandler))) }()
	replies := make(chan map[string]any, 16)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			_ = json.Unmarshal(sc.Bytes(), &m)
			replies <- m
		}
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case m := <-replies:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("no reply to %s", what)
			return nil
		}
	}
	// Each call asks something else: an identical call re-attaches to the
	// question of one whose cancellation the server has not handled yet.
	ask := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Deploy ` +
			strings.Trim(id, `"`) + `?","options":[{"label":"Yes"},{"label":"No"}]}]}}}`
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	next("initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	withdrawn := map[string]bool{}

	for _, id := range []string{`2`, `"two"`} {
		send(ask(id))
		// Cancelled once its question is asked (the one before it is
		// withdrawn by then, or on its way).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		asked := func() bool {
			p, err := bc.Pending(ctx)
			return err == nil && len(p.Questions) == 1 && p.Questions[0].Status == client.StatusPending && !withdrawn[p.Questions[0].ID]
		}
		ok := asked()
		for !ok && ctx.Err() == nil {
			ok = asked()
		}
		cancel()
		if !ok {
			t.Fatalf("call %s: its question was not asked within 10s", id)
		}
		p, _ := bc.Pending(context.Background())
		withdrawn[p.Questions[0].ID] = true
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"timed out"}}`)
	}
	// The same id again, after its cancellation, is a new request.
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := next("a ping under the cancelled call's id"); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("the ping got %v; want its result under id 2", m)
	}
	inW.Close() // the session ends; every reply is written once Run returns
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	outW.Close()
	<-read
	close(replies)
	for m := range replies {
		t.Errorf("after the cancellations: %v; want no reply to a cancelled call", m)
	}
	if left, err := bc.Pending(context.Background()); err != nil || len(left.Questions) != 0 {
		t.Errorf("pending after the cancellations: %+v, %v; want both withdrawn", left, err)
	}
}

// TestRepliesLeftOut: only the reply to a request the client cancelled
// while it was open is left out; the ids kept are those of open requests.
func TestRepliesLeftOut(t *testing.T) {
	var out strings.Builder
	l := &lockedWriter{w: &out, open: map[string]bool{}}
	reply := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n" }
	cancel := func(id string) {
		l.note([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`))
	}
	request := func(id string) { l.note([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{}}`)) }

	cancel("9")                                            // never made
	l.note([]byte(`{"jsonrpc":"2.0","id":3,"result":{}}`)) // the client's reply to the server
	request("1")
	cancel("1.0") // the same id, written otherwise
	request(`"two"`)
	l.Write([]byte(reply("1")))
	l.Write([]byte(reply(`"two"`)))
	cancel(`"two"`) // after its reply: nothing
	request(`"two"`)
	l.Write([]byte(reply(`"two"`)))
	if want := reply(`"two"`) + reply(`"two"`); out.String() != want {
		t.Errorf("written:\n%s\nwant:\n%s", out.String(), want)
	}
	if len(l.open) != 0 {
		t.Errorf("ids kept after every reply: %v", l.open)
	}
}

// A request before the session's initialize is answered with -32600
// under its id, saying to initialize first (the SDK's own answer has code
// 0), as is one after an initialize that failed; ping is served then, and
// after an initialize the session goes on as any.
func TestStdioRequestBeforeInitialize(t *testing.T) {
	send, next := stdioSession(t)
	errorOf := func(m map[string]any) (float64, string) {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		msg, _ := e["message"].(string)
		return c, msg
	}
	early := func(what string, id any) {
		t.Helper()
		m := next(what)
		code, msg := errorOf(m)
		if code != -32600 || m["id"] != id || !strings.Contains(msg, "before initialize: send initialize first") {
			t.Errorf("%s: answered %v, want -32600 under id %v, saying to send initialize first", what, m, id)
		}
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask_user_question","arguments":{"questions":[]}}}`)
	early("a tools/call before initialize", float64(5))
	send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	early("a tools/list before initialize", "list")
	send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if m := next("a ping before initialize"); m["id"] != float64(6) || m["result"] == nil {
		t.Errorf("a ping before initialize: answered %v, want its result", m)
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"initialize"}`) // no params: it fails
	if m := next("an initialize without params"); m["id"] != float64(7) || m["error"] == nil {
		t.Fatalf("an initialize without params: answered %v, want an error", m)
	}
	send(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	early("a tools/list after a failed initialize", float64(8))
	send(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next("initialize"); m["id"] != float64(9) || m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`)
	if m := next("tools/list"); m["id"] != float64(10) || m["result"] == nil {
		t.Errorf("tools/list after initialize answered %v", m)
	}
}

// stdioSession runs a Server on a bridge over Stdio, and returns a
// function that sends a line to its stdin, and one that reads the next
// line it writes, failing the test when none comes within 10 s.
func stdioSession(t *testing.T) (send func(line string), next func(what string) map[string]any) {
	t.Helper()
	bc, err := client.New(newBridge(t, ""), client.WithPollWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(bc, Options{Logger: slog.New(slog.DiscardHandler)})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, Stdio(inR, outW, slog.New(slog.DiscardHandler))) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-ran
	})
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			lines <- m
		}
	}()
	send = func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next = func(what string) map[string]any {
		t.Helper()
		select {
		case m := <-lines:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %s", what)
			return nil
		}
	}
	return send, next
}

package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
)

// A client's malformed line is answered with a JSON-RPC error, and the
// session goes on: the SDK's own stdio transport ended it there, and the
// server withdrew every question it had asked.
func TestStdioSurvivesAMalformedLine(t *testing.T) {
	ss := startStdio(t, Options{})
	send, next := ss.send, ss.next

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
		send(tc.start + strings.Repeat("x", maxLine) + `"}}`)
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
	ss := startStdio(t, Options{Reattach: -1})
	send, next, bc := ss.send, ss.next, ss.bridge
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
	for _, m := range ss.end() {
		t.Errorf("after the cancellations: %v; want no reply to a cancelled call", m)
	}
	if left, err := bc.Pending(context.Background()); err != nil || len(left.Questions) != 0 {
		t.Errorf("pending after the cancellations: %+v, %v; want both withdrawn", left, err)
	}
}

// TestStdioAnswersWhatCameBeforeStdinEnds: a client that writes its
// requests and closes stdin at once (a script piping them in) gets every
// reply before the session ends: the SDK's ended as stdin did, with the
// requests it had not answered yet. A tool call waiting for a person is
// not answered: its question is withdrawn as the session ends. Tool calls
// that fail at once, before asking or refused by the bridge, are answered.
func TestStdioAnswersWhatCameBeforeStdinEnds(t *testing.T) {
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	)
	call := func(id int, args string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"ask_user_question","arguments":` + args + `}}`
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  []float64 // the ids answered
	}{
		{"a ping alone", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}, []float64{1}},
		{"a session's first requests", []string{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}, []float64{1, 2}},
		{"tool calls", []string{initialize, initialized,
			// Refused before asking, refused by the bridge, waiting for a
			// person.
			call(3, `{"questions":"web"}`),
			call(4, `{"questions":[{"id":"a","question":"A?"},{"id":"a","question":"B?"}]}`),
			call(5, `{"questions":[{"id":"web","question":"Ship it?","options":[{"label":"Yes"},{"label":"No"}]}]}`),
			`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
		}, []float64{1, 3, 4, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := startStdio(t, Options{})
			for _, line := range tc.lines {
				ss.send(line)
			}
			var got []float64
			for _, m := range ss.end() {
				id, _ := m["id"].(float64)
				if m["result"] == nil {
					t.Errorf("answered %v, want a result", m)
				}
				got = append(got, id)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("answered ids %v, want %v", got, tc.want)
			}
			if left, err := ss.bridge.Pending(context.Background()); err != nil || len(left.Questions) != 0 {
				t.Errorf("pending once the session ended: %+v, %v; want the waiting call's question withdrawn", left, err)
			}
		})
	}
}

// TestDrainEnds: at the end of stdin, a request nobody answers holds the
// session drainFor at most, and not at all once no reply can reach the
// client: the SDK closed the session (bridge mcp stops), or a write to
// stdout failed (the client died).
func TestDrainEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  time.Duration
		w    io.Writer
		then func(l *lockedWriter)
	}{
		{"at its deadline", time.Millisecond, io.Discard, func(*lockedWriter) {}},
		{"as the session closes", time.Hour, io.Discard, func(l *lockedWriter) { l.Close() }},
		{"as a write fails", time.Hour, failing{io.ErrClosedPipe}, func(l *lockedWriter) {
			l.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lockedWriter{w: tc.w, open: map[string]bool{}, changed: make(chan struct{}, 1)}
			l.note([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`))
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				l.drain(tc.max, slog.New(slog.DiscardHandler))
			}()
			tc.then(l)
			await(t, "the drain to end", drained)
		})
	}
}

func (f failing) Write([]byte) (int, error) { return 0, f.err }

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
	// Names in another case are none to the SDK: no request of id 4 (it
	// is a notification to the SDK, which replies nothing), no cancel of 5.
	l.note([]byte(`{"jsonrpc":"2.0","ID":4,"method":"tools/call","params":{}}`))
	request("5")
	l.note([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":5}}`))
	l.Write([]byte(reply("5")))
	if want := reply(`"two"`) + reply(`"two"`) + reply("5"); out.String() != want {
		t.Errorf("written:\n%s\nwant:\n%s", out.String(), want)
	}
	if len(l.open) != 0 {
		t.Errorf("ids kept after every reply: %v", l.open)
	}
}

// A request before the session's initialize is answered with -32600
// under its id, saying to initialize first (the SDK's own answer has code
// 0), as is one after an initialize that failed; ping is served then, and
// after an initialize the session goes on as any. A request named as a
// notification is answered with -32600 before initialize and after.
func TestStdioRequestBeforeInitialize(t *testing.T) {
	ss := startStdio(t, Options{})
	send, next := ss.send, ss.next
	early := func(what string, id any) {
		t.Helper()
		m := next(what)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code(m) != -32600 || m["id"] != id || !strings.Contains(msg, "before initialize: send initialize first") {
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
	// A notification has no id: one under an id is answered with -32600,
	// before initialize (the SDK's own answer has code 0) and after.
	notification := func(what string, id any) {
		t.Helper()
		m := next(what)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code(m) != -32600 || m["id"] != id || !strings.Contains(msg, "is a notification, which has no id") {
			t.Errorf("%s: answered %v, want -32600 under id %v, saying a notification has no id", what, m, id)
		}
	}
	send(`{"jsonrpc":"2.0","id":"p","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	notification("a notifications/progress under an id, before initialize", "p")
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
	send(`{"jsonrpc":"2.0","id":11,"method":"notifications/message","params":{}}`)
	notification("a notifications/message under an id, after initialize", float64(11))
}

// stdioSession is a Server on a bridge, run over Stdio, seen from its
// client's end: lines go to its stdin, and come from its stdout.
type stdioSession struct {
	t      *testing.T
	bridge *client.Client // the bridge's client the Server forwards through
	in     *io.PipeWriter
	out    *io.PipeWriter
	lines  chan map[string]any // what it writes, a line each; closed at its end
	ran    chan struct{}       // closed when Run returns, with its error in err
	err    error
}

// startStdio runs a Server with opts on a new bridge over Stdio until the
// test ends (or end).
func startStdio(t *testing.T, opts Options) *stdioSession {
	t.Helper()
	bc, err := client.New(newBridge(t, ""), client.WithPollWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	srv := New(bc, opts)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, bridge: bc, in: inW, out: outW, lines: make(chan map[string]any, 16), ran: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(s.ran)
		s.err = srv.Run(ctx, Stdio(inR, outW, slog.New(slog.DiscardHandler)))
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-s.ran
	})
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			s.lines <- m
		}
	}()
	return s
}

// send writes line, and a newline, to the session's stdin.
func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// next is the next line the session writes, read as JSON; it fails the
// test when none comes within 10 s.
func (s *stdioSession) next(what string) map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("no answer to %s: stdout ended", what)
		}
		return m
	case <-time.After(within):
		s.t.Fatalf("no answer to %s", what)
		return nil
	}
}

// end closes stdin, as a client does that goes, waits for Run to return
// (failing the test on its error), and returns the lines written and not
// read: every reply is written once Run returns.
func (s *stdioSession) end() []map[string]any {
	s.t.Helper()
	s.in.Close()
	<-s.ran
	if s.err != nil {
		s.t.Fatal(s.err)
	}
	s.out.Close()
	var rest []map[string]any
	for m := range s.lines {
		rest = append(rest, m)
	}
	return rest
}

// code is the JSON-RPC error code of the reply m, or 0.
func code(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestBeforeInitIsTheSDKs holds beforeInit, the methods the screen passes
// on before initialize, to the SDK's: each method in the SDK's tables (and
// one it has none of), sent as a request before initialize to the SDK's
// server with nothing in front, gets the SDK's "invalid during session
// initialization" exactly when it is not in beforeInit. A request named as
// a notification is left out: the screen answers those itself, whenever
// they come.
func TestBeforeInitIsTheSDKs(t *testing.T) {
	methods := sdkMethods(t)
	methods = append(methods, beforeInit...)
	methods = append(methods, "zz/none")
	slices.Sort(methods)
	methods = slices.Compact(methods)
	srv := New(nil, Options{})
	for _, method := range methods {
		if strings.HasPrefix(method, "notifications/") {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ss, err := srv.mcp.Connect(ctx, &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":`+strconv.Quote(method)+`,"params":{}}`+"\n")
		replies := make(chan []byte, 1)
		go func() {
			line, _ := bufio.NewReader(outR).ReadBytes('\n')
			replies <- line
		}()
		line := await(t, method+" before initialize", replies)
		var res struct {
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(line, &res); err != nil {
			t.Fatalf("%s before initialize: the SDK answered %q", method, line)
		}
		refused := res.Error != nil && strings.Contains(res.Error.Message, "invalid during session initialization")
		if served := slices.Contains(beforeInit, method); refused == served {
			t.Errorf("%s before initialize: the SDK answered %s; in beforeInit: %v", method, bytes.TrimSpace(line), served)
		}
		inW.Close()
		outR.Close()
		ss.Wait()
	}
}

// sdkMethods are the methods in the method tables of the SDK's source
// (serverMethodInfos, clientMethodInfos), as its constants spell them.
func sdkMethods(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil {
		t.Fatalf("go list the SDK's module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "mcp")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the SDK's source in %s: %v", dir, err)
	}
	consts := map[string]string{}
	tables := map[string][]ast.Expr{"serverMethodInfos": nil, "clientMethodInfos": nil}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						break
					}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if gd.Tok == token.CONST && v.Kind == token.STRING {
							consts[n.Name], _ = strconv.Unquote(v.Value)
						}
					case *ast.CompositeLit:
						if _, ok := tables[n.Name]; ok && gd.Tok == token.VAR {
							for _, elt := range v.Elts {
								if kv, ok := elt.(*ast.KeyValueExpr); ok {
									tables[n.Name] = append(tables[n.Name], kv.Key)
								}
							}
						}
					}
				}
			}
		}
	}
	var methods []string
	for table, keys := range tables {
		if len(keys) == 0 {
			t.Fatalf("no method table %s in the SDK's source in %s", table, dir)
		}
		for _, k := range keys {
			var m string
			switch k := k.(type) {
			case *ast.Ident:
				m = consts[k.Name]
			case *ast.BasicLit:
				m, _ = strconv.Unquote(k.Value)
			}
			if m == "" {
				t.Fatalf("%s: can't read the method of its key %#v", table, k)
			}
			methods = append(methods, m)
		}
	}
	return methods
}

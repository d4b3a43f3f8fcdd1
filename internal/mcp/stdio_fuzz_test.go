package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lines as MCP clients write them. The TypeScript SDK writes method and
// params before jsonrpc and id; the Python SDK writes jsonrpc and id first.
const (
	tsInitialize  = `{"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"elicitation":{}},"clientInfo":{"name":"claude-code","version":"2.0.14"}},"jsonrpc":"2.0","id":0}`
	tsInitialized = `{"method":"notifications/initialized","jsonrpc":"2.0"}`
	tsToolsList   = `{"method":"tools/list","params":{},"jsonrpc":"2.0","id":1}`
	tsAsk         = `{"method":"tools/call","params":{"name":"ask_user_question","arguments":{"questions":[{"id":"deploy","question":"Deploy web to prod?","header":"Deploy","options":[{"label":"Yes (Recommended)","description":"ships v2"},{"label":"No"}]}]},"_meta":{"progressToken":2}},"jsonrpc":"2.0","id":2}`
	tsCancelled   = `{"method":"notifications/cancelled","params":{"requestId":2,"reason":"McpError: MCP error -32001: Request timed out"},"jsonrpc":"2.0"}`
	tsPing        = `{"method":"ping","jsonrpc":"2.0","id":3}`
	pyInitialize  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"sampling":{},"roots":{"listChanged":true}},"clientInfo":{"name":"mcp","version":"0.1.0"}}}`
	pyApproval    = `{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{"name":"request_approval","arguments":{"tool_name":"Bash","reason":"run the migration \"0042\"","arguments":{"command":"psql -c 'drop table t;' <\u2028>\n","env":{"A":[1,2.5,-3e2,true,false,null]}}}}}`
	pongResponse  = `{"jsonrpc":"2.0","id":0,"result":{}}`
	rootsResponse = `{"result":{"roots":[{"uri":"file:///home/dev/app","name":"app"}]},"jsonrpc":"2.0","id":1}`
	errResponse   = `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`
)

var stdioSeeds = []string{
	// A session, as a TypeScript client and as a Python client write it.
	tsInitialize + "\n" + tsInitialized + "\n" + tsToolsList + "\n" + tsAsk + "\n" + tsPing + "\n" + pongResponse + "\n" + tsCancelled + "\n",
	pyInitialize + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + pyApproval + "\n" + rootsResponse + "\n" + errResponse + "\n",
	tsInitialize, tsInitialized, tsToolsList, tsAsk, tsCancelled, tsPing, pyInitialize, pyApproval,
	pongResponse, rootsResponse, errResponse,
	// Line ends, whitespace, byte order marks, blank lines, no final newline.
	tsPing + "\r\n" + tsInitialized + "\r\n",
	"\n\n \t\r\n" + tsPing + "   \t\n\n",
	"\t " + tsToolsList + " \r",
	"\xef\xbb\xbf" + tsInitialize + "\n" + tsPing + "\n",
	"\xc2\xa0" + tsPing + "\xc2\x85\n",
	"\f" + tsPing + "\v\n",
	"\r" + tsPing + "\r" + tsPing + "\n",
	// Requests before initialize: answered, but for those the SDK serves
	// then; after an initialize, passed on.
	tsToolsList + "\n" + tsPing + "\n" + tsInitialize + "\n" + tsToolsList + "\n",
	`{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":21,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`,
	`{"jsonrpc":"2.0","id":22,"method":"logging/setLevel","params":{"level":"info"}}`,
	// A notification under an id: answered, before initialize and after.
	`{"jsonrpc":"2.0","id":23,"method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n" + tsInitialize + "\n" +
		`{"jsonrpc":"2.0","id":"24","method":"notifications/initialized"}` + "\n",
	`{"jsonrpc":"2.0","method":"initialize"}` + "\n" + tsToolsList + "\n", // a notification initializes nothing
	// Ids of every JSON type.
	`{"jsonrpc":"2.0","id":"","method":"ping"}`,
	`{"jsonrpc":"2.0","id":"\u00e9\"\\\/\ud83d\ude00","method":"ping"}`,
	`{"jsonrpc":"2.0","id":-1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"id":"two","method":"ping"}`,
	`{"jsonrpc":"2.0","\u0069d":8,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":4,"ID":"x","method":7}`, // was answered under "x"
	`{"jsonrpc":"2.0","Id":1.5,"method":"ping"}`,   // a notification: "Id" is not the id
	// JSON that is not a message, answered under its id when it has one.
	`{"JSONRPC":"2.0","id":4,"method":"ping"}`,
	`{"jsonrpc":"1.0","id":"five","method":"ping"}`,
	`{"id":6,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":7,"method":7}`,
	`{"jsonrpc":"2.0","id":7,"method":null}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}`,
	`{"jsonrpc":"2.0","id":10}`,
	// The sessionless protocol's _meta, named in another case: no _meta to
	// the SDK, so a request before initialize.
	`{"jsonrpc":"2.0","id":20,"method":"tools/list","pArams":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":21,"method":"tools/list","params":{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`null`, `42`, `"ping"`, `true`, `{}`,
	// Responses that answer nothing.
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":true,"result":null}`,
	// Batches.
	`[{"jsonrpc":"2.0","id":11,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	`[]`, `[1]`,
	// Not JSON.
	"this is not json",
	`{"jsonrpc":"2.0","id":12,"method":"ping"`,
	`{"jsonrpc":"2.0","id":12,"method":"ping"}}`,
	tsPing + tsPing,
	`{"jsonrpc":"2.0","id":13,"method":"ping","params":{"s":"\ud800 \x"}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"x\"",
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":7}",
	"\x00",
}

// FuzzStdio feeds bytes to Stdio as a client's stdin and reads what it
// passes on the way the SDK does. Stdio ends when stdin does; the SDK reads
// each line passed on as one message, under the id the line carries; each
// non-blank line, trimmed, meets in order the fate fate gives it (passed
// on as it is, dropped, or answered with one JSON-RPC error under its id);
// and nothing else comes out.
func FuzzStdio(f *testing.F) {
	for _, s := range stdioSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdin []byte) {
		passed, msgs, answered := runStdio(t, stdin)
		if len(msgs) != bytes.Count(passed, []byte("\n")) {
			t.Errorf("the SDK read %d messages from %d lines passed on:\n%s", len(msgs), bytes.Count(passed, []byte("\n")), passed)
		}
		initializing := false // an initialize was passed on (nothing answers it here)
		for line := range bytes.Lines(stdin) {
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) == 0 {
				continue
			}
			kind, code, id := fate(trimmed, initializing)
			if kind == passOn && requestOf(trimmed) == "initialize" {
				initializing = true
			}
			switch kind {
			case passOn:
				next, rest, _ := bytes.Cut(passed, []byte("\n"))
				if !bytes.Equal(next, trimmed) {
					t.Fatalf("line %q: passed on %q, want it trimmed", line, next)
				}
				passed = rest
				if len(msgs) > 0 {
					checkSameID(t, trimmed, msgs[0])
					msgs = msgs[1:]
				}
			case dropped:
			case answer:
				next, rest, ok := bytes.Cut(answered, []byte("\n"))
				if !ok {
					t.Fatalf("line %q: no answer, want a %d error; answered %q", line, code, next)
				}
				answered = rest
				gotID, gotCode := readAnswer(t, next)
				if gotCode != code || !sameJSON(gotID, id) {
					t.Errorf("line %q: answered %s, want code %d under id %s", line, next, code, id)
				}
			}
		}
		if len(passed) > 0 || len(answered) > 0 {
			t.Errorf("more came out than went in: passed on %q, answered %q", passed, answered)
		}
	})
}

// runStdio runs Stdio on stdin until it ends, reading what it passes on
// as the SDK reads a session: it returns those bytes, the messages the SDK
// read from them, and what Stdio answered on stdout.
func runStdio(t *testing.T, stdin []byte) (passed []byte, msgs []jsonrpc.Message, answered []byte) {
	t.Helper()
	var out, pass bytes.Buffer
	tr := Stdio(bytes.NewReader(stdin), &out, slog.New(slog.DiscardHandler)).(*stdio)
	// Nothing answers the requests passed on here: as stdin ends, none is
	// waited for, as if each were a tool call waiting for a person.
	tr.drainWith(func() int { return math.MaxInt })
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(io.TeeReader(tr.Reader, &pass)), Writer: tr.Writer}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for {
		msg, err := conn.Read(ctx)
		switch {
		case err == io.EOF:
			return pass.Bytes(), msgs, out.Bytes()
		case ctx.Err() != nil:
			t.Fatalf("stdin ended and the screen did not in %s", within)
		case err != nil:
			t.Fatalf("the SDK would end the session: %v; passed on:\n%s", err, pass.Bytes())
		}
		msgs = append(msgs, msg)
	}
}

const (
	passOn  = iota // to the SDK, which reads it as one message
	dropped        // a response that answers nothing: never answered
	answer         // with one JSON-RPC error
)

// fate is what becomes of a trimmed, non-blank line by JSON-RPC 2.0 and
// MCP: the SDK gets what it reads as a message under the id the client
// wrote, unless it is a request the SDK does not serve before the
// session's initialize and none came before it (initializing), or a
// notification under an id; a response that it can't read so is dropped;
// the rest is answered with an error (code), under the line's id (its "id"
// member, when a string or a number) or else null.
func fate(line []byte, initializing bool) (kind, code int, id json.RawMessage) {
	null := json.RawMessage("null")
	if !json.Valid(line) {
		return answer, jsonrpc.CodeParseError, null
	}
	if line[0] == '[' {
		return answer, jsonrpc.CodeInvalidRequest, null // a batch: MCP has none since 2025-06-18
	}
	var m map[string]json.RawMessage // member names as written: JSON-RPC's are case-sensitive
	_ = json.Unmarshal(line, &m)     // not an object: m stays nil
	// MCP ids are never null: a request under one is answered, a response
	// dropped; a notification under one is passed on.
	var name string
	_ = json.Unmarshal(m["method"], &name)
	notification := strings.HasPrefix(name, "notifications/")
	nullID := string(m["id"]) == "null" && !notification
	// A notification has no id: one under an id (not null) is answered.
	notificationID := notification && m["id"] != nil && string(m["id"]) != "null"
	if msg, err := jsonrpc.DecodeMessage(line); err == nil && !nullID && !notificationID && readsID(msg, m["id"]) {
		if method := requestOf(line); !initializing && method != "" && !servedBeforeInit(method, line) {
			return answer, jsonrpc.CodeInvalidRequest, m["id"]
		}
		return passOn, 0, nil
	}
	_, method := m["method"]
	_, result := m["result"]
	_, failed := m["error"]
	if !method && (result || failed) {
		return dropped, 0, nil
	}
	if !isID(m["id"]) {
		return answer, jsonrpc.CodeInvalidRequest, null
	}
	return answer, jsonrpc.CodeInvalidRequest, m["id"]
}

// requestOf is the method of the request line, as the SDK reads it, or ""
// when line is not a request (a notification, a response).
func requestOf(line []byte) string {
	msg, err := jsonrpc.DecodeMessage(line)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() {
		return ""
	}
	return req.Method
}

// servedBeforeInit reports whether the SDK serves the request line, of
// method, before the session's initialize: one of beforeInit, which
// TestBeforeInitIsTheSDKs holds to the SDK's, or a request of the protocol
// without sessions (2026-07-28, SEP-2575), which names its version in
// _meta.
func servedBeforeInit(method string, line []byte) bool {
	if slices.Contains(beforeInit, method) {
		return true
	}
	// Member names as written, as the SDK's decoder reads them.
	var m map[string]json.RawMessage
	_ = json.Unmarshal(line, &m)
	var params map[string]json.RawMessage
	_ = json.Unmarshal(m["params"], &params)
	var meta map[string]any
	_ = json.Unmarshal(params["_meta"], &meta)
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28"
}

// readsID reports whether the SDK read msg under id as a client wrote it:
// a string, a number of the same integer value (7, 7.0 or 7e0), or none.
func readsID(msg jsonrpc.Message, id json.RawMessage) bool {
	if len(id) == 0 || id[0] == '"' || string(id) == "null" {
		return true
	}
	var sdk jsonrpc.ID
	switch msg := msg.(type) {
	case *jsonrpc.Request:
		sdk = msg.ID
	case *jsonrpc.Response:
		sdk = msg.ID
	}
	i, ok := sdk.Raw().(int64)
	return ok && sameNumber(string(id), i)
}

// isID reports whether v is a JSON string or number, the ids a response
// can carry.
func isID(v json.RawMessage) bool {
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if d.Decode(&x) != nil || d.More() {
		return false
	}
	switch x.(type) {
	case string, json.Number:
		return true
	}
	return false
}

// readAnswer reads one line screen wrote as a JSON-RPC error response:
// exactly jsonrpc "2.0", an id (string, number or null) and an error with
// an integer code, a message and maybe data.
func readAnswer(t *testing.T, line []byte) (id json.RawMessage, code int) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("answered %q: %v", line, err)
	}
	var e map[string]json.RawMessage
	json.Unmarshal(m["error"], &e)
	var msg string
	if len(m) != 3 || string(m["jsonrpc"]) != `"2.0"` || !(isID(m["id"]) || string(m["id"]) == "null") ||
		json.Unmarshal(e["code"], &code) != nil || json.Unmarshal(e["message"], &msg) != nil || msg == "" || len(e) != 2 && (len(e) != 3 || e["data"] == nil) {
		t.Fatalf("answered %s: not a JSON-RPC error response", line)
	}
	return m["id"], code
}

// checkSameID fails t when the SDK read msg under an id other than the one
// line carries: it would answer the client under an id it never sent.
func checkSameID(t *testing.T, line []byte, msg jsonrpc.Message) {
	t.Helper()
	var m map[string]json.RawMessage
	json.Unmarshal(line, &m)
	var sdk jsonrpc.ID
	switch msg := msg.(type) {
	case *jsonrpc.Request:
		sdk = msg.ID
	case *jsonrpc.Response:
		sdk = msg.ID
	}
	want, ok := m["id"]
	if !ok || string(want) == "null" {
		if sdk.IsValid() {
			t.Errorf("line %s: the SDK read id %v, and the line has none", line, sdk.Raw())
		}
		return
	}
	got, _ := json.Marshal(sdk.Raw())
	var w, g any
	json.Unmarshal(want, &w)
	json.Unmarshal(got, &g)
	if _, ok := w.(float64); ok {
		if i, ok := sdk.Raw().(int64); !ok || !sameNumber(string(want), i) {
			t.Errorf("line %s: the SDK read id %s, not the line's %s", line, got, want)
		}
		return
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("line %s: the SDK read id %s, not the line's %s", line, got, want)
	}
}

// sameNumber reports whether the JSON number n is the integer i.
func sameNumber(n string, i int64) bool {
	mant, exp, _ := strings.Cut(strings.ToLower(n), "e")
	if len(strings.TrimLeft(exp, "+-")) > 4 { // too big or too small for an int64, unless 0
		return strings.Trim(mant, "-0.") == "" && i == 0
	}
	r, ok := new(big.Rat).SetString(n)
	return ok && r.IsInt() && r.Num().IsInt64() && r.Num().Int64() == i
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&x) == nil && db.Decode(&y) == nil && reflect.DeepEqual(x, y)
}

// FuzzLeadingID reads the id of a line from its first cut bytes, as Stdio
// does for a line too long to take. What it reads is a string or a number,
// and the line's own "id" when the line is a JSON object; and it reads the
// first "id" member whenever the start holds the whole of it.
func FuzzLeadingID(f *testing.F) {
	for _, line := range []string{tsAsk, pyApproval, tsInitialized, pongResponse} {
		for _, cut := range []uint{0, 1, 10, 30, 60, 100, uint(len(line)) - 2, uint(len(line))} {
			f.Add([]byte(line), cut)
		}
	}
	for _, s := range stdioSeeds {
		if !strings.Contains(s, "\n") {
			f.Add([]byte(s), uint(len(s)))
		}
	}
	f.Add([]byte(` { "jsonrpc" : "2.0" , "id" : 0 }`), uint(30))
	f.Add([]byte(`{"jsonrpc":"2.0","id":123456,"method":"ping"}`), uint(25)) // was read as id 123
	f.Add([]byte(`{"params":{"a":[{"id":1}],"id":2},"id":"x\"y","method":"ping"}`), uint(45))
	f.Fuzz(func(t *testing.T, line []byte, cut uint) {
		start := line[:cut%uint(len(line)+1)]
		got := leadingID(start)
		if got != nil && !isID(got) {
			t.Fatalf("leadingID(%q) = %q, not a string or a number", start, got)
		}
		ids, ends, ok := idMembers(line)
		if !ok {
			return // the rest of the line is unknown to Stdio too
		}
		var m map[string]json.RawMessage
		json.Unmarshal(line, &m)
		switch {
		case got == nil:
		case len(ids) == 0:
			t.Fatalf("leadingID(%q) = %s; the line %s has no id", start, got, line)
		case len(ids) > 1: // JSON leaves names twice undefined: the first will do
			if !sameJSON(got, ids[0]) {
				t.Fatalf("leadingID(%q) = %s; the line %s has ids %q", start, got, line, ids)
			}
		case !sameJSON(got, m["id"]):
			t.Fatalf("leadingID(%q) = %s; the line %s has id %s", start, got, line, m["id"])
		}
		if got == nil && len(ids) > 0 && isID(ids[0]) {
			whole := ends[0] <= int64(len(start))
			if ids[0][0] != '"' { // a number ends where something follows it
				whole = ends[0] < int64(len(start))
			}
			if whole {
				t.Fatalf("leadingID(%q) = nil; it holds the whole of the line's id %s", start, ids[0])
			}
		}
	})
}

// idMembers returns the values of the "id" members of the JSON object
// line, in order, with the offset each ends at; ok is false when line is
// not a JSON object.
func idMembers(line []byte) (ids []json.RawMessage, ends []int64, ok bool) {
	if !json.Valid(line) {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		key, _ := dec.Token()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err) // line is valid JSON
		}
		if key == "id" {
			ids, ends = append(ids, v), append(ends, dec.InputOffset())
		}
	}
	return ids, ends, true
}

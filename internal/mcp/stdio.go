package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of an MCP server on a process's stdin and stdout,
// newline-delimited JSON-RPC as the MCP spec has it. The SDK's own ends
// its session at the first line it can't read as a message, and the
// server then withdraws every question it asked: one malformed line from
// a client would cost every pending answer. Here such a line is answered
// with a JSON-RPC error instead (-32700, or -32600 for JSON that is not a
// message), logged, and the session goes on. stdout stays open when the
// session ends.
//
// A request before the session's initialize, or after one that failed,
// is answered with -32600, saying to initialize first (the SDK's own
// answer is an error of code 0), unless it is one the SDK serves then
// (beforeInit: initialize, ping, logging/setLevel, resources/subscribe and
// unsubscribe, server/discover; and a request of the sessionless protocol).
// One that comes while an initialize is in flight goes to the SDK, which
// serves the initialize first, and answers it as the initialize leaves the
// session: an error of code 0 when it failed. A request named as a
// notification (notifications/...) is answered with -32600 whenever it
// comes: a notification has no id, and the SDK's answer before initialize
// is an error of code 0.
//
// A request the client cancelled (notifications/cancelled) gets no reply:
// the spec asks none, and the SDK's, an error of code 0 ("context
// canceled"), reaches a client that has forgotten the id, which reports it
// as an error of its own.
//
// When stdin ends, the requests the client sent are answered before the
// session ends (the SDK's ends at once, and its requests in flight go
// unanswered: a script that pipes in its lines and closes stdin got no
// reply to most), but for the tool calls waiting for a person, which end
// unanswered as the session does, their questions withdrawn. It waits for
// that drainFor at most.
func Stdio(stdin io.Reader, stdout io.Writer, log *slog.Logger) mcp.Transport {
	out := &lockedWriter{w: stdout, open: map[string]bool{}, changed: make(chan struct{}, 1)}
	r, w := io.Pipe()
	go func() {
		w.CloseWithError(screen(stdin, w, out, log))
	}()
	return &stdio{IOTransport: mcp.IOTransport{Reader: r, Writer: out}, out: out}
}

// stdio is Stdio's transport: the SDK's, on the lines screen passes on.
type stdio struct {
	mcp.IOTransport
	out *lockedWriter
}

// A drainer is a transport whose session, once its input has ended, waits
// for the replies to the requests in flight but to the tool calls waiting
// for a person, which waiting counts (Server.waitingCalls). It returns
// what to call when that count may have grown.
type drainer interface {
	drainWith(waiting func() int) (changed func())
}

func (t *stdio) drainWith(waiting func() int) func() {
	t.out.mu.Lock()
	t.out.waiting = waiting
	t.out.mu.Unlock()
	t.out.change()
	return t.out.change
}

// drainFor bounds how long the requests in flight have to be answered once
// stdin has ended: a tool call whose bridge does not answer (its client
// retries for minutes) must not hold the process.
const drainFor = 5 * time.Second

// maxLine is the longest line passed on: the SDK's own limit. A longer
// one is answered and skipped, never held whole.
const maxLine = mcp.DefaultMaxLineLength

// screen copies the lines of in that are JSON-RPC messages to pass, and
// answers the rest on out.
func screen(in io.Reader, pass io.Writer, out *lockedWriter, log *slog.Logger) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line, tooLongID []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		var id json.RawMessage // of a line too long, when its start names one
		switch {
		case tooLong:
		case len(line)+len(chunk) > maxLine:
			id = leadingID(line[:min(len(line), idScan)]) // chunks are 64 KiB at most: line holds nearly 16 MiB
			tooLong, line = true, nil
		default:
			line = append(line, chunk...)
		}
		if id != nil {
			tooLongID = id
		}
		if err == bufio.ErrBufferFull {
			continue // the line goes on
		}
		if tooLong {
			log.Warn("an MCP client sent a line longer than the limit; answered with an error", "limit_bytes", maxLine)
			if werr := out.answer(errorLine(tooLongID, jsonrpc.CodeInvalidRequest, "Invalid Request: the line is longer than 16 MiB")); werr != nil {
				return werr
			}
		} else if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			switch code, msg, id := refusal(trimmed); code {
			case 0:
				if id, method, early := out.early(trimmed); early {
					log.Warn("an MCP client sent a request before initialize; answered with an error", "method", method)
					if werr := out.answer(errorLine(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+strconv.Quote(method)+" before initialize: send initialize first, and the session's other requests once it is answered")); werr != nil {
						return werr
					}
					break
				}
				out.note(trimmed)
				if _, werr := pass.Write(append(trimmed, '\n')); werr != nil {
					return werr
				}
			case drop:
				log.Warn("an MCP client sent a response that answers no request; dropped", "error", msg)
			default:
				log.Warn("an MCP client sent a line that is not a JSON-RPC message; answered with an error", "code", code, "error", msg)
				if werr := out.answer(errorLine(id, code, msg)); werr != nil {
					return werr
				}
			}
		}
		line, tooLong, tooLongID = line[:0], false, nil
		if err != nil {
			if err == io.EOF {
				// The client closed stdin: what it sent is answered
				// before the pipe reads as ended.
				out.drain(drainFor, log)
				return nil
			}
			return err
		}
	}
}

// idScan is how much of a line too long is read for its id. The Python
// SDK writes "id" before "params", where the bulk is; the TypeScript SDK
// writes it last, and its line is answered under null.
const idScan = 64 << 10

// leadingID is the id of the JSON-RPC message that start begins, when it
// names one (a string or a number) before it ends: a line too long to
// take is answered under its id, or its caller would wait for a reply of
// its own.
func leadingID(start []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(start))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key == "id" {
			var id json.RawMessage
			if dec.Decode(&id) != nil || id[0] != '"' && dec.InputOffset() == int64(len(start)) {
				return nil // a number at the end of start may go on past it
			}
			return validID(id)
		}
		// Skip the value, token by token: it may be the part cut off.
		depth := 0
		for {
			tok, err := dec.Token()
			if err != nil {
				return nil
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
			if depth == 0 {
				break
			}
		}
	}
	return nil
}

// drop is refusal's code for a line that gets no answer: a response (one
// is never answered) the SDK would end the session over.
const drop = 1

// refusal returns the JSON-RPC error code and message that line gets, with
// the id to answer it under: code 0 for a message to pass on (one the SDK
// reads, under the id the client wrote), or drop. Batches are refused:
// MCP has none since 2025-06-18, and the SDK ends the session over one it
// does not take.
func refusal(line []byte) (code int, msg string, id json.RawMessage) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "Parse error: the line is not JSON", nil
	}
	if line[0] == '[' {
		return jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported", nil
	}
	var m map[string]json.RawMessage // by names as written: "ID" is not the id
	_ = json.Unmarshal(line, &m)
	_, err := jsonrpc.DecodeMessage(line)
	var name string
	_ = json.Unmarshal(m["method"], &name)
	switch {
	case err != nil:
	case string(m["id"]) == "null" && !strings.HasPrefix(name, "notifications/"):
		// The SDK takes it for a notification, and its caller would wait
		// for a reply forever. (A notification under a null id, as
		// JSON-RPC 1.0 wrote them, is taken as the notification it is.)
		err = errors.New("the id is null; MCP ids are strings or integers")
	case m["id"] != nil && string(m["id"]) != "null" && strings.HasPrefix(name, "notifications/"):
		// MCP's notifications have no id. The SDK refuses one that has,
		// but before initialize with an error of code 0.
		err = fmt.Errorf("%s is a notification, which has no id", strconv.Quote(name))
	case !sdkReads(m["id"]):
		err = errors.New("the id is not an integer the server can answer under")
	}
	if err == nil {
		return 0, "", nil
	}
	_, method := m["method"]
	_, result := m["result"]
	_, failed := m["error"]
	if !method && (result || failed) {
		return drop, err.Error(), nil
	}
	return jsonrpc.CodeInvalidRequest, "Invalid Request: " + err.Error(), validID(m["id"])
}

// sdkReads reports whether the SDK answers under id as the client wrote
// it. It reads a number through a float64 made an int64: 1.5 would be
// answered as 1, 9007199254740993 as 9007199254740992. A whole number
// that survives that reads as written, in any notation (7, 7.0, 7e0).
func sdkReads(id json.RawMessage) bool {
	if len(id) == 0 || id[0] == '"' || string(id) == "null" {
		return true
	}
	_, ok := sdkNumber(id)
	return ok
}

// sdkNumber is the numeric id id as the SDK reads it, and whether it reads
// it as written.
func sdkNumber(id json.RawMessage) (int64, bool) {
	exact := func(n int64) bool { return int64(float64(n)) == n }
	if !bytes.ContainsAny(id, ".eE") {
		n, err := strconv.ParseInt(string(id), 10, 64)
		return n, err == nil && exact(n)
	}
	// Past 4 digits, an exponent is one only a 0 carries and stays an
	// int64; below, the decimal is read exactly, as big as it is.
	mant, exp, _ := strings.Cut(strings.ToLower(string(id)), "e")
	if len(strings.TrimLeft(exp, "+-")) > 4 {
		return 0, strings.Trim(mant, "-0.") == ""
	}
	r, ok := new(big.Rat).SetString(string(id))
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	n := r.Num().Int64()
	return n, exact(n)
}

// validID is id when it is one a response can carry (a string or a
// number), else nil.
func validID(id json.RawMessage) json.RawMessage {
	if len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		return id
	}
	return nil
}

func errorLine(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return append(b, '\n')
}

// lockedWriter writes whole lines from the SDK and from screen without
// interleaving them; the SDK writes each message in one Write. It leaves
// out the replies to requests the client cancelled. Closing it leaves the
// writer under it open.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// open holds the ids (idKey) of the client's requests not yet replied
	// to, true for one the client has cancelled since.
	open map[string]bool
	// initializing holds the ids of the client's initializes not yet
	// replied to; initialized says the SDK answered one with a result.
	initializing map[string]bool
	initialized  bool

	// What drain waits on: the tool calls waiting for a person (set by
	// drainWith), a write to w that failed (no reply reaches the client
	// any more), the SDK's session closed (Close). changed has a value
	// (change) when one of them, or open, may have changed.
	waiting func() int
	failed  bool
	closed  bool
	changed chan struct{}
}

// change wakes drain. It takes no lock: the Server calls it holding its own.
func (l *lockedWriter) change() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// drain waits until every request the client sent is answered, but the
// tool calls waiting for a person, or no reply can be written any more,
// or for at most max. The client has closed stdin: nothing comes after.
func (l *lockedWriter) drain(max time.Duration, log *slog.Logger) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	for {
		left := l.unanswered()
		if left == 0 {
			return
		}
		select {
		case <-l.changed:
		case <-deadline.C:
			log.Warn("stdin closed: requests the MCP client sent are left unanswered", "count", left, "waited", max)
			return
		}
	}
}

// unanswered counts the requests in flight that are not tool calls
// waiting for a person: 0 too once no reply can be written. Every call
// waiting is in flight, and no request comes any more (stdin has ended),
// so open holds at least as many as waiting counts, read after it.
func (l *lockedWriter) unanswered() int {
	l.mu.Lock()
	open, waiting, over := len(l.open), l.waiting, l.failed || l.closed
	l.mu.Unlock()
	if over || open == 0 {
		return 0
	}
	if waiting != nil {
		open -= min(open, waiting()) // without l.mu: it takes the Server's
	}
	return open
}

// beforeInit are the methods the SDK serves before the session's
// initialize (its ServerSession.handle): the others get an error (of code
// 0) from it. TestBeforeInitIsTheSDKs holds this to the SDK's.
var beforeInit = []string{"initialize", "ping", "server/discover", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// early reads msg, a message the SDK reads, on its way to the SDK, as the
// SDK reads it: it reports whether msg is a request the SDK would refuse
// as coming before the session's initialize, with its id and method, and
// notes an initialize passed on. Until one is answered, the SDK decides:
// it serves an initialize before what comes after it.
func (l *lockedWriter) early(msg []byte) (id json.RawMessage, method string, _ bool) {
	l.mu.Lock()
	initialized := l.initialized
	l.mu.Unlock()
	if initialized {
		return nil, "", false // every message of the session, read no further
	}
	dec, err := jsonrpc.DecodeMessage(msg)
	req, ok := dec.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() || req.Method == "" {
		return nil, "", false
	}
	var m map[string]json.RawMessage // by names as written, as refusal reads them
	_ = json.Unmarshal(msg, &m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.Method == "initialize" {
		if k := idKey(m["id"]); k != "" {
			if l.initializing == nil {
				l.initializing = map[string]bool{}
			}
			l.initializing[k] = true
		}
	}
	if l.initialized || len(l.initializing) > 0 || slices.Contains(beforeInit, req.Method) {
		return nil, "", false
	}
	if sessionlessMeta(req) {
		return nil, "", false
	}
	return validID(m["id"]), req.Method, true
}

// note reads a message the client sent, on its way to the SDK: a request
// is open until its reply; a cancellation of an open request marks its
// reply to be left out (one of a request replied to already, or never
// made, is nothing).
func (l *lockedWriter) note(msg []byte) {
	// By names as written, as the SDK reads them ("ID" is no id to it).
	var m, params map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return
	}
	var method string
	_ = json.Unmarshal(m["method"], &method)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case method == "notifications/cancelled" && len(m["id"]) == 0:
		_ = json.Unmarshal(m["params"], &params)
		if k := idKey(params["requestId"]); k != "" {
			if _, open := l.open[k]; open {
				l.open[k] = true
			}
		}
	case method != "" && !strings.HasPrefix(method, "notifications/"):
		if k := idKey(m["id"]); k != "" {
			l.open[k] = false
		}
	}
}

// answer writes screen's answer to a line it did not pass on. It replies
// to no request the SDK holds, even under the id of one: the client's
// initialize 0 is still in flight after a stray {"id":0} is answered.
func (l *lockedWriter) answer(p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(p)
	return err
}

// Write writes a message from the SDK, and reads it as the reply to the
// request it names.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.open) > 0 {
		var reply struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(p, &reply) == nil && reply.Method == "" {
			k := idKey(reply.ID)
			if l.initializing[k] {
				delete(l.initializing, k)
				l.initialized = l.initialized || len(reply.Result) > 0
			}
			cancelled, open := l.open[k]
			delete(l.open, k)
			if open {
				defer l.change()
			}
			if open && cancelled {
				return len(p), nil
			}
		}
	}
	n, err := l.w.Write(p)
	if err != nil && !l.failed {
		l.failed = true
		defer l.change()
	}
	return n, err
}

// idKey is id as a map key that is the same however a number is written
// (the SDK replies to 7.0 as 7), or "" when id is not one the SDK reads.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) != nil {
			return ""
		}
		return "s" + s
	}
	if n, ok := sdkNumber(id); ok {
		return "n" + strconv.FormatInt(n, 10)
	}
	return ""
}

// Close says the SDK's session has closed: no reply is to come.
func (l *lockedWriter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.change()
	return nil
}

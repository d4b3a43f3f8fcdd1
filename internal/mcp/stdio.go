package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

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
func Stdio(stdin io.Reader, stdout io.Writer, log *slog.Logger) mcp.Transport {
	out := &lockedWriter{w: stdout}
	r, w := io.Pipe()
	go func() {
		w.CloseWithError(screen(stdin, w, out, log))
	}()
	return &mcp.IOTransport{Reader: r, Writer: out}
}

// screen copies the lines of in that are JSON-RPC messages to pass, and
// answers the rest on out.
func screen(in io.Reader, pass io.Writer, out io.Writer, log *slog.Logger) error {
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadBytes('\n')
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if code, msg, id := refusal(trimmed); code != 0 {
				log.Warn("an MCP client sent a line that is not a JSON-RPC message; answered with an error", "code", code, "error", msg)
				if _, werr := out.Write(errorLine(id, code, msg)); werr != nil {
					return werr
				}
			} else if _, werr := pass.Write(append(trimmed, '\n')); werr != nil {
				return werr
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil // the pipe reads as ended: the client closed stdin
			}
			return err
		}
	}
}

// refusal returns the JSON-RPC error code and message that line gets, with
// the id to answer it under, or code 0 for a line to pass on: a message, or
// a batch (the SDK answers a batch itself).
func refusal(line []byte) (code int, msg string, id json.RawMessage) {
	if !json.Valid(line) {
		return -32700, "Parse error: the line is not JSON", nil
	}
	if line[0] == '[' {
		return 0, "", nil
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return -32600, "Invalid Request: not a JSON-RPC message object", nil
	}
	if m.JSONRPC != "2.0" || (m.Method == "" && m.Result == nil && m.Error == nil) {
		return -32600, `Invalid Request: a message has "jsonrpc": "2.0" and a method, a result or an error`, validID(m.ID)
	}
	return 0, "", nil
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
// interleaving them; the SDK writes each message in one Write. Closing it
// leaves the writer under it open.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }

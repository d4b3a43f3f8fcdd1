package surface

import (
	"io"
	"net/http"
	"time"
)

// HTTPClient is the client a surface calls its platform's API with: a 15 s
// timeout, and every keep-alive connection kept for the next call until it
// has been idle for 90 s, where Go's default keeps 2 per host (and 100 in
// all). Over HTTP/2, which Slack's and Discord's APIs speak, one
// connection carries many calls at once. Over HTTP/1.1 (a proxy, the
// bench's fake Slack) each call in flight holds a connection of its own,
// and a cap below the calls a replica has in flight at its busiest has it
// dial (and TLS-handshake) the difference at every burst, when it has the
// least CPU to spare: 64 did under the bench.
func HTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0              // no cap in all
	t.MaxIdleConnsPerHost = 1 << 20 // nor per host: IdleConnTimeout reaps them
	return &http.Client{Timeout: 15 * time.Second, Transport: t}
}

// ReadBody reads a request's body, refusing one over limit bytes
// (http.MaxBytesReader). A body that gives its length, as Slack's and
// Discord's callbacks and most agents' requests do, is read into one
// buffer of that size, up to bodyChunk: io.ReadAll grows its buffer from
// 512 bytes, and for a click of a few kilobytes the copies cost more than
// the reading. Beyond bodyChunk the buffer grows only as bytes arrive: a
// length is a claim, and a caller who sends none of what it claims must
// not have the bridge hold the whole of it for as long as it likes.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	n := r.ContentLength
	if n <= 0 || n > limit {
		return io.ReadAll(body)
	}
	// net/http ends a body with a length there: nothing follows it.
	buf := make([]byte, min(n, bodyChunk))
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	if int64(len(buf)) == n {
		return buf, nil
	}
	rest, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	if buf = append(buf, rest...); int64(len(buf)) != n {
		return nil, io.ErrUnexpectedEOF
	}
	return buf, nil
}

// bodyChunk is what ReadBody allocates on a body's word alone.
const bodyChunk = 16 << 10

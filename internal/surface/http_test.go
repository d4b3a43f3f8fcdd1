package surface

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestReadBody(t *testing.T) {
	const limit = 4 * bodyChunk
	for _, c := range []struct {
		name   string
		body   string
		length int64 // the request's Content-Length; -1: unknown
		want   string
		bad    bool
	}{
		{name: "its length given", body: "payload=abc", length: 11, want: "payload=abc"},
		{name: "its length unknown", body: "payload=abc", length: -1, want: "payload=abc"},
		{name: "exactly the limit", body: strings.Repeat("x", limit), length: limit, want: strings.Repeat("x", limit)},
		{name: "over the limit, its length given", body: strings.Repeat("x", limit+1), length: limit + 1, bad: true},
		{name: "over the limit, its length unknown", body: strings.Repeat("x", limit+1), length: -1, bad: true},
		{name: "shorter than it says", body: "abc", length: 5, bad: true},
		{name: "longer than a chunk", body: strings.Repeat("y", 3*bodyChunk+5), length: 3*bodyChunk + 5, want: strings.Repeat("y", 3*bodyChunk+5)},
		{name: "longer than a chunk, and shorter than it says", body: strings.Repeat("y", bodyChunk+5), length: bodyChunk + 9, bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", io.NopCloser(strings.NewReader(c.body)))
			r.ContentLength = c.length
			got, err := ReadBody(httptest.NewRecorder(), r, limit)
			switch {
			case c.bad && err == nil:
				t.Fatalf("ReadBody = %d bytes; want an error", len(got))
			case !c.bad && err != nil:
				t.Fatalf("ReadBody: %v", err)
			case !c.bad && string(got) != c.want:
				t.Fatalf("ReadBody = %d bytes %.20q...; want %d bytes %.20q...", len(got), got, len(c.want), c.want)
			}
		})
	}
}

// A caller that claims a length and sends nothing has the bridge allocate
// one chunk, not what it claims.
func TestReadBodyAllocatesWhatArrives(t *testing.T) {
	r := httptest.NewRequest("POST", "/", strings.NewReader(""))
	r.ContentLength = 1 << 20
	allocs := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			ReadBody(httptest.NewRecorder(), r, 1<<20)
		}
	})
	if got := allocs.AllocedBytesPerOp(); got > 2*bodyChunk {
		t.Fatalf("an empty body claiming 1 MiB: ReadBody allocated %d bytes; want at most about %d", got, bodyChunk)
	}
}

// Calls made at once to one host, more of them than Go keeps idle by
// default, are all kept: the next burst as large dials nothing. Under load
// a replica has a post and an edit in flight per request, and dialing
// (socket, connect, handshake, and a TLS handshake against the real API)
// costs it more than the call.
func TestHTTPClientKeepsTheConnectionsOfABurst(t *testing.T) {
	const burst = 100 // more than 64, what the bridge kept before
	arrived := make(chan struct{}, burst)
	release := make(chan struct{})
	var dialed atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := HTTPClient()

	// all in flight at once, so that each has a connection of its own
	inBurst := func() {
		var wg sync.WaitGroup
		for range burst {
			wg.Go(func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		for range burst {
			<-arrived
		}
		for range burst {
			release <- struct{}{}
		}
		wg.Wait()
	}
	inBurst()
	if got := dialed.Load(); got != burst {
		t.Fatalf("the first burst dialed %d connections; want %d, one per call", got, burst)
	}
	inBurst()
	if got := dialed.Load() - burst; got != 0 {
		t.Fatalf("the second burst dialed %d connections; want none: the first's were kept", got)
	}
}

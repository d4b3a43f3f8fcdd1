package apptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Record is an answer of the bridge's API: decoded, and each field's JSON
// exactly as sent.
type Record struct {
	M      map[string]any
	Fields map[string]json.RawMessage
}

// Raw returns field's JSON as the API sent it.
func (r Record) Raw(field string) string { return string(r.Fields[field]) }

// Do calls the API at base (no token) and decodes its JSON answer.
func Do(t testing.TB, base, method, path string, body any) (int, Record) {
	t.Helper()
	status, rec, err := do(base, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, rec
}

// Result is what a call made in the background got.
type Result struct {
	Status int
	Rec    Record
	Err    error
}

// Go makes the call in the background, as an agent asking with ?wait= does,
// and sends what it got on the channel. It never fails t itself: a test
// may not from another goroutine; it checks Err.
func Go(base, method, path string, body any) <-chan Result {
	out := make(chan Result, 1)
	go func() {
		status, rec, err := do(base, method, path, body)
		out <- Result{status, rec, err}
	}()
	return out
}

// Await waits up to d for what a call made with Go got, and fails t on a
// call that failed or did not return.
func Await(t testing.TB, ch <-chan Result, d time.Duration) Result {
	t.Helper()
	select {
	case a := <-ch:
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		return a
	case <-time.After(d):
		t.Fatalf("the call did not return within %v", d)
		return Result{}
	}
}

func do(base, method, path string, body any) (int, Record, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, Record{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	var out Record
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if json.Unmarshal(raw, &out.M) != nil || json.Unmarshal(raw, &out.Fields) != nil {
			return 0, Record{}, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out, nil
}

// Create creates a request through the API at base and returns its id.
func Create(t testing.TB, base, path string, body any) string {
	t.Helper()
	status, rec := Do(t, base, http.MethodPost, path, body)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, rec.M)
	}
	return rec.M["id"].(string)
}

// Wait holds GET ?wait=10s until the request ends and returns it.
func Wait(t testing.TB, base, path, id string) Record {
	t.Helper()
	status, rec := Do(t, base, http.MethodGet, path+"/"+id+"?wait=10s", nil)
	if status != http.StatusOK {
		t.Fatalf("wait: %d %v", status, rec.M)
	}
	return rec
}

// Get reads a request.
func Get(t testing.TB, base, path, id string) Record {
	t.Helper()
	_, rec := Do(t, base, http.MethodGet, path+"/"+id, nil)
	return rec
}

// Posted waits until the request lists n posted messages, as a person's
// click comes long after the bridge recorded its post: a click before
// that ends the request first, and the message is then edited twice (by
// the click and by the replica that posted it, learning of the end as it
// records the post). It polls; nothing signals a recording.
func Posted(t testing.TB, base, path, id string, n int) Record {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		rec := Get(t, base, path, id)
		if p, _ := rec.M["posts"].([]any); len(p) >= n {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s did not list %d posts within 10s", id, n)
		}
	}
}

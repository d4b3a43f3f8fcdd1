package surface

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadBody(t *testing.T) {
	const limit = 16
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
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", io.NopCloser(strings.NewReader(c.body)))
			r.ContentLength = c.length
			got, err := ReadBody(httptest.NewRecorder(), r, limit)
			switch {
			case c.bad && err == nil:
				t.Fatalf("ReadBody = %q; want an error", got)
			case !c.bad && err != nil:
				t.Fatalf("ReadBody: %v", err)
			case !c.bad && string(got) != c.want:
				t.Fatalf("ReadBody = %q; want %q", got, c.want)
			}
		})
	}
}

package api_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/surface"
)

// TestBodyError: an interaction endpoint refuses a body as the API does,
// 413 TOO_LARGE over its limit and 400 INVALID_REQUEST for one cut short.
func TestBodyError(t *testing.T) {
	for _, c := range []struct {
		name   string
		body   string
		length int64
		status int
		want   string
	}{
		{"over the limit", strings.Repeat("x", 100), 100, 413, `{"error":{"code":"TOO_LARGE","message":"the request body is larger than 1 MiB"}}` + "\n"},
		{"cut short", "abc", 10, 400, `{"error":{"code":"INVALID_REQUEST","message":"the body could not be read"}}` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/slack/interactions", io.NopCloser(strings.NewReader(c.body)))
			r.ContentLength = c.length
			w := httptest.NewRecorder()
			_, err := surface.ReadBody(w, r, 50)
			if err == nil {
				t.Fatal("read")
			}
			api.WriteError(w, api.BodyError(err))
			if w.Code != c.status || w.Body.String() != c.want || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("%d %s %q; want %d %s as JSON", w.Code, w.Header().Get("Content-Type"), w.Body, c.status, c.want)
			}
		})
	}
}

package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/pending"
)

// TestReadyzLogsAnOutageOnce: a probe every few seconds while Redis is
// down answers 503 each time and logs the outage once, then its end.
func TestReadyzLogsAnOutageOnce(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	var logs apptest.LogBuffer
	s := api.New(api.Options{
		Store:    pending.New(rdb, pending.Options{Prefix: "askbridge-test:readyz:"}),
		Registry: prometheus.NewRegistry(),
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	probe := func() int {
		t.Helper()
		res, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if c := probe(); c != http.StatusOK {
		t.Fatalf("readyz with Redis up = %d", c)
	}
	mr.Close()
	for range 3 {
		if c := probe(); c != http.StatusServiceUnavailable {
			t.Fatalf("readyz with Redis down = %d; want 503", c)
		}
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "readyz to answer 200 again", func() bool { return probe() == http.StatusOK })
	probe()
	out := logs.String()
	for line, want := range map[string]int{"not ready: Redis cannot be reached": 1, "ready again: Redis answers": 1, "request failed": 0} {
		if n := strings.Count(out, line); n != want {
			t.Errorf("%d lines %q; want %d. Logs:\n%s", n, line, want, out)
		}
	}
}

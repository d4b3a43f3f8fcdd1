package app_test

import (
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// TestRedisOutageLoggedOnce: while Redis is down every call answers 503
// UNAVAILABLE, and the replica logs the outage twice, as it begins and as
// it ends with the calls it left unserved, not a warning per 503 (one
// per agent's call, a thousand agents retrying, was the flood).
func TestRedisOutageLoggedOnce(t *testing.T) {
	mr := miniredis.RunT(t)
	var logs apptest.LogBuffer
	a := apptest.StartLogged(t, apptest.Config(t, "", "redis://"+mr.Addr(), "askbridge-test:outage:"), app.Options{},
		slog.New(slog.NewTextHandler(&logs, nil)))
	question := map[string]any{"questions": []any{map[string]any{"id": "go", "question": "Deploy?"}}}
	apptest.Create(t, a.URL(), "/v1/questions", question)
	readyz := func() int {
		t.Helper()
		res, err := http.Get(a.URL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	mr.Close()
	const calls = 20
	for i := range calls {
		if status, rec := apptest.Do(t, a.URL(), http.MethodPost, "/v1/questions", question); status != http.StatusServiceUnavailable {
			t.Fatalf("create %d with Redis down: %d %v; want 503 UNAVAILABLE", i, status, rec.M)
		}
		if i%5 == 0 && readyz() != http.StatusServiceUnavailable {
			t.Fatalf("/readyz with Redis down did not answer 503")
		}
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for readyz() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not answer 200 once Redis was back")
		}
	}
	apptest.Create(t, a.URL(), "/v1/questions", question)
	// The end is logged once calls have been served for a while (the
	// sweeper's, every second, among them).
	logs.WaitFor(t, "Redis serves again", 10*time.Second)

	out := logs.String()
	for line, want := range map[string]int{
		`level=WARN msg="Redis is unavailable: the API answers 503 UNAVAILABLE`: 1,
		`level=INFO msg="Redis serves again"`:                                   1,
		`level=WARN msg="request failed"`:                                       0,
	} {
		if n := strings.Count(out, line); n != want {
			t.Errorf("%d lines %q; want %d. Log:\n%s", n, line, want, out)
		}
	}
	for l := range strings.Lines(out) {
		if strings.Contains(l, "level=WARN") && !strings.Contains(l, "Redis is unavailable") && !strings.Contains(l, `msg="redis client"`) {
			t.Errorf("a warning besides the outage's: %s", l)
		}
	}
	if n := strings.Count(out, `level=WARN msg="redis client"`); n > 1 {
		t.Errorf("%d warnings of go-redis's own; want at most the one before the outage was known. Log:\n%s", n, out)
	}
	m := regexp.MustCompile(`msg="Redis serves again" after=\S+ unserved_calls=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no count of unserved calls in the log:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n < calls {
		t.Errorf("unserved_calls=%d; want at least the %d creates", n, calls)
	}
}

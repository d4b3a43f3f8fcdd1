package apptest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/config"
)

// LogBuffer collects what a logger writes from any number of goroutines,
// for a test to read.
type LogBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next write; nil until a wait
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written != nil {
		close(l.written)
		l.written = nil
	}
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitFor waits until the log holds text, failing t after within.
func (l *LogBuffer) WaitFor(t testing.TB, text string, within time.Duration) {
	t.Helper()
	l.WaitForN(t, text, 1, within)
}

// WaitForN waits until the log holds text n times, failing t after within.
func (l *LogBuffer) WaitForN(t testing.TB, text string, n int, within time.Duration) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if strings.Count(l.b.String(), text) >= n {
			l.mu.Unlock()
			return
		}
		if l.written == nil {
			l.written = make(chan struct{})
		}
		written := l.written
		l.mu.Unlock()
		select {
		case <-written:
		case <-deadline.C:
			out := l.String()
			t.Fatalf("%q %d times in the log after %v; want %d:\n%s", text, strings.Count(out, text), within, n, out)
		}
	}
}

// StartWatched is StartLogged with the replica logging to a LogBuffer at
// debug level, which is checked for secrets once the replica has
// stopped: a test fails if any of secrets reached the log. The log is
// shown when the test failed, with the secrets in it hidden.
func StartWatched(t testing.TB, cfg *config.Config, opt app.Options, secrets ...string) (*app.App, *LogBuffer) {
	t.Helper()
	logs := &LogBuffer{}
	t.Cleanup(func() { // runs once the replica has stopped
		out := logs.String()
		for i, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("secret %d of %d reached the log", i+1, len(secrets))
			}
		}
		if t.Failed() {
			for _, secret := range secrets {
				out = strings.ReplaceAll(out, secret, "<secret>")
			}
			t.Logf("replica log:\n%s", out)
		}
	})
	a := StartLogged(t, cfg, opt, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return a, logs
}

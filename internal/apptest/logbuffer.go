package apptest

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
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
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if strings.Contains(l.b.String(), text) {
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
			t.Fatalf("no %q in the log after %v:\n%s", text, within, l.String())
		}
	}
}

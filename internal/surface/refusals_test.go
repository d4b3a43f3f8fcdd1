package surface

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRefusalsAreSampled: a flood of refused callbacks is one line a
// minute, each counting the ones it stands for.
func TestRefusalsAreSampled(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	r := &Refusals{Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return now }}
	ctx := context.Background()
	for range 100 {
		r.Refused(ctx, "refused an interaction", "remote", "192.0.2.1:1234")
	}
	if n := strings.Count(logs.String(), "refused an interaction"); n != 1 || strings.Contains(logs.String(), "refused_unlogged") {
		t.Fatalf("100 refusals within a minute: %d lines; want 1, counting none before it:\n%s", n, logs.String())
	}
	now = now.Add(RefusalInterval - time.Millisecond)
	r.Refused(ctx, "refused an interaction")
	now = now.Add(time.Millisecond)
	r.Refused(ctx, "refused an interaction", "remote", "192.0.2.2:1234")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], `remote=192.0.2.2:1234 refused_unlogged=100`) {
		t.Fatalf("a minute later: want a second line counting the 100 not logged:\n%s", logs.String())
	}
}

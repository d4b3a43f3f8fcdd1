package surface

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRefusalsAreSampled: a flood of refused callbacks is one line, and
// one more a minute counting the ones not logged, the last of them as the
// flood's last minute ends.
func TestRefusalsAreSampled(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	var tallies []func()
	r := &Refusals{Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return now },
		After: func(d time.Duration, f func()) {
			if d != RefusalInterval {
				t.Errorf("a tally after %v; want %v", d, RefusalInterval)
			}
			tallies = append(tallies, f)
		}}
	ctx := context.Background()
	lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }
	tally := func() {
		t.Helper()
		if len(tallies) != 1 {
			t.Fatalf("%d tallies scheduled; want 1", len(tallies))
		}
		f := tallies[0]
		tallies = nil
		now = now.Add(RefusalInterval)
		f()
	}

	for range 100 {
		r.Refused(ctx, "refused an interaction", "remote", "192.0.2.1:1234")
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "remote=192.0.2.1:1234") {
		t.Fatalf("100 refusals within a minute: want 1 line:\n%s", logs.String())
	}
	tally() // the minute ends: the 99 not logged
	if got := lines(); len(got) != 2 || !strings.Contains(got[1], `msg="refused an interaction: more in the last interval" refused=99 interval=1m0s`) {
		t.Fatalf("as the minute ends: want a line counting 99:\n%s", logs.String())
	}
	r.Refused(ctx, "refused an interaction") // within the next minute: counted
	tally()
	if got := lines(); len(got) != 3 || !strings.Contains(got[2], "refused=1 ") {
		t.Fatalf("the next minute: want a line counting 1:\n%s", logs.String())
	}
	tally() // a quiet minute: nothing, and nothing more scheduled
	if got := lines(); len(got) != 3 || len(tallies) != 0 {
		t.Fatalf("a quiet minute: %d lines, %d tallies scheduled; want 3, 0:\n%s", len(got), len(tallies), logs.String())
	}
	r.Refused(ctx, "refused an interaction", "remote", "192.0.2.2:1234") // logged at once again
	if got := lines(); len(got) != 4 || !strings.Contains(got[3], "remote=192.0.2.2:1234") {
		t.Fatalf("after a quiet minute: want the refusal logged at once:\n%s", logs.String())
	}
}

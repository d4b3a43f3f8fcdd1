package surface

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// RefusalInterval is how often Refusals logs at most.
const RefusalInterval = time.Minute

// Refusals logs the callbacks an interactions endpoint refuses for their
// signature: the first at once, then at most one line a RefusalInterval.
// Those not logged are counted, and the count is logged as its interval
// ends, so a flood that stops still shows whole. The endpoints are
// public: logged a line each, anyone could fill the log with bad
// requests. A misconfigured secret still shows at the first click.
type Refusals struct {
	Log *slog.Logger
	Now func() time.Time // the clock; nil: time.Now
	// After runs f after d; nil: time.AfterFunc. Tests run f themselves.
	After func(d time.Duration, f func())

	mu       sync.Mutex
	next     time.Time // when the next line may be logged
	unlogged int       // refusals since the last line
	msg      string    // what the last line said
}

// Refused logs msg with args, or counts it when a line was logged less
// than a RefusalInterval ago.
func (r *Refusals) Refused(ctx context.Context, msg string, args ...any) {
	now := r.now()
	r.mu.Lock()
	if now.Before(r.next) {
		r.unlogged++
		r.mu.Unlock()
		return
	}
	r.next, r.msg = now.Add(RefusalInterval), msg
	r.after(RefusalInterval, r.tally)
	r.mu.Unlock()
	r.Log.Log(ctx, slog.LevelInfo, msg, args...) // not under the lock: a flood's requests only count
}

// tally ends an interval: it logs how many refusals went unlogged in it,
// if any, and then they open the next.
func (r *Refusals) tally() {
	r.mu.Lock()
	n, msg := r.unlogged, r.msg
	if n > 0 { // else the next refusal is logged at once
		r.unlogged = 0
		r.next = r.now().Add(RefusalInterval)
		r.after(RefusalInterval, r.tally)
	}
	r.mu.Unlock()
	if n > 0 {
		r.Log.Info(msg+": more in the last interval", "refused", n, "interval", RefusalInterval)
	}
}

func (r *Refusals) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Refusals) after(d time.Duration, f func()) {
	if r.After != nil {
		r.After(d, f)
		return
	}
	time.AfterFunc(d, f)
}

// StaleTimestamp is why a callback whose timestamp, at, is more than max
// from now by this machine's clock was refused. The platform's own
// callbacks (own: "Slack's own requests") refused so mean that clock is
// off, and by about that much.
func StaleTimestamp(own string, at, now time.Time, max time.Duration) error {
	return fmt.Errorf("stale timestamp, %s (more than %s): if %s are refused, check this machine's clock (NTP)", clockOff(at, now), max, own)
}

// clockOff says how far at is from now, and which way.
func clockOff(at, now time.Time) string {
	d := now.Sub(at).Round(time.Second)
	if d < 0 {
		return fmt.Sprintf("%s ahead of this machine's clock", -d)
	}
	return fmt.Sprintf("%s behind this machine's clock", d)
}

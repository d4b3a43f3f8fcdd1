package surface

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RefusalInterval is how often Refusals logs at most.
const RefusalInterval = time.Minute

// Refusals logs the callbacks an interactions endpoint refuses for their
// signature: the first at once, then at most one line a RefusalInterval,
// which counts those not logged since the last. The endpoints are public:
// logged a line each, anyone could fill the log with bad requests. A
// misconfigured secret still shows at the first click.
type Refusals struct {
	Log *slog.Logger
	Now func() time.Time // the clock; nil: time.Now

	mu       sync.Mutex
	next     time.Time // when the next line may be logged
	unlogged int       // refusals since the last line
}

// Refused logs msg with args, or counts it when a line was logged less
// than a RefusalInterval ago.
func (r *Refusals) Refused(ctx context.Context, msg string, args ...any) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	r.mu.Lock()
	if now.Before(r.next) {
		r.unlogged++
		r.mu.Unlock()
		return
	}
	unlogged := r.unlogged
	r.unlogged, r.next = 0, now.Add(RefusalInterval)
	r.mu.Unlock()
	if unlogged > 0 {
		args = append(args, "refused_unlogged", unlogged)
	}
	r.Log.Log(ctx, slog.LevelInfo, msg, args...)
}

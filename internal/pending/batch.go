package pending

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A batcher runs the scripts of concurrent calls several to a pipeline:
// under load, one round trip carries the writes of many requests. A call
// that comes while no other is under way runs at once, alone, so neither
// an idle bridge nor a caller running one after another waits for
// anything; one that comes while others are under way waits up to the
// linger for more to join it.
//
// Only writes whose caller can spare the linger go through it: creating a
// request, recording a posted message, taking an edited request out of the
// finish index. A click's resolve does not.
type batcher struct {
	rdb     redis.UniversalClient
	linger  time.Duration
	timeout time.Duration // bounds a batch's round trip; batchSendTimeout

	mu   sync.Mutex
	open *batch // the batch calls join; nil when none is open
	busy int    // runs under way: lone calls, and batches open or being sent
}

// batchMax bounds how many runs share one pipeline.
const batchMax = 64

// batchSendTimeout bounds one batch's round trip, retries included: the
// calls in it, the first one's too, may have given up waiting long before.
const batchSendTimeout = 10 * time.Second

// A batch is the script runs of one pipeline. Its first call starts its
// sender (batcher.send), which waits for the batch to fill, for the linger
// or for that call's ctx, then sends it.
type batch struct {
	runs []*scriptRun
	full chan struct{} // closed when batchMax have joined
	done chan struct{} // closed once it is sent: each run's cmd holds its outcome
}

type scriptRun struct {
	ctx    context.Context // its caller's: a run whose caller has gone is not sent
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd // its outcome, set before its batch is done
}

// run runs script on keys and args, as Script.Run does, and returns its
// command once it has run or failed, or once ctx ends, with ctx's error.
// As with Script.Run, a run whose ctx ends before it is sent is not sent,
// and one already sent may have run. Alone or not, a run is sent by a
// goroutine of its own: go-redis waits its read timeout for a reply
// whatever the context's deadline (ContextTimeoutEnabled is off), seconds
// against a Redis that does not answer, and a caller must not.
func (bt *batcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd, _ := bt.runOrLeave(ctx, script, keys, args...)
	return cmd
}

// runOrLeave is run that, when ctx ends first, also returns a channel
// closed once the run is over: it ran, failed, or was dropped unsent.
// Whoever must undo what the run may have done waits for it first.
func (bt *batcher) runOrLeave(ctx context.Context, script *redis.Script, keys []string, args ...any) (*redis.Cmd, <-chan struct{}) {
	r := &scriptRun{ctx: ctx, script: script, keys: keys, args: args}
	b, first := bt.join(r)
	if first {
		go bt.send(ctx, b)
	}
	select {
	case <-b.done:
		return r.cmd, nil
	case <-ctx.Done():
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd, b.done
	}
}

// join adds r to the open batch, or opens one, which its caller leads. A
// run that comes while nothing else is under way gets a batch of its own,
// full at once.
func (bt *batcher) join(r *scriptRun) (b *batch, first bool) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if bt.open == nil {
		bt.busy++
		b = &batch{full: make(chan struct{}), done: make(chan struct{})}
		if bt.busy == 1 {
			b.runs = []*scriptRun{r}
			close(b.full)
			return b, true
		}
		bt.open = b
		first = true
	}
	b = bt.open
	b.runs = append(b.runs, r)
	if len(b.runs) == batchMax {
		bt.open = nil
		close(b.full)
	}
	return b, first
}

// send sends b once it is full, its linger has passed, or its first call's
// ctx has ended, then wakes the calls in it.
func (bt *batcher) send(ctx context.Context, b *batch) {
	select {
	case <-b.full:
	default:
		t := time.NewTimer(bt.linger)
		select {
		case <-b.full:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	bt.seal(b)
	// Others' runs ride on it: the first call's cancellation must not fail
	// them.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bt.timeout)
	defer cancel()
	live := make([]*scriptRun, 0, len(b.runs))
	for _, r := range b.runs {
		if err := r.ctx.Err(); err != nil {
			r.cmd = redis.NewCmd(r.ctx)
			r.cmd.SetErr(err)
			continue
		}
		live = append(live, r)
	}
	bt.exec(sctx, live)
	if sctx.Err() != nil {
		// The callers' contexts may be live still: to them, Redis did
		// not answer.
		for _, r := range live {
			if err := r.cmd.Err(); errors.Is(err, context.DeadlineExceeded) {
				r.cmd.SetErr(fmt.Errorf("%w: no reply within %v (%v)", ErrUnavailable, bt.timeout, err))
			}
		}
	}
	// Released before its calls wake: one that calls again at once finds
	// nothing under way, and runs alone.
	bt.release()
	close(b.done)
}

// release says that a lone run or a batch is over.
func (bt *batcher) release() {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	bt.busy--
}

// seal stops b taking more calls.
func (bt *batcher) seal(b *batch) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if bt.open == b {
		bt.open = nil
	}
}

// exec runs every script of runs, several in one pipeline, and sets each
// one's command. Those Redis refuses for want of the script (after a
// restart or a failover) are sent again with its body: a pipeline can't
// fall back from NOSCRIPT as Script.Run does.
func (bt *batcher) exec(ctx context.Context, runs []*scriptRun) {
	switch len(runs) {
	case 0:
		return
	case 1:
		r := runs[0]
		r.cmd = r.script.Run(ctx, bt.rdb, r.keys, r.args...)
		return
	}
	pipe := bt.rdb.Pipeline()
	for _, r := range runs {
		r.cmd = r.script.EvalSha(ctx, pipe, r.keys, r.args...)
	}
	pipe.Exec(ctx) // each command's error is read by its caller
	again := bt.rdb.Pipeline()
	for _, r := range runs {
		if redis.HasErrorPrefix(r.cmd.Err(), "NOSCRIPT") {
			r.cmd = r.script.Eval(ctx, again, r.keys, r.args...)
		}
	}
	if again.Len() > 0 {
		again.Exec(ctx)
	}
}

package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/pending"
)

// redisHealth is a go-redis hook that learns from every call the replica
// makes whether Redis serves it, and logs an outage twice: once as it
// begins, once as it ends, with how long it lasted and how many calls
// went unserved. While it lasts, what fails for want of Redis (each
// 503 the API answers, a sweep, the subscription, go-redis's own dial
// lines) is logged at debug: an outage of a few seconds with a thousand
// agents retrying was thousands of warnings, one per call.
//
// An outage begins with a call that Redis could not serve (no reply, or
// LOADING and the like: pending.Unserved). It ends with a call served,
// sent after it began, so that a reply already on its way when Redis went
// does not end it at once. A refusal of writes alone (OOM) is neither.
type redisHealth struct {
	log *slog.Logger
	// since is when the outage began, in Unix nanoseconds; 0: none.
	since atomic.Int64
	// ended is when the last one ended: a call sent before it that fails
	// after it (one that waited out its read timeout) begins no outage.
	ended    atomic.Int64
	unserved atomic.Int64 // calls not served since it began
}

// down reports whether Redis is, as far as the replica knows, serving no
// calls.
func (h *redisHealth) down() bool { return h.since.Load() != 0 }

// observe learns from err, the outcome at now of a call (or, not a call,
// a dial) sent at sent.
func (h *redisHealth) observe(sent, now time.Time, err error, call bool) {
	if pending.Unserved(err) {
		var op *net.OpError
		switch {
		case call && errors.As(err, &op) && op.Op == "dial":
			// DialHook saw the dial itself. After a run of failed dials
			// go-redis stops dialing for a while and fails calls with
			// the last dial's error: that says nothing of Redis now.
		case sent.UnixNano() > h.ended.Load() && h.since.CompareAndSwap(0, now.UnixNano()):
			h.log.Warn("Redis is unavailable: the API answers 503 UNAVAILABLE and clicks are told to try again until it serves", "err", err)
		}
		if call && h.down() {
			h.unserved.Add(1)
		}
		return
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // the caller gave up: nothing learnt of Redis
	}
	if since := h.since.Load(); since != 0 && sent.UnixNano() > since && h.since.CompareAndSwap(since, 0) {
		h.ended.Store(now.UnixNano())
		h.log.Info("Redis serves again", "after", now.Sub(time.Unix(0, since)).Round(time.Millisecond),
			"unserved_calls", h.unserved.Swap(0))
	}
}

// DialHook learns of an outage from the first dial that fails: go-redis
// dials again and again (and logs each time) before the call that
// needed the connection fails.
func (h *redisHealth) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		sent := time.Now()
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.observe(sent, time.Now(), err, false)
		}
		return conn, err
	}
}

func (h *redisHealth) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sent := time.Now()
		err := next(ctx, cmd)
		h.observe(sent, time.Now(), err, true)
		return err
	}
}

func (h *redisHealth) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sent := time.Now()
		err := next(ctx, cmds)
		h.observe(sent, time.Now(), err, true)
		return err
	}
}

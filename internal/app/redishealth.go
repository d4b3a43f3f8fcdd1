package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/pending"
)

// redisHealth is a go-redis hook that learns from every call and dial
// the replica makes whether Redis serves it, and logs an outage twice:
// once as it begins, once as it ends, with how long it lasted and how
// many calls went unserved. While it lasts, what fails for want of Redis
// (each 503 the API answers, a sweep, the subscription, go-redis's own
// dial lines) is logged at debug (Store.LogLevel): an outage of a few
// seconds with a thousand agents retrying was thousands of warnings, one
// per call.
//
// An outage begins with a dial that fails or a call that Redis did not
// serve (no reply, a timeout, or LOADING and the like: pending.Unserved). It ends
// once calls have been served, with none unserved, for outageQuiet: a
// reply already on its way when Redis went, go-redis failing calls with
// its last dial's error for a second after Redis is back, or one node of
// a cluster still down, make it no shorter. A call whose caller gave up
// says nothing, nor does a refusal of writes alone (OOM).
type redisHealth struct {
	log   *slog.Logger
	state atomic.Int32 // healthUp, healthDown or healthRecovering; read on every call

	mu       sync.Mutex // held for transitions, and guards what follows
	since    time.Time  // when the outage began
	served   time.Time  // when calls were first served again, recovering
	ended    time.Time  // when the last outage ended
	unserved int64      // calls not served since the outage began
}

const (
	healthUp int32 = iota
	healthDown
	healthRecovering
)

// outageQuiet is how long calls must be served, none unserved, before an
// outage is over. /readyz (Store.Ready) says ready only then, so it is
// longer than the second go-redis waits between its background dials:
// until one succeeds, a call that needs a new connection gets the last
// dial's error, though calls on a connection the pool holds are served.
const outageQuiet = 2 * time.Second

// down reports whether an outage is under way, logged.
func (h *redisHealth) down() bool { return h.state.Load() != healthUp }

// observe learns from err, the outcome at now of a call (or, call false,
// a dial) sent at sent whose caller was still waiting for it.
func (h *redisHealth) observe(sent, now time.Time, err error, call bool) {
	// Any dial that fails is a connection Redis did not take, whatever
	// the error (a Sentinel that names no master, say).
	unserved := !call || pending.Unserved(err)
	if !unserved && h.state.Load() == healthUp {
		return // the hot path: Redis serves, as it did
	}
	var reply redis.Error
	if !unserved && err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return // not Redis's answer (the client closed): nothing learnt
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch state := h.state.Load(); {
	case unserved && state == healthUp:
		// A call sent before the last outage ended that failed since
		// (one that waited out its read timeout) is of that outage.
		if !sent.After(h.ended) {
			return
		}
		h.state.Store(healthDown)
		h.since, h.unserved = now, 0
		h.log.Warn("Redis is unavailable: the API answers 503 UNAVAILABLE and clicks are told to try again until it serves", "err", err)
	case unserved:
		h.state.Store(healthDown)
	case state == healthDown:
		if sent.After(h.since) { // not a reply already on its way
			h.state.Store(healthRecovering)
			h.served = now
		}
	case state == healthRecovering && now.Sub(h.served) >= outageQuiet:
		h.state.Store(healthUp)
		h.ended = now
		h.log.Info("Redis serves again", "after", now.Sub(h.since).Round(time.Millisecond), "unserved_calls", h.unserved)
	}
	if unserved && call {
		h.unserved++
	}
}

// DialHook learns of an outage from the first dial that fails: go-redis
// dials again and again (and logs each time), and a Cluster client tries
// node after node, before the call that needed the connection fails.
func (h *redisHealth) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		sent := time.Now()
		conn, err := next(ctx, network, addr)
		// go-redis gives each dial a context of its own, bounded by
		// DialTimeout: one past its deadline is a dial that timed out
		// (a host that drops packets), not a caller who gave up.
		if err != nil && !errors.Is(ctx.Err(), context.Canceled) {
			h.observe(sent, time.Now(), err, false)
		}
		return conn, err
	}
}

func (h *redisHealth) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sent := time.Now()
		err := next(ctx, cmd)
		if ctx.Err() == nil {
			h.observe(sent, time.Now(), err, true)
		}
		return err
	}
}

func (h *redisHealth) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sent := time.Now()
		err := next(ctx, cmds)
		if ctx.Err() == nil {
			h.observe(sent, time.Now(), err, true)
		}
		return err
	}
}

// nodeDials is redisHealth's DialHook alone, for a Cluster's node clients
// (pending.Conn.NodeHooks), which dial, for calls and subscriptions,
// without the cluster client's hooks; their calls are the cluster
// client's, observed there. (A Cluster client tries node after node
// before a call fails: without it, an outage began seconds late, after a
// hundred warnings of subscriptions and dials.)
type nodeDials struct{ h *redisHealth }

func (n nodeDials) DialHook(next redis.DialHook) redis.DialHook { return n.h.DialHook(next) }

func (nodeDials) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (nodeDials) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

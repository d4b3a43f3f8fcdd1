package pending

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

// waiters fans one process's wake-ups out to the calls waiting on a request.
type waiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

func newWaiters() *waiters { return &waiters{m: make(map[string]map[chan struct{}]struct{})} }

func (w *waiters) add(id string) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	set := w.m[id]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.m[id] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch
}

func (w *waiters) remove(id string, ch chan struct{}) {
	w.mu.Lock()
	if set := w.m[id]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(w.m, id)
		}
	}
	w.mu.Unlock()
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // already woken; it re-reads the record anyway
	}
}

func (w *waiters) wake(id string) {
	w.mu.Lock()
	for ch := range w.m[id] {
		notify(ch)
	}
	w.mu.Unlock()
}

// wakeAll makes every waiter re-read its record: after (re)subscribing,
// wake-ups published while the subscription was down are lost.
func (w *waiters) wakeAll() {
	w.mu.Lock()
	for _, set := range w.m {
		for ch := range set {
			notify(ch)
		}
	}
	w.mu.Unlock()
}

// Waiting returns the number of calls waiting in this process.
func (s *Store) Waiting() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	n := 0
	for _, set := range s.w.m {
		n += len(set)
	}
	return n
}

// Wait returns the request once it is no longer pending, or when ctx ends,
// whichever comes first; then it returns the record as last read and
// ctx's error. owner, when not empty, hides requests of other clients.
//
// A wait never depends on a wake-up alone: it re-reads the record after
// registering (an answer that landed in between is seen), after every
// (re)subscription of the process, and every Options.Recheck.
func (s *Store) Wait(ctx context.Context, id, owner string) (*Record, error) {
	ch := s.w.add(id)
	defer s.w.remove(id, ch)
	recheck := time.NewTicker(s.opt.Recheck)
	defer recheck.Stop()
	var last *Record
	for {
		rec, err := s.Get(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return last, ctx.Err()
		case err != nil:
			return nil, err
		case owner != "" && rec.Client != owner:
			return nil, fmt.Errorf("get %s: %w", id, ErrNotFound)
		case rec.Status != seam.StatusPending:
			return rec, nil
		}
		last = rec
		select {
		case <-ch:
		case <-recheck.C:
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// Run receives wake-ups published by every replica until ctx ends. Run it
// once per process, beside the HTTP server.
func (s *Store) Run(ctx context.Context) error {
	ps := s.rdb.Subscribe(ctx, s.keys.wake())
	defer ps.Close()
	// A blocked Receive honours only a deadline, not a cancelled ctx:
	// closing the subscription is what ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// go-redis reconnects and resubscribes on the next Receive. What
			// is published meanwhile is lost, so every waiter re-reads once
			// the subscription is back (the *redis.Subscription case), not
			// now: now Redis is likely unreachable, and a re-read that fails
			// would end every wait with an error.
			s.log.Warn("wake-up subscription interrupted", "err", err)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			backoff = 50 * time.Millisecond
			s.w.wakeAll()
		case *redis.Message:
			s.w.wake(m.Payload)
		}
	}
}

// IsUnavailable reports whether err means Redis could not be reached.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

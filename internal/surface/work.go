package surface

import (
	"context"
	"sync"
	"time"
)

// Budgets of a chat callback. Both platforms want an answer within 3 s;
// what follows it (resolving, editing every message) runs in the
// background.
const (
	// AckBudget bounds what runs before the platform gets its answer.
	AckBudget = 2500 * time.Millisecond
	// WorkTimeout bounds what runs after the answer.
	WorkTimeout = 30 * time.Second
	// DrainGrace is how long Drain waits for that work before cancelling it.
	DrainGrace = 10 * time.Second
)

// Work runs what a callback does after the platform has its answer, and
// lets the surface stop with that work finished or cancelled.
type Work struct {
	bg     context.Context
	stop   context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// NewWork returns a Work ready to run.
func NewWork() *Work {
	bg, stop := context.WithCancel(context.Background())
	return &Work{bg: bg, stop: stop}
}

// Go runs f in the background under WorkTimeout. Once Drain has begun, f
// still runs, under AckBudget instead, while the HTTP server drains its
// handlers; Drain does not wait for it.
func (w *Work) Go(f func(ctx context.Context)) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), AckBudget)
			defer cancel()
			f(ctx)
		}()
		return
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.wg.Done()
		ctx, cancel := context.WithTimeout(w.bg, WorkTimeout)
		defer cancel()
		f(ctx)
	}()
}

// Drain waits up to DrainGrace for the work in flight, then cancels what
// is left and waits for it to return.
func (w *Work) Drain() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(DrainGrace):
		w.stop()
		<-done
	}
	w.stop()
}

package surface

import (
	"context"
	"testing"
	"time"
)

func TestWorkDrainWaitsThenRunsLateWork(t *testing.T) {
	w := NewWork()
	release := make(chan struct{})
	finished := make(chan struct{})
	w.Go(func(ctx context.Context) {
		<-release
		close(finished)
	})
	drained := make(chan struct{})
	go func() { w.Drain(); close(drained) }()
	select {
	case <-drained:
		t.Fatal("Drain returned while work was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return once the work finished")
	}
	select {
	case <-finished:
	default:
		t.Fatal("Drain returned before the work finished")
	}
	// Work handed over after Drain still runs, under the ack budget.
	late := make(chan time.Duration, 1)
	w.Go(func(ctx context.Context) {
		dl, _ := ctx.Deadline()
		late <- time.Until(dl)
	})
	select {
	case left := <-late:
		if left > AckBudget {
			t.Fatalf("late work has %v, more than the ack budget", left)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("work handed over after Drain never ran")
	}
}

package dispatch

import (
	"sync"
	"sync/atomic"
	"testing"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestInflightStop: stop waits for the work under way and refuses the work
// that comes after it.
func TestInflightStop(t *testing.T) {
	var idle inflight
	if !closed(idle.stop()) {
		t.Fatal("stop with nothing under way is not over")
	}
	var f inflight
	if !f.add() || !f.add() {
		t.Fatal("add refused before stop")
	}
	none := f.stop()
	if f.add() {
		t.Fatal("add accepted after stop")
	}
	f.done()
	if closed(none) {
		t.Fatal("stop's wait over with one create still under way")
	}
	f.done()
	if !closed(none) {
		t.Fatal("stop's wait not over once every create is done")
	}
	if !closed(f.stop()) {
		t.Fatal("a second stop with nothing under way is not over")
	}
}

// TestInflightChurn: creates start and end while stop comes, the pattern
// under which a sync.WaitGroup's Add may meet its counter falling to zero
// under a Wait; run with -race. No create accepted runs past the end of
// stop's wait: a Drain that returned has nothing left to wait for.
func TestInflightChurn(t *testing.T) {
	var (
		f       inflight
		over    atomic.Bool // stop's wait has ended
		late    atomic.Int64
		work    sync.WaitGroup
		started = make(chan struct{})
	)
	for i := range 8 {
		work.Go(func() {
			for j := range 5000 {
				if i == 0 && j == 100 {
					close(started)
				}
				if !f.add() {
					return
				}
				if over.Load() {
					late.Add(1)
				}
				f.done()
			}
		})
	}
	<-started
	<-f.stop()
	over.Store(true)
	work.Wait()
	if n := late.Load(); n != 0 {
		t.Fatalf("%d creates ran after stop's wait was over", n)
	}
}

package dispatch

import (
	"sync"
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

// TestInflightStartsWhileWaited: work that starts while Drain waits is
// waited for too, and the wait ends only when the last of it is done.
func TestInflightStartsWhileWaited(t *testing.T) {
	var f inflight
	if !closed(f.idle()) {
		t.Fatal("idle with nothing under way is not closed")
	}
	f.add()
	idle := f.idle()
	f.add() // a create reaches its store step while Drain waits
	f.done()
	if closed(idle) {
		t.Fatal("idle closed with one create still under way")
	}
	f.done()
	if !closed(idle) {
		t.Fatal("idle not closed once every create is done")
	}
	f.add()
	if again := f.idle(); closed(again) {
		t.Fatal("a wait begun after new work started is already over")
	}
	f.done()
}

// TestInflightChurn: creates start and end while waits begin and end, the
// pattern under which a sync.WaitGroup's Add may meet its counter falling
// to zero under a Wait; run with -race.
func TestInflightChurn(t *testing.T) {
	var f inflight
	stop := make(chan struct{})
	var waits sync.WaitGroup
	waits.Go(func() {
		for !closed(stop) {
			<-f.idle()
		}
	})
	var work sync.WaitGroup
	for range 8 {
		work.Go(func() {
			for range 5000 {
				f.add()
				f.done()
			}
		})
	}
	work.Wait()
	close(stop)
	waits.Wait()
	if !closed(f.idle()) {
		t.Fatal("idle not closed with nothing under way")
	}
}

package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/bench"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// waitClientEnv, when set to the address of a bridge, makes the test binary
// the long-polling client of BenchmarkWaiterMemory (bench.WaitClient)
// instead of running tests. The client runs in a process of its own so
// that its sockets count neither against the bridge's file descriptor
// limit nor in the bridge's memory.
const waitClientEnv = "ASKBRIDGE_BENCH_WAIT_CLIENT"

func TestMain(m *testing.M) {
	if addr := os.Getenv(waitClientEnv); addr != "" {
		os.Exit(bench.WaitClient(addr, os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// waitersPerRun is how many long-polls BenchmarkWaiterMemory holds open.
const waitersPerRun = 10_000

// BenchmarkWaiterMemory measures what one long-poll (GET
// /v1/questions/{id}?wait=60s) costs the bridge while it waits: the live
// heap plus goroutine stacks with waitersPerRun of them open, less the same
// before, per waiter (bench.MeasureWaiters; `bridge bench` measures the
// same on a replica posting to a fake Slack). Run it with -benchtime 1x;
// each iteration opens waitersPerRun waiters.
//
//	BRIDGE_TEST_REDIS_URL=redis://127.0.0.1:6379/0 \
//	  go test ./internal/app -run '^$' -bench WaiterMemory -benchtime 1x -count 5
func BenchmarkWaiterMemory(b *testing.B) {
	if os.Getenv("BRIDGE_TEST_REDIS_URL") == "" {
		b.Skip("BRIDGE_TEST_REDIS_URL is unset; the benchmark needs a real Redis")
	}
	url, prefix := apptest.Redis(b)
	a := apptest.Start(b, apptest.Config(b, "", url, prefix), app.Options{})
	store := a.Store()
	client := func(addr string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), waitClientEnv+"="+addr)
		cmd.Stderr = os.Stderr
		return cmd
	}
	cancel := func(ctx context.Context, id string) error {
		_, err := store.Resolve(ctx, id, pending.Resolution{Status: seam.StatusCancelled})
		return err
	}

	var total, heap, stacks, goroutines float64
	for range b.N {
		ids := createPending(b, store, waitersPerRun)
		m, err := bench.MeasureWaiters(context.Background(), store, a.Addr(), "", ids, client, cancel)
		if err != nil {
			b.Fatal(err)
		}
		total += m.BytesPerWaiter
		heap += m.HeapPerWaiter
		stacks += m.StacksPerWaiter
		goroutines += m.Goroutines
	}
	per := func(v float64) float64 { return v / float64(b.N) }
	b.ReportMetric(per(total), "bytes/waiter")
	b.ReportMetric(per(heap), "heap-bytes/waiter")
	b.ReportMetric(per(stacks), "stack-bytes/waiter")
	b.ReportMetric(per(goroutines), "goroutines/waiter")
	b.ReportMetric(0, "ns/op")
}

// createPending creates n pending questions through the store, from a few
// goroutines at once, and returns their ids.
func createPending(b *testing.B, s *pending.Store, n int) []string {
	b.Helper()
	ids := make([]string, n)
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				rec, _, err := s.Create(context.Background(), pending.NewRequest{
					Kind:   seam.KindQuestion,
					Client: "anonymous",
					Route:  "default",
					Questions: &seam.Questions{Questions: []seam.Question{{
						ID: "q", Question: fmt.Sprintf("Proceed with step %d?", i),
						Options: []seam.Option{{Label: "Yes"}, {Label: "No"}},
					}}},
				})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				ids[i] = rec.ID
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("Create: %v", err)
	default:
	}
	return ids
}

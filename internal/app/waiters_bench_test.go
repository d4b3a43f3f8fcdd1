package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// waitClientEnv, when set to the address of a bridge, makes the test binary
// the long-polling client of BenchmarkWaiterMemory instead of running tests.
// The client runs in a process of its own so that its sockets count neither
// against the bridge's file descriptor limit nor in the bridge's memory.
const waitClientEnv = "ASKBRIDGE_BENCH_WAIT_CLIENT"

func TestMain(m *testing.M) {
	if addr := os.Getenv(waitClientEnv); addr != "" {
		os.Exit(waitClient(addr, os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// waitersPerRun is how many long-polls BenchmarkWaiterMemory holds open.
const waitersPerRun = 10_000

// BenchmarkWaiterMemory measures what one long-poll (GET
// /v1/questions/{id}?wait=60s) costs the bridge while it waits: the live
// heap plus goroutine stacks with waitersPerRun of them open, less the same
// before, per waiter. Kernel socket buffers are not counted. Run it with
// -benchtime 1x; each iteration opens waitersPerRun waiters.
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

	var total, heap, stacks, goroutines float64
	for range b.N {
		ids := createPending(b, store, waitersPerRun)
		before := memNow()

		cl := startWaitClient(b, a.Addr(), ids)
		waitUntil(b, 30*time.Second, fmt.Sprintf("%d waiters", len(ids)), func() bool { return store.Waiting() == len(ids) })
		during := memNow()

		resolveAll(b, store, ids, pending.Resolution{Status: seam.StatusCancelled})
		cl.check(b, string(seam.StatusCancelled))
		waitUntil(b, 30*time.Second, "no waiters", func() bool { return store.Waiting() == 0 })

		n := float64(len(ids))
		heap += float64(during.heap-before.heap) / n
		stacks += float64(during.stacks-before.stacks) / n
		goroutines += float64(during.goroutines-before.goroutines) / n
		total += float64(during.heap+during.stacks-before.heap-before.stacks) / n
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

// resolveAll resolves every id through the store, from a few goroutines at
// once.
func resolveAll(b *testing.B, s *pending.Store, ids []string, res pending.Resolution) {
	b.Helper()
	work := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for id := range work {
				if _, err := s.Resolve(context.Background(), id, res); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("Resolve: %v", err)
	default:
	}
}

// mem is the process's live memory after a full collection.
type mem struct {
	heap, stacks, goroutines uint64
}

func memNow() mem {
	// Twice: the first collection moves sync.Pool contents to the victim
	// cache, the second frees them.
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(s)
	return mem{heap: s[0].Value.Uint64(), stacks: s[1].Value.Uint64(), goroutines: s[2].Value.Uint64()}
}

// waitUntil polls cond until it holds, failing b after d.
func waitUntil(b *testing.B, d time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

// waitClientProc is a running long-polling client process.
type waitClientProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startWaitClient re-runs the test binary as the client of the bridge at
// addr and returns once it has sent a long-poll for every id.
func startWaitClient(b *testing.B, addr string, ids []string) *waitClientProc {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), waitClientEnv+"="+addr)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the client: %v", err)
	}
	cl := &waitClientProc{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	b.Cleanup(func() {
		cl.stdin.Close()
		cl.cmd.Process.Kill() // a no-op once it has exited
		cl.cmd.Wait()
	})
	w := bufio.NewWriter(stdin)
	for _, id := range ids {
		fmt.Fprintln(w, id)
	}
	fmt.Fprintln(w)
	if err := w.Flush(); err != nil {
		b.Fatalf("writing to the client: %v", err)
	}
	if line := cl.line(b); line != "sent "+strconv.Itoa(len(ids)) {
		b.Fatalf("the client said %q; want %q", line, "sent "+strconv.Itoa(len(ids)))
	}
	return cl
}

func (cl *waitClientProc) line(b *testing.B) string {
	b.Helper()
	if !cl.out.Scan() {
		b.Fatalf("the client ended early: %v", cl.out.Err())
	}
	return cl.out.Text()
}

// check tells the client to read every response and fails b unless each
// is a 200 with a record of the given status.
func (cl *waitClientProc) check(b *testing.B, status string) {
	b.Helper()
	if _, err := fmt.Fprintln(cl.stdin, status); err != nil {
		b.Fatalf("writing to the client: %v", err)
	}
	if line := cl.line(b); line != "ok" {
		b.Fatalf("the client said %q; want ok", line)
	}
	cl.stdin.Close()
	if err := cl.cmd.Wait(); err != nil {
		b.Fatalf("the client: %v", err)
	}
}

// waitClient is the client process. It reads ids from in, one a line, up to
// an empty line; opens one connection per id and writes a long-poll on it,
// with no goroutine per connection; then says "sent N". It then reads the
// status every response must carry, reads the responses one connection
// after another, and says "ok", or what went wrong.
func waitClient(addr string, in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	var ids []string
	for sc.Scan() && sc.Text() != "" {
		ids = append(ids, sc.Text())
	}
	conns := make([]net.Conn, 0, len(ids))
	for _, id := range ids {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_, err = fmt.Fprintf(c, "GET /v1/questions/%s?wait=60s HTTP/1.1\r\nHost: %s\r\n\r\n", id, addr)
		}
		if err != nil {
			fmt.Fprintf(out, "connection %d: %v\n", len(conns), err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Fprintf(out, "sent %d\n", len(conns))
	if !sc.Scan() {
		return 1
	}
	want := sc.Text()
	deadline := time.Now().Add(30 * time.Second)
	for i, c := range conns {
		c.SetReadDeadline(deadline)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			fmt.Fprintf(out, "response %d (%s): %v\n", i, ids[i], err)
			return 1
		}
		var rec struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		err = json.NewDecoder(res.Body).Decode(&rec)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || rec.ID != ids[i] || rec.Status != want {
			fmt.Fprintf(out, "response %d: %s, record %+v (%v); want 200 and %s %s\n", i, res.Status, rec, err, ids[i], want)
			return 1
		}
		c.Close()
	}
	fmt.Fprintln(out, "ok")
	return 0
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Memory is what one waiting call (GET /v1/questions/{id}?wait=60s) costs
// the replica it waits on: live heap plus goroutine stacks with Waiters of
// them open, less the same before, per waiter. Kernel socket buffers are
// not counted.
type Memory struct {
	Waiters         int     `json:"waiters"`
	BytesPerWaiter  float64 `json:"bytes_per_waiter"`
	HeapPerWaiter   float64 `json:"heap_bytes_per_waiter"`
	StacksPerWaiter float64 `json:"stack_bytes_per_waiter"`
	Goroutines      float64 `json:"goroutines_per_waiter"`
}

// memory measures n waiters on a replica in this process, on the run's
// Redis and fake Slack (its heap can be read only from inside): it creates
// n questions through the replica's API (each is posted to Slack), holds a
// long-poll on each from a client process, and cancels them all through
// the API, checking that every long-poll ends with its request cancelled.
func (f *flow) memory(ctx context.Context, n int, start func(addr string) *exec.Cmd, log *slog.Logger) (Memory, error) {
	if err := raiseFileLimit(uint64(n + 4096)); err != nil { // the client is a process of its own
		return Memory{}, err
	}
	cfg, err := config.Parse([]byte("listen: 127.0.0.1:0\n" + f.c.yaml))
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return Memory{}, fmt.Errorf("bench config: %w", err)
	}
	a, err := app.New(cfg, log, app.Options{})
	if err != nil {
		return Memory{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()

	posted := f.posted.Load()
	f.quiet.Store(true) // these posts are not for the people
	defer f.quiet.Store(false)
	ids, err := f.create(ctx, a.URL(), n)
	if err != nil {
		return Memory{}, err
	}
	// Let posting finish, so its garbage and goroutines are not counted.
	if err := until(ctx, 60*time.Second, fmt.Sprintf("%d messages posted", n), func() bool { return f.posted.Load()-posted >= int64(n) }); err != nil {
		return Memory{}, err
	}
	return MeasureWaiters(ctx, a.Store(), a.Addr(), f.c.token, ids, start, func(ctx context.Context, id string) error {
		return f.cancel(ctx, a.URL(), id)
	})
}

// cancel cancels id through the API at base, as an agent does.
func (f *flow) cancel(ctx context.Context, base, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/v1/questions/"+id, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+f.c.token)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cancel %s: %s: %s", id, resp.Status, raw)
	}
	return nil
}

// create creates n questions through the API at base, from a few
// goroutines at once, and returns their ids.
func (f *flow) create(ctx context.Context, base string, n int) ([]string, error) {
	ids := make([]string, n)
	err := inParallel(n, "creates", func(i int) error {
		body, _ := json.Marshal(map[string]any{"questions": []any{map[string]any{
			"id": "q", "question": fmt.Sprintf("Proceed with step %d?", i),
			"options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}},
		}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/questions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+f.c.token)
		resp, err := f.client.Do(req)
		if err != nil {
			return err
		}
		var rec struct{ ID string }
		err = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("create: %s (%v)", resp.Status, err)
		}
		ids[i] = rec.ID
		return nil
	})
	return ids, err
}

// inParallel calls do(i) for every i below n from 32 goroutines and
// reports how many of what failed, with the first error.
func inParallel(n int, what string, do func(i int) error) error {
	work := make(chan int)
	var errs errorLog
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				errs.add(do(i))
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if errs.count() > 0 {
		return fmt.Errorf("%d %s failed; the first: %s", errs.count(), what, errs.list()[0])
	}
	return nil
}

// MeasureWaiters measures what the long-polls of a client process cost the
// replica whose store is s, listening on addr, with every id in ids
// pending: it starts the client (start returns the command that runs
// WaitClient), waits until s holds a waiter per id, reads the memory,
// cancels every id with cancel and checks that each long-poll ended 200
// with its request cancelled. The replica must run in this process. token,
// when not empty, is the API token the long-polls send.
func MeasureWaiters(ctx context.Context, s *pending.Store, addr, token string, ids []string,
	start func(addr string) *exec.Cmd, cancel func(ctx context.Context, id string) error) (Memory, error) {
	n := len(ids)
	base := s.Waiting()
	before := memNow()

	cmd := orphaned(start(addr))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Memory{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Memory{}, err
	}
	if err := cmd.Start(); err != nil {
		return Memory{}, fmt.Errorf("start the waiting client: %w", err)
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill() // a no-op once it has exited
		cmd.Wait()
	}()
	out := bufio.NewScanner(stdout)
	line := func() string {
		if !out.Scan() {
			return fmt.Sprintf("(the client ended: %v)", out.Err())
		}
		return out.Text()
	}
	w := bufio.NewWriter(stdin)
	fmt.Fprintln(w, token)
	for _, id := range ids {
		fmt.Fprintln(w, id)
	}
	fmt.Fprintln(w)
	if err := w.Flush(); err != nil {
		return Memory{}, fmt.Errorf("writing to the client: %w", err)
	}
	if got, want := line(), "sent "+strconv.Itoa(n); got != want {
		return Memory{}, fmt.Errorf("the client said %q; want %q", got, want)
	}
	if err := until(ctx, 60*time.Second, fmt.Sprintf("%d waiters", n), func() bool { return s.Waiting() >= base+n }); err != nil {
		return Memory{}, err
	}
	during := memNow()

	if err := inParallel(len(ids), "cancels", func(i int) error { return cancel(ctx, ids[i]) }); err != nil {
		return Memory{}, err
	}
	if _, err := fmt.Fprintln(stdin, seam.StatusCancelled); err != nil {
		return Memory{}, fmt.Errorf("writing to the client: %w", err)
	}
	if got := line(); got != "ok" {
		return Memory{}, fmt.Errorf("the client said %q; want ok", got)
	}
	if err := until(ctx, 30*time.Second, "the waiters to end", func() bool { return s.Waiting() <= base }); err != nil {
		return Memory{}, err
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return Memory{
		Waiters:         n,
		BytesPerWaiter:  per(during.heap+during.stacks, before.heap+before.stacks),
		HeapPerWaiter:   per(during.heap, before.heap),
		StacksPerWaiter: per(during.stacks, before.stacks),
		Goroutines:      per(during.goroutines, before.goroutines),
	}, nil
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

// until polls cond until it holds, or d passes.
func until(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// WaitClient is the memory phase's client process. It reads from in, one
// a line: the API token ("" for none), then ids up to an empty line; opens
// one connection per id to the bridge at addr and writes a long-poll on it
// (GET /v1/questions/{id}?wait=60s), with no goroutine per connection;
// then says "sent N". It then reads the status every response must carry,
// reads the responses one connection after another, and says "ok", or
// what went wrong. It returns the process's exit status.
func WaitClient(addr string, in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	if !sc.Scan() {
		return 1
	}
	auth := ""
	if token := sc.Text(); token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	var ids []string
	for sc.Scan() && sc.Text() != "" {
		ids = append(ids, sc.Text())
	}
	if err := raiseFileLimit(uint64(len(ids) + 256)); err != nil {
		fmt.Fprintln(out, err)
		return 1
	}
	conns := make([]net.Conn, 0, len(ids))
	for _, id := range ids {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_, err = fmt.Fprintf(c, "GET /v1/questions/%s?wait=60s HTTP/1.1\r\nHost: %s\r\n%s\r\n", id, addr, auth)
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

package pending_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// The benchmarks here measure the store against a real Redis only: on the
// embedded one a round trip costs nothing like a network hop, so their
// numbers would say nothing. docs/performance.md gives the command and
// the results.
//
//	BRIDGE_TEST_REDIS_URL=redis://127.0.0.1:6379/0 \
//	  go test ./internal/pending -run '^$' -bench . -benchtime 2000x -count 5

// benchTimeout bounds every wait for something a benchmark set in motion.
const benchTimeout = 5 * time.Second

// benchRedis returns how to reach the real Redis and a key prefix of b's
// own, skipping b when BRIDGE_TEST_REDIS_URL is unset. The keys under the
// prefix, and only those, are deleted when b ends.
func benchRedis(b *testing.B) (*redis.Options, string) {
	b.Helper()
	url := os.Getenv("BRIDGE_TEST_REDIS_URL")
	if url == "" {
		b.Skip("BRIDGE_TEST_REDIS_URL is unset; the benchmarks need a real Redis")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		b.Fatalf("BRIDGE_TEST_REDIS_URL: %v", err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	prefix := "askbridge-bench:" + hex.EncodeToString(rnd[:]) + ":"
	b.Cleanup(func() {
		c := redis.NewClient(opts)
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
				b.Errorf("deleting %s: %v", iter.Val(), err)
			}
		}
		if err := iter.Err(); err != nil {
			b.Errorf("scanning %s*: %v", prefix, err)
		}
	})
	return opts, prefix
}

// benchClient returns a client of its own, as another process would have,
// closed when b ends.
func benchClient(b *testing.B, opts *redis.Options, hooks ...redis.Hook) *redis.Client {
	o := *opts
	c := redis.NewClient(&o)
	for _, h := range hooks {
		c.AddHook(h)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("redis does not answer: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// benchStore returns a replica's store on c. Its waiters re-read only when
// woken: the Recheck ticker never fires during a benchmark.
func benchStore(c redis.UniversalClient, prefix string) *pending.Store {
	return pending.New(c, pending.Options{Prefix: prefix, Recheck: time.Hour})
}

// benchRun runs s.Run until b ends.
func benchRun(b *testing.B, s *pending.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("Run: %v", err)
			}
		case <-time.After(benchTimeout):
			b.Errorf("Run did not return after its context ended")
		}
	})
}

func benchQuestion() pending.NewRequest {
	return pending.NewRequest{
		Kind:   seam.KindQuestion,
		Client: "bench",
		Route:  "default",
		Caller: &seam.Caller{Agent: "agent-7", Name: "deploy-bot", Session: "run-42"},
		Questions: &seam.Questions{Questions: []seam.Question{{
			ID:       "cleanup",
			Question: "Proceed with the destructive cleanup?",
			Header:   "Confirm",
			Options:  []seam.Option{{Label: "Yes"}, {Label: "No"}},
		}}},
	}
}

func benchAnswer() pending.Resolution {
	return pending.Resolution{
		Status: seam.StatusAnswered,
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "cleanup", Selected: []string{"Yes"}}}},
		By:     &pending.Responder{Surface: "api", UserID: "bench", Name: "bench"},
	}
}

// benchReads is a go-redis hook that passes the key of every HGETALL its
// client completes to a channel: a waiter has read its record, and is
// about to park, when its key arrives.
type benchReads struct{ ch chan string }

func newBenchReads() *benchReads { return &benchReads{ch: make(chan string, 64)} }

func (r *benchReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *benchReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "hgetall" {
			select {
			case r.ch <- cmd.Args()[1].(string):
			default:
			}
		}
		return err
	}
}

func (r *benchReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// await returns once an HGETALL of the record of id has completed.
func (r *benchReads) await(b *testing.B, id string) {
	b.Helper()
	deadline := time.After(benchTimeout)
	for {
		select {
		case key := <-r.ch:
			if strings.HasSuffix(key, id) {
				return
			}
		case <-deadline:
			b.Fatalf("the waiter on %s did not read its record within %v", id, benchTimeout)
		}
	}
}

// benchTrips is a go-redis hook that counts round trips: one per command
// sent alone, one per pipeline. Pub/sub bypasses hooks.
type benchTrips struct{ n atomic.Int64 }

func (c *benchTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *benchTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *benchTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// latencies collects one duration per iteration and reports percentiles.
type latencies []time.Duration

// report reports the median and the 99th percentile (nearest rank) in
// microseconds. ns/op is hidden: it counts each iteration's setup too.
func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(p int) time.Duration { return s[max(0, (len(s)*p+99)/100-1)] }
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(at(50)), "p50-µs")
	b.ReportMetric(us(at(99)), "p99-µs")
	b.ReportMetric(0, "ns/op")
}

// waited is what a Wait returned, and when.
type waited struct {
	at  time.Time
	rec *pending.Record
	err error
}

// wakeCase is one replica layout: waiter is the store the agent waits on,
// resolver the one the answer arrives through, reads the hook on the
// waiter's client.
type wakeCase struct {
	waiter, resolver *pending.Store
	reads            *benchReads
}

// once creates a request, parks a waiter on it and resolves it, returning
// the time from just before Resolve to Wait's return.
func (c wakeCase) once(b *testing.B, ctx context.Context) time.Duration {
	b.Helper()
	rec, _, err := c.resolver.Create(ctx, benchQuestion())
	if err != nil {
		b.Fatalf("Create: %v", err)
	}
	woke := make(chan waited, 1)
	go func() {
		got, err := c.waiter.Wait(ctx, rec.ID, "")
		woke <- waited{time.Now(), got, err}
	}()
	// Wait registers before it reads, so once its read is back it is
	// registered and about to park; a wake-up in between is buffered.
	c.reads.await(b, rec.ID)
	if n := c.waiter.Waiting(); n != 1 {
		b.Fatalf("Waiting() = %d; want 1", n)
	}
	start := time.Now()
	if _, err := c.resolver.Resolve(ctx, rec.ID, benchAnswer()); err != nil {
		b.Fatalf("Resolve: %v", err)
	}
	var w waited
	select {
	case w = <-woke:
	case <-time.After(benchTimeout):
		b.Fatalf("Wait(%s) did not return within %v of Resolve", rec.ID, benchTimeout)
	}
	if w.err != nil || w.rec.Status != seam.StatusAnswered {
		b.Fatalf("Wait(%s) = %+v, %v; want it answered", rec.ID, w.rec, w.err)
	}
	return w.at.Sub(start)
}

// BenchmarkWake measures how long an agent's wait takes to return once its
// request is resolved, beside the pub/sub hop it builds on.
func BenchmarkWake(b *testing.B) {
	// floor: PUBLISH on one client to a subscriber on another, timed from
	// just before PUBLISH to the subscriber's Receive returning.
	b.Run("floor", func(b *testing.B) {
		opts, prefix := benchRedis(b)
		ctx := context.Background()
		pub, sub := benchClient(b, opts), benchClient(b, opts)
		channel := prefix + "floor"
		ps := sub.Subscribe(ctx, channel)
		if msg, err := ps.Receive(ctx); err != nil {
			b.Fatalf("SUBSCRIBE: %v", err)
		} else if _, ok := msg.(*redis.Subscription); !ok {
			b.Fatalf("SUBSCRIBE answered %T; want *redis.Subscription", msg)
		}
		got := make(chan time.Time, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				msg, err := ps.Receive(ctx)
				if err != nil {
					return // closed
				}
				if _, ok := msg.(*redis.Message); ok {
					got <- time.Now()
				}
			}
		})
		defer wg.Wait()
		defer ps.Close()
		payload := strings.Repeat("x", 16) // a request id's length
		lat := make(latencies, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if err := pub.Publish(ctx, channel, payload).Err(); err != nil {
				b.Fatalf("PUBLISH: %v", err)
			}
			select {
			case at := <-got:
				lat = append(lat, at.Sub(start))
			case <-time.After(benchTimeout):
				b.Fatalf("the message did not arrive within %v", benchTimeout)
			}
		}
		b.StopTimer()
		lat.report(b)
	})

	// same-replica: the answer arrives at the replica the agent waits on;
	// Resolve wakes the waiter directly (and its Run receives the PUBLISH
	// too, as in production).
	b.Run("same-replica", func(b *testing.B) {
		opts, prefix := benchRedis(b)
		reads := newBenchReads()
		a := benchStore(benchClient(b, opts, reads), prefix)
		benchRun(b, a)
		benchWake(b, wakeCase{waiter: a, resolver: a, reads: reads})
	})

	// cross-replica: the answer arrives at another replica, on a client of
	// its own; only the PUBLISH reaches the waiter's replica.
	b.Run("cross-replica", func(b *testing.B) {
		opts, prefix := benchRedis(b)
		reads := newBenchReads()
		a := benchStore(benchClient(b, opts, reads), prefix)
		benchRun(b, a)
		other := benchStore(benchClient(b, opts), prefix)
		benchWake(b, wakeCase{waiter: a, resolver: other, reads: reads})
	})
}

func benchWake(b *testing.B, c wakeCase) {
	ctx := context.Background()
	// The first round loads the scripts, and on a cross-replica layout
	// returns only once the waiter's Run has subscribed: until then no
	// PUBLISH reaches it, and the (re)subscription's wake-all is what
	// ends the wait.
	c.once(b, ctx)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		lat = append(lat, c.once(b, ctx))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkRoundTrips counts the Redis round trips of creating a request,
// resolving it, and of the wait it ends, on a waiter in another replica.
func BenchmarkRoundTrips(b *testing.B) {
	opts, prefix := benchRedis(b)
	ctx := context.Background()
	var waiterTrips, resolverTrips benchTrips
	reads := newBenchReads()
	a := benchStore(benchClient(b, opts, &waiterTrips, reads), prefix)
	benchRun(b, a)
	other := benchStore(benchClient(b, opts, &resolverTrips), prefix)
	c := wakeCase{waiter: a, resolver: other, reads: reads}
	c.once(b, ctx) // load the scripts; Run is subscribed after it

	var create, resolve, wait, wake int64
	b.ResetTimer()
	for range b.N {
		n := resolverTrips.n.Load()
		rec, _, err := other.Create(ctx, benchQuestion())
		if err != nil {
			b.Fatalf("Create: %v", err)
		}
		create += resolverTrips.n.Load() - n

		waitStart := waiterTrips.n.Load()
		woke := make(chan waited, 1)
		go func() {
			got, err := a.Wait(ctx, rec.ID, "")
			woke <- waited{time.Now(), got, err}
		}()
		reads.await(b, rec.ID)
		parked := waiterTrips.n.Load()

		n = resolverTrips.n.Load()
		if _, err := other.Resolve(ctx, rec.ID, benchAnswer()); err != nil {
			b.Fatalf("Resolve: %v", err)
		}
		resolve += resolverTrips.n.Load() - n

		select {
		case w := <-woke:
			if w.err != nil || w.rec.Status != seam.StatusAnswered {
				b.Fatalf("Wait(%s) = %+v, %v; want it answered", rec.ID, w.rec, w.err)
			}
		case <-time.After(benchTimeout):
			b.Fatalf("Wait(%s) did not return within %v of Resolve", rec.ID, benchTimeout)
		}
		done := waiterTrips.n.Load()
		wait += done - waitStart
		wake += done - parked
	}
	b.StopTimer()
	per := func(n int64) float64 { return float64(n) / float64(b.N) }
	b.ReportMetric(per(create), "create-roundtrips/op")
	b.ReportMetric(per(resolve), "resolve-roundtrips/op")
	b.ReportMetric(per(wake), "wake-roundtrips/op") // the waiter's, once the answer is in
	b.ReportMetric(per(wait), "wait-roundtrips/op") // the waiter's, the whole call
	b.ReportMetric(0, "ns/op")
}

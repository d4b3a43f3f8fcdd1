package pending

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// hourLinger is a linger no test waits out: a batch leaves when it is
// full or its first call's context ends.
func hourLinger(o *Options) { o.Linger = time.Hour }

// holdBatches has s's batcher count one more run under way until the returned
// func is called: every call meanwhile joins a batch.
func holdBatches(s *Store) (release func()) {
	s.batch.mu.Lock()
	s.batch.busy++
	s.batch.mu.Unlock()
	return s.batch.release
}

// batched returns the batch open on s, and how many runs it holds.
func batched(s *Store) (*batch, int) {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if s.batch.open == nil {
		return nil, 0
	}
	return s.batch.open, len(s.batch.open.runs)
}

// mixedWrites makes batchMax calls at once, a third each Create, AddPost
// and Edited, while s's batcher is held (every call joins a batch), and
// checks every outcome: the requests created, the posts recorded (the
// ended requests' given back), the edited ones out of the finish index.
// during runs the calls; it may count their round trips.
func mixedWrites(t *testing.T, b *backend, s *Store, during func(calls func())) {
	t.Helper()
	ctx := context.Background()
	n := batchMax / 3
	var toPost []*Record
	for range n {
		toPost = append(toPost, mustCreate(t, s, question("alice", "")))
	}
	// Half of them end before their message is recorded: AddPost gives
	// them back, for their recorder to edit.
	for _, rec := range toPost[:n/2] {
		if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
			t.Fatal(err)
		}
	}
	toEdit := endedPosted(t, s, batchMax-2*n)
	round := NewID(question("bob", "")) // tool_call_ids of this call's own
	ready := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, batchMax)
	created := make([]*Record, n)
	for i := range n {
		wg.Go(func() {
			<-ready
			rec, ok, err := s.Create(ctx, question("bob", round+"-"+strconv.Itoa(i)))
			if err == nil && !ok {
				err = errors.New("Create did not create")
			}
			created[i], errs[i] = rec, err
		})
		wg.Go(func() {
			<-ready
			ended, err := s.AddPost(ctx, toPost[i].ID, Post{Surface: "slack", Channel: "C1", MessageID: "9." + strconv.Itoa(i)})
			if err == nil && (ended != nil) != (i < n/2) {
				err = errors.New("AddPost of " + toPost[i].ID + ": the end given back is wrong")
			}
			errs[n+i] = err
		})
	}
	for i, rec := range toEdit {
		wg.Go(func() {
			<-ready
			errs[2*n+i] = s.Edited(ctx, rec)
		})
	}
	release := holdBatches(s)
	during(func() {
		close(ready)
		wg.Wait()
	})
	release()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, rec := range created {
		if got := mustGet(t, s, rec.ID); got.ToolCallID != round+"-"+strconv.Itoa(i) {
			t.Errorf("created %s: tool_call_id %q", rec.ID, got.ToolCallID)
		}
	}
	for _, rec := range toPost {
		if got := mustGet(t, s, rec.ID); len(got.Posts) != 1 {
			t.Errorf("%s: %d posts recorded; want 1", rec.ID, len(got.Posts))
		}
	}
	for _, rec := range toEdit {
		if _, ok := b.finishScore(s, rec.ID); ok {
			t.Errorf("%s edited and still in the finish index", rec.ID)
		}
	}
}

// TestBatchShareARoundTrip: while other writes are under way, a full batch
// of creates, recordings and edits goes in one pipeline, and each call
// gets its own outcome.
func TestBatchShareARoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		b = b.fresh(t)
		cnt := &counter{}
		s := b.storeOn(b.client(cnt), hourLinger)
		// A first batch loads the scripts and dials the pipelines'
		// connections, which the count would take for round trips.
		mixedWrites(t, b, s, func(calls func()) { calls() })
		mixedWrites(t, b, s, func(calls func()) {
			if trips, names := cnt.count(calls); trips != 1 {
				t.Errorf("%d concurrent writes made %d round trips (%v); want 1 pipeline", batchMax, trips, names)
			}
		})
	})
	// After a restart or a failover Redis holds no script: every command of
	// the pipeline is refused NOSCRIPT, and is sent again with its body.
	embeddedOnly(t, func(t *testing.T, b *backend) {
		s := b.store(hourLinger)
		once := func(calls func()) { calls() }
		mixedWrites(t, b, s, once)
		if err := b.rdb.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		mixedWrites(t, b, s, once)
	})
}

// TestBatchAloneRunsAtOnce: a call while nothing else is under way, and
// calls one after another, wait for no linger.
func TestBatchAloneRunsAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		b = b.fresh(t)
		cnt := &counter{}
		s := b.storeOn(b.client(cnt), hourLinger)
		mustCreate(t, s, question("alice", "")) // loads the script
		type counted struct {
			trips int
			names []string
			err   error
		}
		done := make(chan counted, 1)
		go func() {
			var err error
			trips, names := cnt.count(func() {
				for range 3 {
					if _, _, err = s.Create(context.Background(), question("alice", "")); err != nil {
						return
					}
				}
			})
			done <- counted{trips, names, err}
		}()
		got := recv(t, "three creates one after another", done)
		if got.err != nil {
			t.Fatal(got.err)
		}
		if got.trips != 3 || got.names[0] != "evalsha" {
			t.Errorf("three creates made %d round trips (%v); want 3, each alone", got.trips, got.names)
		}
	})
}

// TestBatchLeaderCancelledFailsNoOther: a batch's first call, cancelled,
// sends the batch at once without its own write, and the others' writes
// in it still go.
func TestBatchLeaderCancelledFailsNoOther(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		b = b.fresh(t)
		s := b.store(hourLinger)
		ended := endedPosted(t, s, 2)
		defer holdBatches(s)()
		ctx, cancel := context.WithCancel(context.Background())
		led := make(chan error, 1)
		go func() { led <- s.Edited(ctx, ended[0]) }()
		poll(t, "the batch's first call", func() bool { _, n := batched(s); return n == 1 })
		other := make(chan error, 1)
		go func() { other <- s.Edited(context.Background(), ended[1]) }()
		poll(t, "the second call to join", func() bool { _, n := batched(s); return n == 2 })
		cancel()
		if err := recv(t, "the other call", other); err != nil {
			t.Fatalf("Edited beside a cancelled first call: %v", err)
		}
		if err := recv(t, "the cancelled call", led); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Edited = %v; want its context's error", err)
		}
		if _, ok := b.finishScore(s, ended[1].ID); ok {
			t.Errorf("the other call's request is still in the finish index")
		}
		// Its caller gone before the batch went, the first call's write
		// was not sent: its request stays for a finisher.
		if _, ok := b.finishScore(s, ended[0].ID); !ok {
			t.Errorf("the cancelled call's request left the finish index")
		}
	})
}

// TestBatchCancelledCreateWritesNothing: as with Script.Run, a write whose
// caller has gone before it is sent is not sent.
func TestBatchCancelledCreateWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		s := b.fresh(t).store()
		mustCreate(t, s, question("alice", ""))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		nr := question("alice", "")
		nr.ID = NewID(nr)
		if _, _, err := s.Create(ctx, nr); !errors.Is(err, context.Canceled) {
			t.Fatalf("Create = %v; want context.Canceled", err)
		}
		poll(t, "the batcher idle", func() bool {
			s.batch.mu.Lock()
			defer s.batch.mu.Unlock()
			return s.batch.busy == 0
		})
		if _, err := s.Get(context.Background(), nr.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Create failed, yet Get(%s) = %v; want ErrNotFound", nr.ID, err)
		}
	})
}

// silentRedis returns a client of a Redis that takes connections and never
// answers. go-redis waits readTimeout for each reply, whatever the
// command's context (its ContextTimeoutEnabled is off), then looks at the
// context before it tries again.
func silentRedis(t *testing.T, readTimeout time.Duration) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go io.Copy(io.Discard, c)
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: readTimeout})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBatchHonoursItsContext: a call whose caller gives up returns then,
// alone or first of a batch, even when Redis never answers: a batch's
// send goes on without it.
func TestBatchHonoursItsContext(t *testing.T) {
	// No read timeout: go-redis alone would wait for ever (with its default
	// of 3 s it returned the context's error after about 5 s, within recv's
	// deadline), so only the store's own leaving returns the call.
	c := silentRedis(t, -1)
	for _, held := range []bool{false, true} {
		s := New(c, Options{Prefix: "askbridge-test:silent:", Linger: time.Hour})
		if held {
			defer holdBatches(s)()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Edited(ctx, &Record{ID: "r1", Posts: []Post{{Surface: "slack"}}}) }()
		if err := recv(t, "Edited against a silent Redis", done); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Edited (in a batch: %v) = %v; want its context's deadline", held, err)
		}
	}
}

// TestBatchSilentRedisIsUnavailable: a batch that Redis does not answer
// within its bound fails its calls as Redis unavailable, not as their
// contexts' deadline, which is still to come: a recorder tries again
// until its own ends.
func TestBatchSilentRedisIsUnavailable(t *testing.T) {
	s := New(silentRedis(t, 100*time.Millisecond), Options{Prefix: "askbridge-test:silent:", Linger: time.Hour})
	s.batch.timeout = 50 * time.Millisecond
	for _, held := range []bool{false, true} {
		if held {
			defer holdBatches(s)()
		}
		done := make(chan error, 1)
		go func() { _, err := s.AddPost(context.Background(), "r1", Post{Surface: "slack"}); done <- err }()
		if held {
			poll(t, "a batch", func() bool { _, n := batched(s); return n == 1 })
			go s.AddPost(context.Background(), "r2", Post{Surface: "slack"}) // fills nothing; the bound sends it
			poll(t, "the second call to join", func() bool { _, n := batched(s); return n == 2 })
			s.batch.mu.Lock()
			close(s.batch.open.full)
			s.batch.open = nil
			s.batch.mu.Unlock()
		}
		if err := recv(t, "AddPost against a silent Redis", done); !IsUnavailable(err) {
			t.Fatalf("AddPost (in a batch: %v) = %v; want IsUnavailable", held, err)
		}
	}
}

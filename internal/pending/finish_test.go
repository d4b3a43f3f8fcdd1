package pending

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

func withLogger(l *slog.Logger) func(*Options) { return func(o *Options) { o.Logger = l } }

// fresh returns b as seen from subtest t with a key prefix and a clock of
// t's own, under b's prefix (whose cleanup deletes it): Unfinished reads
// whole shards, so subtests must not see each other's requests.
func (b *backend) fresh(t *testing.T) *backend {
	c := b.sub(t)
	var rnd [4]byte
	rand.Read(rnd[:])
	c.prefix = b.prefix + hex.EncodeToString(rnd[:]) + ":"
	c.clock = newFakeClock()
	return c
}

// posted creates a request of nr and records one message for it.
func posted(t *testing.T, s *Store, nr NewRequest, msg string) *Record {
	t.Helper()
	rec := mustCreate(t, s, nr)
	if _, err := s.AddPost(context.Background(), rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: msg}); err != nil {
		t.Fatalf("AddPost: %v", err)
	}
	return mustGet(t, s, rec.ID)
}

// finishScore returns id's score in its finish index, and false when it is
// not there.
func (b *backend) finishScore(s *Store, id string) (time.Time, bool) {
	b.t.Helper()
	ms, err := b.rdb.ZScore(context.Background(), s.keys.finish(shard(id)), id).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false
	}
	if err != nil {
		b.t.Fatalf("ZSCORE: %v", err)
	}
	// A claim's score is a fraction of a millisecond short of its end
	// (claimEnd): due from the millisecond above.
	return time.UnixMilli(int64(math.Ceil(ms))).UTC(), true
}

// unfinished calls Unfinished and returns the ids, sorted.
func unfinished(t *testing.T, s *Store) []string {
	t.Helper()
	recs, err := s.Unfinished(context.Background())
	if err != nil {
		t.Fatalf("Unfinished: %v", err)
	}
	out := ids(recs)
	slices.Sort(out)
	return out
}

func TestUnfinished(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()

		t.Run("a resolve nobody edits is handed over once its grace has passed", func(t *testing.T) {
			b := b.fresh(t)
			s, other := b.store(), b.store()
			rec := posted(t, s, question("alice", ""), "1.1")
			if at, ok := b.finishScore(s, rec.ID); ok {
				t.Fatalf("a pending request is in the finish index (at %v)", at)
			}
			// The script runs; the caller never edits (its reply was lost).
			if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			ended := b.clock.Now()
			if at, ok := b.finishScore(s, rec.ID); !ok || !at.Equal(ended.Add(FinishGrace)) {
				t.Fatalf("finish index score = %v, %v; want %v", at, ok, ended.Add(FinishGrace))
			}
			if got := unfinished(t, other); len(got) != 0 {
				t.Fatalf("Unfinished right after the end = %v; want nothing", got)
			}
			b.clock.Advance(FinishGrace - time.Millisecond)
			if got := unfinished(t, other); len(got) != 0 {
				t.Fatalf("Unfinished within the grace = %v; want nothing", got)
			}
			b.clock.Advance(time.Millisecond)
			recs, err := other.Unfinished(ctx)
			if err != nil || len(recs) != 1 {
				t.Fatalf("Unfinished after the grace = %v, %v; want the request", ids(recs), err)
			}
			if got := recs[0]; got.ID != rec.ID || got.Status != seam.StatusAnswered || len(got.Posts) != 1 || got.ResolvedBy.UserID != "U1" {
				t.Errorf("Unfinished returned %+v; want %s answered by U1 with its post", got, rec.ID)
			}
			// Taken over: no other sweeper gets it while the claim lasts.
			for _, st := range []*Store{s, other} {
				if got := unfinished(t, st); len(got) != 0 {
					t.Fatalf("Unfinished right after a takeover = %v; want nothing", got)
				}
			}
			b.clock.Advance(finishClaim)
			if got := unfinished(t, s); len(got) != 0 {
				t.Fatalf("Unfinished within the claim = %v; want nothing", got)
			}
			// The sweeper that took it died: another takes it over, a
			// second after the claim's end at the latest.
			b.clock.Advance(time.Second)
			if got := unfinished(t, s); !reflect.DeepEqual(got, []string{rec.ID}) {
				t.Fatalf("Unfinished after the claim = %v; want [%s]", got, rec.ID)
			}
			if err := s.Edited(ctx, recs[0]); err != nil {
				t.Fatal(err)
			}
			if at, ok := b.finishScore(s, rec.ID); ok {
				t.Fatalf("Edited left the request in the finish index (at %v)", at)
			}
			b.clock.Advance(time.Hour)
			if got := unfinished(t, s); len(got) != 0 {
				t.Errorf("Unfinished after Edited = %v; want nothing, for good", got)
			}
		})

		t.Run("edited in time, it is never handed over", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			rec := posted(t, s, question("alice", ""), "2.1")
			got, err := s.Resolve(ctx, rec.ID, Resolution{Status: seam.StatusCancelled})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Edited(ctx, got); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(FinishGrace)
			if ids := unfinished(t, s); len(ids) != 0 {
				t.Errorf("Unfinished = %v; want nothing", ids)
			}
		})

		t.Run("a request without messages is not in the index", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			rec := mustCreate(t, s, question("alice", ""))
			if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			if at, ok := b.finishScore(s, rec.ID); ok {
				t.Errorf("a request with no messages is in the finish index (at %v)", at)
			}
		})

		t.Run("losing resolves and the expiry sweep", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			nr := question("alice", "")
			nr.ExpiresIn = time.Minute
			rec := posted(t, s, nr, "3.1")
			b.clock.Advance(time.Minute)
			expired, err := s.Sweep(ctx)
			if err != nil || !reflect.DeepEqual(ids(expired), []string{rec.ID}) {
				t.Fatalf("Sweep = %v, %v; want [%s]", ids(expired), err, rec.ID)
			}
			if at, ok := b.finishScore(s, rec.ID); !ok || !at.Equal(b.clock.Now().Add(FinishGrace)) {
				t.Fatalf("an expired request's finish index score = %v, %v; want %v", at, ok, b.clock.Now().Add(FinishGrace))
			}
			// A resolve that loses changes nothing.
			b.clock.Advance(FinishGrace - time.Millisecond)
			if _, err := s.Resolve(ctx, rec.ID, answered("U1")); !errors.Is(err, ErrAlreadyResolved) {
				t.Fatalf("late Resolve = %v; want ErrAlreadyResolved", err)
			}
			b.clock.Advance(time.Millisecond)
			recs, err := s.Unfinished(ctx)
			if err != nil || len(recs) != 1 || recs[0].Status != seam.StatusExpired {
				t.Fatalf("Unfinished = %v, %v; want the expired request", recs, err)
			}
		})

		t.Run("a message recorded after the end", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			rec := posted(t, s, question("alice", ""), "4.1")
			ended, err := s.Resolve(ctx, rec.ID, answered("U1"))
			if err != nil {
				t.Fatal(err)
			}
			// The resolver's edits are done before the second message is
			// recorded: the message puts the request back.
			if err := s.Edited(ctx, ended); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(time.Second)
			if got, err := s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C2", MessageID: "4.2"}); err != nil || got == nil || got.Status != seam.StatusAnswered || len(got.Posts) != 2 {
				t.Fatalf("AddPost after the end = %+v, %v; want it answered, with both posts", got, err)
			}
			if at, ok := b.finishScore(s, rec.ID); !ok || !at.Equal(b.clock.Now().Add(FinishGrace)) {
				t.Fatalf("finish index score = %v, %v; want %v", at, ok, b.clock.Now().Add(FinishGrace))
			}
			// Edited for the record as it ended (one message) is not enough.
			if err := s.Edited(ctx, ended); err != nil {
				t.Fatal(err)
			}
			if _, ok := b.finishScore(s, rec.ID); !ok {
				t.Fatal("Edited for one of two messages took the request out of the finish index")
			}
			b.clock.Advance(FinishGrace)
			recs, err := s.Unfinished(ctx)
			if err != nil || len(recs) != 1 || len(recs[0].Posts) != 2 {
				t.Fatalf("Unfinished = %v, %v; want the request with both messages", recs, err)
			}
			if err := s.Edited(ctx, recs[0]); err != nil {
				t.Fatal(err)
			}
			if _, ok := b.finishScore(s, rec.ID); ok {
				t.Error("Edited for both messages left the request in the finish index")
			}
		})

		t.Run("a gone record is dropped", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			rec := posted(t, s, question("alice", ""), "5.1")
			if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			if err := b.rdb.Del(ctx, s.keys.record(rec.ID)).Err(); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(FinishGrace)
			if got := unfinished(t, s); len(got) != 0 {
				t.Errorf("Unfinished = %v; want nothing", got)
			}
			if _, ok := b.finishScore(s, rec.ID); ok {
				t.Error("the gone request is still in the finish index")
			}
		})

		t.Run("a failing edit is tried less and less, then given up", func(t *testing.T) {
			b := b.fresh(t)
			l := newLogs()
			s := b.store(withLogger(slog.New(l)))
			rec := posted(t, s, question("alice", ""), "6.1")
			if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			ended := b.clock.Now()
			// Each time, a millisecond early (nothing), then when it is due.
			var tries []time.Duration
			for {
				at, ok := b.finishScore(s, rec.ID)
				if !ok {
					break
				}
				b.clock.Advance(at.Sub(b.clock.Now()) - time.Millisecond)
				if got := unfinished(t, s); len(got) != 0 {
					t.Fatalf("Unfinished a millisecond before %v = %v; want nothing", at, got)
				}
				b.clock.Advance(time.Millisecond)
				if got := unfinished(t, s); len(got) == 1 {
					tries = append(tries, b.clock.Now().Sub(ended).Truncate(time.Second))
				}
				if len(tries) > 100 {
					t.Fatalf("tried %d times; want it given up", len(tries))
				}
			}
			l.next(t, "giving up editing")
			if age := b.clock.Now().Sub(ended); age < finishGiveUp {
				t.Errorf("given up %v after the end; want an hour", age)
			}
			// A claim lasts up to a second more than finishClaim
			// (claimEnd), which the waits of half the age that follow
			// stretch: the tries come up to 7 s later by the end.
			want := []time.Duration{30, 210, 390, 585, 877, 1316, 1916, 2516, 3116}
			ok := len(tries) == len(want)
			for i := 0; ok && i < len(want); i++ {
				from := want[i] * time.Second
				ok = tries[i] >= from && tries[i] <= from+7*time.Second
			}
			if !ok {
				t.Errorf("tries after the end: %v; want at %v s, or up to 7 s later", tries, want)
			}
		})

		t.Run("replicas take over each request once", func(t *testing.T) {
			b := b.fresh(t)
			replicas := []*Store{b.store(), b.store(), b.store()}
			var want []string
			for i := range 2 * shards {
				rec := posted(t, replicas[0], inShard(question("alice", ""), i%shards), "7.1")
				if _, err := replicas[0].Resolve(ctx, rec.ID, answered("U1")); err != nil {
					t.Fatal(err)
				}
				want = append(want, rec.ID)
			}
			slices.Sort(want)
			b.clock.Advance(FinishGrace)
			var (
				mu  sync.Mutex
				got []string
				wg  sync.WaitGroup
			)
			start := make(chan struct{})
			for _, s := range replicas {
				wg.Go(func() {
					<-start
					recs, err := s.Unfinished(ctx)
					if err != nil {
						t.Errorf("Unfinished: %v", err)
					}
					mu.Lock()
					got = append(got, ids(recs)...)
					mu.Unlock()
				})
			}
			close(start)
			wg.Wait()
			slices.Sort(got)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the replicas took over %d requests %v; want each of %d once", len(got), got, len(want))
			}
			if c, err := replicas[1].Count(ctx, 0); err != nil || c.Unedited != int64(len(want)) {
				t.Errorf("%d unedited, %v; want %d (taken over, not edited)", c.Unedited, err, len(want))
			}
		})
	})
}

// TestSweeperFinishesUnedited: the sweeper hands over the requests it
// expires, and the finisher later any ended request whose messages nobody
// edited.
func TestSweeperFinishesUnedited(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		expiring := question("alice", "")
		expiring.ExpiresIn = time.Minute
		exp := posted(t, s, expiring, "1.1")
		lost := posted(t, s, question("alice", ""), "1.2")
		// Ended by a replica that never edits (its reply was lost).
		if _, err := s.Resolve(ctx, lost.ID, answered("U1")); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Minute)

		expired, handed := make(chan *Record, 10), make(chan *Record, 10)
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		finished := make(chan error, 1)
		go func() {
			done <- s.RunSweeper(sctx, time.Millisecond,
				func(_ context.Context, rec *Record) { expired <- rec }) // counts, doesn't edit
		}()
		go func() {
			finished <- s.RunFinisher(sctx, time.Millisecond,
				func(ctx context.Context, rec *Record) {
					if err := s.Edited(ctx, rec); err != nil {
						t.Errorf("Edited: %v", err)
					}
					handed <- rec
				})
		}()
		t.Cleanup(func() {
			cancel()
			if err := recv(t, "RunSweeper to return", done); err != nil {
				t.Errorf("RunSweeper = %v", err)
			}
			if err := recv(t, "RunFinisher to return", finished); err != nil {
				t.Errorf("RunFinisher = %v", err)
			}
		})

		if got := recv(t, "the expired request", expired); got.ID != exp.ID || got.Status != seam.StatusExpired {
			t.Fatalf("onExpired got %s (%s); want %s expired", got.ID, got.Status, exp.ID)
		}
		if got := recv(t, "the unedited request", handed); got.ID != lost.ID || got.Status != seam.StatusAnswered || len(got.Posts) != 1 {
			t.Fatalf("onUnfinished got %+v; want %s answered, with its message", got, lost.ID)
		}
		// The expired one's handler did not edit: it comes back after the grace.
		b.clock.Advance(FinishGrace)
		if got := recv(t, "the expired request, unedited", handed); got.ID != exp.ID || got.Status != seam.StatusExpired {
			t.Fatalf("onUnfinished got %s (%s); want %s expired", got.ID, got.Status, exp.ID)
		}
		poll(t, "the finish index to empty", func() bool {
			c, err := s.Count(ctx, 0)
			return err == nil && c.Unedited == 0
		})
		select {
		case rec := <-handed:
			t.Errorf("onUnfinished got %s again after it was edited", rec.ID)
		default:
		}
	})
}

func TestRetryWait(t *testing.T) {
	for _, tc := range []struct{ age, want time.Duration }{
		{0, finishClaim},
		{FinishGrace, finishClaim},
		{time.Minute, finishClaim},
		{90 * time.Second, finishClaim},
		{8 * time.Minute, 4 * time.Minute},
		{10 * time.Minute, 5 * time.Minute},
		{time.Hour, finishRetryMax},
	} {
		if got := retryWait(tc.age); got != tc.want {
			t.Errorf("retryWait(%v) = %v; want %v", tc.age, got, tc.want)
		}
	}
}

// endedPosted creates n requests, each with a posted message, and ends
// them: n requests in the finish index, as their resolves return them.
func endedPosted(t *testing.T, s *Store, n int) []*Record {
	t.Helper()
	var ended []*Record
	for i := range n {
		rec := posted(t, s, question("alice", ""), strconv.Itoa(i+1)+".1")
		got, err := s.Resolve(context.Background(), rec.ID, answered("U1"))
		if err != nil {
			t.Fatal(err)
		}
		ended = append(ended, got)
	}
	return ended
}

// editAll calls Edited for every record at once and fails t on an error.
func editAll(t *testing.T, s *Store, recs []*Record) {
	t.Helper()
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() { errs[i] = s.Edited(context.Background(), rec) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Edited: %v", err)
	}
}

func wantNoneUnedited(t *testing.T, s *Store) {
	t.Helper()
	if c, err := s.Count(context.Background(), 0); err != nil || c.Unedited != 0 {
		t.Fatalf("%d unedited, %v; want 0", c.Unedited, err)
	}
}

// TestSweeperEditsAtOnce: the requests one sweep expires are handed over
// together, as a finisher's are, not each after the last one's edits.
func TestSweeperEditsAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		b = b.fresh(t)
		s := b.store()
		const n = 3
		for i := range n {
			nr := question("alice", "")
			nr.ExpiresIn = time.Minute
			posted(t, s, nr, strconv.Itoa(i+1)+".1")
		}
		b.clock.Advance(time.Minute)
		// Each handler holds on until all n have started: one at a time,
		// the first would hold on for good.
		started, release := make(chan string, n), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- s.RunSweeper(ctx, time.Millisecond, func(_ context.Context, rec *Record) {
				started <- rec.ID
				<-release
			})
		}()
		for range n {
			recv(t, "a handler to start beside the others", started)
		}
		close(release)
		cancel()
		if err := recv(t, "RunSweeper to return", done); err != nil {
			t.Errorf("RunSweeper = %v", err)
		}
	})
}

// TestSlowEditHoldsUpNoExpiry: the sweeper's edit of what it expired
// runs with finishEditTimeout, and a round does not wait for it. Before,
// one edit held up by a platform (Slack's 429 Retry-After, retried) held
// up the expiry of every other request on the replica: an agent waiting on
// one saw it pending past its expiry.
func TestSlowEditHoldsUpNoExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		s := b.store()
		ctx := context.Background()
		a := question("agent", "sweep-a")
		a.ExpiresIn = time.Minute
		ra, _, err := s.Create(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		bq := question("agent", "sweep-b")
		bq.ExpiresIn = 2 * time.Minute
		rb, _, err := s.Create(ctx, bq)
		if err != nil {
			t.Fatal(err)
		}
		type edit struct {
			id       string
			deadline bool
		}
		editing, release := make(chan edit, 4), make(chan struct{})
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- s.RunSweeper(sctx, 5*time.Millisecond, func(ctx context.Context, rec *Record) {
				_, bounded := ctx.Deadline()
				editing <- edit{rec.ID, bounded}
				if rec.ID == ra.ID {
					<-release // the platform holding the edit up
				}
			})
		}()
		defer func() { cancel(); <-done }()
		defer close(release)

		b.clock.Advance(time.Minute + time.Second)
		if e := recv(t, "A's edit", editing); e.id != ra.ID || !e.deadline {
			t.Fatalf("edited %+v first; want %s, with a deadline", e, ra.ID)
		}
		// A's edit is held; B falls due, and is expired and edited.
		b.clock.Advance(2 * time.Minute)
		if e := recv(t, "B's edit while A's is held", editing); e.id != rb.ID {
			t.Fatalf("edited %+v; want %s", e, rb.ID)
		}
		if got, err := s.Get(ctx, rb.ID); err != nil || got.Status != seam.StatusExpired {
			t.Errorf("B: %v, %v; want expired", got.Status, err)
		}
	})
}

// A message that a request's posting did not record (Slack posted it and
// answered an error; the post made again is the one recorded) is adopted
// when someone clicks it: recorded once, and on an ended request put in
// the finish index, so that it is edited too. One the request lists
// already is left as it was recorded.
func TestAdoptPost(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()

		t.Run("on a pending request", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			rec := posted(t, s, question("alice", ""), "1.2")
			listed := Post{Surface: "slack", Target: "other/0", Channel: "C1", MessageID: "1.2"}
			if ended, added, err := s.AdoptPost(ctx, rec.ID, listed); err != nil || added || ended != nil {
				t.Fatalf("AdoptPost of a listed message = %v, %v, %v; want nothing done", ended, added, err)
			}
			if got := mustGet(t, s, rec.ID).Posts; len(got) != 1 || got[0].Target != "" {
				t.Fatalf("posts %+v; want the one recorded, as it was", got)
			}
			copyOf := Post{Surface: "slack", Target: "default/0", Channel: "D1", MessageID: "1.1"}
			if ended, added, err := s.AdoptPost(ctx, rec.ID, copyOf); err != nil || !added || ended != nil {
				t.Fatalf("AdoptPost of a copy = %v, %v, %v; want it added, the request pending", ended, added, err)
			}
			if _, ok := mustGet(t, s, rec.ID).PostOf("slack", "D1", "1.1"); !ok {
				t.Fatal("the adopted copy is not listed")
			}
			if at, ok := b.finishScore(s, rec.ID); ok {
				t.Fatalf("a pending request is in the finish index (at %v)", at)
			}
		})

		t.Run("on an ended request that was edited", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			rec := posted(t, s, question("alice", ""), "2.2")
			got, err := s.Resolve(ctx, rec.ID, answered("U1"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Edited(ctx, got); err != nil {
				t.Fatal(err)
			}
			ended, added, err := s.AdoptPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: "2.1"})
			if err != nil || !added || ended == nil || ended.Status != seam.StatusAnswered || len(ended.Posts) != 2 {
				t.Fatalf("AdoptPost = %+v, %v, %v; want the ended request with both messages", ended, added, err)
			}
			if at, ok := b.finishScore(s, rec.ID); !ok || !at.Equal(b.clock.Now().Add(FinishGrace)) {
				t.Fatalf("finish index score = %v, %v; want the grace from now", at, ok)
			}
			// Adopted again (the click delivered twice): already listed.
			if ended, added, err := s.AdoptPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: "2.1"}); err != nil || added || ended != nil {
				t.Fatalf("AdoptPost again = %v, %v, %v; want nothing done", ended, added, err)
			}
		})

		t.Run("on a request that is gone", func(t *testing.T) {
			b := b.fresh(t)
			s := b.store()
			if _, _, err := s.AdoptPost(ctx, "nosuchrequest", Post{Surface: "slack", Channel: "C1", MessageID: "3.1"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("AdoptPost = %v; want ErrNotFound", err)
			}
		})
	})
}

// TestUnfinishedSentTwice: a finisher's claims whose reply is lost are sent
// again by go-redis, after the scripts moved the claimed requests past
// now. The resend still hands this finisher what the first run took:
// taken for claimed by another, they waited out the claim, 3 minutes, with
// their messages' controls live. Another finisher's claim in the same
// millisecond still takes nothing.
func TestUnfinishedSentTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		twice := new(sendPipelineTwice)
		s, other := b.storeOn(b.client(twice)), b.store()
		rec := posted(t, s, question("alice", ""), "7.1")
		if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(FinishGrace)
		twice.arm()
		recs, err := s.Unfinished(ctx)
		if !twice.sent() {
			t.Fatal("the claims were not sent twice")
		}
		if err != nil || len(recs) != 1 || recs[0].ID != rec.ID {
			t.Fatalf("Unfinished sent twice = %v, %v; want [%s], as sent once", ids(recs), err, rec.ID)
		}
		if got := unfinished(t, other); len(got) != 0 {
			t.Errorf("another finisher in the same millisecond took %v; want nothing", got)
		}
	})
}

// sendPipelineTwice is a go-redis hook that, once armed, sends the next
// pipeline twice and returns the second replies: what go-redis does when
// the first replies are lost after Redis ran them.
type sendPipelineTwice struct {
	armed, done atomic.Bool
}

func (h *sendPipelineTwice) arm()       { h.done.Store(false); h.armed.Store(true) }
func (h *sendPipelineTwice) sent() bool { return h.done.Load() }

func (h *sendPipelineTwice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sendPipelineTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *sendPipelineTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.CompareAndSwap(true, false) {
			if err := next(ctx, cmds); err != nil {
				return err
			}
			h.done.Store(true)
		}
		return next(ctx, cmds)
	}
}

// TestClaimEndIsAFractionInTheSecondAfterTheEnd: every claim's score is
// a float64 in the second after the end of the claim and never a whole
// millisecond, so that no integer score (a resolve's or a retry's, which
// any request in the index may have) is taken for this call's claim; and
// claims made in the same millisecond tell one another apart by it: the
// first 2^18 random numbers give as many scores (a millisecond's 4,095
// let two of three replicas claiming together share one in about 1 of
// 1,400 rounds, and be handed each other's requests). It holds once ms
// since 1970 need more than the 41 bits they need until 2039, when a
// float64 has 1/2048 of a ms left below the point, not 1/4096.
func TestClaimEndIsAFractionInTheSecondAfterTheEnd(t *testing.T) {
	for _, now := range []time.Time{
		time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC),
		time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2150, 6, 1, 0, 0, 0, 0, time.UTC),
	} {
		end := float64(now.Add(finishClaim).UnixMilli())
		const n = 1 << 18
		seen := make(map[float64]bool, n)
		for r := range uint32(n) {
			v, err := strconv.ParseFloat(claimEndWith(now, r), 64)
			if err != nil {
				t.Fatal(err)
			}
			if !(v > end && v < end+1000) || v == math.Trunc(v) {
				t.Fatalf("%s: r %d gives %v, not a fraction strictly between %v and a second after", now.Format("2006"), r, v, end)
			}
			seen[v] = true
		}
		if len(seen) != n {
			t.Errorf("%s: %d random numbers give %d scores; want as many", now.Format("2006"), n, len(seen))
		}
	}
}

package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// gated is a surface whose posts each wait for the test: a post sends a
// *gate on entered, then fails with what the test sends on its reply, or
// succeeds on nil.
type gated struct {
	entered chan *gate
	mu      sync.Mutex
	n       int
}

type gate struct {
	id       string
	deadline time.Duration // left on the post's context when it began; 0: none
	reply    chan error
}

func (g *gated) Post(ctx context.Context, rec *pending.Record, t dispatch.Target) ([]pending.Post, error) {
	g.mu.Lock()
	g.n++
	p := pending.Post{Surface: "slack", Channel: t.Config.Slack.Channel, MessageID: fmt.Sprintf("m%d", g.n)}
	g.mu.Unlock()
	gt := &gate{id: rec.ID, reply: make(chan error)}
	if d, ok := ctx.Deadline(); ok {
		gt.deadline = time.Until(d)
	}
	g.entered <- gt
	err := <-gt.reply
	if errors.Is(err, errRunsOut) { // the platform holds it until its context ends
		<-ctx.Done()
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return []pending.Post{p}, nil
}

// errRunsOut, sent on a gate's reply, has its post wait for its context
// to end, as a call the platform never answers does.
var errRunsOut = errors.New("held until the post's context ends")

func (g *gated) Finish(context.Context, *pending.Record, pending.Post) error { return nil }

// gatedReplicas builds n dispatchers on one Redis, one fake clock and one
// gated surface, and the first one's store.
func gatedReplicas(t *testing.T, n int) (*pending.Store, *gated, *clock, []*dispatch.Dispatcher) {
	t.Helper()
	url, prefix := apptest.Redis(t)
	clk := &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	g := &gated{entered: make(chan *gate)}
	cfg, err := config.Parse([]byte("slack: {bot_token: xoxb-test, signing_secret: s3cret}\nroutes: [{name: default, targets: [{slack: {channel: C1}}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var first *pending.Store
	var ds []*dispatch.Dispatcher
	for range n {
		rdb, err := pending.Dial(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		store := pending.New(rdb, pending.Options{Prefix: prefix, Now: clk.Now})
		if first == nil {
			first = store
		}
		d, err := dispatch.New(store, cfg, map[string]dispatch.Surface{"slack": g}, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return first, g, clk, ds
}

func enter(t *testing.T, g *gated, what string) *gate {
	t.Helper()
	select {
	case gt := <-g.entered:
		return gt
	case <-time.After(10 * time.Second):
		t.Fatalf("no post: %s", what)
		return nil
	}
}

type created struct {
	rec *pending.Record
	err error
}

// An answer given through the web inbox or the API (both list a request
// while it is being posted) while its only post is failing reaches the
// agent: before, the create discarded nothing (the request had ended),
// and told the agent 503 NO_PROVIDER anyway, so the harness fell through
// to its next answerer and the answer was lost.
func TestAnswerWhileThePostFailsReachesTheAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		post error // how the post fails
	}{
		{"the platform refuses", errors.New("chat.postMessage: 503, given up")},
		// The post's context ends with its lease: the discard and the
		// read after it need their own.
		{"the post runs out of its lease", errRunsOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, g, _, ds := gatedReplicas(t, 1)
			d := ds[0]
			d.SetPostFor(300 * time.Millisecond)
			ctx := context.Background()
			done := make(chan created, 1)
			go func() {
				rec, _, err := d.Create(ctx, question("default", "tc-answer"))
				done <- created{rec, err}
			}()
			gt := enter(t, g, "the create's")
			rec, err := store.Get(ctx, gt.id)
			if err != nil {
				t.Fatal(err)
			}
			answer := &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{"Yes"}}}}
			if _, err := d.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusAnswered, Answer: answer,
				By: &pending.Responder{Surface: "web", Name: "ada"}, From: rec, Hash: rec.Hash}); err != nil {
				t.Fatalf("answer: %v", err)
			}
			gt.reply <- tc.post
			got := <-done
			if got.err != nil || got.rec == nil || got.rec.Status != seam.StatusAnswered || got.rec.Answer == nil {
				t.Fatalf("the create returned %+v, %v; want the answered request", got.rec, got.err)
			}
		})
	}
}

// A create whose post outlives its posting lease, then fails, leaves the
// request to the replica that claimed it meanwhile and posts it: before,
// it discarded the request, and the other replica's message was posted
// for a request that no longer existed, never recorded or edited, its
// buttons live. A reposter's post is bounded by its lease too.
func TestAPostThatOutlivesItsLeaseLeavesTheRequestToItsClaimer(t *testing.T) {
	store, g, clk, ds := gatedReplicas(t, 2)
	ctx := context.Background()
	done := make(chan created, 1)
	go func() {
		rec, _, err := ds[0].Create(ctx, question("default", "tc-lease"))
		done <- created{rec, err}
	}()
	creator := enter(t, g, "the create's")
	clk.Add(pending.PostingLease + time.Second)
	reposted := make(chan error, 1)
	go func() { reposted <- ds[1].Repost(ctx) }()
	reposter := enter(t, g, "the reposter's")
	if reposter.id != creator.id {
		t.Fatalf("reposted %s; want %s", reposter.id, creator.id)
	}
	if reposter.deadline <= 0 || reposter.deadline > pending.PostingLease {
		t.Errorf("the reposter's post has %v left; want it bounded by its lease, %v", reposter.deadline, pending.PostingLease)
	}
	creator.reply <- context.DeadlineExceeded // the create's post runs out at its lease
	got := <-done
	if got.err != nil || got.rec == nil || got.rec.Status != seam.StatusPending {
		t.Fatalf("the create returned %+v, %v; want the pending request, which another replica posts", got.rec, got.err)
	}
	reposter.reply <- nil
	if err := <-reposted; err != nil {
		t.Fatal(err)
	}
	rec, err := store.Get(ctx, creator.id)
	if err != nil || len(rec.Posts) != 1 {
		t.Fatalf("the request after: %+v, %v; want it with the reposter's message recorded", rec, err)
	}
}

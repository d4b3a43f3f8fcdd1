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

// chat is a surface that records what it is asked to do. Channels named in
// fail refuse every post.
type chat struct {
	mu       sync.Mutex
	fail     map[string]bool
	posts    []pending.Post
	finished map[string]seam.Status // message id -> status shown
	// during, when set, runs while a post is in flight.
	during func()
}

func newChat(fail ...string) *chat {
	c := &chat{fail: map[string]bool{}, finished: map[string]seam.Status{}}
	for _, f := range fail {
		c.fail[f] = true
	}
	return c
}

func (c *chat) Post(ctx context.Context, rec *pending.Record, t dispatch.Target) ([]pending.Post, error) {
	ch := t.Config.Slack.Channel
	if c.fail[ch] {
		return nil, fmt.Errorf("channel %s: channel_not_found", ch)
	}
	if c.during != nil {
		c.during()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := pending.Post{Surface: "slack", Channel: ch, MessageID: fmt.Sprintf("%s-%d", ch, len(c.posts))}
	c.posts = append(c.posts, p)
	return []pending.Post{p}, nil
}

func (c *chat) Finish(ctx context.Context, rec *pending.Record, p pending.Post) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished[p.MessageID] = rec.Status
	return nil
}

func (c *chat) channels() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.posts {
		out = append(out, p.Channel)
	}
	return out
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

const routesYAML = `
slack: {bot_token: xoxb-test, signing_secret: s3cret}
routes:
  - name: default
    targets:
      - slack: {channel: C1}
      - slack: {channel: C2}
  - name: fallback
    mode: first
    targets:
      - slack: {channel: DOWN}
      - slack: {channel: C3}
      - slack: {channel: C4}
  - name: broken
    targets:
      - slack: {channel: DOWN}
  - name: api-only
`

type env struct {
	store *pending.Store
	chat  *chat
	clk   *clock
	url   string
	pfx   string
}

func setup(t *testing.T, c *chat) (*env, *dispatch.Dispatcher) {
	t.Helper()
	url, prefix := apptest.Redis(t)
	e := &env{chat: c, clk: &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}, url: url, pfx: prefix}
	return e, e.replica(t)
}

// replica builds another dispatcher on the same Redis, chat and clock.
func (e *env) replica(t *testing.T) *dispatch.Dispatcher {
	t.Helper()
	cfg, err := config.Parse([]byte(routesYAML))
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := pending.Dial(e.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	store := pending.New(rdb, pending.Options{Prefix: e.pfx, Now: e.clk.Now})
	if e.store == nil {
		e.store = store
	}
	d, err := dispatch.New(store, cfg, map[string]dispatch.Surface{"slack": e.chat}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func question(route, toolCallID string) pending.NewRequest {
	return pending.NewRequest{
		Kind: seam.KindQuestion, Client: "agent", Route: route, ToolCallID: toolCallID,
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "q", Question: "Deploy?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}},
	}
}

func TestModeAllPostsEverywhereAndFinishesEverywhere(t *testing.T) {
	e, d := setup(t, newChat())
	ctx := context.Background()
	rec, created, err := d.Create(ctx, question("", ""))
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	got, _ := e.store.Get(ctx, rec.ID)
	if len(got.Posts) != 2 || got.Posts[0].Target == "" {
		t.Fatalf("posts recorded: %+v", got.Posts)
	}
	ans := seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{"No"}}}}
	if _, err := d.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusAnswered, Answer: &ans}); err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Posts {
		if e.chat.finished[p.MessageID] != seam.StatusAnswered {
			t.Errorf("message %s not finished: %v", p.MessageID, e.chat.finished)
		}
	}
	if _, err := d.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); !errors.Is(err, pending.ErrAlreadyResolved) {
		t.Fatalf("second resolve: %v", err)
	}
}

func TestModeFirstFallsThrough(t *testing.T) {
	e, d := setup(t, newChat("DOWN"))
	if _, _, err := d.Create(context.Background(), question("fallback", "")); err != nil {
		t.Fatal(err)
	}
	if got := e.chat.channels(); len(got) != 1 || got[0] != "C3" {
		t.Fatalf("posted to %v, want [C3]", got)
	}
}

func TestNoTargetTookItIsNoProviderAndLeavesNothing(t *testing.T) {
	e, d := setup(t, newChat("DOWN"))
	ctx := context.Background()
	for _, route := range []string{"broken", "nope"} {
		_, _, err := d.Create(ctx, question(route, "call-1"))
		if seam.CodeOf(err) != seam.CodeNoProvider {
			t.Fatalf("route %s: %v", route, err)
		}
	}
	if n, _ := e.store.CountPending(ctx); n != 0 {
		t.Fatalf("%d pending requests left behind", n)
	}
	// The route works again: the same tool call is posted afresh.
	delete(e.chat.fail, "DOWN")
	if _, created, err := d.Create(ctx, question("broken", "call-1")); err != nil || !created {
		t.Fatalf("retry: created %v, %v", created, err)
	}
}

func TestAPIOnlyRouteNeedsNoSurface(t *testing.T) {
	e, d := setup(t, newChat())
	if _, created, err := d.Create(context.Background(), question("api-only", "")); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if len(e.chat.channels()) != 0 {
		t.Fatalf("posted: %v", e.chat.channels())
	}
}

func TestRequestEndingWhilePostingIsFinishedAtOnce(t *testing.T) {
	c := newChat()
	e, d := setup(t, c)
	ctx := context.Background()
	var (
		id   string
		once sync.Once
	)
	// The agent cancels while the post is in flight.
	c.during = func() {
		once.Do(func() {
			recs, err := e.store.List(ctx, seam.KindQuestion, 1)
			if err != nil || len(recs) != 1 {
				t.Errorf("the request being posted: %v %v", recs, err)
				return
			}
			id = recs[0].ID
			if _, err := e.store.Resolve(ctx, id, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
				t.Errorf("cancel while posting: %v", err)
			}
		})
	}
	delete(c.fail, "DOWN")
	if _, _, err := d.Create(ctx, question("fallback", "")); err != nil {
		t.Fatal(err)
	}
	rec, _ := e.store.Get(ctx, id)
	if len(rec.Posts) != 1 || c.finished[rec.Posts[0].MessageID] != seam.StatusCancelled {
		t.Fatalf("the message posted for a request cancelled meanwhile was not finished: posts %+v finished %v", rec.Posts, c.finished)
	}
}

// TestCrashBetweenStoreAndPost: a replica stored a request and died before
// posting it. Once its posting lease has passed, exactly one of several
// replicas posts it; an agent re-attaching meanwhile doesn't post it twice.
func TestCrashBetweenStoreAndPost(t *testing.T) {
	e, d1 := setup(t, newChat())
	d2 := e.replica(t)
	ctx := context.Background()
	// The dead replica got as far as the store.
	stored := question("default", "call-crash")
	stored.ExpiresIn = config.DefaultExpiresIn // as the dispatcher fills it in
	rec, _, err := e.store.Create(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	// Within the lease nobody posts: the creator may still be posting.
	if _, created, err := d1.Create(ctx, question("", "call-crash")); err != nil || created {
		t.Fatalf("re-attach: created %v, %v", created, err)
	}
	d2.Repost(ctx)
	if n := len(e.chat.channels()); n != 0 {
		t.Fatalf("posted %d messages within the lease", n)
	}
	e.clk.Add(pending.PostingLease + time.Second)
	var wg sync.WaitGroup
	for _, d := range []*dispatch.Dispatcher{d1, d2, d1, d2} {
		wg.Go(func() { d.Repost(ctx) })
	}
	wg.Go(func() { d1.Create(ctx, question("", "call-crash")) })
	wg.Wait()
	got, _ := e.store.Get(ctx, rec.ID)
	if n := len(e.chat.channels()); n != 2 || len(got.Posts) != 2 {
		t.Fatalf("posted %d messages, recorded %d; want the route's 2, once", n, len(got.Posts))
	}
}

package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// chat is a surface that records what it is asked to do. Channels named in
// fail refuse every post; channels in refuseEdits, every edit.
type chat struct {
	mu          sync.Mutex
	fail        map[string]bool
	refuseEdits map[string]bool
	edits       int // tries, refused ones included
	posts       []pending.Post
	finished    map[string]seam.Status // message id -> status shown
	// during, when set, runs while a post is in flight.
	during func()
}

func newChat(fail ...string) *chat {
	c := &chat{fail: map[string]bool{}, refuseEdits: map[string]bool{}, finished: map[string]seam.Status{}}
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
	if err := ctx.Err(); err != nil {
		return nil, err // as an HTTP call whose context ended fails
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
	c.edits++
	if c.refuseEdits[p.Channel] {
		return fmt.Errorf("channel %s: message_not_found", p.Channel)
	}
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
	return e.replicaWith(t, nil)
}

// replicaWith is replica counting into m, its Redis client passed through
// hooks.
func (e *env) replicaWith(t *testing.T, m *dispatch.Metrics, hooks ...redis.Hook) *dispatch.Dispatcher {
	t.Helper()
	return e.replicaOn(t, e.chat, m, hooks...)
}

// replicaOn is replicaWith posting through s.
func (e *env) replicaOn(t *testing.T, s dispatch.Surface, m *dispatch.Metrics, hooks ...redis.Hook) *dispatch.Dispatcher {
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
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	store := pending.New(rdb, pending.Options{Prefix: e.pfx, Now: e.clk.Now})
	if e.store == nil {
		e.store = store
	}
	d, err := dispatch.New(store, cfg, map[string]dispatch.Surface{"slack": s}, m, slog.New(slog.DiscardHandler))
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
	samePosts(t, rec.Posts, got.Posts)
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

// samePosts fails unless the posts Create returned are those the store
// recorded, in the same order: a waiting create answers with them unread.
func samePosts(t *testing.T, returned, stored []pending.Post) {
	t.Helper()
	if !reflect.DeepEqual(returned, stored) {
		t.Errorf("Create returned posts %+v; the store has %+v", returned, stored)
	}
}

func TestModeFirstFallsThrough(t *testing.T) {
	e, d := setup(t, newChat("DOWN"))
	ctx := context.Background()
	rec, _, err := d.Create(ctx, question("fallback", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.chat.channels(); len(got) != 1 || got[0] != "C3" {
		t.Fatalf("posted to %v, want [C3]", got)
	}
	got, _ := e.store.Get(ctx, rec.ID)
	samePosts(t, rec.Posts, got.Posts)
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
	if c, err := e.store.Count(ctx, 0); err != nil || c.Pending != 0 {
		t.Fatalf("%d pending requests left behind (%v)", c.Pending, err)
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
	if n := e.unedited(t); n != 0 {
		t.Errorf("%d requests left for a sweeper after the late message was edited; want 0", n)
	}
}

// TestCrashBetweenStoreAndPost: a replica stored a request and died before
// posting it. Once its posting lease has passed, exactly one of several
// replicas posts it; an agent re-attaching meanwhile doesn't post it twice.
// An agent whose call is cut off mid-create (a client timeout, a dropped
// connection) does not cut the create short: the messages may be in the
// channel already, and left unrecorded they would keep live buttons while
// the agent's retry posted them again. The retry finds the request posted.
func TestCreateOutlivesItsCaller(t *testing.T) {
	c := newChat()
	e, d := setup(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	c.during = cancel // the caller goes while the posts are in flight
	rec, created, err := d.Create(ctx, question("default", "call-cut"))
	if err != nil || !created {
		t.Fatalf("Create with its caller gone mid-post: created %v, %v", created, err)
	}
	got, err := e.store.Get(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Posts) != 2 || len(c.channels()) != 2 {
		t.Errorf("%d messages recorded of %d posted; want both of 2", len(got.Posts), len(c.channels()))
	}
	c.during = nil
	again, created, err := d.Create(context.Background(), question("default", "call-cut"))
	if err != nil || created || again.ID != rec.ID || len(c.channels()) != 2 {
		t.Errorf("the retry: %v, created %v, id %s (want %s), %d posts (want 2)", err, created, again.ID, rec.ID, len(c.channels()))
	}
}

// TestDrainWaitsForCreates: a replica that stops waits, before it closes
// Redis, for a create whose caller is gone to post and record its message:
// when Drain returns, the messages are recorded.
func TestDrainWaitsForCreates(t *testing.T) {
	c := newChat()
	e, d := setup(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	posting, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.during = func() {
		once.Do(func() { close(posting) })
		cancel() // the caller goes
		<-release
	}
	created := make(chan struct{})
	go func() {
		defer close(created)
		if _, _, err := d.Create(ctx, question("default", "call-drain")); err != nil {
			t.Errorf("Create: %v", err)
		}
	}()
	<-posting
	go close(release) // the posts go through while Drain waits
	d.Drain(context.Background())
	id := pending.NewID(question("default", "call-drain"))
	if got, err := e.store.Get(context.Background(), id); err != nil || len(got.Posts) != 2 {
		t.Errorf("when Drain returned: %v, %v; want both messages recorded", got, err)
	}
	<-created
}

// TestDrainWaitsForAStoreStep: a create whose store step is under way when
// Drain begins is waited for too, through its posts and their recording:
// Redis closes after Drain returns.
func TestDrainWaitsForAStoreStep(t *testing.T) {
	c := newChat()
	e, _ := setup(t, c)
	hold := &holdFirst{stored: make(chan struct{}), release: make(chan struct{})}
	d := e.replicaWith(t, nil, hold)
	created := make(chan error, 1)
	go func() {
		_, _, err := d.Create(context.Background(), question("default", "call-store-step"))
		created <- err
	}()
	within(t, hold.stored, "the create's store step") // stored in Redis, its reply not yet back
	begun, cancel := context.WithCancel(context.Background())
	cancel()
	d.Drain(begun) // begins the drain, without waiting
	// Bounded: a create not refused would wait behind the held one.
	probe, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := d.Create(probe, question("default", "call-probe")); !errors.Is(err, dispatch.ErrStopping) {
		close(hold.release)
		t.Fatalf("a create after Drain began: %v; want ErrStopping", err)
	}
	drained := make(chan struct{})
	go func() { d.Drain(context.Background()); close(drained) }()
	close(hold.release)
	within(t, drained, "Drain")
	id := pending.NewID(question("default", "call-store-step"))
	if got, err := e.store.Get(context.Background(), id); err != nil || len(got.Posts) != 2 {
		t.Errorf("when Drain returned: %v, %v; want both messages recorded", got, err)
	}
	select {
	case err := <-created:
		if err != nil {
			t.Errorf("Create: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held create did not return within 10 s")
	}
}

// within waits for c to be closed, for at most 10 s.
func within(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

// TestCreateAfterDrain: once Drain has begun, a create is refused with
// ErrStopping, before anything is stored or posted.
func TestCreateAfterDrain(t *testing.T) {
	c := newChat()
	e, d := setup(t, c)
	d.Drain(context.Background())
	nr := question("default", "call-after-drain")
	if _, _, err := d.Create(context.Background(), nr); !errors.Is(err, dispatch.ErrStopping) {
		t.Fatalf("Create after Drain: %v; want ErrStopping", err)
	}
	if _, err := e.store.Get(context.Background(), pending.NewID(nr)); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("the refused request was stored: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.posts) != 0 {
		t.Errorf("the refused request was posted: %v", c.posts)
	}
}

// holdFirst is a go-redis hook that holds the first script's reply (a
// create's store step: the script has run in Redis) until release.
type holdFirst struct {
	once    sync.Once
	stored  chan struct{}
	release chan struct{}
}

func (h *holdFirst) held(cmd redis.Cmder) {
	if name := cmd.Name(); name == "evalsha" || name == "eval" {
		h.once.Do(func() { close(h.stored); <-h.release })
	}
}

func (h *holdFirst) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.held(cmd)
		return err
	}
}

func (h *holdFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.held(cmds[0])
		return err
	}
}

func TestCrashBetweenStoreAndPost(t *testing.T) {
	e, d1 := setup(t, newChat())
	d2 := e.replica(t)
	ctx := context.Background()
	// The dead replica got as far as the store.
	stored := question("default", "call-crash")
	stored.DefaultExpiresIn = config.DefaultExpiresIn // as the dispatcher fills it in
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

// unedited returns how many ended requests the store holds for a sweeper.
func (e *env) unedited(t *testing.T) int64 {
	t.Helper()
	c, err := e.store.Count(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c.Unedited
}

// TestFailedEditIsLeftToTheFinisher: when an edit fails, the request stays
// in the store for a finisher, which edits every message again; once all
// are edited it leaves. The end is counted once, by whoever ended it.
func TestFailedEditIsLeftToTheFinisher(t *testing.T) {
	c := newChat()
	e, _ := setup(t, c)
	reg := prometheus.NewRegistry()
	d := e.replicaWith(t, dispatch.NewMetrics(reg))
	ctx := context.Background()
	rec, _, err := d.Create(ctx, question("", ""))
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.refuseEdits["C2"] = true
	c.mu.Unlock()
	if _, err := d.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if n := e.unedited(t); n != 1 {
		t.Fatalf("%d requests left for a sweeper after a failed edit; want 1", n)
	}
	e.clk.Add(pending.FinishGrace)
	recs, err := e.store.Unfinished(ctx)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Unfinished = %v, %v; want the request", recs, err)
	}
	d.Finished(ctx, recs[0]) // still failing: it stays
	if n := e.unedited(t); n != 1 {
		t.Fatalf("%d requests left for a sweeper after a second failed edit; want 1", n)
	}
	c.mu.Lock()
	delete(c.refuseEdits, "C2")
	c.mu.Unlock()
	d.Finished(ctx, recs[0])
	if n := e.unedited(t); n != 0 {
		t.Fatalf("%d requests left for a sweeper once every edit succeeded; want 0", n)
	}
	got, _ := e.store.Get(ctx, rec.ID)
	for _, p := range got.Posts {
		if c.finished[p.MessageID] != seam.StatusCancelled {
			t.Errorf("message %s not finished: %v", p.MessageID, c.finished)
		}
	}
	if c.edits != 6 {
		t.Errorf("%d edits; want each of the 2 messages edited on each of 3 tries", c.edits)
	}
	if n := counterSum(t, reg, "askbridge_requests_resolved_total"); n != 1 {
		t.Errorf("askbridge_requests_resolved_total = %v after two retries; want 1", n)
	}
}

// TestMessageOnASurfaceThisReplicaLacks: replicas whose configs differ
// (one runs Discord, the other not yet) share requests. A request that
// ends on the one without Discord keeps its Discord message in the finish
// index, and a finisher that runs Discord edits it; counted as done, it
// kept its buttons for good.
func TestMessageOnASurfaceThisReplicaLacks(t *testing.T) {
	c := newChat()
	e, slackOnly := setup(t, c)
	ctx := context.Background()
	rec, _, err := slackOnly.Create(ctx, question("", ""))
	if err != nil {
		t.Fatal(err)
	}
	msg := pending.Post{Surface: "discord", Channel: "D1", MessageID: "m1"}
	if _, err := e.store.AddPost(ctx, rec.ID, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := slackOnly.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if n := e.unedited(t); n != 1 {
		t.Fatalf("%d requests left for a finisher once the replica without Discord ended it; want 1", n)
	}

	discord := newChat()
	cfg, err := config.Parse([]byte(routesYAML))
	if err != nil {
		t.Fatal(err)
	}
	both, err := dispatch.New(e.store, cfg, map[string]dispatch.Surface{"slack": c, "discord": discord}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Add(pending.FinishGrace)
	recs, err := e.store.Unfinished(ctx)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Unfinished = %v, %v; want the request", recs, err)
	}
	both.Finished(ctx, recs[0])
	if got := discord.finished["m1"]; got != seam.StatusCancelled {
		t.Errorf("the Discord message shows %q, want cancelled", got)
	}
	if n := e.unedited(t); n != 0 {
		t.Errorf("%d requests left for a finisher once every message is edited; want 0", n)
	}
}

// TestSurfaceThisReplicaLacksIsLoggedOnce: a replica without Discord that
// meets Discord messages to edit says so once, at Info: its config
// differs from the other replicas'. Not once per message and per try: a
// finisher tries each request some nine times within the hour, on
// whichever replica claims it, and ends in a warning of its own if no
// replica ever edits it.
func TestSurfaceThisReplicaLacksIsLoggedOnce(t *testing.T) {
	c := newChat()
	e, _ := setup(t, c)
	cfg, err := config.Parse([]byte(routesYAML))
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	slackOnly, err := dispatch.New(e.store, cfg, map[string]dispatch.Surface{"slack": c}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		rec, _, err := slackOnly.Create(ctx, question("", ""))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.AddPost(ctx, rec.ID, pending.Post{Surface: "discord", Channel: "D1", MessageID: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
		ended, err := slackOnly.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // a finisher's tries
			slackOnly.Finished(ctx, ended)
		}
	}
	const line = "on a surface this replica does not run"
	if n := strings.Count(logs.String(), line); n != 1 || !strings.Contains(logs.String(), "surface=discord") {
		t.Errorf("logged %d times %q; want once, naming the surface:\n%s", n, line, logs.String())
	}
}

func TestEditedRequestLeavesNothingForTheSweeper(t *testing.T) {
	c := newChat()
	e, d := setup(t, c)
	ctx := context.Background()
	rec, _, err := d.Create(ctx, question("", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if n := e.unedited(t); n != 0 {
		t.Fatalf("%d requests left for a sweeper after every edit succeeded; want 0", n)
	}
	e.clk.Add(pending.FinishGrace)
	if recs, err := e.store.Unfinished(ctx); err != nil || len(recs) != 0 {
		t.Errorf("Unfinished = %v, %v; want nothing", recs, err)
	}
}

// counterSum adds up every series of the counter name in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestPostIsRecordedThroughARedisBlip: Redis cannot be reached for a moment
// just after the messages are posted, longer than go-redis's own retries.
// A message posted and not recorded would keep its buttons when the request
// ends (nothing knows to edit it), and the reposter would post the request
// again once its posting lease passed. Each message is recorded once Redis
// answers again, and edited when the request ends.
func TestPostIsRecordedThroughARedisBlip(t *testing.T) {
	c := newChat()
	e, _ := setup(t, c)
	blip := new(refuseAddPost)
	blip.left.Store(4)
	d := e.replicaWith(t, nil, blip)
	ctx := context.Background()
	rec, created, err := d.Create(ctx, question("", ""))
	if err != nil || !created {
		t.Fatalf("Create: created %v, %v", created, err)
	}
	if blip.left.Load() == 4 {
		t.Fatal("no recording was refused")
	}
	got, err := e.store.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Posts) != 2 || len(c.channels()) != 2 {
		t.Fatalf("%d messages recorded of %d posted; want both of 2", len(got.Posts), len(c.channels()))
	}
	if _, err := d.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.posts {
		if c.finished[p.MessageID] != seam.StatusCancelled {
			t.Errorf("message %s keeps its buttons: finished %v", p.MessageID, c.finished)
		}
	}
}

// A post that answers late, near the end of its lease (after a burst of
// 429s, say), is recorded through a Redis blip all the same: its
// recording has a lease of its own, not what the post left of one.
func TestLatePostIsRecordedThroughARedisBlip(t *testing.T) {
	c := newChat()
	e, _ := setup(t, c)
	blip := new(refuseAddPost)
	blip.left.Store(4)
	d := e.replicaOn(t, latePoster{c}, nil, blip)
	d.SetPostFor(500 * time.Millisecond)
	ctx := context.Background()
	rec, created, err := d.Create(ctx, question("broken", ""))
	if err != nil || !created {
		t.Fatalf("Create: created %v, %v", created, err)
	}
	got, err := e.store.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Posts) != 1 || len(c.channels()) != 1 {
		t.Fatalf("%d messages recorded of %d posted; want the one", len(got.Posts), len(c.channels()))
	}
	e.clk.Add(pending.PostingLease + time.Second)
	if err := d.Repost(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(c.channels()); n != 1 {
		t.Errorf("the question was posted %d times; want once", n)
	}
}

// latePoster posts as chat does, once its post's deadline is 20 ms away.
type latePoster struct{ *chat }

func (p latePoster) Post(ctx context.Context, rec *pending.Record, t dispatch.Target) ([]pending.Post, error) {
	if dl, ok := ctx.Deadline(); ok {
		select {
		case <-time.After(time.Until(dl) - 20*time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.chat.Post(ctx, rec, t)
}

// A create that Redis ran but did not answer is a 503 to its agent, who
// asks again. Without a tool_call_id that is another request: the first,
// stored unposted, is abandoned, not posted by a reposter for nobody. With
// one, the retry finds the same request and posts it at once.
func TestCreateRedisDidNotAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, toolCallID string
	}{{"without a tool_call_id", ""}, {"with a tool_call_id", "call-lost-1"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChat()
			e, _ := setup(t, c)
			d := e.replicaWith(t, nil, new(loseCreateReply))
			ctx := context.Background()
			if _, _, err := d.Create(ctx, question("", tc.toolCallID)); !pending.IsUnavailable(err) {
				t.Fatalf("the create Redis did not answer: %v; want unavailable (503)", err)
			}
			retry, _, err := d.Create(ctx, question("", tc.toolCallID)) // the agent asks again
			if err != nil {
				t.Fatal(err)
			}
			if len(retry.Posts) == 0 || len(c.channels()) != len(retry.Posts) {
				t.Fatalf("the retry: %d posts recorded, %d made; want it posted at once", len(retry.Posts), len(c.channels()))
			}
			e.clk.Add(pending.PostingLease + time.Second)
			if err := d.Repost(ctx); err != nil {
				t.Fatal(err)
			}
			if n, want := len(c.channels()), len(retry.Posts); n != want {
				pendingIDs, _ := e.store.PendingIDs(ctx, seam.KindQuestion, 0)
				t.Errorf("%d messages posted for the one question the agent asked (%s); want %d; pending: %v", n, retry.ID, want, pendingIDs)
			}
		})
	}
}

// loseCreateReply runs the first script in Redis and then fails it as a
// reset connection does once go-redis's retries are spent: the request is
// stored, and its creator is told it failed.
type loseCreateReply struct{ once sync.Once }

func (h *loseCreateReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseCreateReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); err == nil && (n == "evalsha" || n == "eval") {
			lost := false
			h.once.Do(func() { lost = true })
			if lost {
				err := fmt.Errorf("read tcp 127.0.0.1:6379: %w", syscall.ECONNRESET)
				cmd.SetErr(err)
				return err
			}
		}
		return err
	}
}

func (h *loseCreateReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// refuseAddPost is a go-redis hook under which the first left recordings of
// a posted message (the store's AddPost script) fail as a reset connection
// does, without reaching Redis.
type refuseAddPost struct{ left atomic.Int32 }

func (h *refuseAddPost) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *refuseAddPost) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && strings.HasPrefix(s, "post:") && h.left.Add(-1) >= 0 {
					err := fmt.Errorf("read tcp 127.0.0.1:6379: %w", syscall.ECONNRESET)
					cmd.SetErr(err)
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (h *refuseAddPost) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCreateWhoseCallerLeftMidScript: an agent that gives up on a create
// (a client timeout, a dropped connection) while its script is on its way
// to a slow Redis gets an error, and the script runs all the same: the
// request is stored, unposted, under a posting lease its create no longer
// uses. Like a create whose reply was lost, it is settled once the script
// is over: without a tool_call_id it is abandoned (nobody knows its id,
// and a reposter would post it for nobody a minute later); with one, its
// lease is released, so the agent's retry posts it at once rather than a
// reposter a minute later.
func TestCreateWhoseCallerLeftMidScript(t *testing.T) {
	for _, tc := range []struct {
		name, toolCallID string
	}{{"without a tool_call_id", ""}, {"with a tool_call_id", "call-left-1"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChat()
			e, _ := setup(t, c)
			ctx, cancel := context.WithCancel(context.Background())
			slow := &leaveMidScript{leave: cancel, release: make(chan struct{})}
			d := e.replicaWith(t, nil, slow)
			nr := question("", tc.toolCallID)
			nr.ID = pending.NewID(nr)
			if _, _, err := d.Create(ctx, nr); !errors.Is(err, context.Canceled) {
				t.Fatalf("the create its caller left: %v; want context.Canceled", err)
			}
			close(slow.release) // Redis's reply comes back: the script ran
			bg := context.Background()
			if tc.toolCallID == "" {
				pollUntil(t, "the request its caller left abandoned", func() bool {
					_, err := e.store.Get(bg, nr.ID)
					return errors.Is(err, pending.ErrNotFound)
				})
				e.clk.Add(pending.PostingLease + time.Second)
				if err := d.Repost(bg); err != nil {
					t.Fatal(err)
				}
				if n := len(c.channels()); n != 0 {
					t.Errorf("%d messages posted for a request nobody waits for; want none", n)
				}
				return
			}
			var retry *pending.Record
			pollUntil(t, "the agent's retry posted at once", func() bool {
				var err error
				retry, _, err = d.Create(bg, question("", tc.toolCallID))
				return err == nil && len(retry.Posts) > 0
			})
			if retry.ID != nr.ID || len(c.channels()) != len(retry.Posts) {
				t.Errorf("the retry: id %s (want %s), %d posts recorded, %d made", retry.ID, nr.ID, len(retry.Posts), len(c.channels()))
			}
		})
	}
}

// pollUntil waits until cond holds, failing the test after 5 s.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// leaveMidScript runs the first script in Redis, then has its caller leave
// (cancels its context) and holds the reply until release is closed: a
// slow Redis's reply to a create whose agent gave up.
type leaveMidScript struct {
	once    sync.Once
	leave   func()
	release chan struct{}
}

func (h *leaveMidScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *leaveMidScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); err == nil && (n == "evalsha" || n == "eval") {
			first := false
			h.once.Do(func() { first = true })
			if first {
				h.leave()
				<-h.release
			}
		}
		return err
	}
}

func (h *leaveMidScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// RouteOfKey undoes TargetKey, whatever the route's name holds.
func TestRouteOfKey(t *testing.T) {
	for _, route := range []string{"default", "ops/prod", "", "a/0"} {
		for _, i := range []int{0, 12} {
			if got := dispatch.RouteOfKey(dispatch.TargetKey(route, i)); got != route {
				t.Errorf("RouteOfKey(TargetKey(%q, %d)) = %q", route, i, got)
			}
		}
	}
}

// Package dispatch connects requests to the people who answer them: it
// posts each new request to its route's targets, resolves requests through
// the store, and edits every posted message when a request ends, whichever
// replica or surface ended it.
package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// Surface is a chat platform as the dispatcher sees it.
type Surface interface {
	// Post posts rec to one target of a route and returns what it posted.
	Post(ctx context.Context, rec *pending.Record, t Target) ([]pending.Post, error)
	// Finish edits one message posted for rec, which has ended: the question
	// stays readable, the controls go, and a line says how it ended.
	Finish(ctx context.Context, rec *pending.Record, p pending.Post) error
}

// Target is one target of a route, as handed to its surface.
type Target struct {
	Key    string        // "route/index": recorded on each post
	Config config.Target // the surface reads its own section
}

// Surface returns the name of the surface the target posts to.
func (t Target) Surface() string {
	switch {
	case t.Config.Slack != nil:
		return "slack"
	case t.Config.Discord != nil:
		return "discord"
	}
	return ""
}

// TargetKey names target i of a route; each post records it, so a surface
// can find the target's config (its responders) when a click comes in.
func TargetKey(route string, i int) string { return fmt.Sprintf("%s/%d", route, i) }

// RouteOfKey is the route of target key, a TargetKey.
func RouteOfKey(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

type route struct {
	name      string
	mode      string
	expiresIn time.Duration
	targets   []Target
}

// Dispatcher creates, posts and resolves requests.
type Dispatcher struct {
	store          *pending.Store
	surfaces       map[string]Surface
	routes         map[string]route
	defaultExpires time.Duration
	metrics        *Metrics
	log            *slog.Logger
	creating       inflight // creates under way; see Drain
	// draining is closed once Drain begins: work in the background that
	// may be left undone (settleLost's) stops then.
	draining  chan struct{}
	drainOnce sync.Once
	// postFor bounds a post, the creator's or a reposter's: the posting
	// lease it holds (tests shorten it).
	postFor time.Duration
	// lacking are the surfaces this replica does not run that it has met
	// messages of, to log at Info once each (see finishOne).
	lacking sync.Map
}

// New builds a dispatcher for the routes of cfg. surfaces maps a surface
// name ("slack", "discord") to its implementation; a route that targets a
// surface not in it is an error.
func New(store *pending.Store, cfg *config.Config, surfaces map[string]Surface, m *Metrics, log *slog.Logger) (*Dispatcher, error) {
	d := &Dispatcher{
		store:          store,
		surfaces:       surfaces,
		routes:         make(map[string]route, len(cfg.Routes)),
		defaultExpires: cfg.Store.DefaultExpiresIn.D(),
		metrics:        m,
		log:            log,
		postFor:        pending.PostingLease,
		draining:       make(chan struct{}),
	}
	for name := range surfaces {
		m.surface(name)
	}
	var errs []error
	for _, r := range cfg.Routes {
		rt := route{name: r.Name, mode: r.Mode, expiresIn: r.ExpiresIn.D()}
		for i, t := range r.Targets {
			tg := Target{Key: TargetKey(r.Name, i), Config: t}
			if _, ok := surfaces[tg.Surface()]; !ok {
				errs = append(errs, fmt.Errorf("routes %q target %d: the %s surface is not configured", r.Name, i, tg.Surface()))
			}
			rt.targets = append(rt.targets, tg)
		}
		d.routes[r.Name] = rt
	}
	return d, errors.Join(errs...)
}

// settleTimeout bounds what a create does after its posts failed:
// discarding the request, or reading it again.
const settleTimeout = 5 * time.Second

// DefaultRoute is the route of a request that names none.
const DefaultRoute = "default"

// Create stores a request and posts it to its route. A request that already
// exists under the same tool_call_id is returned as it is (created false)
// and not posted again. An unknown route, or a route none of whose targets
// took the request, is seam.ErrNoProvider and leaves nothing behind.
func (d *Dispatcher) Create(ctx context.Context, nr pending.NewRequest) (*pending.Record, bool, error) {
	if nr.Route == "" {
		nr.Route = DefaultRoute
	}
	rt, ok := d.routes[nr.Route]
	if !ok {
		return nil, false, noProvider("no route named %q is configured", nr.Route)
	}
	nr.DefaultExpiresIn = rt.expiresIn
	if nr.DefaultExpiresIn == 0 {
		nr.DefaultExpiresIn = d.defaultExpires
	}
	// Counted from before the store step, so that Drain waits for every
	// create that may store a request, and refuses those after it began.
	if !d.creating.add() {
		return nil, false, ErrStopping
	}
	defer d.creating.done()
	rec, created, err := d.store.Create(ctx, nr)
	if lost := (*pending.LostCreateError)(nil); errors.As(err, &lost) {
		d.settleLost(ctx, lost, nr.ToolCallID != "")
	}
	if err != nil {
		return nil, false, err
	}
	// Once the request exists, its create finishes whether or not the
	// caller still waits: a post cut off midway may be in the channel
	// already, and left unrecorded it would keep live buttons while the
	// caller's retry posted it again. It is bounded by the posting lease,
	// past which another replica's reposter may post it (see RunReposter),
	// and a replica that stops waits for it (Drain).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.postFor)
	defer cancel()
	if len(rt.targets) == 0 {
		if created {
			d.metrics.created(rec)
		}
		return rec, created, nil // answered through the API
	}
	if !created {
		// A re-attach. Post only what a crash left unposted, and only if
		// this replica wins the claim; otherwise it is posted or being posted.
		if rec.Status != seam.StatusPending || len(rec.Posts) > 0 {
			return rec, false, nil
		}
		if ok, err := d.store.ClaimPosting(ctx, rec); err != nil || !ok {
			return rec, false, err
		}
	}
	if posted, failure := d.post(ctx, rec, rt); posted == 0 {
		// On a context of their own: a post that ran until its lease
		// ended leaves ctx done, and the request must still be discarded
		// or returned.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		refused := noProvider("no target of route %q took the request (%s)", rt.name, failure)
		discarded, err := d.store.DiscardUnposted(ctx, rec, refused.Message)
		if err != nil {
			d.log.Warn("discarding an unposted request failed", "request_id", rec.ID, "err", err)
		}
		if !discarded && err == nil {
			// Kept: answered or withdrawn meanwhile (the web inbox and
			// the API list it while it is posted), or, the post having
			// outlived its lease, claimed by another replica that posts
			// it. Either way the agent waits for it, or reads its end.
			if cur, err := d.store.Get(ctx, rec.ID); err == nil {
				if created {
					d.metrics.created(cur)
				}
				return cur, created, nil
			}
		}
		return nil, false, refused
	}
	// Counted once a target took it: one that none took is discarded and
	// its agent told 503 NO_PROVIDER, so it was never created for anyone.
	if created {
		d.metrics.created(rec)
	}
	return rec, created, nil
}

// Repost posts the pending requests that a crash left unposted: stored,
// but the replica that stored them died before posting. Every replica may
// run it; the posting claim lets exactly one post each request. A request
// that still no target takes stays pending and is tried again next time.
func (d *Dispatcher) Repost(ctx context.Context) error {
	for _, kind := range []seam.Kind{seam.KindQuestion, seam.KindApproval} {
		recs, err := d.store.List(ctx, kind, 0)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			rt, ok := d.routes[rec.Route]
			if !ok || len(rt.targets) == 0 || len(rec.Posts) > 0 {
				continue
			}
			claimed, err := d.store.ClaimPosting(ctx, rec)
			if err != nil {
				return err
			}
			if claimed {
				d.log.Info("posting a request a crash left unposted", "request_id", rec.ID)
				_, _ = d.postLeased(ctx, rec, rt) // what failed is logged; it is tried again next time
			}
		}
	}
	return nil
}

// postLeased is post within the posting lease just claimed, as a create's
// post is: one that outlived it would let another replica claim the
// request and post it again.
func (d *Dispatcher) postLeased(ctx context.Context, rec *pending.Record, rt route) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, d.postFor)
	defer cancel()
	return d.post(ctx, rec, rt)
}

// RunReposter runs Repost at start and then every interval until ctx ends.
func (d *Dispatcher) RunReposter(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := d.Repost(ctx); err != nil && ctx.Err() == nil {
			d.log.Log(ctx, d.store.LogLevel(err), "reposting unposted requests failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func noProvider(format string, args ...any) *seam.Error {
	return &seam.Error{Code: seam.CodeNoProvider, Message: seam.Messages[seam.CodeNoProvider] + ": " + fmt.Sprintf(format, args...)}
}

// post posts rec to the route's targets, adds the messages it recorded to
// rec.Posts, and returns how many targets took it and, when none did, why
// the first of them refused: for the agent, which can't read the log.
func (d *Dispatcher) post(ctx context.Context, rec *pending.Record, rt route) (int, string) {
	if rt.mode == config.ModeFirst {
		var first error
		for _, t := range rt.targets {
			posts, err := d.postTo(ctx, rec, t)
			if err == nil {
				rec.Posts = append(rec.Posts, posts...)
				return 1, ""
			}
			first = cmp.Or(first, fmt.Errorf("target %s: %w", t.Key, err))
		}
		return 0, refusal(first)
	}
	var (
		mu       sync.Mutex
		took     int
		posted   []pending.Post
		failures map[string]error // by target key; made on the first
	)
	each(rt.targets, func(t Target) {
		posts, err := d.postTo(ctx, rec, t)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			took++
		} else {
			if failures == nil {
				failures = map[string]error{}
			}
			failures[t.Key] = fmt.Errorf("target %s: %w", t.Key, err)
		}
		posted = append(posted, posts...)
	})
	rec.Posts = append(rec.Posts, posted...)
	pending.SortPosts(rec.Posts) // as a read lists them
	if took > 0 {
		return took, ""
	}
	for _, t := range rt.targets {
		if err := failures[t.Key]; err != nil {
			return 0, refusal(err)
		}
	}
	return 0, refusal(nil)
}

// refusal is the part of a NO_PROVIDER message that says why the route's
// first target did not take the request: cut, but long enough for what
// comes before the platform's error (the target, the request, the call)
// and the advice after it, which says what to do.
func refusal(err error) string {
	if err == nil {
		return "no target was tried"
	}
	return surface.Truncate(err.Error(), 400)
}

// each calls f with every item at once and waits for them. A single item
// is handled in the caller's goroutine: the usual route has one target and
// a request one message, and a goroutine's start and stack growth were a
// measurable share of a replica's CPU under bridge bench.
func each[T any](items []T, f func(T)) {
	if len(items) == 1 {
		f(items[0])
		return
	}
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Go(func() { f(it) })
	}
	wg.Wait()
}

// postTo posts rec to one target and records the messages; it returns
// those recorded, or why the target did not take rec. When the request ended
// while they were being posted, its messages are finished at once, so no
// live buttons are left behind.
func (d *Dispatcher) postTo(ctx context.Context, rec *pending.Record, t Target) (recorded []pending.Post, err error) {
	// Narrowed only to log: With formats its attributes at once, and a
	// post seldom logs.
	log := func() *slog.Logger { return d.log.With("request_id", rec.ID, "surface", t.Surface(), "target", t.Key) }
	s := d.surfaces[t.Surface()]
	posts, err := s.Post(ctx, rec, t)
	if err == nil && len(posts) == 0 {
		err = errors.New("posted no message")
	}
	if err != nil {
		log().Warn("posting failed", "err", err)
		d.metrics.postFailed(t.Surface())
		return nil, err
	}
	var ended *pending.Record
	for _, p := range posts {
		p.Target = t.Key
		if p.PostedAt.IsZero() {
			p.PostedAt = time.Now().UTC() // as recorded, and as listed in rec
		}
		end, err := d.record(ctx, rec.ID, p)
		if err != nil {
			log().Error("recording a posted message failed; it keeps its controls when the request ends",
				"message_id", p.MessageID, "err", err)
			continue
		}
		recorded = append(recorded, p)
		if end != nil {
			ended = end // the latest holds every post recorded as of this call
		}
	}
	if ended != nil {
		// Whoever ended it edited the messages it knew of, not these; the
		// store holds it for a finisher until all are edited.
		d.Finished(ctx, ended)
	}
	return recorded, nil
}

// settleLost settles a create that Redis did not answer, whose request may
// be stored, unposted, under its posting lease: its caller is told the
// create failed (503), and asks again. Asked under a tool_call_id, the
// retry finds the same request: its lease is released, so the retry posts
// it at once. Asked without one, the retry is another request, and this
// one is abandoned, or a reposter would post it for nobody. One try, of a
// second at most, comes before the create answers (its reply lost, Redis
// is likely up); while Redis does not answer, the rest go on in the
// background, for half the lease or until Drain. A create whose caller
// left while it was on its way (lost.Over) is the same, but all in the
// background once the script is over: settled before it ran, it would
// settle nothing.
func (d *Dispatcher) settleLost(ctx context.Context, lost *pending.LostCreateError, keyed bool) {
	settle := func(ctx context.Context) error {
		var err error
		if keyed {
			_, err = d.store.ReleasePosting(ctx, lost.ID, lost.Lease)
		} else {
			_, err = d.store.Abandon(ctx, lost.ID, lost.Lease)
		}
		return err
	}
	err := pending.ErrUnavailable
	if lost.Over == nil {
		first, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		err = settle(first)
		cancel()
		if err == nil || !pending.IsUnavailable(err) {
			return
		}
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pending.PostingLease/2)
		defer cancel()
		if lost.Over != nil {
			select {
			case <-lost.Over:
			case <-ctx.Done():
				d.log.Warn("a create whose caller left did not end in time; a reposter posts its request once its lease passes", "request_id", lost.ID)
				return
			case <-d.draining:
				return
			}
			if err = settle(ctx); err == nil || !pending.IsUnavailable(err) {
				return
			}
		}
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
			select {
			case <-ctx.Done():
				d.log.Warn("a create Redis did not answer may have left its request unposted; a reposter posts it once its lease passes", "request_id", lost.ID, "err", err)
				return
			case <-d.draining:
				return
			case <-time.After(backoff):
			}
			if err = settle(ctx); err == nil || !pending.IsUnavailable(err) {
				return
			}
		}
	}()
}

// record records p, posted for request id, and returns what AddPost does.
// While Redis cannot be reached it tries again, for at most the posting
// lease: a message posted and not recorded is edited by nobody when its
// request ends, so it keeps its controls, and the reposter posts the
// request again. A try whose reply was lost recorded p already; recording
// it again changes nothing but the audit stream. The lease is its own: a
// post that answered near the end of its time has the message out all the
// same.
func (d *Dispatcher) record(ctx context.Context, id string, p pending.Post) (*pending.Record, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pending.PostingLease)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		end, err := d.store.AddPost(ctx, id, p)
		if err == nil || !pending.IsUnavailable(err) {
			return end, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// ErrStopping is what Create returns once Drain has begun: the replica is
// stopping, and the caller should ask another (the API answers 503
// UNAVAILABLE, which clients retry).
var ErrStopping = errors.New("this replica is stopping")

// Drain refuses new creates (ErrStopping) and waits until every create
// under way has posted and recorded its messages, or ctx ends: a replica
// that stops calls it before it closes its Redis client, so that no create
// loses its recording. A create still on its way to the store when the HTTP
// server gave up on its handler is refused rather than run against a Redis
// client about to close.
func (d *Dispatcher) Drain(ctx context.Context) {
	d.drainOnce.Do(func() { close(d.draining) })
	select {
	case <-d.creating.stop():
	case <-ctx.Done():
	}
}

// inflight counts work under way until it is stopped. Unlike a
// sync.WaitGroup, it refuses work that comes once someone waits for none
// rather than panic: a create the HTTP server's shutdown gave up on may
// reach the dispatcher at any time.
type inflight struct {
	mu      sync.Mutex
	n       int
	stopped bool
	none    chan struct{} // closed when n falls to 0; nil until someone waits
}

// add counts new work, or reports false once stop has been called.
func (f *inflight) add() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	f.n++
	return true
}

func (f *inflight) done() {
	f.mu.Lock()
	if f.n--; f.n == 0 && f.none != nil {
		close(f.none)
		f.none = nil
	}
	f.mu.Unlock()
}

// stop refuses new work and returns a channel closed once none is under
// way. It may be called more than once.
func (f *inflight) stop() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	if f.n == 0 {
		return closedChan
	}
	if f.none == nil {
		f.none = make(chan struct{})
	}
	return f.none
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Resolve ends a request through the store (first writer wins) and, when
// this call won, edits every message posted for it. A lost race returns
// the record as it ended and pending.ErrAlreadyResolved. When the edits
// fail, or Redis ended the request but its reply was lost (an error here),
// a finisher edits the messages later (pending.Store.Unfinished). A
// resolution that came after the request's expiry expired it
// (pending.ErrExpired, which is an ErrAlreadyResolved): this call then
// counts the expiry and edits the messages, as the sweeper would have.
func (d *Dispatcher) Resolve(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error) {
	rec, err := d.store.Resolve(ctx, id, res)
	if errors.Is(err, pending.ErrExpired) {
		d.Expired(ctx, rec) // this resolution came late and expired it
	}
	if err != nil {
		return rec, err
	}
	d.metrics.resolved(rec)
	d.Finished(ctx, rec)
	return rec, nil
}

// Expired counts the end of rec, which this replica's sweeper expired, and
// edits its posted messages.
func (d *Dispatcher) Expired(ctx context.Context, rec *pending.Record) {
	d.metrics.resolved(rec)
	d.Finished(ctx, rec)
}

// Finished edits every message posted for rec, which has ended, and once
// all are edited tells the store, so that no finisher edits them again.
// When one fails it is logged and left to a finisher, which calls Finished
// again for the request (all its messages: editing one twice does no
// harm). The finisher calls it for the requests whose messages are still
// unedited pending.FinishGrace after their end.
func (d *Dispatcher) Finished(ctx context.Context, rec *pending.Record) {
	var failed atomic.Bool
	each(rec.Posts, func(p pending.Post) {
		if !d.finishOne(ctx, rec, p) {
			failed.Store(true)
		}
	})
	if failed.Load() || len(rec.Posts) == 0 { // without posts it is not in the store's finish index
		return
	}
	if err := d.store.Edited(ctx, rec); err != nil {
		d.log.Warn("recording that a request's messages are edited failed; a sweeper will edit them again",
			"request_id", rec.ID, "err", err)
	}
}

// finishOne edits one message of rec and reports whether it succeeded. A
// message on a surface this replica does not run is not edited: replicas
// may differ while their config changes (Discord being added, say), and
// a finisher, which every replica runs, leaves it to one that runs it, or
// gives it up an hour after the request's end.
func (d *Dispatcher) finishOne(ctx context.Context, rec *pending.Record, p pending.Post) bool {
	s, ok := d.surfaces[p.Surface]
	if !ok {
		// At Info once a surface: the replicas' configs differ, which an
		// operator wants to know. Then at Debug, not a line per message
		// and per try (a finisher tries each some nine times within the
		// hour); one that no replica edits ends in a warning of its own.
		level := slog.LevelDebug
		if _, met := d.lacking.LoadOrStore(p.Surface, true); !met {
			level = slog.LevelInfo
		}
		d.log.Log(ctx, level, "a finished request's message is on a surface this replica does not run; left to a finisher on one that does (further ones are logged at debug)",
			"request_id", rec.ID, "surface", p.Surface, "message_id", p.MessageID)
		return false
	}
	if err := s.Finish(ctx, rec, p); err != nil {
		d.metrics.editFailed(p.Surface)
		d.log.Warn("editing a finished request's message failed",
			"request_id", rec.ID, "surface", p.Surface, "message_id", p.MessageID, "err", err)
		return false
	}
	return true
}

package pending

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

// waiters fans one process's wake-ups out to the calls waiting on a request.
type waiters struct {
	mu sync.Mutex
	m  map[string]map[chan *ending]struct{}
}

func newWaiters() *waiters { return &waiters{m: make(map[string]map[chan *ending]struct{})} }

func (w *waiters) add(id string) chan *ending {
	ch := make(chan *ending, 1)
	w.mu.Lock()
	set := w.m[id]
	if set == nil {
		set = make(map[chan *ending]struct{})
		w.m[id] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch
}

func (w *waiters) remove(id string, ch chan *ending) {
	w.mu.Lock()
	if set := w.m[id]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(w.m, id)
		}
	}
	w.mu.Unlock()
}

// notify hands a waiter how its request ended, or nil to make it re-read.
func notify(ch chan *ending, e *ending) {
	select {
	case ch <- e:
	default: // already woken; what it was handed or re-reads is as good
	}
}

func (w *waiters) wake(id string, e *ending) {
	w.mu.Lock()
	for ch := range w.m[id] {
		notify(ch, e)
	}
	w.mu.Unlock()
}

// wakeShard makes every waiter on a request of shard sh (of every shard
// when sh is -1) re-read its record: after (re)subscribing, wake-ups
// published while the subscription was down are lost.
func (w *waiters) wakeShard(sh int) {
	w.mu.Lock()
	for id, set := range w.m {
		if sh >= 0 && shard(id) != sh {
			continue
		}
		for ch := range set {
			notify(ch, nil)
		}
	}
	w.mu.Unlock()
}

// Waiting returns the number of calls waiting in this process.
func (s *Store) Waiting() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	n := 0
	for _, set := range s.w.m {
		n += len(set)
	}
	return n
}

// Wait returns the request once it is no longer pending, or when ctx ends,
// whichever comes first; then it returns the record as last read and
// ctx's error. owner, when not empty, hides requests of other clients.
//
// A wait never depends on a wake-up alone: it re-reads the record after
// registering (an answer that landed in between is seen), after every
// (re)subscription of the process, and every Options.Recheck.
func (s *Store) Wait(ctx context.Context, id, owner string) (*Record, error) {
	return s.WaitKind(ctx, id, owner, "")
}

// WaitKind is Wait that, when kind is not empty, also hides requests of
// other kinds: a caller need not read the record before waiting on it.
func (s *Store) WaitKind(ctx context.Context, id, owner string, kind seam.Kind) (*Record, error) {
	w := s.Watch(id)
	defer w.Stop()
	return w.wait(ctx, nil, owner, kind)
}

// A Watch holds the wake-ups of one request in this process from the moment
// it starts, so that a wait that starts from a record read or created
// after it need not read the record again.
type Watch struct {
	s  *Store
	id string
	ch chan *ending
}

// Watch starts watching id. Call Stop when done.
func (s *Store) Watch(id string) *Watch {
	return &Watch{s: s, id: id, ch: s.w.add(id)}
}

// Stop stops watching.
func (w *Watch) Stop() { w.s.w.remove(w.id, w.ch) }

// Wait is Store.Wait starting from from, a record of the watched request
// that was read or created after the watch started.
func (w *Watch) Wait(ctx context.Context, from *Record) (*Record, error) {
	return w.wait(ctx, from, "", "")
}

// wait waits as Store.WaitKind does; from, when not nil, stands for the
// first read.
func (w *Watch) wait(ctx context.Context, from *Record, owner string, kind seam.Kind) (*Record, error) {
	recheck := time.NewTicker(w.s.opt.Recheck)
	defer recheck.Stop()
	rec, last := from, from
	for {
		if rec == nil {
			var err error
			rec, err = w.s.Get(ctx, w.id)
			switch {
			case err != nil && ctx.Err() != nil:
				return last, ctx.Err()
			case err != nil:
				return nil, err
			case owner != "" && rec.Client != owner, kind != "" && rec.Kind != kind:
				return nil, fmt.Errorf("get %s: %w", w.id, ErrNotFound)
			}
		}
		if rec.Status != seam.StatusPending {
			return rec, nil
		}
		last, rec = rec, nil
		select {
		case e := <-w.ch:
			// The wake-up carries how the request ended: applied to the
			// record just read, it spares a second read on the hot path.
			if e != nil {
				if ended, err := last.end(e); err == nil {
					return ended, nil
				}
			}
		case <-recheck.C:
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// Run receives wake-ups published by every replica until ctx ends. Run it
// once per process, beside the HTTP server.
func (s *Store) Run(ctx context.Context) error {
	plain := func(ctx context.Context) *redis.PubSub { return s.rdb.Subscribe(ctx, s.keys.wake()) }
	if !s.sharded {
		s.listen(ctx, plain, -1, nil)
		return nil
	}
	// A cluster: a subscription per shard, each on the master that holds
	// the shard, and the plain channel, on which replicas of earlier
	// versions (and any replica on a Redis before 7.0) publish.
	// subscribed counts once every one is up.
	var down atomic.Int64
	down.Store(shards + 1)
	first := func() {
		if down.Add(-1) == 0 {
			s.subscribed.Add(1)
		}
	}
	var all sync.WaitGroup
	all.Go(func() { s.listen(ctx, plain, -1, first) })
	for sh := range shards {
		channel := s.keys.shardWake(sh)
		sharded := func(ctx context.Context) *redis.PubSub { return s.rdb.SSubscribe(ctx, channel) }
		all.Go(func() { s.listen(ctx, sharded, sh, first) })
	}
	all.Wait()
	return nil
}

// listen holds a subscription made by subscribe and receives its wake-ups
// until ctx ends: of shard sh, or of every shard when sh is -1. Each time
// the subscription is (re)established it makes the waiters it serves
// re-read, and loads the scripts where it is (a new subscription may mean a
// restarted Redis, which has forgotten them); first, when not nil, is
// called the first time, and subscribed counts each time after that.
//
// go-redis re-makes a subscription whose connection broke. One that the
// server ends or refuses, listen makes afresh: on a cluster, a shard
// channel's subscribers are unsubscribed (SUNSUBSCRIBE) when its slot moves
// to another master, in a failover or a resharding, and a subscription
// made on stale slots is refused with MOVED.
func (s *Store) listen(ctx context.Context, subscribe func(context.Context) *redis.PubSub, sh int, first func()) {
	var loads sync.WaitGroup
	defer loads.Wait()
	backoff := 50 * time.Millisecond
	unknown := false
	var said string // the failure last logged, and when
	var saidAt time.Time
	for {
		confirmed, err := s.receive(ctx, subscribe(ctx), sh, &first, &loads)
		if ctx.Err() != nil {
			return
		}
		if confirmed {
			backoff, said = 50*time.Millisecond, ""
		}
		wait := backoff
		switch {
		case sh >= 0 && strings.HasPrefix(err.Error(), "ERR unknown command"):
			// A Redis before 7.0 has no sharded pub/sub: the resolve
			// script publishes plainly there, which the plain
			// subscription hears. Asked again now and then: the
			// cluster may be upgraded under a running replica, and
			// then wake-ups go to the shard channels.
			if !unknown {
				s.log.Warn("this Redis has no sharded pub/sub (Redis 7.0 adds it); wake-ups use the plain channel", "shard", sh)
				unknown = true
			}
			if first != nil {
				first()
				first = nil
			}
			wait = time.Minute
		default:
			// Once per failure, and every 30 s while it lasts: a Redis
			// that is down is asked every 2 s.
			if err.Error() != said || time.Since(saidAt) >= 30*time.Second {
				s.log.Log(ctx, s.LogLevel(err), "wake-up subscription ended; subscribing again", "shard", sh, "err", err)
				said, saidAt = err.Error(), time.Now()
			}
			s.reloadSlots(ctx)
			// Refusals that pass (a slot moving, a cluster or a node
			// coming back, a node down) are asked again within 2 s;
			// others (NOPERM) every 30 s at most, not to flood the log.
			limit := 30 * time.Second
			if passing(err) {
				limit = 2 * time.Second
			}
			backoff = min(2*backoff, limit)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
	}
}

// passing reports whether a subscription ended by err is worth asking
// again soon: the server ended it, refused it for the while, or could not
// be reached (a node down, restarting, or being failed over: its shards'
// subscriptions must find the promoted replica within seconds, not at a
// backoff that has doubled past them).
func passing(err error) bool {
	if errors.Is(err, errEnded) || unreached(err) {
		return true
	}
	for _, p := range []string{"MOVED", "ASK", "CLUSTERDOWN", "LOADING", "TRYAGAIN", "MASTERDOWN"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// errEnded is a subscription that the server ended.
var errEnded = errors.New("the server ended the subscription")

// reloadSlots makes a cluster client read the cluster's slots again: after
// a failover the subscriptions and commands of slots whose master is gone
// go to the new one at once, not when go-redis next reloads by itself (every
// 60 s).
func (s *Store) reloadSlots(ctx context.Context) {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
}

// receive receives on ps, and closes it, until ctx ends or the server ends
// the subscription or answers it with an error, which it returns, saying
// whether the subscription was confirmed meanwhile.
func (s *Store) receive(ctx context.Context, ps *redis.PubSub, sh int, first *func(), loads *sync.WaitGroup) (confirmed bool, err error) {
	defer ps.Close()
	// A blocked Receive honours only a deadline, not a cancelled ctx:
	// closing the subscription is what ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.Receive(ctx)
		var reply redis.Error
		switch {
		case err != nil && ctx.Err() != nil:
			return confirmed, ctx.Err()
		case errors.As(err, &reply):
			return confirmed, err
		case err != nil:
			// go-redis reconnects and resubscribes on the next Receive,
			// to the slot's master as it last read the cluster's slots:
			// read them again, the master may have failed over. What
			// is published meanwhile is lost, so the waiters re-read once
			// the subscription is back (the *redis.Subscription case), not
			// now: now Redis is likely unreachable, and a re-read that fails
			// would end every wait with an error.
			// A connection the server closed (EOF): if Redis is down,
			// the dial that makes it again fails and begins an outage
			// that the replica logs once (Options.Outage); if it is
			// not (a proxy's idle timeout, CLIENT KILL), the
			// subscription is back at once and the waiters read again.
			// Info then, at most a line in ten seconds for all the
			// subscriptions: on a Cluster each shard's closes at once.
			level := s.LogLevel(err)
			if errors.Is(err, io.EOF) {
				level = slog.LevelDebug
				last := s.closedSaid.Load()
				if !s.outage() && time.Since(time.Unix(0, last)) >= 10*time.Second && s.closedSaid.CompareAndSwap(last, time.Now().UnixNano()) {
					level = slog.LevelInfo
				}
			}
			s.log.Log(ctx, level, "wake-up subscription interrupted", "err", err)
			s.reloadSlots(ctx)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return confirmed, ctx.Err()
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "unsubscribe" || m.Kind == "sunsubscribe" {
				return confirmed, fmt.Errorf("%w to %s", errEnded, m.Channel)
			}
			confirmed = true
			backoff = 50 * time.Millisecond
			s.w.wakeShard(sh)
			// Loaded aside: a node still away must not hold up the
			// wake-ups.
			done := *first
			*first = nil
			loads.Go(func() {
				if err := s.loadScriptsFor(ctx, sh); err != nil && ctx.Err() == nil {
					s.log.Log(ctx, s.LogLevel(err), "loading scripts failed; each loads on its first use instead", "err", err)
				}
				if done != nil {
					done()
				} else {
					s.subscribed.Add(1)
				}
			})
		case *redis.Message:
			id, e := parseWake(m.Payload)
			s.w.wake(id, e)
		}
	}
}

// loadScriptsFor loads the scripts on the master that holds shard sh, or
// everywhere when sh is -1.
func (s *Store) loadScriptsFor(ctx context.Context, sh int) error {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if sh < 0 || !ok {
		return s.LoadScripts(ctx)
	}
	master, err := cc.MasterForKey(ctx, s.keys.tag(sh))
	if err != nil {
		return unavailable(fmt.Errorf("load scripts: %w", err))
	}
	return loadScripts(ctx, master)
}

// IsUnavailable reports whether err means Redis could not be reached.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// Unserved reports whether err, of a Redis call whose caller was still
// waiting for it, means that Redis could serve no call then: it sent no
// reply (the connection failed, or timed out: a timeout may read as
// context.DeadlineExceeded too), or replied that it serves none (LOADING
// a dataset, BUSY with a script, MASTERDOWN, CLUSTERDOWN). A reply that
// refuses only some calls (OOM, READONLY, MISCONF refuse writes), no
// error, and an error that is not Redis's (a record that does not decode,
// a closed client) are not.
func Unserved(err error) bool {
	var reply redis.Error
	var ne net.Error
	switch {
	case err == nil:
		return false
	case errors.As(err, &reply):
		return replyIs(reply.Error(), "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN")
	}
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}

// LogLevel is the level to log a failure that err caused at: debug when
// err is Redis being unavailable while the replica knows of an outage and
// has logged it (Options.Outage), which then says it once for every call
// that fails of it, not once per sweep or request; warn otherwise.
func (s *Store) LogLevel(err error) slog.Level {
	if (IsUnavailable(err) || Unserved(err)) && s.outage() {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// outage reports whether the replica knows of a Redis outage, and has
// logged it (Options.Outage).
func (s *Store) outage() bool { return s.opt.Outage != nil && s.opt.Outage() }

// ending is how a request ended, as the resolve script publishes it beside
// the id: "id\nstatus\nresolved ms\nresponder JSON\nresult JSON".
type ending struct {
	status, resolved, by, result string
}

func (e *ending) payload(id string) string {
	return id + "\n" + e.status + "\n" + e.resolved + "\n" + e.by + "\n" + e.result
}

// parseWake reads a wake-up. A bare id (or anything malformed) yields a nil
// ending: the waiter re-reads the record.
func parseWake(payload string) (string, *ending) {
	p := strings.SplitN(payload, "\n", 5)
	if len(p) != 5 || !seam.Status(p[1]).Final() {
		return p[0], nil
	}
	return p[0], &ending{status: p[1], resolved: p[2], by: p[3], result: p[4]}
}

// end returns a copy of the pending record r as e ended it.
func (r *Record) end(e *ending) (*Record, error) {
	h := fieldMap(map[string]string{fStatus: e.status, fResolved: e.resolved, fBy: e.by, fResult: e.result})
	out := *r
	out.Status, out.ResolvedAt = seam.Status(e.status), msTime(e.resolved)
	out.Answer, out.Decision, out.ResolvedBy = nil, nil, nil
	if err := out.decodeEnd(h); err != nil {
		return nil, err
	}
	return &out, nil
}

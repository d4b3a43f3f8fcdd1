package pending

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

// The conformance suite runs every test against an embedded Redis
// (miniredis), when BRIDGE_TEST_REDIS_URL is set against that real Redis
// too, when BRIDGE_TEST_REDIS_CLUSTER is set (comma-separated seed
// addresses, e.g. 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003, as
// .ci/redis-cluster.sh starts) against that Redis Cluster, and when
// BRIDGE_TEST_REDIS_SENTINEL is set (the Sentinels' comma-separated
// addresses, a slash and the master's name, e.g. 127.0.0.1:7020/askbridge,
// as .ci/redis-sentinel.sh starts) against that master, reached through
// Connect as the app reaches it. Each test keeps its keys under a prefix of
// its own and deletes only those: the real Redis may be shared, so nothing
// here flushes it.

const (
	realRedisEnv     = "BRIDGE_TEST_REDIS_URL"
	redisClusterEnv  = "BRIDGE_TEST_REDIS_CLUSTER"
	redisSentinelEnv = "BRIDGE_TEST_REDIS_SENTINEL"
)

// eventually bounds every wait for something to happen. Nothing in the suite
// should take more than a fraction of it.
const eventually = 5 * time.Second

// backend is one Redis deployment a test runs on.
type backend struct {
	t      *testing.T
	name   string
	prefix string
	clock  *fakeClock
	mr     *miniredis.Miniredis // the embedded server; nil on a real Redis
	dial   dialer               // how to reach it
	rdb    redis.UniversalClient
}

// dialer makes a new client on one deployment.
type dialer func() (redis.UniversalClient, error)

// single reaches one server.
func single(opts *redis.Options) dialer {
	return func() (redis.UniversalClient, error) {
		o := *opts
		return redis.NewClient(&o), nil
	}
}

// cluster reaches a Redis Cluster through some of its nodes.
func cluster(addrs []string) dialer {
	return func() (redis.UniversalClient, error) {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), nil
	}
}

// connect reaches Redis through Connect, as the app does.
func connect(c Conn) dialer {
	return func() (redis.UniversalClient, error) { return Connect(c) }
}

// sentinelConn returns the Sentinel-watched master of
// BRIDGE_TEST_REDIS_SENTINEL ("host:port[,host:port...]/master-name"), and
// false when it is unset.
func sentinelConn(t *testing.T) (Conn, bool) {
	t.Helper()
	v := os.Getenv(redisSentinelEnv)
	if v == "" {
		return Conn{}, false
	}
	addrs, name, ok := strings.Cut(v, "/")
	if !ok || addrs == "" || name == "" {
		t.Fatalf("%s=%q; want host:port[,host:port...]/master-name, e.g. 127.0.0.1:7020/askbridge", redisSentinelEnv, v)
	}
	return Conn{Addrs: strings.Split(addrs, ","), MasterName: name}, true
}

// sub returns b as seen from subtest t: helpers fail t, not its parent.
func (b *backend) sub(t *testing.T) *backend {
	c := *b
	c.t = t
	return &c
}

// eachBackend runs test once per backend, as a subtest named after it.
func eachBackend(t *testing.T, test func(t *testing.T, b *backend)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		test(t, newBackend(t, "miniredis", mr, single(&redis.Options{Addr: mr.Addr()})))
	})
	if url := os.Getenv(realRedisEnv); url != "" {
		t.Run("redis", func(t *testing.T) {
			opts, err := redis.ParseURL(url)
			if err != nil {
				t.Fatalf("%s: %v", realRedisEnv, err)
			}
			test(t, newBackend(t, "redis", nil, single(opts)))
		})
	}
	if addrs := os.Getenv(redisClusterEnv); addrs != "" {
		t.Run("cluster", func(t *testing.T) {
			test(t, newBackend(t, "cluster", nil, cluster(strings.Split(addrs, ","))))
		})
	}
	if conn, ok := sentinelConn(t); ok {
		t.Run("sentinel", func(t *testing.T) {
			test(t, newBackend(t, "sentinel", nil, connect(conn)))
		})
	}
}

// embeddedOnly runs test on miniredis alone, for what a shared real Redis
// must not be put through (being shut down).
func embeddedOnly(t *testing.T, test func(t *testing.T, b *backend)) {
	t.Helper()
	mr := miniredis.RunT(t)
	test(t, newBackend(t, "miniredis", mr, single(&redis.Options{Addr: mr.Addr()})))
}

func newBackend(t *testing.T, name string, mr *miniredis.Miniredis, dial dialer) *backend {
	t.Helper()
	var rnd [6]byte
	rand.Read(rnd[:])
	b := &backend{
		t:      t,
		name:   name,
		prefix: "askbridge-test:" + hex.EncodeToString(rnd[:]) + ":",
		clock:  newFakeClock(),
		mr:     mr,
		dial:   dial,
	}
	b.rdb = b.client()
	ctx := context.Background()
	// Bounded, so that a deployment named but not running fails each test
	// at once rather than after the client's retries.
	pingCtx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	if err := b.rdb.Ping(pingCtx).Err(); err != nil {
		t.Fatalf("%s: redis does not answer within %v: %v", name, eventually, err)
	}
	// Registered after client(), so it runs before the clients close.
	t.Cleanup(func() {
		if mr != nil {
			// Nothing may escape the prefix: the real Redis is shared.
			for _, k := range mr.Keys() {
				if !strings.HasPrefix(k, b.prefix) {
					t.Errorf("key %q is outside the store's prefix %q", k, b.prefix)
				}
			}
			return
		}
		b.deletePrefix(ctx)
	})
	return b
}

// deletePrefix deletes the keys under the test's prefix, and only those.
// On a cluster SCAN sees one node's keys, so it scans every master; behind
// a Sentinel the client is a *redis.Client on the master.
func (b *backend) deletePrefix(ctx context.Context) {
	b.t.Helper()
	var mu sync.Mutex
	var doomed []string
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, b.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			doomed = append(doomed, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := b.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		err = fmt.Errorf("unexpected client %T", c)
	}
	if err != nil {
		b.t.Errorf("scanning %s*: %v", b.prefix, err)
		return
	}
	for _, k := range doomed {
		if err := b.rdb.Unlink(ctx, k).Err(); err != nil {
			b.t.Errorf("deleting %s: %v", k, err)
		}
	}
}

// client returns a new client on the backend, as a new process would make,
// closed when the test ends.
func (b *backend) client(hooks ...redis.Hook) redis.UniversalClient {
	c, err := b.dial()
	if err != nil {
		b.t.Fatalf("%s: %v", b.name, err)
	}
	for _, h := range hooks {
		c.AddHook(h)
	}
	b.t.Cleanup(func() { c.Close() })
	return c
}

// store returns a Store on a client of its own, under the test's prefix and
// fake clock: each call is one more replica.
func (b *backend) store(opt ...func(*Options)) *Store {
	return b.storeOn(b.client(), opt...)
}

func (b *backend) storeOn(c redis.UniversalClient, opt ...func(*Options)) *Store {
	o := Options{Prefix: b.prefix, Now: b.clock.Now}
	for _, f := range opt {
		f(&o)
	}
	return New(c, o)
}

func withRecheck(d time.Duration) func(*Options) { return func(o *Options) { o.Recheck = d } }

func withRetention(d time.Duration) func(*Options) { return func(o *Options) { o.Retention = d } }

// run runs s.Run until the test ends and returns once its subscription is
// live on the server, so a wake-up published from then on reaches it.
func (b *backend) run(s *Store) {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.t.Errorf("Run: %v", err)
			}
		case <-time.After(eventually):
			b.t.Errorf("Run did not return after its context ended")
		}
	})
	b.waitSubscribed(s, 1)
	// Run wakes every waiter once its subscription is confirmed; a test
	// counting reads must not start before that.
	poll(b.t, "Run to handle its subscription", func() bool { return s.subscribed.Load() > 0 })
}

// waitSubscribed waits until each wake-up channel of s has at least n
// subscribers: the one channel, or on a cluster the channel of each shard
// (sharded pub/sub). PUBSUB NUMSUB and SHARDNUMSUB count one node's
// subscribers, so on a cluster it adds up every master's.
func (b *backend) waitSubscribed(s *Store, n int64) {
	b.t.Helper()
	var sharded []string
	if s.sharded {
		for sh := range shards {
			sharded = append(sharded, s.keys.shardWake(sh))
		}
	}
	channels := append([]string{s.keys.wake()}, sharded...)
	poll(b.t, fmt.Sprintf("%d subscriptions to each of %d wake-up channels", n, len(channels)), func() bool {
		ctx := context.Background()
		var mu sync.Mutex
		total := map[string]int64{}
		count := func(ctx context.Context, c *redis.Client) error {
			m, err := c.PubSubNumSub(ctx, s.keys.wake()).Result()
			if err == nil && len(sharded) > 0 {
				var sm map[string]int64
				sm, err = c.PubSubShardNumSub(ctx, sharded...).Result()
				maps.Copy(m, sm)
			}
			mu.Lock()
			defer mu.Unlock()
			for ch, k := range m {
				total[ch] += k
			}
			return err
		}
		var err error
		if c, ok := b.rdb.(*redis.ClusterClient); ok {
			err = c.ForEachMaster(ctx, count)
		} else {
			err = count(ctx, b.rdb.(*redis.Client))
		}
		if err != nil {
			b.t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		for _, ch := range channels {
			if total[ch] < n {
				return false
			}
		}
		return true
	})
}

// poll waits until cond holds, failing the test after a deadline. It is for
// conditions nothing signals (a server-side subscription, a counter).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	pollWithin(t, eventually, what, cond)
}

// pollWithin is poll with a deadline of its own.
func pollWithin(t *testing.T, eventually time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(eventually)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", eventually, what)
		case <-tick.C:
		}
	}
}

// recv returns the next value from ch, failing the test after a deadline.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(eventually):
		t.Fatalf("timed out after %v waiting for %s", eventually, what)
		panic("unreachable")
	}
}

// fakeClock is the stores' clock; tests move it by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// counter is a go-redis hook that counts round trips: one per command sent
// alone, one per pipeline.
type counter struct {
	mu    sync.Mutex
	trips int
	names []string
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.trips++
		c.names = append(c.names, cmd.FullName())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.trips++
		c.names = append(c.names, "pipeline")
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// count returns the round trips fn made and the commands it sent.
func (c *counter) count(fn func()) (int, []string) {
	c.mu.Lock()
	c.trips, c.names = 0, nil
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips, c.names
}

// reads is a go-redis hook that reports every HGETALL a client completes:
// a waiter has read its record when one arrives.
type reads struct {
	ch    chan string
	count atomic.Int64
}

type heldKey struct{}

// held is the first read sent with a context from hold: once it has its
// reply, it waits until release is called (at the latest when the test ends).
type held struct {
	read    chan struct{} // closed when the read has its reply
	gate    chan struct{}
	taken   atomic.Bool
	release func()
}

// hold returns a context whose first HGETALL through the hook is held.
// Binding the hold to one call's context keeps other reads (another
// waiter woken by a resubscription) from taking it.
func hold(t *testing.T, ctx context.Context) (context.Context, *held) {
	h := &held{read: make(chan struct{}), gate: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.gate) })
	t.Cleanup(h.release)
	return context.WithValue(ctx, heldKey{}, h), h
}

func newReads() *reads { return &reads{ch: make(chan string, 1000)} }

func (r *reads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *reads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "hgetall" {
			r.count.Add(1)
			select {
			case r.ch <- cmd.Args()[1].(string):
			default:
			}
			if h, ok := ctx.Value(heldKey{}).(*held); ok && h.taken.CompareAndSwap(false, true) {
				close(h.read)
				<-h.gate
			}
		}
		return err
	}
}

func (r *reads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Requests the tests create.

func questions() *seam.Questions {
	return &seam.Questions{Questions: []seam.Question{
		{
			ID:       "cleanup",
			Question: "Proceed with the destructive cleanup?",
			Header:   "Confirm",
			Options: []seam.Option{
				{Label: "Yes, delete them (Recommended)", Description: "Removes the three stale files."},
				{Label: "No, keep them"},
			},
		},
		{
			ID:          "envs",
			Question:    "Which environments?",
			Options:     []seam.Option{{Label: "staging"}, {Label: "prod"}},
			MultiSelect: true,
		},
	}}
}

func question(client, toolCallID string) NewRequest {
	return NewRequest{
		Kind:       seam.KindQuestion,
		Client:     client,
		ToolCallID: toolCallID,
		Route:      "default",
		Caller:     &seam.Caller{Agent: "agent-7", Name: "deploy-bot", Session: "run-42"},
		Questions:  questions(),
	}
}

func approval(client, toolCallID string) NewRequest {
	return NewRequest{
		Kind:       seam.KindApproval,
		Client:     client,
		ToolCallID: toolCallID,
		Route:      "ops",
		Approval: &seam.Approval{
			ToolName:      "kubectl_apply",
			CallID:        "call-9",
			Reason:        "apply the new deployment",
			DisplayReason: "Deploy web v2",
			Arguments:     []byte(`{"file":"web.yaml","namespace":"prod","replicas":3}`),
		},
	}
}

func answer() *seam.Answer {
	return &seam.Answer{Answers: []seam.AnswerItem{
		{ID: "cleanup", Selected: []string{"Yes, delete them (Recommended)"}},
		{ID: "envs", Selected: []string{"staging", "prod"}, Custom: "and dev"},
	}}
}

func mustCreate(t *testing.T, s *Store, nr NewRequest) *Record {
	t.Helper()
	rec, created, err := s.Create(context.Background(), nr)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if !created {
		t.Fatalf("Create: created = false for a new request")
	}
	// The lease it holds is the creator's alone: a read of the record, or
	// another create's answer, has none. Compared as the rest, it is left out.
	if want := s.opt.Now().Add(PostingLease).UnixMilli(); rec.Lease != want {
		t.Errorf("Create: lease %d; want %d, a posting lease from now", rec.Lease, want)
	}
	rec.Lease = 0
	return rec
}

func mustGet(t *testing.T, s *Store, id string) *Record {
	t.Helper()
	rec, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return rec
}

func answered(by string) Resolution {
	return Resolution{Status: seam.StatusAnswered, Answer: answer(), By: &Responder{Surface: "slack", UserID: by, Name: "Ada " + by}}
}

// pttl returns the key's remaining time to live in milliseconds: -1 for
// none, -2 for no key.
func (b *backend) pttl(key string) int64 {
	b.t.Helper()
	n, err := b.rdb.Do(context.Background(), "PTTL", key).Int64()
	if err != nil {
		b.t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

// logs is a slog handler that passes each record's message to a channel.
type logs struct{ ch chan string }

func newLogs() *logs { return &logs{ch: make(chan string, 100)} }

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }

func (l *logs) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.ch <- r.Message:
	default:
	}
	return nil
}

func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }

func (l *logs) WithGroup(string) slog.Handler { return l }

// next waits for a log message containing want.
func (l *logs) next(t *testing.T, want string) {
	t.Helper()
	for {
		if msg := recv(t, "a log line "+strconv.Quote(want), l.ch); strings.Contains(msg, want) {
			return
		}
	}
}

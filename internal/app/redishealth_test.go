package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/pending"
)

// reply is an error reply of Redis, as go-redis tells them: a redis.Error.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// timeout is a network timeout as Go's net package makes them: it reads
// as context.DeadlineExceeded too.
type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }
func (timeout) Is(err error) bool {
	return err.Error() == "context deadline exceeded"
}

// TestRedisHealthEdges: the rules that keep one outage one outage in the
// log, whatever order the calls on their way when it begins and ends come
// back in.
func TestRedisHealthEdges(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	quiet := int(outageQuiet / time.Millisecond)

	var logs bytes.Buffer // one goroutine
	h := &redisHealth{log: slog.New(slog.NewTextHandler(&logs, nil))}
	count := func(msg string) int { return strings.Count(logs.String(), msg) }
	for _, s := range []struct {
		what      string
		sent, now int // ms
		err       error
		call      bool
		down      bool
		begun     int // outages logged as begun so far
		ended     int // and as ended
	}{
		{"a call served", 0, 1, nil, true, false, 0, 0},
		{"a key not found", 1, 2, redis.Nil, true, false, 0, 0},
		{"a refusal of writes alone", 1, 2, reply("OOM command not allowed when used memory > 'maxmemory'"), true, false, 0, 0},
		{"a call on a closed client", 1, 2, redis.ErrClosed, true, false, 0, 0},
		{"a dial refused", 3, 4, refused, false, true, 1, 0},
		{"a connection reset while down", 3, 5, reset, true, true, 1, 0},
		{"a reply to a call sent before the outage began", 2, 6, nil, true, true, 1, 0},
		{"a reply to a call sent after it began", 7, 8, nil, true, true, 1, 0},
		{"the pool's last dial error, a moment later", 9, 9, fmt.Errorf("pool: %w", refused), true, true, 1, 0},
		{"served again", 10, 11, nil, true, true, 1, 0},
		{"served, less than the quiet time since", 12, 11 + quiet - 1, nil, true, true, 1, 0},
		{"served, the quiet time since", 12, 11 + quiet, nil, true, false, 1, 1},
		{"a failure of a call sent before it ended", 5, 12 + quiet, reset, true, false, 1, 1},
		{"a dial timing out", 20 + quiet, 21 + quiet, &net.OpError{Op: "dial", Net: "tcp", Err: timeout{}}, false, true, 2, 1},
		{"Redis loading its dataset", 22 + quiet, 23 + quiet, reply("LOADING Redis is loading the dataset in memory"), true, true, 2, 1},
		{"served", 24 + quiet, 25 + quiet, nil, true, true, 2, 1},
		{"served, the quiet time since", 26 + quiet, 25 + 2*quiet, nil, true, false, 2, 2},
	} {
		h.observe(at(s.sent), at(s.now), s.err, s.call)
		if h.down() != s.down || count("Redis is unavailable") != s.begun || count("Redis serves again") != s.ended {
			t.Fatalf("%s: down %v, %d begun, %d ended; want %v, %d, %d. Log:\n%s",
				s.what, h.down(), count("Redis is unavailable"), count("Redis serves again"), s.down, s.begun, s.ended, logs.String())
		}
	}
	for _, want := range []string{
		// The reset and the pool's error; a dial is not a call.
		fmt.Sprintf(`msg="Redis serves again" after=%v unserved_calls=2`, at(11+quiet).Sub(at(4))),
		fmt.Sprintf(`msg="Redis serves again" after=%v unserved_calls=1`, at(25+2*quiet).Sub(at(21+quiet))),
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, logs.String())
		}
	}
}

// TestClusterNodeDialsAreWatched: a Cluster's node clients dial without
// the cluster client's hooks; nodeDials, given to them through
// pending.Conn.NodeHooks, sees the first node that refuses.
func TestClusterNodeDialsAreWatched(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	h := &redisHealth{log: slog.New(slog.DiscardHandler)}
	rdb, err := pending.Connect(pending.Conn{Addrs: []string{dead}, NodeHooks: []redis.Hook{nodeDials{h}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	// No hook on the cluster client itself: the node's dial alone tells.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Get(ctx, "k").Err(); err == nil {
		t.Fatal("a GET from a node nobody listens on succeeded")
	}
	if !h.down() {
		t.Error("the node's refused dial began no outage")
	}
}

// TestDialTimeoutBeginsAnOutage: go-redis dials under a context of the
// dial's own, bounded by DialTimeout; a dial that ran out of it (a host
// that drops packets) is Redis not answering. A dial cancelled by a
// caller who gave up says nothing.
func TestDialTimeoutBeginsAnOutage(t *testing.T) {
	timedOut := func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: network, Err: timeout{}}
	}
	for _, tt := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		down bool
	}{
		{"past its deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Millisecond)
		}, true},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, false},
	} {
		h := &redisHealth{log: slog.New(slog.DiscardHandler)}
		ctx, cancel := tt.ctx()
		if _, err := h.DialHook(timedOut)(ctx, "tcp", "192.0.2.1:6379"); err == nil {
			t.Fatalf("%s: the dial succeeded", tt.name)
		}
		cancel()
		if h.down() != tt.down {
			t.Errorf("a dial %s: down %v; want %v", tt.name, h.down(), tt.down)
		}
	}
}

// TestReadyOnlyOnceThePoolDials: after as many failed dials as it has
// connections, go-redis's pool answers a call that needs a new one with
// its last dial error, dialing no more until a background dial (once a
// second) succeeds. A dial already under way when Redis came back (go-redis
// dials on, even for a caller who gave up) leaves the pool a connection on
// which a PING succeeds: /readyz must not say ready then, for a click that
// needs another connection fails.
func TestReadyOnlyOnceThePoolDials(t *testing.T) {
	mr := miniredis.RunT(t)
	var (
		mu      sync.Mutex
		up      bool // dials reach Redis; else they are refused
		hold    = true
		held    = make(chan struct{}) // closed once the first dial is under way
		release = make(chan struct{}) // lets it reach Redis
	)
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		first, reach := hold, up
		hold = false
		mu.Unlock()
		if first {
			close(held)
			<-release
			reach = true
		}
		if !reach {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connect: connection refused")}
		}
		return (&net.Dialer{}).DialContext(ctx, network, mr.Addr())
	}
	const poolSize = 2
	h := &redisHealth{log: slog.New(slog.DiscardHandler)}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), Dialer: dialer, PoolSize: poolSize, DialerRetries: 1, MaxRetries: -1})
	defer rdb.Close()
	rdb.AddHook(h)
	store := pending.New(rdb, pending.Options{Prefix: "askbridge-test:ready:", Outage: h.down})
	srv := httptest.NewServer(api.New(api.Options{Store: store, Registry: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)}).Handler())
	defer srv.Close()
	readyz := func() int {
		t.Helper()
		res, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	ctx := context.Background()
	// newConn makes a call that needs a new connection, as a click does
	// while others hold the pool's: it holds every idle one meanwhile.
	newConn := func() error {
		t.Helper()
		for range rdb.PoolStats().IdleConns {
			cn := rdb.Conn()
			defer cn.Close()
			if err := cn.Ping(ctx).Err(); err != nil {
				t.Fatalf("a PING on a connection of the pool's: %v", err)
			}
		}
		conns := rdb.PoolStats().TotalConns
		err := rdb.Ping(ctx).Err()
		if err == nil && rdb.PoolStats().TotalConns == conns {
			t.Fatal("a call was served without a new connection: the test checks nothing")
		}
		return err
	}

	// Redis is down. One call's dial is under way; as many as the pool
	// has connections fail.
	first := make(chan error, 1)
	go func() { first <- rdb.Ping(ctx).Err() }()
	<-held
	for range poolSize {
		if err := rdb.Ping(ctx).Err(); err == nil {
			t.Fatal("a PING succeeded with Redis down")
		}
	}
	// Redis is back for the dial under way only; go-redis's own dials
	// are refused still.
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the dial under way when Redis came back: %v", err)
	}
	if s := readyz(); s != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %d while a call that needs a new connection fails; want 503", s)
	}
	if err := newConn(); err == nil {
		t.Fatal("a new connection was dialed: the test does not make the state it is about")
	}

	// Redis is back for every dial: ready once calls are served again,
	// and then a call that needs a new connection has one.
	mu.Lock()
	up = true
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for readyz() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not answer 200 once Redis was back")
		}
		time.Sleep(10 * time.Millisecond) // nothing signals readiness
	}
	if err := newConn(); err != nil {
		t.Errorf("ready, but a call that needs a new connection failed: %v", err)
	}
}

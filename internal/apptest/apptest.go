// Package apptest starts real bridge replicas for tests: on the Redis named
// by BRIDGE_TEST_REDIS_URL when it is set, on an in-process miniredis
// otherwise, each test under its own key prefix.
package apptest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/config"
)

// Redis returns the URL of a Redis for t and a key prefix of t's own. Keys
// under the prefix are deleted when t ends; nothing else is touched.
func Redis(t testing.TB) (url, prefix string) {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix = "abtest:" + hex.EncodeToString(b[:]) + ":"
	url = os.Getenv("BRIDGE_TEST_REDIS_URL")
	if url == "" {
		m := miniredis.RunT(t)
		return "redis://" + m.Addr(), prefix
	}
	t.Cleanup(func() { DeletePrefix(t, url, prefix) })
	return url, prefix
}

// DeletePrefix deletes the keys under prefix with SCAN, never FLUSHDB.
func DeletePrefix(t testing.TB, url, prefix string) {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Errorf("BRIDGE_TEST_REDIS_URL: %v", err)
		return
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	DeleteKeys(t, rdb, prefix)
}

// DeleteKeys deletes the keys under prefix through rdb with SCAN, never
// FLUSHDB.
func DeleteKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleaning up %s*: %v", prefix, err)
	}
}

// Config parses yaml, points it at url and prefix, listens on a free
// loopback port, and validates it.
func Config(t testing.TB, yaml, url, prefix string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.Redis.URL = config.Secret(url)
	cfg.Redis.Prefix = prefix
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// StartYAML is Start of the config yaml (nil: the defaults) on a free
// loopback port, as adjust changes it before it is checked.
func StartYAML(t testing.TB, yaml []byte, opt app.Options, adjust ...func(*config.Config)) *app.App {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	for _, f := range adjust {
		f(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return Start(t, cfg, opt)
}

// Start builds and runs a replica of cfg until t ends, then stops it and
// checks that it stopped cleanly.
func Start(t testing.TB, cfg *config.Config, opt app.Options) *app.App {
	t.Helper()
	return StartLogged(t, cfg, opt, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// StartLogged is Start with the replica logging to log, for tests that
// read what a replica logs (that no secret reaches it, say). A cleanup
// registered before StartLogged runs after the replica has stopped.
func StartLogged(t testing.TB, cfg *config.Config, opt app.Options, log *slog.Logger) *app.App {
	t.Helper()
	r := Run(t, cfg, opt, log)
	stop := sync.OnceValue(func() error {
		r.Stop()
		select {
		case err := <-r.Done:
			if err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("app.Run: %w", err)
			}
			return nil
		case <-time.After(15 * time.Second):
			return errors.New("app did not stop within 15s")
		}
	})
	stops.Store(r.App, stop)
	t.Cleanup(func() {
		stops.Delete(r.App)
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return r.App
}

// stops holds, for each replica StartLogged runs, the function that stops
// it and waits for its Run (once, however often it is called).
var stops sync.Map // *app.App → func() error

// Stop stops a replica that Start, StartLogged or StartWatched started, as
// SIGTERM does, and waits until its Run has returned: its HTTP handlers
// have finished, the work its callbacks handed on after their acks
// (resolving, editing, telling people) is done (or cut off after
// surface.DrainGrace), and its creates have posted and recorded their
// messages. Whatever the replica was to send Slack or Discord for the
// calls made to it so far has been sent. Its Redis client is closed.
func Stop(t testing.TB, a *app.App) {
	t.Helper()
	stop, ok := stops.Load(a)
	if !ok {
		t.Fatal("apptest.Stop: not a replica that StartLogged runs")
	}
	if err := stop.(func() error)(); err != nil {
		t.Fatal(err)
	}
}

// Running is a replica whose test watches how it stops.
type Running struct {
	*app.App
	Stop func()       // cancels Run's context, as SIGTERM does
	Done <-chan error // what Run returned
}

// Run builds and runs a replica of cfg, logging to log, until Stop is
// called or t ends. Unlike Start it leaves Run's result to the test.
func Run(t testing.TB, cfg *config.Config, opt app.Options, log *slog.Logger) Running {
	t.Helper()
	a, err := app.New(cfg, log, opt)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(cancel)
	return Running{App: a, Stop: cancel, Done: done}
}

// testWriter sends log lines to t.Log, so they show only for failed tests.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// Clock is a store clock a test moves by hand: pass its Now as
// app.Options.Now.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// WaitWaiting waits until n calls are held on a's store (long-polls and
// creates with ?wait=), failing t after 10 s.
func WaitWaiting(t testing.TB, a *app.App, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); a.Store().Waiting() != n; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls held after 10s; want %d", a.Store().Waiting(), n)
		}
	}
}

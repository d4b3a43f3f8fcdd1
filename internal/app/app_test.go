package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// lines is an io.Writer that hands each line written to it to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		select {
		case l <- line:
		default: // nobody reads any more
		}
	}
	return len(p), nil
}

// What go-redis logs on its own (here: dials to a Redis that is down)
// reaches the bridge's logger as structured lines, not stderr as plain
// text that a JSON log pipeline can't read. A Redis down at the start is
// an outage like any other: one warning, go-redis's dial lines at debug
// (they were four warnings and a second one of the bridge's).
func TestRedisClientLinesGoToTheLogger(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "redis://" + ln.Addr().String() + "/0" // nothing listens once closed
	ln.Close()

	out := make(lines, 1000)
	log := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := apptest.Config(t, "", down, "redislog:")
	a, err := app.New(cfg, log, app.Options{})
	if err != nil {
		t.Fatalf("app.New with Redis down: %v", err)
	}
	defer a.Close()

	var warnings []string
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line := <-out:
			var rec struct{ Level, Msg, Detail string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("a log line is not JSON: %q", line)
			}
			if rec.Level == "WARN" && !strings.HasPrefix(rec.Msg, "no api.tokens") {
				warnings = append(warnings, rec.Msg)
			}
			if rec.Msg == "redis client" {
				if rec.Level != "DEBUG" || !strings.Contains(rec.Detail, "dial") {
					t.Fatalf("go-redis's line: %q; want a dial failure at debug, the outage known", line)
				}
				if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "Redis is unavailable") {
					t.Errorf("warnings before it: %q; want the outage's alone", warnings)
				}
				return
			}
		case <-deadline:
			t.Fatal("no line of go-redis reached the bridge's logger within 20s of Redis being down")
		}
	}
}

// A Redis that may evict keys when it fills is named at start; one that
// refuses writes instead (noeviction) or has no memory limit is not.
func TestWarnsOfARedisThatEvicts(t *testing.T) {
	srv := apptest.StartRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", srv.Port)})
	defer rdb.Close()
	for _, tc := range []struct {
		maxmemory, policy string
		warned            bool
	}{
		{"100mb", "allkeys-lru", true},
		{"100mb", "volatile-ttl", true},
		{"100mb", "noeviction", false},
		{"0", "allkeys-lru", false},
	} {
		t.Run(tc.maxmemory+"/"+tc.policy, func(t *testing.T) {
			ctx := context.Background()
			for k, v := range map[string]string{"maxmemory": tc.maxmemory, "maxmemory-policy": tc.policy} {
				if err := rdb.ConfigSet(ctx, k, v).Err(); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&out, nil))
			a, err := app.New(apptest.Config(t, "", srv.URL(), "evict:"), log, app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a.Close() // New has checked; the log is written
			warned := strings.Contains(out.String(), `"maxmemory_policy":"`+tc.policy+`"`)
			if warned != tc.warned {
				t.Errorf("warned of eviction: %v, want %v; log:\n%s", warned, tc.warned, out.String())
			}
			// bridge config check --connect says the same.
			var found []string
			for _, f := range app.Check(ctx, apptest.Config(t, "", srv.URL(), "evict:"), http.DefaultClient, false) {
				found = append(found, f.String())
			}
			noted := slices.ContainsFunc(found, func(f string) bool {
				return strings.HasPrefix(f, "note    redis 127.0.0.1:") && strings.Contains(f, "maxmemory-policy is "+tc.policy+" with a memory limit")
			})
			if noted != tc.warned || !slices.Contains(found, "ok      redis: answers PING") {
				t.Errorf("config check --connect found %q; want PING answered, eviction noted: %v", found, tc.warned)
			}
		})
	}
}

// A replica told to stop says so when told, and again once it has.
func TestStopIsLogged(t *testing.T) {
	url, prefix := apptest.Redis(t)
	out := make(lines, 1000)
	a := apptest.Run(t, apptest.Config(t, "", url, prefix), app.Options{}, slog.New(slog.NewJSONHandler(out, nil)))
	done := a.Done
	want := []string{"askbridge listening", "stopping: ", "askbridge stopped"}
	deadline := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case line := <-out:
			var rec struct{ Msg string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("a log line is not JSON: %q", line)
			}
			if strings.HasPrefix(rec.Msg, want[0]) {
				if want = want[1:]; len(want) == 2 {
					a.Stop() // listening: now stop it
				}
			}
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			done = nil // Run has returned; its last line may still be in out
		case <-deadline:
			t.Fatalf("still waiting for a log line %q", want[0])
		}
	}
	if done != nil {
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// An agent asking after a request an embedded-Redis bridge made before it
// restarted is told why it is gone; with a Redis of its own, the bridge
// does not say so.
func TestNotFoundSaysInMemory(t *testing.T) {
	embedded := apptest.Start(t, apptest.Config(t, "", "", "abtest:mem:"), app.Options{})
	url, prefix := apptest.Redis(t)
	shared := apptest.Start(t, apptest.Config(t, "", url, prefix), app.Options{})
	for _, tc := range []struct {
		a    *app.App
		want string
	}{
		{embedded, "no such request (if it was made before this bridge last started, it is gone: this bridge keeps requests in memory, with no redis.url)"},
		{shared, "no such request"},
	} {
		code, rec := apptest.Do(t, tc.a.URL(), "GET", "/v1/questions/q_gone?wait=1s", nil)
		var e struct{ Code, Message string }
		json.Unmarshal(rec.Fields["error"], &e)
		if code != 404 || e.Code != "NOT_FOUND" || e.Message != tc.want {
			t.Errorf("GET %s: %d %+v; want 404 NOT_FOUND %q", tc.a.URL(), code, e, tc.want)
		}
	}
	// Other 404s are not requests lost in a restart.
	id := apptest.Create(t, embedded.URL(), "/v1/questions", map[string]any{"questions": []any{map[string]any{"id": "q", "question": "Deploy?"}}})
	for _, path := range []string{"/v1/nosuchthing", "/v1/approvals/" + id} {
		code, rec := apptest.Do(t, embedded.URL(), "GET", path, nil)
		if msg := rec.Raw("error"); code != 404 || strings.Contains(msg, "last started") {
			t.Errorf("GET %s: %d %s; want a 404 that says nothing of a restart", path, code, msg)
		}
	}
}

package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/bench"
	"github.com/askbridge/askbridge/internal/config"
)

// The test binary, re-run with one of these set, is a process of the run:
// the memory phase's client, or a replica serving a config file.
const (
	waitClientEnv = "ASKBRIDGE_BENCH_WAIT_CLIENT"
	serveEnv      = "ASKBRIDGE_BENCH_SERVE"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(waitClientEnv); addr != "" {
		os.Exit(bench.WaitClient(addr, os.Stdin, os.Stdout))
	}
	if path := os.Getenv(serveEnv); path != "" {
		os.Exit(serve(path))
	}
	goleak.VerifyTestMain(m)
}

// serve is `bridge serve --config path` in the test binary, until SIGTERM.
func serve(path string) int {
	cfg, err := config.Load(path)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})), app.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func replica(config string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+config)
	cmd.Stderr = os.Stderr
	return cmd
}

func waitClient(addr string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), waitClientEnv+"="+addr)
	cmd.Stderr = os.Stderr
	return cmd
}

// A small run goes through every phase on the test Redis (or a Redis of
// its own), and every figure it reports comes from traffic that happened.
func TestRunReportsEveryPhase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := bench.Run(ctx, bench.Options{
		Redis:      os.Getenv("BRIDGE_TEST_REDIS_URL"),
		Replicas:   2,
		Samples:    60,
		Rate:       100,
		Duration:   time.Second,
		Agents:     8,
		Waiters:    300,
		Serve:      replica,
		WaitClient: waitClient,
		Progress:   &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}

	for name, l := range map[string]bench.Latency{
		"redis floor": rep.Floors.RedisRTT, "pub/sub floor": rep.Floors.PubSub, "http floor": rep.Floors.HTTP,
	} {
		if l.N != 60 || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
			t.Errorf("%s = %+v; want 60 ordered samples", name, l)
		}
	}
	if p := rep.Paced; p == nil || p.Every != 2*time.Millisecond {
		t.Errorf("paced floors = %+v; want them paced as the clicks, 2ms by default", rep.Paced)
	} else {
		for name, l := range map[string]bench.Latency{"redis": p.RedisRTT, "pub/sub": p.PubSub, "http": p.HTTP, "click path": p.ClickPath} {
			if l.N != 60 || l.P50 <= 0 || l.P50 > l.P99 {
				t.Errorf("paced %s floor = %+v; want 60 samples", name, l)
			}
		}
	}
	if n := rep.Wake.Same.N + rep.Wake.Cross.N; n != 60 || rep.Wake.Same.N == 0 || rep.Wake.Cross.N == 0 || rep.Wake.Ack.N != 60 {
		t.Errorf("wake samples: %d same, %d cross; want 60 in all, some of each", rep.Wake.Same.N, rep.Wake.Cross.N)
	}
	if l := rep.Load; l.Clicks == 0 || l.Ack.N != l.Clicks || l.Same.N+l.Cross.N != l.Clicks {
		t.Errorf("load = %+v; want every click acknowledged and answered", l)
	}
	if th := rep.Throughput; th.Lifecycles == 0 || th.PerSecond <= 0 || th.RoundTrips < 2 || th.Lifecycle.N != th.Lifecycles ||
		th.CPU.Replicas <= 0 || th.CPU.Bench <= 0 {
		t.Errorf("throughput = %+v; want lifecycles, at least the create and resolve round trips, and CPU spent", th)
	}
	if m := rep.Memory; m == nil || m.Waiters != 300 || m.BytesPerWaiter <= 0 || m.Goroutines < 1 {
		t.Errorf("memory = %+v; want 300 waiters, each costing something", rep.Memory)
	}
	c := rep.Checks
	want := int64(60 + rep.Load.Clicks + rep.Throughput.Lifecycles)
	if c.Errors != 0 || c.Answered < want || c.Posted != c.Answered+300 || c.Unedited != 0 || c.Edited < c.Posted || c.EditedLive != 0 {
		t.Errorf("checks = %+v; want at least %d answers, each posted message (300 cancelled ones too) edited", c, want)
	}
	if len(rep.Targets) != 5 {
		t.Errorf("targets = %+v; want the five promised figures", rep.Targets)
	}
	for _, tg := range rep.Targets {
		// Judged on what the replicas' CPU gives 2 cores of their own; the
		// bench itself shares this machine.
		if strings.HasPrefix(tg.Name, "lifecycles per second") &&
			(tg.Value != rep.Throughput.Capacity || !strings.Contains(tg.Note, fmt.Sprintf("measured %.0f/s", rep.Throughput.PerSecond))) {
			t.Errorf("lifecycles target = %+v; want the projection %.0f, the measured %.0f/s noted", tg, rep.Throughput.Capacity, rep.Throughput.PerSecond)
		}
		if strings.HasPrefix(tg.Name, "click-to-waiter") && !strings.Contains(tg.Note, "paced as the clicks, ") {
			t.Errorf("click-to-waiter target = %+v; want its ratio to the paced floors noted", tg)
		}
	}

	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"floor: pub/sub hop", "paced floor: pub/sub hop, each ", "click-to-waiter, cross replica", "lifecycles/s", "Redis round trips", "memory: 300 waiters", "targets:"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("the table has no %q:\n%s", s, table.String())
		}
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	json.Unmarshal(raw, &back)
	if fl, _ := back["floors"].(map[string]any); fl == nil || fl["pubsub"].(map[string]any)["p99_us"].(float64) <= 0 {
		t.Errorf("the JSON has no pub/sub floor in µs: %s", raw)
	}
	if fl, _ := back["paced_floors"].(map[string]any); fl == nil || fl["every_us"].(float64) <= 0 || fl["pubsub"].(map[string]any)["p99_us"].(float64) <= 0 {
		t.Errorf("the JSON has no paced floors in µs: %s", raw)
	}
	if !strings.Contains(progress.String(), "throughput") {
		t.Errorf("no progress was written:\n%s", progress.String())
	}
}

// The bench finds a request's id and a message's controls by searching the
// blocks' JSON; it must find what decoding finds, and nothing in text.
func TestBlocksSearch(t *testing.T) {
	for _, c := range []struct {
		blocks string
		id     string
		live   bool
	}{
		{`[{"type":"section","text":{"type":"mrkdwn","text":"Deploy?"}},{"type":"actions","elements":[{"type":"button","action_id":"ab:pick:k2isitc7kp3zekqe:0:1","text":{"type":"plain_text","text":"No"}}]}]`, "k2isitc7kp3zekqe", true},
		{`[{"type":"section","text":{"type":"mrkdwn","text":"a \"type\":\"actions\" and \"action_id\":\"ab:pick:fake:0:0\" in text"}}]`, "", false},
		{`[{"type":"input","element":{"type":"plain_text_input","action_id":"x"}}]`, "", true},
	} {
		if got := bench.RequestID(c.blocks); got != c.id {
			t.Errorf("RequestID(%s) = %q; want %q", c.blocks, got, c.id)
		}
		if got := bench.HasControls(c.blocks); got != c.live {
			t.Errorf("HasControls(%s) = %v; want %v", c.blocks, got, c.live)
		}
	}
}

// cancelOn is a progress writer that cancels a run when a line starts with
// prefix.
type cancelOn struct {
	prefix string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), c.prefix) {
		c.cancel()
	}
	return len(p), nil
}

// A run on a Redis Cluster (BRIDGE_TEST_REDIS_CLUSTER's seeds) holds every
// check, measures its floors there, and leaves no key behind on any master.
func TestRunOnARedisCluster(t *testing.T) {
	seeds := os.Getenv("BRIDGE_TEST_REDIS_CLUSTER")
	if seeds == "" {
		t.Skip("BRIDGE_TEST_REDIS_CLUSTER is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ",")})
	defer rdb.Close()
	benchKeys := func() int {
		var n atomic.Int64
		err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			keys, err := c.Keys(ctx, "abbench:*").Result()
			n.Add(int64(len(keys)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return int(n.Load())
	}
	before := benchKeys()

	var progress bytes.Buffer
	rep, err := bench.Run(ctx, bench.Options{
		RedisCluster: strings.Split(seeds, ","),
		Replicas:     2,
		Samples:      40,
		Rate:         100,
		Duration:     time.Second,
		Agents:       8,
		Waiters:      -1,
		Serve:        replica,
		Progress:     &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	if !strings.Contains(rep.Machine.Redis, "Redis Cluster of 3 masters") {
		t.Errorf("redis = %q; want the cluster named", rep.Machine.Redis)
	}
	if l := rep.Floors.PubSub; l.N != 40 || l.P50 <= 0 {
		t.Errorf("pub/sub floor = %+v; want 40 samples", l)
	}
	c := rep.Checks
	if want := int64(40 + rep.Load.Clicks + rep.Throughput.Lifecycles); c.Errors != 0 || c.Answered < want || c.Unedited != 0 || c.EditedLive != 0 {
		t.Errorf("checks = %+v; want at least %d answers and every message edited", c, want)
	}
	if th := rep.Throughput; !th.ServerCounted || th.ServerCmds <= 0 || th.CPU.Redis <= 0 {
		t.Errorf("throughput = %+v; want the masters' counters summed", th)
	}
	if after := benchKeys(); after != before {
		t.Errorf("%d abbench: keys on the masters after the run; %d before", after, before)
	}
}

// A run stopped part way (Ctrl-C) is an error, not a short report that
// passes its checks.
func TestRunStoppedIsAnError(t *testing.T) {
	for _, phase := range []string{"load:", "throughput:", "memory:"} {
		t.Run(phase, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := bench.Run(ctx, bench.Options{
				Redis: os.Getenv("BRIDGE_TEST_REDIS_URL"), Replicas: 1, Samples: 5, Rate: 50,
				Duration: time.Second, Agents: 2, Waiters: 50, Serve: replica, WaitClient: waitClient,
				Progress: cancelOn{phase, cancel},
			})
			if err == nil || !errors.Is(err, context.Canceled) {
				t.Fatalf("Run stopped at %q = %+v, %v; want a context.Canceled error", phase, rep, err)
			}
		})
	}
}

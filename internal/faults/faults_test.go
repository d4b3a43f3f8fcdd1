package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
)

// call is one API call's answer.
type call struct {
	status int
	body   map[string]any
	raw    map[string]json.RawMessage
	err    error // the connection failed
}

func do(ctx context.Context, method, url string, body any) call {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return call{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return call{err: err}
	}
	defer resp.Body.Close()
	c := call{status: resp.StatusCode}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.err = err
		return c
	}
	_ = json.Unmarshal(raw, &c.body)
	_ = json.Unmarshal(raw, &c.raw)
	return c
}

func question(toolCallID string) map[string]any {
	return map[string]any{
		"tool_call_id": toolCallID,
		"questions": []any{map[string]any{
			"id": "envs", "question": "Deploy to which environment?", "header": "Deploy",
			"options": []any{map[string]any{"label": "staging"}, map[string]any{"label": "prod"}},
		}},
		"caller": map[string]any{"name": "deploy-bot", "session": "run-42"},
	}
}

func answerFor(i int) map[string]any {
	return map[string]any{"answers": []any{map[string]any{"id": "envs", "selected": []string{}, "custom": fmt.Sprintf("answer %d", i)}}}
}

func wantAnswer(i int) string {
	return fmt.Sprintf(`{"answers":[{"id":"envs","selected":[],"custom":"answer %d"}]}`, i)
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// buildBridge builds cmd/bridge into a temporary directory.
func buildBridge(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bridge")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/askbridge/askbridge/cmd/bridge").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is a bridge replica running as its own process.
type process struct {
	url string
	cmd *exec.Cmd
	log *bytes.Buffer
}

// startProcess runs `bridge serve --config` on the Redis at redisURL under
// prefix and waits until it is ready.
func startProcess(t *testing.T, bin, redisURL, prefix string) *process {
	t.Helper()
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	yaml := fmt.Sprintf("listen: 127.0.0.1:%d\nredis:\n  url: %q\n  prefix: %q\n", port, redisURL, prefix)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &process{url: fmt.Sprintf("http://127.0.0.1:%d", port), log: &bytes.Buffer{}}
	p.cmd = exec.Command(bin, "serve", "--config", cfg)
	p.cmd.Stderr = &syncWriter{w: p.log}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("bridge process log:\n%s", p.log)
		}
	})
	waitReady(t, p.url)
	return p
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// waitReady polls /readyz, which signals nothing, until it answers 200.
func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c := do(context.Background(), http.MethodGet, url+"/readyz", nil); c.err == nil && c.status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not ready after 20s", url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waiters reads the askbridge_waiters gauge of the replica at url.
func waiters(t *testing.T, url string) string {
	t.Helper()
	c, err := http.Get(url + "/metrics")
	if err != nil {
		return ""
	}
	defer c.Body.Close()
	b, _ := io.ReadAll(c.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "askbridge_waiters "); ok {
			return v
		}
	}
	return ""
}

// realRedis returns a real Redis for t: BRIDGE_TEST_REDIS_URL under a
// prefix of t's own, or a redis-server of t's own.
func realRedis(t *testing.T) (url, prefix string) {
	t.Helper()
	if os.Getenv("BRIDGE_TEST_REDIS_URL") != "" {
		return apptest.Redis(t)
	}
	srv := apptest.StartRedisServer(t)
	_, prefix = apptest.Redis(t)
	return srv.URL(), prefix
}

// TestFaultKill9 runs a replica as a process, has agents long-poll on it,
// kills it with SIGKILL, and has the agents re-attach on another replica by
// id or by tool_call_id. Every answer reaches its agent; none is lost,
// none is doubled.
func TestFaultKill9(t *testing.T) {
	url, prefix := realRedis(t)
	bin := buildBridge(t)
	a := startProcess(t, bin, url, prefix)
	b := apptest.Start(t, apptest.Config(t, "", url, prefix), app.Options{})
	ctx := context.Background()

	const n = 6
	ids := make([]string, n)
	for i := range ids {
		c := do(ctx, http.MethodPost, a.url+"/v1/questions", question(fmt.Sprintf("call-%d", i)))
		if c.err != nil || c.status != http.StatusCreated {
			t.Fatalf("create on the process: %d %v %v", c.status, c.body, c.err)
		}
		ids[i] = c.body["id"].(string)
	}
	// Every agent long-polls on the process.
	broken := make(chan int, n)
	for i, id := range ids {
		go func() {
			c := do(ctx, http.MethodGet, a.url+"/v1/questions/"+id+"?wait=60s", nil)
			if c.err == nil {
				t.Errorf("agent %d: the long-poll on the killed replica ended with %d %v; want a broken connection", i, c.status, c.body)
			}
			broken <- i
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for waiters(t, a.url) != fmt.Sprint(n) {
		if time.Now().After(deadline) {
			t.Fatalf("the process has %q waiters; want %d", waiters(t, a.url), n)
		}
		time.Sleep(10 * time.Millisecond) // a gauge signals nothing
	}

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	for range n {
		select {
		case <-broken:
		case <-time.After(10 * time.Second):
			t.Fatal("a long-poll on the killed replica did not end")
		}
	}

	// One is answered before its agent is back: the answer must wait for it.
	if c := do(ctx, http.MethodPost, b.URL()+"/v1/questions/"+ids[0]+"/answer", answerFor(0)); c.status != http.StatusOK {
		t.Fatalf("answer %s on the survivor: %d %v", ids[0], c.status, c.body)
	}
	// The agents re-attach on the survivor: half by id, half by tool_call_id.
	got := make(chan call, n)
	for i, id := range ids {
		path := "/v1/questions/" + id + "?wait=30s"
		if i%2 == 1 {
			path = fmt.Sprintf("/v1/questions?tool_call_id=call-%d&wait=30s", i)
		}
		go func() { got <- do(ctx, http.MethodGet, b.URL()+path, nil) }()
	}
	for b.Store().Waiting() < n-1 {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("%d agents re-attached; want %d", b.Store().Waiting(), n-1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A third replica answers the rest, each twice: the second is refused.
	c := apptest.Start(t, apptest.Config(t, "", url, prefix), app.Options{})
	for i, id := range ids[1:] {
		if r := do(ctx, http.MethodPost, c.URL()+"/v1/questions/"+id+"/answer", answerFor(i+1)); r.status != http.StatusOK {
			t.Fatalf("answer %s: %d %v", id, r.status, r.body)
		}
		if r := do(ctx, http.MethodPost, b.URL()+"/v1/questions/"+id+"/answer", answerFor(99)); r.status != http.StatusConflict {
			t.Errorf("a second answer to %s: %d %v; want 409", id, r.status, r.body)
		}
	}
	answers := map[string]string{}
	for range n {
		var r call
		select {
		case r = <-got:
		case <-time.After(40 * time.Second):
			t.Fatal("a re-attached agent got no answer")
		}
		if r.err != nil || r.status != http.StatusOK || r.body["status"] != "answered" {
			t.Fatalf("a re-attached agent got %d %v %v", r.status, r.body, r.err)
		}
		answers[r.body["id"].(string)] = string(r.raw["answer"])
	}
	for i, id := range ids {
		if answers[id] != wantAnswer(i) {
			t.Errorf("agent %d got %s; want %s", i, answers[id], wantAnswer(i))
		}
	}
}

// TestClusterReplicas runs two replicas on the Redis Cluster of
// BRIDGE_TEST_REDIS_CLUSTER through redis.addrs: requests on every shard,
// agents waiting on one replica, answers arriving on the other.
func TestClusterReplicas(t *testing.T) {
	seeds := os.Getenv("BRIDGE_TEST_REDIS_CLUSTER")
	if seeds == "" {
		t.Skip("BRIDGE_TEST_REDIS_CLUSTER is not set")
	}
	_, prefix := apptest.Redis(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ",")})
	t.Cleanup(func() {
		ctx := context.Background()
		err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
			return iter.Err()
		})
		if err != nil {
			t.Errorf("cleaning up %s*: %v", prefix, err)
		}
		rdb.Close()
	})
	replicasAcross(t, fmt.Sprintf("redis: {addrs: [%s], prefix: %q}", seeds, prefix))
}

// TestSentinelReplicas runs two replicas through redis.addrs and
// redis.master_name on the master that the Sentinel of
// BRIDGE_TEST_REDIS_SENTINEL ("host:port[,host:port...]/master-name", as
// .ci/redis-sentinel.sh starts) watches: agents waiting on one replica,
// answers arriving on the other.
func TestSentinelReplicas(t *testing.T) {
	v := os.Getenv("BRIDGE_TEST_REDIS_SENTINEL")
	if v == "" {
		t.Skip("BRIDGE_TEST_REDIS_SENTINEL is not set")
	}
	sentinels, master, ok := strings.Cut(v, "/")
	if !ok || sentinels == "" || master == "" {
		t.Fatalf("BRIDGE_TEST_REDIS_SENTINEL=%q; want host:port[,host:port...]/master-name", v)
	}
	_, prefix := apptest.Redis(t)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: strings.Split(sentinels, ",")})
	t.Cleanup(func() {
		apptest.DeleteKeys(t, rdb, prefix)
		rdb.Close()
	})
	replicasAcross(t, fmt.Sprintf("redis: {addrs: [%s], master_name: %q, prefix: %q}", sentinels, master, prefix))
}

// replicasAcross starts two replicas with the redis section redisYAML and
// has 40 agents create requests on one and wait there while every answer
// arrives on the other.
func replicasAcross(t *testing.T, redisYAML string) {
	t.Helper()
	replica := func() *app.App {
		cfg, err := config.Parse([]byte(redisYAML))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = "127.0.0.1:0"
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return apptest.Start(t, cfg, app.Options{})
	}
	a, b := replica(), replica()
	ctx := context.Background()
	const n = 40
	got := make(chan call, n)
	ids := make([]string, n)
	for i := range ids {
		c := do(ctx, http.MethodPost, a.URL()+"/v1/questions", question(fmt.Sprintf("call-%d", i)))
		if c.status != http.StatusCreated {
			t.Fatalf("create: %d %v %v", c.status, c.body, c.err)
		}
		ids[i] = c.body["id"].(string)
		go func() { got <- do(ctx, http.MethodGet, a.URL()+"/v1/questions/"+ids[i]+"?wait=30s", nil) }()
	}
	if c := do(ctx, http.MethodGet, b.URL()+"/v1/questions", nil); c.status != http.StatusOK || len(c.body["questions"].([]any)) != n {
		t.Fatalf("list on the other replica: %d %v", c.status, c.body)
	}
	for i, id := range ids {
		if c := do(ctx, http.MethodPost, b.URL()+"/v1/questions/"+id+"/answer", answerFor(i)); c.status != http.StatusOK {
			t.Fatalf("answer: %d %v", c.status, c.body)
		}
	}
	for range n {
		select {
		case c := <-got:
			if c.status != http.StatusOK || c.body["status"] != "answered" {
				t.Fatalf("a waiting agent got %d %v %v", c.status, c.body, c.err)
			}
		case <-time.After(40 * time.Second):
			t.Fatal("a waiting agent got no answer")
		}
	}
}

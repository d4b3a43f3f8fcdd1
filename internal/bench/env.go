package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// The bench's Slack workspace and its people.
const (
	benchChannel = "C0BENCH"
	benchTeam    = "T0001"
)

// redisServer is the Redis a run uses: one it started, or one it was
// given, or a Redis Cluster it was given.
type redisServer struct {
	url   string   // a Redis's redis:// URL
	addrs []string // or a Redis Cluster's seed addresses
	kind  string   // what it is, for the report
	given bool     // given, not started: the run deletes its keys after
	stop  func()
}

// startRedis connects to the Redis Cluster whose seeds are addrs, or to
// url, or with neither starts a redis-server on a free loopback port (an
// embedded miniredis when there is no redis-server to start). A Redis it
// starts keeps nothing on disk.
func startRedis(ctx context.Context, url string, addrs []string) (*redisServer, error) {
	switch {
	case len(addrs) > 0 && url != "":
		return nil, errors.New("bench: give a Redis URL or a Redis Cluster's addresses, not both")
	case len(addrs) > 0:
		s := &redisServer{addrs: addrs, kind: "Redis Cluster given", given: true, stop: func() {}}
		rdb, err := s.connect(1)
		if err != nil {
			return nil, err
		}
		defer rdb.Close()
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("redis cluster %s: %w", strings.Join(addrs, ","), err)
		}
		if state := infoField(info, "cluster_state"); state != "ok" {
			return nil, fmt.Errorf("redis cluster %s: cluster_state is %q, not ok", strings.Join(addrs, ","), state)
		}
		return s, nil
	case url != "":
		return &redisServer{url: url, kind: "given", given: true, stop: func() {}}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		e, err := pending.StartEmbedded()
		if err != nil {
			return nil, err
		}
		return &redisServer{url: e.URL(), kind: "embedded miniredis (no redis-server on PATH)", stop: e.Close}, nil
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := orphaned(exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s := &redisServer{url: fmt.Sprintf("redis://127.0.0.1:%d/0", port), kind: "redis-server started by the bench", stop: func() {
		cmd.Process.Kill()
		<-exited
	}}
	// Wait until it answers PING, or it exits, or 10 s pass.
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(ctx).Err() != nil {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("redis-server exited: %v", err)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("redis-server did not answer PING within 10s")
		}
	}
	return s, nil
}

// connect returns a client of the run's Redis (a cluster client on a
// cluster) with pool connections per node.
func (s *redisServer) connect(pool int) (redis.UniversalClient, error) {
	if len(s.addrs) > 0 {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.addrs, PoolSize: pool}), nil
	}
	opt, err := redis.ParseURL(s.url)
	if err != nil {
		return nil, errors.New("redis url: not a redis:// URL")
	}
	opt.PoolSize = pool
	return redis.NewClient(opt), nil
}

// eachNode runs fn on every master of a cluster, or on the one Redis.
func eachNode(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, fn)
	}
	return fn(ctx, rdb.(*redis.Client))
}

// configYAML is where the replicas' config finds this Redis.
func (s *redisServer) configYAML() string {
	if len(s.addrs) > 0 {
		q := make([]string, len(s.addrs))
		for i, a := range s.addrs {
			q[i] = strconv.Quote(a)
		}
		return "addrs: [" + strings.Join(q, ", ") + "]"
	}
	return "url: " + strconv.Quote(s.url)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// serverStats are a Redis server's counters from INFO.
type serverStats struct {
	commands, netIn, netOut int64
	cpu                     float64 // seconds, user and system
	known                   bool    // whether INFO gave them (miniredis does not)
}

// readServerStats sums the counters of every master of a cluster, or
// reads the one Redis's.
func readServerStats(ctx context.Context, rdb redis.UniversalClient) serverStats {
	var mu sync.Mutex
	total := serverStats{known: true}
	err := eachNode(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		s := nodeStats(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		total = serverStats{commands: total.commands + s.commands, netIn: total.netIn + s.netIn, netOut: total.netOut + s.netOut,
			cpu: total.cpu + s.cpu, known: total.known && s.known}
		return nil
	})
	if err != nil {
		return serverStats{}
	}
	return total
}

func nodeStats(ctx context.Context, rdb *redis.Client) serverStats {
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		return serverStats{}
	}
	s := serverStats{known: true}
	for field, p := range map[string]*int64{
		"total_commands_processed": &s.commands,
		"total_net_input_bytes":    &s.netIn,
		"total_net_output_bytes":   &s.netOut,
	} {
		v, err := strconv.ParseInt(infoField(info, field), 10, 64)
		*p, s.known = v, s.known && err == nil
	}
	cpu, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return serverStats{}
	}
	for _, field := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := strconv.ParseFloat(infoField(cpu, field), 64)
		s.cpu, s.known = s.cpu+v, s.known && err == nil
	}
	return s
}

func (s serverStats) sub(t serverStats) serverStats {
	return serverStats{commands: s.commands - t.commands, netIn: s.netIn - t.netIn, netOut: s.netOut - t.netOut,
		cpu: s.cpu - t.cpu, known: s.known && t.known}
}

// replica is one bridge replica: a process serving the bench's config.
type replica struct {
	index  int
	url    string
	cmd    *exec.Cmd
	exited chan error
}

// URL is the replica's base URL.
func (r *replica) URL() string { return r.url }

// cluster is what a run runs against: a Redis, a fake Slack and the bridge
// replicas that share them.
type cluster struct {
	redis    *redisServer
	prefix   string
	slack    *slacktest.FakeSlack
	replicas []*replica
	dir      string // holds the replicas' config, which holds secrets
	yaml     string // the config, listen aside
	token    string // the agents' API token
	secret   string // the Slack signing secret
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startCluster starts n replica processes with serve on the Redis rs,
// sharing one fake Slack, under a key prefix of the run's own.
func startCluster(ctx context.Context, rs *redisServer, n int, serve func(config string) *exec.Cmd) (c *cluster, err error) {
	c = &cluster{
		redis:  rs,
		prefix: "abbench:" + randomHex(6) + ":",
		token:  "bench-" + randomHex(16),
		secret: randomHex(16),
	}
	botToken := "xoxb-bench-" + randomHex(12)
	c.slack = slacktest.NewServer(botToken)
	if c.dir, err = os.MkdirTemp("", "askbridge-bench-"); err != nil {
		c.slack.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			c.close(context.Background()) // ctx may be what ended the start
		}
	}()
	c.yaml = fmt.Sprintf(`
redis:
  %s
  prefix: %q
api:
  tokens:
    - {name: agents, token: %q, scopes: [ask]}
slack:
  bot_token: %q
  signing_secret: %q
  api_url: %q
routes:
  - name: default
    targets:
      - slack:
          channel: %s
log:
  level: error
`, rs.configYAML(), c.prefix, c.token, botToken, c.secret, c.slack.URL, benchChannel)
	for i := range n {
		r, err := c.startReplica(ctx, i, serve)
		if err != nil {
			return nil, err
		}
		c.replicas = append(c.replicas, r)
	}
	return c, nil
}

// startReplica starts replica i on a free port and waits until it is
// ready.
func (c *cluster) startReplica(ctx context.Context, i int, serve func(config string) *exec.Cmd) (*replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(c.dir, fmt.Sprintf("replica-%d.yaml", i))
	yaml := fmt.Sprintf("listen: 127.0.0.1:%d\n%s", port, c.yaml)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	r := &replica{index: i, url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: orphaned(serve(path)), exited: make(chan error, 1)}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("replica %d: %w", i, err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	probe := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := probe.Get(r.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		select {
		case err := <-r.exited:
			return nil, fmt.Errorf("replica %d exited before it was ready: %v", i, err)
		case <-ctx.Done():
			r.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("replica %d was not ready within 15s", i)
		}
	}
}

// stop stops the replica with SIGTERM, as an orchestrator does, and
// kills it if it has not stopped in 15 s.
func (r *replica) stop() error {
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		if err != nil {
			return fmt.Errorf("replica %d: %w", r.index, err)
		}
		return nil
	case <-time.After(15 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
		return fmt.Errorf("replica %d did not stop within 15s of SIGTERM", r.index)
	}
}

// metrics reads unlabelled metrics from the replica's /metrics.
func (r *replica) metrics(ctx context.Context, client *http.Client, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("replica %d metrics: %w", r.index, err)
	}
	defer resp.Body.Close()
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if ok && slices.Contains(names, name) {
			out[name], _ = strconv.ParseFloat(v, 64)
		}
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("replica %d metrics: no %s", r.index, name)
		}
	}
	return out, sc.Err()
}

// cost is what the replicas spent: Redis round trips and commands, CPU
// seconds and bytes of heap allocated.
type cost struct{ trips, commands, cpu, alloc float64 }

func (c cost) sub(d cost) cost {
	return cost{c.trips - d.trips, c.commands - d.commands, c.cpu - d.cpu, c.alloc - d.alloc}
}

// costs sums the replicas' costs so far.
func (f *flow) costs(ctx context.Context) (cost, error) {
	var c cost
	for _, r := range f.c.replicas {
		m, err := r.metrics(ctx, f.client, "askbridge_redis_round_trips_total", "askbridge_redis_commands_total", "process_cpu_seconds_total", "go_memstats_alloc_bytes_total")
		if err != nil {
			return cost{}, err
		}
		c.trips += m["askbridge_redis_round_trips_total"]
		c.commands += m["askbridge_redis_commands_total"]
		c.cpu += m["process_cpu_seconds_total"]
		c.alloc += m["go_memstats_alloc_bytes_total"]
	}
	return c, nil
}

// close stops the replicas and the fake Slack, and deletes the run's keys
// from a Redis it was given.
func (c *cluster) close(ctx context.Context) error {
	var errs []error
	for _, r := range c.replicas {
		errs = append(errs, r.stop())
	}
	c.slack.Close()
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
	if c.redis.given {
		errs = append(errs, deletePrefix(ctx, c.redis, c.prefix))
	}
	return errors.Join(errs...)
}

// deletePrefix deletes the keys under prefix with SCAN, on every master of
// a cluster; never FLUSHDB.
func deletePrefix(ctx context.Context, rs *redisServer, prefix string) error {
	rdb, err := rs.connect(1)
	if err != nil {
		return err
	}
	defer rdb.Close()
	err = eachNode(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		return iter.Err()
	})
	if err != nil {
		return fmt.Errorf("deleting the bench's keys: %w", err)
	}
	return nil
}

// httpClient is the agents' and people's HTTP client: keep-alive
// connections, enough of them for every agent waiting at once, and a
// timeout past the longest wait (60 s), so a wedged replica fails the run
// rather than hanging it.
func httpClient() *http.Client {
	return &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

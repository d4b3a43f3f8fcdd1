package pending

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

func TestConnect(t *testing.T) {
	for _, tc := range []struct {
		name string
		conn Conn
		want string // the client's type, or the start of the error
	}{
		{"url", Conn{URL: "redis://:pw@localhost:6379/2"}, "*redis.Client"},
		{"rediss url", Conn{URL: "rediss://localhost:6380"}, "*redis.Client"},
		{"url with a password beside it", Conn{URL: "redis://localhost:6379", Username: "u", Password: "p"}, "*redis.Client"},
		{"cluster of one seed", Conn{Addrs: []string{"10.0.0.1:7000"}}, "*redis.ClusterClient"},
		{"cluster", Conn{Addrs: []string{"r1:7000", "r2:7000"}, Password: "p", TLS: true}, "*redis.ClusterClient"},
		{"sentinel", Conn{Addrs: []string{"s1:26379"}, MasterName: "m", DB: 1}, "*redis.Client"},
		{"bad url", Conn{URL: "http://:LEAK-pw@localhost:6379"}, "redis.url must look like"},
		{"unparsable url", Conn{URL: "redis://:LEAK-pw@local\x7fhost:port/x"}, "redis.url must look like"},
		{"url and addrs", Conn{URL: "redis://:LEAK-pw@x:1", Addrs: []string{"r1:1"}}, "redis: set either a url"},
		{"nothing", Conn{Password: "LEAK-pw"}, "redis: set a url or addrs"},
		{"cluster db", Conn{Addrs: []string{"r1:1"}, DB: 3}, "redis: a Redis Cluster has database 0 only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Connect(tc.conn)
			if err != nil {
				if strings.Contains(err.Error(), "LEAK") {
					t.Errorf("the error repeats a secret: %v", err)
				}
				if !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("Connect: %v; want %s", err, tc.want)
				}
				return
			}
			defer c.Close()
			if got := typeName(c); got != tc.want {
				t.Errorf("Connect = %s; want %s", got, tc.want)
			}
		})
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.Client:
		return "*redis.Client"
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	}
	return "other"
}

// TestConnectCluster runs one request's life through Connect's client on
// the cluster of BRIDGE_TEST_REDIS_CLUSTER, the way the app builds it.
func TestConnectCluster(t *testing.T) {
	addrs := os.Getenv(redisClusterEnv)
	if addrs == "" {
		t.Skipf("%s is not set", redisClusterEnv)
	}
	rdb, err := Connect(Conn{Addrs: strings.Split(addrs, ",")[:1]}) // one seed finds the rest
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	b := newBackend(t, "cluster", nil, cluster(strings.Split(addrs, ",")))
	ctx := context.Background()
	// a hears of answers only through pub/sub: no recheck, another replica resolves.
	a, other := b.storeOn(rdb, withRecheck(time.Hour)), b.store()
	b.run(a)
	// Requests on every shard: each shard's slot lives on some master, so
	// the three masters all take part.
	var ids []string
	for len(ids) < 64 {
		ids = append(ids, mustCreate(t, other, question("alice", "")).ID)
	}
	seen := map[int]bool{}
	for _, id := range ids {
		seen[shard(id)] = true
	}
	if len(seen) < shards/2 {
		t.Fatalf("64 requests fell on %d shards", len(seen))
	}
	list, err := a.List(ctx, "question", 0)
	if err != nil || len(list) != len(ids) {
		t.Fatalf("List = %d records, %v; want %d", len(list), err, len(ids))
	}
	for _, id := range ids {
		done := waitAnswered(t, ctx, a, id)
		if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
			t.Fatalf("Resolve %s: %v", id, err)
		}
		if err := recv(t, "the wait for "+id, done); err != nil {
			t.Fatalf("Wait %s: %v", id, err)
		}
	}
	if c, err := a.Count(ctx, 0); err != nil || c.Pending != 0 {
		t.Errorf("%d pending, %v; want 0", c.Pending, err)
	}
	if ev, err := a.Audit(ctx, 1000); err != nil || len(ev) != 2*len(ids) {
		t.Errorf("Audit = %d events, %v; want %d", len(ev), err, 2*len(ids))
	}

	// The wake-ups went through sharded pub/sub: a subscriber to a
	// request's shard channel, and to nothing else, hears its end.
	id := mustCreate(t, other, question("alice", "")).ID
	ps := rdb.SSubscribe(ctx, a.keys.shardWake(shard(id)))
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("SSUBSCRIBE: %v", err)
	}
	if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
		t.Fatalf("Resolve %s: %v", id, err)
	}
	recvCtx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	msg, err := ps.ReceiveMessage(recvCtx)
	if err != nil {
		t.Fatalf("nothing on %s: %v", a.keys.shardWake(shard(id)), err)
	}
	if got, _ := parseWake(msg.Payload); got != id {
		t.Errorf("the shard channel carried %q; want the end of %s", msg.Payload, id)
	}

	// A replica of an earlier version publishes on the plain channel; a
	// still hears it, during a rolling upgrade.
	earlier := b.store()
	earlier.sharded = false
	id = mustCreate(t, other, question("alice", "")).ID
	done := waitAnswered(t, ctx, a, id)
	if _, err := earlier.Resolve(ctx, id, answered("U1")); err != nil {
		t.Fatalf("Resolve %s: %v", id, err)
	}
	if err := recv(t, "the wait for "+id+", resolved by an earlier version", done); err != nil {
		t.Fatalf("Wait %s: %v", id, err)
	}
}

// TestSentinelFailover kills the master that a Sentinel watches and checks
// that a store reached through Connect follows the Sentinel to the promoted
// replica: a request made before the failover is still there, a waiter's
// subscription moves to the new master, and an answer made there reaches
// the waiter. It runs on a master, a replica and a Sentinel of its own,
// never on the shared one of BRIDGE_TEST_REDIS_SENTINEL that other tests
// use at the same time, and skips when redis-server is not installed.
func TestSentinelFailover(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	// failover bounds the Sentinel's part: noticing the master is down
	// (down-after-milliseconds), then promoting the replica, a few seconds.
	const name, failover = "askbridge", 15 * time.Second
	ctx := context.Background()
	data := []string{"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"}
	master := startRedisServer(t, data...)
	replica := startRedisServer(t, append(data, "--replicaof", "127.0.0.1", master.port)...)
	// A Sentinel learns of replicas from its master's INFO, which it reads
	// at once and then every 10 seconds: the replica must be online first.
	m := redis.NewClient(&redis.Options{Addr: master.addr})
	t.Cleanup(func() { m.Close() })
	poll(t, "the replica to be online", func() bool {
		info, err := m.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "port="+replica.port+",state=online")
	})
	conf := filepath.Join(t.TempDir(), "sentinel.conf") // the Sentinel rewrites it
	err := os.WriteFile(conf, []byte(fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 1\n"+
		"sentinel down-after-milliseconds %[1]s 1000\nsentinel failover-timeout %[1]s 10000\n", name, master.port)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	sentinel := startRedisServer(t, conf, "--sentinel")
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel.addr})
	t.Cleanup(func() { sc.Close() })
	// A Sentinel whose timer lags more than 2 s (a loaded CI machine, a
	// slow fsync of its config) enters TILT mode and does nothing for 30 s.
	if err := sc.Process(ctx, redis.NewStatusCmd(ctx, "sentinel", "debug", "tilt-trigger", 60_000)); err != nil {
		t.Fatalf("SENTINEL DEBUG tilt-trigger: %v", err)
	}
	poll(t, "the Sentinel to see the replica in sync", func() bool {
		r, err := sc.Replicas(ctx, name).Result()
		return err == nil && len(r) == 1 && r[0]["flags"] == "slave" && r[0]["master-link-status"] == "ok"
	})

	b := newBackend(t, "sentinel", nil, connect(Conn{Addrs: []string{sentinel.addr}, MasterName: name}))
	// a hears of answers only through pub/sub: no recheck, another replica resolves.
	a, other := b.store(withRecheck(time.Hour)), b.store()
	b.run(a)
	id := mustCreate(t, other, question("alice", "")).ID
	// Replication is asynchronous: WAIT, on the connection of a write made
	// after the request, until the replica has both.
	var wait *redis.Cmd
	_, err = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, b.prefix+"fence", 1, 0)
		wait = p.Do(ctx, "WAIT", 1, eventually.Milliseconds())
		return nil
	})
	if acked, _ := wait.Int64(); err != nil || acked != 1 {
		t.Fatalf("WAIT = %d, %v; want the replica's ack", acked, err)
	}

	sub := sc.Subscribe(ctx, "+switch-master")
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("subscribing to +switch-master: %v", err)
	}
	master.kill()
	switchCtx, cancel := context.WithTimeout(ctx, failover)
	defer cancel()
	msg, err := sub.ReceiveMessage(switchCtx)
	if err != nil {
		t.Fatalf("no +switch-master within %v: %v", failover, err)
	}
	// "<name> <old ip> <old port> <new ip> <new port>"
	if f := strings.Fields(msg.Payload); len(f) != 5 || f[0] != name || net.JoinHostPort(f[3], f[4]) != replica.addr {
		t.Fatalf("+switch-master %q; want %s promoted", msg.Payload, replica.addr)
	}

	// a's subscription comes back on the new master, and the request is there.
	b.waitSubscribed(a, 1)
	done := waitAnswered(t, ctx, a, id)
	if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
		t.Fatalf("Resolve on the new master: %v", err)
	}
	if err := recv(t, "the wait for "+id, done); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// redisServer is a redis-server process of one test's own on a free
// loopback port, killed when the test ends.
type redisServer struct {
	addr, port string
	kill       func()
}

// startRedisServer starts redis-server with args (a config file first, if
// any, then options) and waits until it answers.
func startRedisServer(t *testing.T, args ...string) *redisServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &redisServer{addr: ln.Addr().String(), port: strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
	ln.Close()
	dir := t.TempDir()
	log := filepath.Join(dir, "redis.log")
	cmd := exec.Command("redis-server", append(args, "--bind", "127.0.0.1", "--port", s.port, "--dir", dir, "--logfile", log)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	s.kill = sync.OnceFunc(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			out, _ := os.ReadFile(log)
			t.Logf("redis-server on %s (%s):\n%s", s.addr, strings.Join(args, " "), out)
		}
	})
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	poll(t, "redis-server on "+s.addr, func() bool { return c.Ping(context.Background()).Err() == nil })
	return s
}

// Where SPUBLISH is unknown (Redis before 7.0; miniredis here), a store
// that would publish sharded publishes on the plain channel instead, which
// every replica also subscribes to: the resolve neither fails nor goes
// unheard.
func TestShardedWakeFallsBackToPublish(t *testing.T) {
	mr := miniredis.RunT(t)
	b := newBackend(t, "miniredis", mr, single(&redis.Options{Addr: mr.Addr()}))
	s := b.store()
	s.sharded = true // as on a cluster
	ctx := context.Background()
	ps := b.rdb.Subscribe(ctx, s.keys.wake())
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	id := mustCreate(t, s, question("alice", "")).ID
	if _, err := s.Resolve(ctx, id, answered("U1")); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	recvCtx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	msg, err := ps.ReceiveMessage(recvCtx)
	if err != nil {
		t.Fatalf("nothing on %s: %v", s.keys.wake(), err)
	}
	if got, _ := parseWake(msg.Payload); got != id {
		t.Errorf("the wake channel carried %q; want the end of %s", msg.Payload, id)
	}
}

// TestShardSubscriptionFollowsItsSlot moves one shard's slot, keys and
// all, to the other master of a two-master cluster of its own, as a
// resharding or a failover does. The old master ends the shard channel's
// subscriptions (SUNSUBSCRIBE); a replica's Run subscribes again where the
// slot is now, and a waiter that only pub/sub can wake is woken there.
func TestShardSubscriptionFollowsItsSlot(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	ctx := context.Background()
	node := func() (*redisServer, *redis.Client, string) {
		s := startRedisServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--save", "", "--appendonly", "no")
		c := redis.NewClient(&redis.Options{Addr: s.addr})
		t.Cleanup(func() { c.Close() })
		return s, c, c.ClusterMyID(ctx).Val()
	}
	s1, c1, id1 := node()
	s2, c2, id2 := node()
	if err := c1.ClusterMeet(ctx, "127.0.0.1", s2.port).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c1.ClusterAddSlotsRange(ctx, 0, 8191).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c2.ClusterAddSlotsRange(ctx, 8192, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the two-master cluster", func() bool {
		for _, c := range []*redis.Client{c1, c2} {
			info, _ := c.ClusterInfo(ctx).Result()
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:2") {
				return false
			}
		}
		return true
	})

	b := newBackend(t, "cluster", nil, cluster([]string{s1.addr, s2.addr}))
	a, other := b.store(withRecheck(time.Hour)), b.store()
	b.run(a)
	id := mustCreate(t, other, question("alice", "")).ID
	channel := a.keys.shardWake(shard(id))
	slot := int(b.rdb.ClusterKeySlot(ctx, channel).Val())
	src, dst, srcID, dstID := c1, c2, id1, id2
	if slot > 8191 {
		src, dst, srcID, dstID = c2, c1, id2, id1
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
	must(err)
	if len(keys) == 0 {
		t.Fatalf("no keys in slot %d, where request %s lives", slot, id)
	}
	dstHost, dstPort, _ := net.SplitHostPort(dst.Options().Addr)
	args := []any{"MIGRATE", dstHost, dstPort, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	must(src.Do(ctx, args...).Err())
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())

	poll(t, "a's subscription to "+channel+" on the slot's new master", func() bool {
		n, err := dst.PubSubShardNumSub(ctx, channel).Result()
		return err == nil && n[channel] == 1
	})
	done := waitAnswered(t, ctx, a, id)
	if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
		t.Fatalf("Resolve after the slot moved: %v", err)
	}
	if err := recv(t, "the wait for "+id+" after its slot moved", done); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// On a Redis without sharded pub/sub (before 7.0; miniredis here), a
// store that would subscribe per shard finds SSUBSCRIBE refused, gives up
// on those subscriptions and keeps the plain one, where resolves publish
// there: Run comes up, and a waiter only pub/sub can wake is woken.
func TestShardedRunWithoutSPUBLISH(t *testing.T) {
	mr := miniredis.RunT(t)
	b := newBackend(t, "miniredis", mr, single(&redis.Options{Addr: mr.Addr()}))
	a, other := b.store(withRecheck(time.Hour)), b.store()
	a.sharded, other.sharded = true, true // as on a cluster
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := recv(t, "Run to return", ran); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	poll(t, "Run to subscribe", func() bool { return a.subscribed.Load() > 0 })

	id := mustCreate(t, other, question("alice", "")).ID
	done := waitAnswered(t, ctx, a, id)
	if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if err := recv(t, "the wait for "+id, done); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// TestShardSubscriptionsFollowAFailover kills a master of a cluster of its
// own (two masters, a replica of the first) and promotes its replica. The
// subscriptions of the dead master's shards broke with its connections;
// Run makes them again on the promoted replica at once (go-redis alone
// would redial the dead address until it next reads the slots, 60 s on),
// and a waiter that only pub/sub can wake is woken there.
func TestShardSubscriptionsFollowAFailover(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	ctx := context.Background()
	node := func() (*redisServer, *redis.Client, string) {
		s := startRedisServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0")
		c := redis.NewClient(&redis.Options{Addr: s.addr})
		t.Cleanup(func() { c.Close() })
		return s, c, c.ClusterMyID(ctx).Val()
	}
	s1, c1, id1 := node()
	s2, c2, id2 := node()
	_, c3, id3 := node()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Epochs of their own, as redis-cli --cluster create gives: left at 0,
	// the nodes settle their collisions by gossip, and a takeover made
	// while they do may carry an epoch the surviving master does not take
	// as newer (a loaded run saw it keep the dead master's slots and fail).
	for i, c := range []*redis.Client{c1, c2, c3} {
		must(c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err())
	}
	must(c1.ClusterMeet(ctx, "127.0.0.1", s2.port).Err())
	must(c3.ClusterMeet(ctx, "127.0.0.1", s1.port).Err())
	must(c1.ClusterAddSlotsRange(ctx, 0, 8191).Err())
	must(c2.ClusterAddSlotsRange(ctx, 8192, 16383).Err())
	// The third node may replicate the first once it knows it as a master.
	poll(t, "node 3 to replicate node 1", func() bool { return c3.ClusterReplicate(ctx, id1).Err() == nil })
	// Every node must know every other, handshakes done, and the highest
	// epoch: a master that does not know the replica ignores its takeover,
	// and go-redis may read the slots from it.
	poll(t, "the cluster, every node known to every node, its replica in sync", func() bool {
		for _, c := range []*redis.Client{c1, c2, c3} {
			info, _ := c.ClusterInfo(ctx).Result()
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_current_epoch:3") {
				return false
			}
			nodes, _ := c.ClusterNodes(ctx).Result()
			for _, id := range []string{id1, id2, id3} {
				if !strings.Contains(nodes, id) {
					return false
				}
			}
			if strings.Contains(nodes, "handshake") {
				return false
			}
		}
		r, _ := c3.Info(ctx, "replication").Result()
		return strings.Contains(r, "master_link_status:up")
	})

	// Reached through Connect, as the app does: its client rereads the
	// slots when a node is down.
	b := newBackend(t, "cluster", nil, connect(Conn{Addrs: []string{s1.addr, s2.addr}}))
	a, other := b.store(withRecheck(time.Hour)), b.store()
	b.run(a)
	// A request on the first master, there on its replica too.
	var id string
	for tries := 0; id == "" || b.rdb.ClusterKeySlot(ctx, a.keys.shardWake(shard(id))).Val() > 8191; tries++ {
		if tries == 1000 {
			t.Fatal("no request fell on the first master in 1,000 tries")
		}
		id = mustCreate(t, other, question("alice", "")).ID
	}
	if n, err := c1.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT = %d, %v; want the replica to have the request", n, err)
	}
	var moved []string
	for sh := range shards {
		if ch := a.keys.shardWake(sh); b.rdb.ClusterKeySlot(ctx, ch).Val() <= 8191 {
			moved = append(moved, ch)
		}
	}

	s1.kill()
	must(c3.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err())
	// Under a second here (-v prints it): the subscriptions are asked
	// again at a doubling backoff, at most 2 s apart, until the slots
	// read name the promoted replica. A loaded CI run took over 5 s once.
	failedOver := time.Now()
	pollWithin(t, 15*time.Second, fmt.Sprintf("a's %d subscriptions of the dead master's shards on the promoted replica", len(moved)), func() bool {
		n, err := c3.PubSubShardNumSub(ctx, moved...).Result()
		for _, ch := range moved {
			if err != nil || n[ch] != 1 {
				return false
			}
		}
		return true
	})
	t.Logf("resubscribed on the promoted replica %v after the takeover", time.Since(failedOver).Round(time.Millisecond))
	done := waitAnswered(t, ctx, a, id)
	// other's client learnt of the failover only if a command of its
	// failed: the first may fail (a person is told to try again), the
	// next goes to the promoted replica.
	if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
		if !IsUnavailable(err) {
			t.Fatalf("Resolve after the failover: %v", err)
		}
		poll(t, "other's client to find the promoted replica", func() bool {
			_, err := other.Resolve(ctx, id, answered("U1"))
			return err == nil || errors.Is(err, ErrAlreadyResolved)
		})
	}
	if err := recv(t, "the wait for "+id+" after the failover", done); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// waitAnswered starts s.Wait on id in the background and returns once the
// waiter is registered; the channel gets nil when the wait ends answered.
func waitAnswered(t *testing.T, ctx context.Context, s *Store, id string) <-chan error {
	t.Helper()
	before := s.Waiting()
	done := make(chan error, 1)
	go func() {
		rec, err := s.Wait(ctx, id, "")
		if err == nil && rec.Status != seam.StatusAnswered {
			err = fmt.Errorf("status %s", rec.Status)
		}
		done <- err
	}()
	poll(t, "a waiter on "+id, func() bool { return s.Waiting() > before })
	return done
}

// Which errors make a cluster client reread its slots (reloadOnDown), and
// which make a shard subscription be asked again soon (passing).
func TestErrorClasses(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, c := range []struct {
		err       error
		unreached bool
	}{
		{nil, false},
		{redis.Nil, false},
		{redis.ErrClosed, true},
		{context.Canceled, false},
		{fmt.Errorf("resolve x: %w", context.DeadlineExceeded), true},
		{refused, true},
	} {
		if got := unreached(c.err); got != c.unreached {
			t.Errorf("unreached(%v) = %v; want %v", c.err, got, c.unreached)
		}
	}
	ctx := context.Background()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { c.Close() })
	mr.SetError("NOPERM this user has no permissions to access one of the channels")
	noperm := c.Ping(ctx).Err()
	mr.SetError("MOVED 1234 127.0.0.1:7002")
	moved := c.Ping(ctx).Err()
	mr.SetError("")
	for _, c := range []struct {
		err     error
		passing bool
	}{
		{fmt.Errorf("%w to p{s01}:wake", errEnded), true},
		{moved, true},
		{refused, true},
		{noperm, false},
	} {
		if c.err == nil {
			t.Fatal("miniredis answered without the error it was told to")
		}
		if got := passing(c.err); got != c.passing {
			t.Errorf("passing(%v) = %v; want %v", c.err, got, c.passing)
		}
	}
}

// TestRefusedWritesAreUnavailable: a Redis that refuses writes for now
// (out of memory, a replica, too few replicas, a snapshot it cannot save)
// makes every write of the store ErrUnavailable, so that the API answers
// 503 and a surface asks the person to try again, never a 500. Each refusal
// is made on a redis-server of the test's own, as Redis words it from
// inside a script.
func TestRefusedWritesAreUnavailable(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		args   []string
		refuse func(t *testing.T, admin *redis.Client) // makes the server refuse writes
	}{
		{"OOM", nil, func(t *testing.T, admin *redis.Client) {
			if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"NOREPLICAS", nil, func(t *testing.T, admin *redis.Client) {
			if err := admin.ConfigSet(ctx, "min-replicas-to-write", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"MISCONF", []string{"--save", "3600 1", "--stop-writes-on-bgsave-error", "yes"}, func(t *testing.T, admin *redis.Client) {
			// A snapshot that cannot be written: its directory is gone.
			dir, err := admin.ConfigGet(ctx, "dir").Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir["dir"]); err != nil {
				t.Fatal(err)
			}
			if err := admin.BgSave(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			poll(t, "the snapshot to fail", func() bool {
				info, err := admin.Info(ctx, "persistence").Result()
				return err == nil && strings.Contains(info, "rdb_bgsave_in_progress:0") &&
					strings.Contains(info, "rdb_last_bgsave_status:err")
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startRedisServer(t, append([]string{"--appendonly", "no"}, c.args...)...)
			admin := redis.NewClient(&redis.Options{Addr: srv.addr})
			t.Cleanup(func() { admin.Close() })
			b := newBackend(t, "redis", nil, single(&redis.Options{Addr: srv.addr}))
			s := b.store()
			rec := mustCreate(t, s, question("alice", ""))
			c.refuse(t, admin)
			t.Cleanup(func() {
				// So that the test's keys can be deleted.
				admin.ConfigSet(ctx, "maxmemory", "0")
				admin.ConfigSet(ctx, "min-replicas-to-write", "0")
				admin.ConfigSet(ctx, "stop-writes-on-bgsave-error", "no")
			})
			_, _, err := s.Create(ctx, question("alice", ""))
			if !IsUnavailable(err) {
				t.Errorf("Create = %v; want an error IsUnavailable reports", err)
			}
			_, err = s.Resolve(ctx, rec.ID, answered("U1"))
			if !IsUnavailable(err) {
				t.Errorf("Resolve = %v; want an error IsUnavailable reports", err)
			}
			if _, err := s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C", MessageID: "1"}); !IsUnavailable(err) {
				t.Errorf("AddPost = %v; want an error IsUnavailable reports", err)
			}
			if got := mustGet(t, s, rec.ID); got.Status != seam.StatusPending {
				t.Errorf("status = %s after refused writes; want pending", got.Status)
			}
		})
	}
}

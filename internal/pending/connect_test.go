package pending

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	b := newBackend(t, "cluster", nil, nil, &redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
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
		done := make(chan error, 1)
		go func() {
			_, err := a.Wait(ctx, id, "")
			done <- err
		}()
		poll(t, "a waiter on "+id, func() bool { return a.Waiting() == 1 })
		if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
			t.Fatalf("Resolve %s: %v", id, err)
		}
		if err := recv(t, "the wait for "+id, done); err != nil {
			t.Fatalf("Wait %s: %v", id, err)
		}
	}
	if n, err := a.CountPending(ctx); err != nil || n != 0 {
		t.Errorf("CountPending = %d, %v; want 0", n, err)
	}
	if ev, err := a.Audit(ctx, 1000); err != nil || len(ev) != 2*len(ids) {
		t.Errorf("Audit = %d events, %v; want %d", len(ev), err, 2*len(ids))
	}
}

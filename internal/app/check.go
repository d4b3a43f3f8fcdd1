package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/slack"
	"github.com/askbridge/askbridge/internal/surface"
)

// Check connects to what cfg names, with its credentials, and reports
// what the bridge would trip on: Redis, then Slack, then Discord. It
// writes nothing to Redis; with post, it posts a message to each target's
// channel and deletes it. It is `bridge config check --connect`.
//
// The three are checked at once, each with all of ctx's time: one that
// hangs must not use up the others' and have them blamed for it. The
// findings are in that order all the same.
func Check(ctx context.Context, cfg *config.Config, client *http.Client, post bool) surface.Findings {
	checks := []func() surface.Findings{
		func() surface.Findings { return checkRedisConn(ctx, cfg.Redis) },
		func() surface.Findings { return slack.Check(ctx, cfg, client, post) },
		func() surface.Findings { return discord.Check(ctx, cfg, client, post) },
	}
	found := make([]surface.Findings, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Go(func() { found[i] = check() })
	}
	wg.Wait()
	return slices.Concat(found...)
}

func checkRedisConn(ctx context.Context, r config.Redis) surface.Findings {
	var fs surface.Findings
	conn := connOf(r)
	if conn.URL == "" && len(conn.Addrs) == 0 {
		fs.Add(surface.Note, "redis", "no redis.url or redis.addrs: the bridge runs an embedded in-memory Redis (one replica; every request is lost when it stops)")
		return fs
	}
	// go-redis writes a line to stderr for each dial that fails, beside
	// the one finding that says so.
	defer logRedisTo(slog.New(slog.DiscardHandler), func() bool { return false })()
	rdb, err := pending.Connect(conn)
	if err != nil {
		fs.Add(surface.Problem, "redis", "%v", err)
		return fs
	}
	defer rdb.Close()
	if err := firstCall(ctx, rdb, conn); err != nil {
		if r := (*redisRefusal)(nil); errors.As(err, &r) {
			fs.Add(surface.Problem, "redis", "%v", r)
		} else {
			fs.Add(surface.Problem, "redis", "PING failed: %v", err)
		}
		return fs
	}
	fs.Add(surface.Fine, "redis", "answers PING")
	for _, n := range evicting(ctx, rdb) {
		fs.Add(surface.Note, "redis "+n.addr, "maxmemory-policy is %s with a memory limit: a full Redis may evict pending requests; set noeviction (docs/config.md, Running several replicas)", n.policy)
	}
	key := "redis.url"
	if r.Password != "" || conn.URL == "" {
		key = "redis.password"
	}
	for _, addr := range passwordless(ctx, rdb) {
		fs.Add(surface.Note, "redis "+addr, "accepts connections without a password, so the password in %s protects nothing: anyone who can reach this Redis "+
			"can read and change every request. Set requirepass on it, or give its default user a password (or turn that user off and sign in as an ACL user)", key)
	}
	return fs
}

// passwordless returns the address of each node of rdb (every node of a
// Cluster, a Sentinel's master) that rdb signs in to with a password and
// that answers PING on a connection that signs in with none. go-redis
// signs in with HELLO 3 AUTH default <password>, which a Redis whose
// default user has no password (nopass, Redis's default) accepts whatever
// the password is: the connection works, and the password protects
// nothing. The address is the one dialed (a host name's IP): a
// Sentinel's master has no other.
func passwordless(ctx context.Context, rdb redis.UniversalClient) []string {
	var (
		mu    sync.Mutex
		nodes []string
	)
	check := func(ctx context.Context, c *redis.Client) error {
		opt := *c.Options()
		if opt.Password == "" {
			return nil
		}
		opt.Username, opt.Password = "", ""
		var addr string
		dial := opt.Dialer
		opt.Dialer = func(ctx context.Context, network, a string) (net.Conn, error) {
			conn, err := dial(ctx, network, a)
			if err == nil {
				mu.Lock()
				addr = conn.RemoteAddr().String()
				mu.Unlock()
			}
			return conn, err
		}
		plain := redis.NewClient(&opt)
		defer plain.Close()
		if plain.Ping(ctx).Err() == nil {
			mu.Lock()
			nodes = append(nodes, addr)
			mu.Unlock()
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		_ = c.ForEachShard(ctx, check) // concurrently
	case *redis.Client:
		_ = check(ctx, c)
	}
	slices.Sort(nodes)
	return nodes
}

package app

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"

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
	if err := rdb.Ping(ctx).Err(); err != nil {
		fs.Add(surface.Problem, "redis", "PING failed: %v", err)
		return fs
	}
	fs.Add(surface.Fine, "redis", "answers PING")
	for _, n := range evicting(ctx, rdb) {
		fs.Add(surface.Note, "redis "+n.addr, "maxmemory-policy is %s with a memory limit: a full Redis may evict pending requests; set noeviction (docs/config.md, Running several replicas)", n.policy)
	}
	return fs
}

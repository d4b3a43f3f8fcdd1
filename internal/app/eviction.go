package app

import (
	"bufio"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// warnIfEvicting logs a warning for each Redis node (each master of a
// cluster) that may evict keys: one with a memory limit and a
// maxmemory-policy other than noeviction. Every key of the bridge matters
// while it lives: an evicted pending request is gone with its answer (its
// agent reads 404, its buttons do nothing, and it is still counted as
// pending), and under a volatile-* policy an evicted sign-out marker lets a
// signed-out browser session back in, an evicted lease lets a second
// replica take what the first still holds. With noeviction a full Redis
// refuses writes instead (503 UNAVAILABLE, nothing lost), which is the
// failure the bridge is built for. Redis that won't say (the embedded one,
// a managed one that hides INFO) is not warned about.
func warnIfEvicting(rdb redis.UniversalClient, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, n := range evicting(ctx, rdb) {
		log.Warn("redis may evict the bridge's keys when it fills: set maxmemory-policy noeviction",
			"node", n.addr, "maxmemory", n.limit, "maxmemory_policy", n.policy)
	}
}

// evictingNode is a Redis node that may evict keys.
type evictingNode struct{ addr, limit, policy string }

// evicting returns the nodes of rdb (the masters of a cluster) that have
// a memory limit and a maxmemory-policy other than noeviction.
func evicting(ctx context.Context, rdb redis.UniversalClient) []evictingNode {
	var (
		mu    sync.Mutex
		nodes []evictingNode
	)
	check := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return nil
		}
		limit, policy := memoryPolicy(info)
		if limit != "" && limit != "0" && policy != "" && policy != "noeviction" {
			mu.Lock()
			nodes = append(nodes, evictingNode{c.Options().Addr, limit, policy})
			mu.Unlock()
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		_ = c.ForEachMaster(ctx, check) // concurrently
	case *redis.Client:
		_ = check(ctx, c)
	}
	return nodes
}

// memoryPolicy reads maxmemory and maxmemory_policy from INFO memory.
func memoryPolicy(info string) (limit, policy string) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		switch {
		case !ok:
		case k == "maxmemory":
			limit = v
		case k == "maxmemory_policy":
			policy = v
		}
	}
	return limit, policy
}

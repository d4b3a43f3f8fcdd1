package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/pending"
)

// redisRefusal is Redis's refusal of the bridge's first call, said in
// the config's terms: what to do about it, chosen by how the config
// reaches Redis (redis.url, a Cluster's redis.addrs, or Sentinels with
// redis.master_name), then what Redis said. Without it every refusal
// pointed at redis.url, which a Cluster or Sentinel config doesn't use.
type redisRefusal struct {
	fix string // what to do, naming the keys
	// said is Redis's reply, without go-redis's wrapping, which for a
	// Sentinel that knows no such master reads "all sentinels ... are
	// unreachable: redis: nil" of Sentinels that answered. Empty when
	// fix says it all.
	said string
	err  error
}

func (e *redisRefusal) Error() string {
	if e.said == "" {
		return e.fix
	}
	return e.fix + "; Redis said: " + e.said
}

func (e *redisRefusal) Unwrap() error { return e.err }

// refusedBy reports whether err, of the first call on a connection, is a
// refusal: a reply of Redis or of a Sentinel that will be the same on
// the next try (a setting to change), not a Redis that can't be reached
// or says "not now" (LOADING, MASTERDOWN, MISCONF...: pending.NotNow). A
// Sentinel that knows no such master answers with a nil reply.
func refusedBy(err error) bool {
	var reply redis.Error
	return errors.Is(err, redis.Nil) || errors.As(err, &reply) && !pending.NotNow(err)
}

// explainRefusal returns err, a refusal (refusedBy) of the first call on
// a connection set up as c, as a *redisRefusal.
func explainRefusal(c pending.Conn, err error) error {
	said := err.Error()
	var reply redis.Error
	if errors.As(err, &reply) {
		said = reply.Error()
	}
	r := &redisRefusal{said: said, err: err}
	switch {
	case c.URL != "":
		r.fix = "check the database number and the credentials in redis.url (or redis.username and redis.password)"
	case c.MasterName != "" && errors.Is(err, redis.Nil):
		// SENTINEL GET-MASTER-ADDR-BY-NAME of an unknown name.
		r.fix, r.said = fmt.Sprintf("no Sentinel in redis.addrs watches a master named %q (redis.master_name)", c.MasterName), ""
	case c.MasterName != "" && strings.Contains(said, "unknown command 'sentinel'"):
		r.fix = "the addresses in redis.addrs are not Sentinels: with redis.master_name they must be (for a Cluster's nodes remove redis.master_name; for one server use redis.url)"
	case c.MasterName != "":
		r.fix = "check redis.sentinel_password (the Sentinels' own), and redis.db and the credentials in redis.username and redis.password (the master's)"
	case strings.Contains(said, "cluster support disabled"):
		r.fix = "this Redis is not a Cluster: use redis.url (or redis.master_name for Sentinel)"
	case strings.Contains(said, "unknown command 'cluster'"):
		// A Sentinel answers no CLUSTER command.
		r.fix = "the addresses in redis.addrs are not a Cluster's nodes: for Sentinels name their master in redis.master_name; for one server use redis.url"
	default:
		r.fix = "check the credentials in redis.username and redis.password"
	}
	return r
}

// firstCall is the bridge's first call on rdb, a connection set up as c,
// at serve's start and in `config check --connect`: PING, then, for a
// redis.url, what kind of server answered (wrongServer). It returns nil;
// a *redisRefusal, a setting to change; or PING's error when Redis can't
// be reached or serves nothing now.
func firstCall(ctx context.Context, rdb redis.UniversalClient, c pending.Conn) error {
	err := rdb.Ping(ctx).Err()
	if err != nil && !refusedBy(err) {
		return err
	}
	if cl, ok := rdb.(*redis.Client); ok && c.URL != "" {
		if r := wrongServer(ctx, cl, err); r != nil {
			return r
		}
	}
	if err != nil {
		return explainRefusal(c, err)
	}
	return nil
}

// wrongServer returns a refusal when cl, the client of a redis.url,
// reached a server that answers PING but can't serve the bridge on one
// connection: a Sentinel, which knows no EVAL or GET (every command would
// fail with "unknown command"), or a node of a Redis Cluster that doesn't
// serve every slot itself (most commands would fail with MOVED). INFO
// server's redis_mode says which (Valkey 8 names it server_mode). A
// server whose INFO fails (renamed, disabled or not allowed, as on some
// managed services) or names no mode is taken for one server, as the URL
// says. pinged is PING's refusal, if any: the question then goes on a
// connection to database 0, since a Sentinel knows no SELECT and a
// Cluster node refuses any database but 0.
func wrongServer(ctx context.Context, cl *redis.Client, pinged error) *redisRefusal {
	if pinged != nil {
		opt := *cl.Options()
		opt.DB = 0
		cl = redis.NewClient(&opt)
		defer cl.Close()
	}
	// A read-only replica answers PING and every read, and refuses every
	// write (READONLY): the bridge would start and fail each create. A
	// DEL of a key nobody writes asks, changing nothing anywhere else.
	if err := cl.Del(ctx, replicaProbe).Err(); err != nil && strings.HasPrefix(err.Error(), "READONLY") {
		return &redisRefusal{fix: "redis.url points at a read-only replica: point it at the master (with Sentinel, list the Sentinels in redis.addrs and name the master in redis.master_name)", err: pinged}
	}
	info, err := cl.Info(ctx, "server").Result()
	if err != nil {
		return nil
	}
	switch serverMode(info) {
	case "sentinel":
		return &redisRefusal{fix: "redis.url points at a Redis Sentinel: list the Sentinels in redis.addrs and name the master in redis.master_name", err: pinged}
	case "cluster":
		// Unless it says it serves them all, or can't say (CLUSTER NODES
		// not allowed to an ACL user, renamed): as for INFO, a server
		// that can't tell is taken for what the URL says.
		if nodes, err := cl.ClusterNodes(ctx).Result(); err == nil && !servesEverySlot(nodes) {
			return &redisRefusal{fix: "redis.url points at a node of a Redis Cluster: list its nodes in redis.addrs (the bridge uses the cluster's slots)", err: pinged}
		}
	}
	return nil
}

// replicaProbe is the key wrongServer deletes to learn whether a server
// takes writes; nothing writes it.
const replicaProbe = "askbridge:replica-probe"

// serverMode is the mode INFO server says the server runs in:
// standalone, sentinel or cluster; "" if it says none.
func serverMode(info string) string {
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "redis_mode" || k == "server_mode" {
			return v
		}
	}
	return ""
}

// servesEverySlot reports whether CLUSTER NODES says the node that
// answered ("myself") is a master serving all 16384 slots, so that one
// connection reaches every key: a Cluster of one master, or Dragonfly's
// emulated cluster mode, which says redis_mode:cluster too. A line is
// "id addr flags master ping pong epoch link slot...", a slot being "n",
// "lo-hi", or "[n->-id]" while it migrates (not counted).
func servesEverySlot(nodes string) bool {
	for line := range strings.Lines(nodes) {
		f := strings.Fields(line)
		if len(f) < 8 || !slices.Contains(strings.Split(f[2], ","), "myself") {
			continue
		}
		if !slices.Contains(strings.Split(f[2], ","), "master") {
			return false
		}
		served := 0
		for _, r := range f[8:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			if errA == nil && errB == nil && a <= b {
				served += b - a + 1
			}
		}
		return served == 16384
	}
	return false
}

package app

import (
	"errors"
	"fmt"
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
// or serves nothing now (LOADING, MASTERDOWN...). A Sentinel that knows
// no such master answers with a nil reply.
func refusedBy(err error) bool {
	var reply redis.Error
	return errors.Is(err, redis.Nil) || errors.As(err, &reply) && !pending.Unserved(err)
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

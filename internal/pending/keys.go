package pending

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/askbridge/askbridge/internal/seam"
)

// Every Redis key the bridge uses is built here.
//
// A request's keys carry a hash tag derived from its id: {sNN}, one of
// shards slots. The record, its shard's open, due and finish indexes and its
// shard's audit stream therefore share one cluster slot, so every script touches
// only keys of one slot (no CROSSSLOT on Redis Cluster) and creating or
// resolving a request, index and audit included, is one atomic script. The
// shards spread requests over slots the way a per-id tag would, at the cost
// of the sweeper reading shards indexes instead of one.
const shards = 16

// keys builds the keys under one prefix.
type keys struct {
	prefix string
	tags   *[shards]string // prefix{sNN}: of each shard, built once: keys are built on every call
}

func newKeys(prefix string) keys {
	k := keys{prefix: prefix, tags: new([shards]string)}
	for s := range k.tags {
		k.tags[s] = fmt.Sprintf("%s{s%02d}:", prefix, s)
	}
	return k
}

// shard returns the shard of a request id.
func shard(id string) int {
	// FNV-1a, as hash/fnv's New32a, without its allocations.
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % shards)
}

func (k keys) tag(s int) string { return k.tags[s] }

// record is a HASH: one request, its answer and its posted messages.
func (k keys) record(id string) string { return k.tag(shard(id)) + "req:" + id }

// gone is a STRING, for DiscardedFor after a request's discard: why no
// target took it.
func (k keys) gone(id string) string { return k.tag(shard(id)) + "gone:" + id }

// open is a ZSET per kind and shard: ids of pending requests of that kind
// scored by creation time in unix milliseconds. It lists the work an
// answerer can do. One index per kind, so that List reads only requests of
// the kind it returns: with one index for both, the newest requests of one
// kind could hide older ones of the other behind List's limit.
func (k keys) open(kind seam.Kind, s int) string { return k.tag(s) + "open:" + string(kind) }

// kinds are the kinds of request, one open index each.
var kinds = []seam.Kind{seam.KindQuestion, seam.KindApproval}

// due is a ZSET per shard: ids of pending requests that expire, scored by
// their expiry in unix milliseconds. The sweeper reads it.
func (k keys) due(s int) string { return k.tag(s) + "due" }

// finish is a ZSET per shard: ids of ended requests whose posted messages
// may still show their controls, scored by when any replica's sweeper may
// take over editing them, in unix milliseconds. The script that ends a
// request adds it, with FinishGrace to spare for the replica that ended
// it; Edited removes it once every message is edited. It covers a replica
// that ended a request and then never edited: it died, its edits failed,
// or Redis ran the script and the reply was lost.
func (k keys) finish(s int) string { return k.tag(s) + "finish" }

// audit is a STREAM per shard, capped: created, posted, answered, cancelled,
// dismissed and expired events.
func (k keys) audit(s int) string { return k.tag(s) + "audit" }

// wake is the pub/sub channel on which a resolved request's id is
// published, on one Redis (directly or through Sentinel).
func (k keys) wake() string { return k.prefix + "wake" }

// shardWake is the channel of shard s on a Redis Cluster: sharded pub/sub,
// in the shard's slot. The resolve script SPUBLISHes on it on the master
// that holds the request, and each replica holds a subscription on that
// master for each shard, so a wake-up goes from the script straight to the
// subscribers. Plain PUBLISH crosses the cluster bus to every node instead:
// traffic that grows with the cluster, over links that Redis 7.0 leaves
// without TCP_NODELAY, where a wake-up can wait 40 ms for a delayed ACK.
func (k keys) shardWake(s int) string { return k.tag(s) + "wake" }

// request returns the keys the scripts of one request take, in the order
// the scripts name them: record, due, audit, finish, then the open index
// of each kind given. The record comes first: Redis Cluster routes EVAL by
// its first key.
func (k keys) request(id string, open ...seam.Kind) []string {
	s := shard(id)
	out := []string{k.record(id), k.due(s), k.audit(s), k.finish(s)}
	for _, kind := range open {
		out = append(out, k.open(kind, s))
	}
	return out
}

// draft is a STRING: what the person who on a surface is known as who
// last sent in a form of request id that was refused (the surface's own
// encoding), kept for a short while so that the form can be opened again
// filled as it was sent.
func (k keys) draft(id, who string) string { return k.tag(shard(id)) + "draft:" + id + ":" + who }

// thread is a STRING: the thread (root message) a caller session's requests
// go into on one surface and channel. Its key hashes the session, so agent
// text never becomes part of a key.
func (k keys) thread(session string) string {
	sum := sha256.Sum256([]byte(session))
	return k.prefix + "thread:" + hex.EncodeToString(sum[:12])
}

// lease is a STRING: "<until unix ms>|<holder>", the named lease one
// replica holds until then, e.g. the Discord gateway connection. Its
// expiry is judged by the store's clock; a Redis TTL of a few lease
// lengths only cleans up after holders that vanished.
func (k keys) lease(name string) string { return k.prefix + "lease:" + name }

// signedOut is a STRING: a web inbox session signed out before it expired,
// by a digest of its cookie; it expires when the session would have. Web
// sessions are signed cookies, kept nowhere; this is how every replica
// learns that one has ended.
func (k keys) signedOut(session string) string { return k.prefix + "web:signedout:" + session }

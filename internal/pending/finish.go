package pending

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

// When a request ends, the script that ends it puts it in its shard's
// finish index (keys.go); the replica that ended it edits the posted
// messages and calls Edited, which takes it out. Whatever that replica
// fails to do (it died, its edits failed, or Redis ran the script and the
// reply was lost, so it saw an error), every replica's finisher
// (RunFinisher) takes over through Unfinished once FinishGrace has passed.

// FinishGrace is how long the replica that ended a request has to edit its
// posted messages before any replica's finisher does it. It outlasts the
// usual rate-limit waits of an edit (Slack's Retry-After is seconds to
// tens of seconds); an edit still in flight when it runs out is made
// twice, to the same effect.
const FinishGrace = 30 * time.Second

const (
	// finishBatch bounds how many ended requests of one shard one call
	// of Unfinished takes over: at most shards*finishBatch a round.
	finishBatch = 4
	// finishWorkers is how many taken-over requests a finisher edits at
	// once, and finishEditTimeout how long it gives each one.
	finishWorkers     = 16
	finishEditTimeout = 20 * time.Second
	// finishClaim is how long a finisher that took over a request has to
	// edit its messages before another may: a whole round,
	// shards*finishBatch requests finishWorkers at a time, each cut off at
	// finishEditTimeout, fits in it. A claim lasts up to a second more
	// (claimEnd).
	finishClaim = 3 * time.Minute
	// finishGiveUp is how long after a request's end its messages are
	// still tried; an edit that fails that long (the message was deleted,
	// the bot left the channel) is given up, with a log line.
	finishGiveUp = time.Hour
	// finishRetryMax bounds the wait between two tries of a failing edit.
	finishRetryMax = 10 * time.Minute
)

// editedScript takes an ended request out of the finish index, unless a
// message was recorded for it beyond those its caller edited.
//
// KEYS[1] record, KEYS[2] finish index.
// ARGV[1] id, ARGV[2] how many messages the caller edited.
// Returns 1 when taken out, 0 when a message was recorded since.
var editedScript = redis.NewScript(`
local n = 0
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 5) == 'post:' then n = n + 1 end
end
if n > tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// Edited says that every message posted for rec, an ended request as read
// by the caller, is edited: no finisher edits them again. A message recorded
// for it after rec was read is not among them, so then the request stays
// for a finisher (or for whoever recorded that message) to finish.
//
// Nobody waits on it but a finisher, FinishGrace later, so under load it
// shares a pipeline with others (Store.batch). It returns once its own is
// recorded or has failed, or when ctx ends; a request whose record fails,
// or is not sent for want of ctx, stays for a finisher.
func (s *Store) Edited(ctx context.Context, rec *Record) error {
	err := s.batch.run(ctx, editedScript, s.editedKeys(rec), rec.ID, len(rec.Posts)).Err()
	if err != nil {
		return fmt.Errorf("edited %s: %w", rec.ID, unavailable(err))
	}
	return nil
}

func (s *Store) editedKeys(rec *Record) []string {
	return []string{s.keys.record(rec.ID), s.keys.finish(shard(rec.ID))}
}

// claimFinishScript takes over the ended requests of one shard whose edits
// are due: it moves each one's score to the end of the claim, so that no
// other finisher takes it meanwhile. The end of the claim has a random
// fraction of a millisecond taken off, which tells this call's claims
// from another's: ids already at exactly that score were taken by this
// very call, whose reply was lost and which go-redis sent again.
//
// KEYS[1] finish index.
// ARGV[1] now ms, ARGV[2] end of the claim ms, ARGV[3] batch.
// Returns the ids taken over.
var claimFinishScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])) do
  redis.call('ZADD', KEYS[1], ARGV[2], id)
  ids[#ids + 1] = id
end
return ids
`)

// claimEnd is the score that a claim made at now gives the requests it
// takes: a random point of the second that follows the claim's end, never
// a whole millisecond. Claims made in the same millisecond (replicas
// whose rounds fall together, or share a clock in tests) still tell one
// another apart by it: the script hands a claim the requests at its own
// score, which a retry of its lost reply needs, and two claims with one
// score would each be handed the other's.
func claimEnd(now time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return claimEndWith(now, binary.BigEndian.Uint32(b[:]))
}

// claimEndWith is claimEnd with r as its random number: a millisecond
// of the second after the end, and in it a fraction k steps of 1/4096 ms
// below the next whole one while a float64 holds them (until 2039: ms
// since 1970 then need 42 bits, which leave 1/2048), of what it holds
// after. k is never 0, so the score is never a whole millisecond, which a
// resolve's or a retry's is.
func claimEndWith(now time.Time, r uint32) string {
	ms := float64(now.Add(finishClaim).UnixMilli()) + float64(r%1000) + 1
	step := max(ms-math.Nextafter(ms, 0), 1.0/4096)
	n := max(int(1/step), 2) // steps in a ms
	k := 1 + int(r/1000)%(n-1)
	return strconv.FormatFloat(ms-float64(k)*step, 'f', -1, 64)
}

func (s *Store) Unfinished(ctx context.Context) ([]*Record, error) {
	now := s.opt.Now()
	pipe := s.rdb.Pipeline()
	claims := make([]*redis.Cmd, shards)
	for sh := range shards {
		// EVAL, not EVALSHA: in a pipeline, a NOSCRIPT reply (after a
		// restart or failover, on a node that never ran it) can't fall
		// back to EVAL as Script.Run does alone. The script is short.
		claims[sh] = claimFinishScript.Eval(ctx, pipe, []string{s.keys.finish(sh)},
			now.UnixMilli(), claimEnd(now), finishBatch)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("unfinished: %w", unavailable(err))
	}
	type claimed struct {
		key, id string
		read    *redis.MapStringStringCmd
	}
	var taken []claimed
	pipe = s.rdb.Pipeline()
	for sh, c := range claims {
		ids, _ := c.StringSlice()
		for _, id := range ids {
			taken = append(taken, claimed{s.keys.finish(sh), id, pipe.HGetAll(ctx, s.keys.record(id))})
		}
	}
	if len(taken) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("unfinished: %w", unavailable(err))
	}
	var out []*Record
	pipe = s.rdb.Pipeline()
	for _, c := range taken {
		rec, err := recordFromHash(fieldMap(c.read.Val()))
		switch {
		case errors.Is(err, ErrNotFound) || err == nil && rec.Status == seam.StatusPending:
			// Gone (past its retention, or deleted by hand), or not ended:
			// nothing to edit.
			pipe.ZRem(ctx, c.key, c.id)
		case err != nil:
			s.log.Error("giving up editing an ended request's messages: its record is unreadable", "request_id", c.id, "err", err)
			pipe.ZRem(ctx, c.key, c.id)
		case now.Sub(rec.ResolvedAt) > finishGiveUp:
			s.log.Warn("giving up editing an ended request's messages", "request_id", c.id,
				"ended", rec.ResolvedAt, "messages", len(rec.Posts))
			pipe.ZRem(ctx, c.key, c.id)
		default:
			// An edit that keeps failing is tried less often than every
			// claim. XX: if it is edited meanwhile, it stays out.
			if wait := retryWait(now.Sub(rec.ResolvedAt)); wait > finishClaim {
				pipe.ZAddXX(ctx, c.key, redis.Z{Score: float64(now.Add(wait).UnixMilli()), Member: c.id})
			}
			out = append(out, rec)
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return out, fmt.Errorf("unfinished: %w", unavailable(err))
		}
	}
	return out, nil
}

// retryWait is how long to wait before trying again the edits of a request
// that ended age ago: half its age, from finishClaim up to finishRetryMax.
// Tries come about 30 s, 3.5 min, 6.5 min, 10 min, 15 min ... after its
// end, then every 10 minutes: 9 in all before finishGiveUp.
func retryWait(age time.Duration) time.Duration {
	return min(max(age/2, finishClaim), finishRetryMax)
}

// queueUnedited queues on pipe the counts that add up to the number of
// ended requests whose posted messages are not yet known to be edited:
// one per shard.
func (s *Store) queueUnedited(ctx context.Context, pipe redis.Pipeliner) (cmds []*redis.IntCmd) {
	for sh := range shards {
		cmds = append(cmds, pipe.ZCard(ctx, s.keys.finish(sh)))
	}
	return cmds
}

// RunFinisher edits, every interval until ctx ends, the messages of ended
// requests that nobody has edited FinishGrace after their end (see
// Unfinished): it hands each to edit, finishWorkers at a time, each with
// finishEditTimeout, and waits for a round to end before the next. It runs
// apart from the expiry sweeper, so edits held up by a platform's rate
// limits never hold up expiry. edit calls Edited once all are edited.
func (s *Store) RunFinisher(ctx context.Context, every time.Duration, edit func(context.Context, *Record)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	sem := make(chan struct{}, finishWorkers)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		recs, err := s.Unfinished(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Log(ctx, s.LogLevel(err), "taking over unedited messages failed", "err", err)
		}
		var wg sync.WaitGroup
		for _, rec := range recs {
			s.log.Info("editing the messages of a request that ended unedited", "request_id", rec.ID, "status", rec.Status)
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(ctx, finishEditTimeout)
				defer cancel()
				edit(ctx, rec)
			})
		}
		wg.Wait()
	}
}

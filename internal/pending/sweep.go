package pending

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

// sweepBatch bounds how many due requests of one shard one sweep expires.
const sweepBatch = 100

// dropGoneScript drops a request's index entries while it has no record.
//
// KEYS as keys.request with every kind's open index.
// ARGV[1] id.
var dropGoneScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 5, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 1
`)

// Sweep expires the requests whose expiry has passed and returns the ones
// this call expired. Every replica may sweep at once: each due request is
// claimed by the resolve script, so exactly one of them expires it and
// returns it. It reads the due indexes, not key TTLs, so it needs neither
// keyspace notifications nor a ticking TTL.
func (s *Store) Sweep(ctx context.Context) ([]*Record, error) {
	now := strconv.FormatInt(s.opt.Now().UnixMilli(), 10)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, shards)
	for sh := range shards {
		cmds[sh] = pipe.ZRangeByScore(ctx, s.keys.due(sh), &redis.ZRangeBy{Min: "-inf", Max: now, Count: sweepBatch})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("sweep: %w", unavailable(err))
	}
	var expired []*Record
	for _, c := range cmds {
		for _, id := range c.Val() {
			rec, err := s.Resolve(ctx, id, Resolution{Status: seam.StatusExpired, IfDue: true})
			switch {
			case err == nil:
				expired = append(expired, rec)
			case errors.Is(err, ErrNotFound):
				// The record is gone (deleted by hand, or discarded): drop
				// its index entries, unless a request was created under its
				// id since (its tool_call_id asked again), whose they are.
				dropGoneScript.Run(ctx, s.rdb, s.keys.request(id, kinds...), id)
			case errors.Is(err, ErrAlreadyResolved), errors.Is(err, ErrNotDue):
				// Another replica won, or the clocks of two replicas disagree.
			default:
				return expired, fmt.Errorf("sweep: %w", err)
			}
		}
	}
	return expired, nil
}

// queueOverdue queues on pipe the counts that add up to the pending
// requests whose expiry passed more than late ago, by the store's clock,
// and that no sweeper has expired yet: one per shard.
func (s *Store) queueOverdue(ctx context.Context, pipe redis.Pipeliner, late time.Duration) (cmds []*redis.IntCmd) {
	until := strconv.FormatInt(s.opt.Now().Add(-late).UnixMilli(), 10)
	for sh := range shards {
		cmds = append(cmds, pipe.ZCount(ctx, s.keys.due(sh), "-inf", until))
	}
	return cmds
}

// RunSweeper expires, every interval until ctx ends, the requests that
// are due and hands each one it expired to onExpired, which edits its
// posted messages (and counts the end, which this replica made):
// finishWorkers at a time, each with finishEditTimeout, across rounds.
// A round does not wait for its edits, so an edit held up by a
// platform's rate limits holds up expiry only while every worker is
// taken, and for finishEditTimeout at most. RunFinisher takes over the
// edits that fail or run out of time.
func (s *Store) RunSweeper(ctx context.Context, every time.Duration, onExpired func(context.Context, *Record)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait() // edits in flight finish before it returns
	sem := make(chan struct{}, finishWorkers)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		recs, err := s.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Log(ctx, s.LogLevel(err), "expiry sweep failed", "err", err)
		}
		for _, rec := range recs {
			s.log.Info("request expired", "request_id", rec.ID)
			if onExpired == nil {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(ctx, finishEditTimeout)
				defer cancel()
				onExpired(ctx, rec)
			})
		}
	}
}

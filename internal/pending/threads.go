package pending

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Thread returns the thread recorded for session (a key the surface builds
// from the caller's session, the surface and the channel), or "" when the
// session has none yet.
func (s *Store) Thread(ctx context.Context, session string) (string, error) {
	ts, err := s.rdb.Get(ctx, s.keys.thread(session)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("thread: %w", unavailable(err))
	}
	return ts, nil
}

// SetThread records ts as session's thread unless one is recorded already,
// and returns the thread that holds: ts, or the one another replica
// recorded first. Threads are kept as long as finished records.
func (s *Store) SetThread(ctx context.Context, session, ts string) (string, error) {
	got, err := s.rdb.SetArgs(ctx, s.keys.thread(session), ts, redis.SetArgs{Mode: "NX", Get: true, TTL: s.opt.Retention}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return ts, nil // set: there was none
	case err != nil:
		return "", fmt.Errorf("set thread: %w", unavailable(err))
	}
	return got, nil
}

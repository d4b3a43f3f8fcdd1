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

// setThreadScript records a session's thread unless one is recorded
// already. It is SET NX GET, which Redis before 7.0 refuses.
//
// KEYS[1] thread. ARGV[1] the thread, ARGV[2] its TTL in ms.
// Returns the thread recorded before, or nil when ARGV[1] was recorded.
var setThreadScript = redis.NewScript(`
local got = redis.call('GET', KEYS[1])
if got then return got end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`)

// SetThread records ts as session's thread unless one is recorded already,
// and returns the thread that holds: ts, or the one another replica
// recorded first. Threads are kept as long as finished records.
func (s *Store) SetThread(ctx context.Context, session, ts string) (string, error) {
	got, err := setThreadScript.Run(ctx, s.rdb, []string{s.keys.thread(session)}, ts, s.opt.Retention.Milliseconds()).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return ts, nil // set: there was none
	case err != nil:
		return "", fmt.Errorf("set thread: %w", unavailable(err))
	}
	return got, nil
}

// forgetThreadScript deletes a session's thread if it is still the given
// one.
//
// KEYS[1] thread. ARGV[1] the thread to forget.
// Returns 1 when forgotten, 0 when the key holds another thread or none.
var forgetThreadScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// ForgetThread forgets session's thread if it is still ts, so that the
// session's next post starts a new one (SetThread): the surface found ts
// unusable (deleted, or locked). Only ts goes: when another replica that
// found it unusable too has forgotten it and recorded a new thread
// already, that one stays, and the replicas agree on it.
func (s *Store) ForgetThread(ctx context.Context, session, ts string) error {
	if err := forgetThreadScript.Run(ctx, s.rdb, []string{s.keys.thread(session)}, ts).Err(); err != nil {
		return fmt.Errorf("forget thread: %w", unavailable(err))
	}
	return nil
}

package pending

import (
	"context"
	"fmt"
	"time"
)

// SignOut records that the web session session (a digest of its cookie)
// has ended, for every replica, until ttl passes: when the session would
// have expired anyway.
func (s *Store) SignOut(ctx context.Context, session string, ttl time.Duration) error {
	if ttl <= 0 {
		return nil // expired already
	}
	ttl = ttl.Truncate(time.Second) + time.Second // Redis takes no TTL under a millisecond; a second to spare
	if err := s.rdb.Set(ctx, s.keys.signedOut(session), "1", ttl).Err(); err != nil {
		return fmt.Errorf("sign out: %w", unavailable(err))
	}
	return nil
}

// SignedOut reports whether the web session session was signed out.
func (s *Store) SignedOut(ctx context.Context, session string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.keys.signedOut(session)).Result()
	if err != nil {
		return false, fmt.Errorf("session: %w", unavailable(err))
	}
	return n > 0, nil
}

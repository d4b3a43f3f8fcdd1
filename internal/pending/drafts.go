package pending

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SaveDraft keeps draft, what the person who (a surface's user id) sent in
// a form of request id that was refused, for ttl, in place of any draft
// they had of it. A form that shows no field errors (Discord's) is then
// opened again filled as it was sent, rather than empty.
func (s *Store) SaveDraft(ctx context.Context, id, who, draft string, ttl time.Duration) error {
	ttl = max(ttl.Truncate(time.Second), time.Second)
	if err := s.rdb.Set(ctx, s.keys.draft(id, who), draft, ttl).Err(); err != nil {
		return fmt.Errorf("save draft of %s: %w", id, unavailable(err))
	}
	return nil
}

// Draft returns the draft the person who has of request id, or "" when
// they have none (it expired, or they never had one).
func (s *Store) Draft(ctx context.Context, id, who string) (string, error) {
	d, err := s.rdb.Get(ctx, s.keys.draft(id, who)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("draft of %s: %w", id, unavailable(err))
	}
	return d, nil
}

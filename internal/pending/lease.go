package pending

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseScript takes or renews a lease: it is free, passed, or held by
// the same holder.
//
// KEYS[1] lease.
// ARGV[1] holder, ARGV[2] now ms, ARGV[3] until ms, ARGV[4] key TTL ms.
// Returns 1 when holder holds the lease until ARGV[3], 0 when another
// holder holds it.
var leaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  local sep = string.find(v, '|', 1, true)
  if sep then
    local untilMS = tonumber(string.sub(v, 1, sep - 1))
    local holder = string.sub(v, sep + 1)
    if holder ~= ARGV[1] and untilMS and untilMS > tonumber(ARGV[2]) then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[3] .. '|' .. ARGV[1], 'PX', ARGV[4])
return 1
`)

// Lease takes the lease name for holder until ttl from now, or renews it
// when holder holds it already, and reports whether holder holds it. A
// lease its holder stops renewing passes to the next replica that asks
// once ttl has gone by, so a dead holder hands over by itself.
func (s *Store) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if ttl <= 0 || holder == "" {
		return false, errors.New("lease: needs a holder and a positive ttl")
	}
	now := s.opt.Now()
	n, err := leaseScript.Run(ctx, s.rdb, []string{s.keys.lease(name)},
		holder, now.UnixMilli(), now.Add(ttl).UnixMilli(), (3 * ttl).Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", name, unavailable(err))
	}
	return n == 1, nil
}

// releaseScript gives a lease up if holder holds it.
//
// KEYS[1] lease. ARGV[1] holder. Returns 1 when released, 0 otherwise.
var releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local sep = string.find(v, '|', 1, true)
if sep and string.sub(v, sep + 1) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// ReleaseLease gives the lease name up if holder holds it, so that
// another replica takes it over without waiting for it to pass.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	if err := releaseScript.Run(ctx, s.rdb, []string{s.keys.lease(name)}, holder).Err(); err != nil {
		return fmt.Errorf("release lease %s: %w", name, unavailable(err))
	}
	return nil
}

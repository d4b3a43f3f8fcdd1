package pending

import (
	"context"
	"errors"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Dial connects to the Redis at url: redis://[user:password@]host:port[/db]
// or rediss:// for TLS. The error never repeats the URL, which may hold a
// password.
func Dial(url string) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("redis.url must look like redis://[user:password@]host:port[/db] or rediss://...")
	}
	return redis.NewClient(opt), nil
}

// Embedded is an in-process Redis (miniredis): the working default for one
// machine, lost when the process ends.
type Embedded struct {
	m *miniredis.Miniredis
}

// StartEmbedded starts an in-process Redis on a loopback port.
func StartEmbedded() (*Embedded, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	return &Embedded{m: m}, nil
}

// URL is the embedded Redis's address as a redis:// URL.
func (e *Embedded) URL() string { return "redis://" + e.m.Addr() }

// Close stops the embedded Redis.
func (e *Embedded) Close() { e.m.Close() }

// Run makes the embedded Redis's key TTLs follow the wall clock until ctx
// ends. miniredis only expires keys when told time has passed, and without
// this, finished records would never leave memory.
func (e *Embedded) Run(ctx context.Context) error {
	const every = time.Second
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			e.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

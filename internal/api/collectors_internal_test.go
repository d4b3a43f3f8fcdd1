package api

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// A scrape of /metrics reads the store's three counts in one round trip
// to Redis, not one each: every Prometheus scrape of every replica pays it.
func TestScrapeReadsRedisOnce(t *testing.T) {
	mr, err := pending.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mr.Close)
	rdb, err := pending.Dial(mr.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	trips := &roundTrips{}
	rdb.AddHook(trips)
	now := time.Now()
	store := pending.New(rdb, pending.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	for range 2 {
		if _, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default", ExpiresIn: time.Minute,
			Questions: &seam.Questions{Questions: []seam.Question{{ID: "go", Question: "Deploy?"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute + overdueAfter + time.Second) // both overdue, no sweeper running

	reg := prometheus.NewRegistry()
	reg.MustRegister(pendingCollector{store})
	// go-redis dials a connection for its first pipeline (HELLO, CLIENT
	// SETINFO): not the scrape's doing.
	if _, err := store.Count(ctx, 0); err != nil {
		t.Fatal(err)
	}
	trips.n.Store(0)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
	}
	for name, want := range map[string]float64{
		"askbridge_pending_requests": 2, "askbridge_overdue_requests": 2, "askbridge_unedited_requests": 0, "askbridge_redis_up": 1,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v); want %v", name, v, ok, want)
		}
	}
	if n := trips.n.Load(); n != 1 {
		t.Errorf("a scrape took %d round trips to Redis; want 1", n)
	}
}

// roundTrips counts round trips to Redis as askbridge_redis_round_trips_total
// does: each command sent alone and each pipeline one.
type roundTrips struct{ n atomic.Int64 }

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// BenchmarkCreate creates a request and posts it to its route's one
// target, a surface that takes it at once, on a real Redis: the
// dispatcher's part of an agent's create, the store's included. It logs
// as bridge bench's replicas do: text, errors only.
func BenchmarkCreate(b *testing.B) {
	if os.Getenv("BRIDGE_TEST_REDIS_URL") == "" {
		b.Skip("BRIDGE_TEST_REDIS_URL is unset; the benchmark needs a real Redis")
	}
	url, prefix := apptest.Redis(b)
	cfg, err := config.Parse([]byte("slack: {bot_token: xoxb-test, signing_secret: s3cret}\nroutes:\n  - name: default\n    targets:\n      - slack: {channel: C1}\n"))
	if err != nil {
		b.Fatal(err)
	}
	rdb, err := pending.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	store := pending.New(rdb, pending.Options{Prefix: prefix})
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	m := dispatch.NewMetrics(prometheus.NewRegistry())
	d, err := dispatch.New(store, cfg, map[string]dispatch.Surface{"slack": newChat()}, m, log)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	nr := pending.NewRequest{
		Kind: seam.KindQuestion, Client: "agents", Caller: &seam.Caller{Name: "bench-agent", Session: "bench"},
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "deploy", Header: "Deploy", Question: "Deploy build 4711 to production?",
			Options: []seam.Option{{Label: "Yes, deploy (Recommended)", Description: "Ships to every region."}, {Label: "No, hold the release"},
				{Label: "Roll back to the last build", Description: "Restores the previous release."}}}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, created, err := d.Create(ctx, nr); err != nil || !created {
			b.Fatalf("Create: %v, %v", created, err)
		}
	}
}

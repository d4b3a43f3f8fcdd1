package pending

import (
	"context"
	"testing"
	"time"
)

func TestLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		a, c := b.store(), b.store() // two replicas
		const ttl = 30 * time.Second
		take := func(s *Store, holder string, want bool) {
			t.Helper()
			got, err := s.Lease(ctx, "discord-gateway", holder, ttl)
			if err != nil || got != want {
				t.Fatalf("Lease(%s) = %v, %v; want %v", holder, got, err, want)
			}
		}

		take(a, "replica-a", true)
		take(c, "replica-c", false) // held
		b.clock.Advance(ttl / 3)
		take(a, "replica-a", true) // renewed
		b.clock.Advance(ttl - time.Second)
		take(c, "replica-c", false) // still held: the renewal moved its end

		// replica-a dies: it renews no more, and the lease passes.
		b.clock.Advance(2 * time.Second)
		take(c, "replica-c", true)
		take(a, "replica-a", false) // the old holder has lost it
		b.clock.Advance(ttl / 3)
		take(c, "replica-c", true)

		// A holder that stops gives it up at once.
		if err := a.ReleaseLease(ctx, "discord-gateway", "replica-a"); err != nil {
			t.Fatal(err)
		}
		take(a, "replica-a", false) // releasing someone else's lease did nothing
		if err := c.ReleaseLease(ctx, "discord-gateway", "replica-c"); err != nil {
			t.Fatal(err)
		}
		take(a, "replica-a", true)

		// Leases of other names are independent.
		if ok, err := c.Lease(ctx, "other", "replica-c", ttl); err != nil || !ok {
			t.Fatalf("another lease: %v, %v", ok, err)
		}
	})
}

package app

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// A part that stops in order returns first, with nil; one that fails while
// stopping returns after it. The group's error is the failure: a bridge
// whose HTTP shutdown ran out with handlers still going must not log a
// clean stop and exit 0.
func TestGroupKeepsAnErrorThatComesLate(t *testing.T) {
	failed := errors.New("http server: requests still running 10 s after the stop were cut off")
	stopped := make(chan struct{})
	var g group
	g.add(func(ctx context.Context) error { <-ctx.Done(); close(stopped); return nil })
	g.add(func(ctx context.Context) error { <-stopped; return failed })
	g.add(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	g.add(func(ctx context.Context) error { <-ctx.Done(); return http.ErrServerClosed })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.run(ctx); !errors.Is(err, failed) {
		t.Errorf("run = %v, want the late failure", err)
	}

	var clean group
	clean.add(func(ctx context.Context) error { <-ctx.Done(); return nil })
	clean.add(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	clean.add(func(ctx context.Context) error { <-ctx.Done(); return http.ErrServerClosed })
	if err := clean.run(ctx); err != nil {
		t.Errorf("a clean stop = %v, want nil", err)
	}
}

package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/surface"
)

// discordgo's rate limiter keeps every bucket it makes for the life of the
// session. A gateway interaction's callback is a bucket of its own
// (interactions/{id}/...): made in the session's limiter, every click a
// replica answered over the gateway stayed in its memory for good.
func TestGatewayCallbacksLeaveNoBuckets(t *testing.T) {
	fake := NewFakeDiscord(t, "bot-token-of-the-bucket-test")
	api, err := newSession(&config.Discord{APIURL: fake.URL, BotToken: config.Secret(fake.Token)}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	h := &Interactions{s: &Surface{api: api, inPlace: newInPlace(), log: log}, log: log, work: surface.NewWork()}
	before := buckets(api.Ratelimiter)
	const clicks = 20
	for i := range clicks {
		// A component whose data can't be read is told "try again": a
		// response that needs neither a store nor a resolver.
		in := map[string]any{"id": fmt.Sprintf("13000000000000001%02d", i), "application_id": FakeAppID,
			"token": fmt.Sprintf("token-%d", i), "type": typeComponent, "data": "?"}
		fake.dispatched(in)
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		h.fromGateway(context.Background(), raw)
	}
	calls := fake.AllCalls("callback")
	if len(calls) != clicks {
		t.Fatalf("%d callbacks, want %d", len(calls), clicks)
	}
	for _, c := range calls {
		if c.Status != http.StatusNoContent {
			t.Fatalf("a callback was refused (%d): %v", c.Status, c.Body)
		}
	}
	if got := buckets(api.Ratelimiter); got > before+1 {
		t.Errorf("the session's rate limiter holds %d buckets after %d gateway callbacks, %d before: one per click", got, clicks, before)
	}
}

// buckets is how many buckets r holds.
func buckets(r *discordgo.RateLimiter) int {
	return reflect.ValueOf(r).Elem().FieldByName("buckets").Len()
}

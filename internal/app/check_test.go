package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/surface"
)

// A platform that never answers uses up the check's time, but only its
// own: Discord's answer (here, a refused token) is still reported, not a
// deadline that Slack's silence ran out.
func TestCheckHangingPlatformBlamesOnlyItself(t *testing.T) {
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server sees the client go
		select {
		case <-r.Context().Done(): // the client gave up
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop) // before Close, which waits for the handler
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"message": "401: Unauthorized", "code": 0}`)
	}))
	defer refuse.Close()
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: "xoxb-test", SigningSecret: "s", APIURL: hang.URL + "/api/"},
		Discord: &config.Discord{BotToken: "discord-test", ApplicationID: "1", PublicKey: strings.Repeat("ab", 32),
			APIURL: refuse.URL + "/api/v10/"},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{
			{Slack: &config.SlackTarget{Channel: "C1"}}, {Discord: &config.DiscordTarget{Channel: "111"}},
		}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var lines []string
	for _, f := range app.Check(ctx, cfg, surface.HTTPClient(), false) {
		lines = append(lines, f.String())
	}
	got := strings.Join(lines, "\n")
	for _, w := range []string{
		"note    redis: no redis.url",
		"PROBLEM slack: auth.test with slack.bot_token failed: can't reach " + hang.URL,
		"PROBLEM discord: signing in with discord.bot_token failed: 401: Unauthorized (HTTP 401, code 0)",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	if len(lines) != 3 {
		t.Errorf("findings:\n%s\nwant 3, redis, slack, discord", got)
	}
}

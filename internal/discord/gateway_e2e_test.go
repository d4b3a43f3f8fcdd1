package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/pending"
)

// TestGatewayMode: with discord.gateway on, two replicas share one Redis
// and only the one holding the lease connects a gateway session; a click
// dispatched over that session is answered through the callback endpoint
// and resolves the request like an HTTP interaction.
func TestGatewayMode(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	yaml := gatewayYAML(fake)
	url, prefix := apptest.Redis(t)
	var reps []bridge
	for range 2 {
		a := apptest.Start(t, apptest.Config(t, yaml, url, prefix), app.Options{})
		reps = append(reps, bridge{App: a, fake: fake})
	}
	gw.WaitIdentified(t)

	id := reps[1].create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	gw.Dispatch(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))

	rec := reps[0].wait(t, "/v1/questions", id)
	if got, want := rec.Raw("answer"), `{"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}`; got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
	cb := fake.WaitCalls(t, "callback", 1)[0]
	if respType(cb.Body) != 7 {
		t.Errorf("the gateway click was answered with %v, want UPDATE_MESSAGE", cb.Body)
	}
	if n := gw.Sessions(); n != 1 {
		t.Errorf("%d gateway sessions; only the lease holder may connect", n)
	}
}

// A gateway click whose callback Discord refuses (404 Unknown interaction,
// as past its 3 s window) does not show the outcome: the message is then
// edited through the API.
func TestGatewayCallbackRefusedIsEditedThroughTheAPI(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	yaml := gatewayYAML(fake)
	url, prefix := apptest.Redis(t)
	b := bridge{App: apptest.Start(t, apptest.Config(t, yaml, url, prefix), app.Options{}), fake: fake}
	gw.WaitIdentified(t)

	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	fake.FailNext("callback", discord.FakeFail{Status: http.StatusNotFound})
	gw.Dispatch(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("status %v; want answered", rec.M["status"])
	}
	edit := fake.WaitCalls(t, "edit", 1)[0]
	if edit.MessageID != msg.MessageID || !noControls(edit.Body) || !strings.Contains(discord.Text(edit.Body), "Answered by ada") {
		t.Errorf("edited %s to %v; want %s without controls, saying who answered", edit.MessageID, edit.Body, msg.MessageID)
	}
	if n := len(fake.AllCalls("callback")); n != 1 {
		t.Errorf("%d callbacks; want the one refused", n)
	}
}

// gatewayYAML is a replica's config with discord.gateway on and one route
// to the channel.
func gatewayYAML(fake *discord.FakeDiscord) string {
	return fmt.Sprintf(`
discord:
  bot_token: %s
  application_id: "1100000000000000001"
  api_url: %s
  gateway: true
routes:
  - name: default
    targets:
      - discord: {channel: "%s"}
`, botToken, fake.URL, channel)
}

// A gateway click whose callback Discord answers 429 is logged without
// its interaction token: discordgo's rate-limit error quotes the URL, and
// the callback's URL holds the token, which answers for the person for
// 15 minutes. The message is then edited through the API.
func TestGatewayCallbackRateLimitedLogsNoToken(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	url, prefix := apptest.Redis(t)
	logs := &apptest.LogBuffer{}
	b := bridge{App: apptest.StartLogged(t, apptest.Config(t, gatewayYAML(fake), url, prefix), app.Options{},
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))), fake: fake}
	gw.WaitIdentified(t)

	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	fake.FailNext("callback", discord.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: 30})
	gw.Dispatch(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("status %v; want answered", rec.M["status"])
	}
	fake.WaitCalls(t, "edit", 1) // after the failure is logged
	if !strings.Contains(logs.String(), "answering a gateway interaction failed") {
		t.Fatalf("the refused callback was not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "SECRET-INTERACTION-TOKEN") {
		t.Errorf("the interaction token reached the log:\n%s", logs.String())
	}
}

// TestGatewayRefusedTokenStops: a bot token Discord refuses (the gateway
// closes with 4004 after the identify) stops the replica with an error
// naming discord.bot_token, as Slack's refused app_token does, rather than
// retrying every few seconds for ever.
func TestGatewayRefusedTokenStops(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	fake.StartGateway(t)
	const wrong = "MTEwMDAwMDAwMDAwMDAwMDAwMQ.wrong.token-that-discord-refuses"
	yaml := strings.Replace(gatewayYAML(fake), "bot_token: "+botToken, "bot_token: "+wrong, 1)
	url, prefix := apptest.Redis(t)
	a := apptest.Run(t, apptest.Config(t, yaml, url, prefix), app.Options{}, slog.New(slog.DiscardHandler))
	select {
	case err := <-a.Done:
		if err == nil || !strings.Contains(err.Error(), "Discord refused discord.bot_token") || strings.Contains(err.Error(), "wrong.token") {
			t.Errorf("Run = %v; want an error naming discord.bot_token, without the token", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replica still runs 10 s after Discord refused its token")
	}
}

// A lease holder that can't reach Redis leaves the gateway before its
// lease passes: the replica that takes the lease over is then the only
// one Discord delivers interactions to. Redis may refuse (a closed port)
// or take the command and never answer (packets dropped).
func TestGatewayHolderCutOffFromRedisDisconnects(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang bool
	}{{"refused", false}, {"never answered", true}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := discord.NewFakeDiscord(t, botToken)
			gw := fake.StartGateway(t)
			cfg, err := config.Parse([]byte(gatewayYAML(fake)))
			if err != nil {
				t.Fatal(err)
			}
			url, prefix := apptest.Redis(t)
			const ttl = 300 * time.Millisecond
			replica := func(hooks ...redis.Hook) {
				rdb, err := pending.Dial(url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rdb.Close() })
				for _, h := range hooks {
					rdb.AddHook(h)
				}
				store := pending.New(rdb, pending.Options{Prefix: prefix})
				s, err := discord.New(cfg, discord.Options{Store: store, LeaseTTL: ttl})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { s.Interactions(storeResolver{store}).Run(ctx); close(done) }()
				t.Cleanup(func() { cancel(); <-done })
			}
			cut := &redisCut{hang: tc.hang}
			replica(cut)
			gw.WaitSessions(t, 1, 10*time.Second) // the first holds the lease
			cut.on.Store(true)
			replica()
			gw.WaitIdentified(t)
			gw.WaitIdentified(t) // the second, once the lease passed
			gw.WaitSessions(t, 1, 10*ttl)
		})
	}
}

// storeResolver resolves through the store alone, as a replica without a
// dispatcher would.
type storeResolver struct{ s *pending.Store }

func (r storeResolver) Resolve(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error) {
	return r.s.Resolve(ctx, id, res)
}

// redisCut fails every command, once on, as an unreachable Redis does:
// at once, or, with hang, when the command's context ends (go-redis's
// deadline on a connection whose packets are dropped).
type redisCut struct {
	on   atomic.Bool
	hang bool
}

var errCut = fmt.Errorf("dial tcp 10.0.0.5:6379: %w", syscall.ETIMEDOUT)

func (c *redisCut) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *redisCut) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c.on.Load() {
			err := errCut
			if c.hang {
				<-ctx.Done()
				err = ctx.Err()
			}
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (c *redisCut) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c.on.Load() {
			return errCut
		}
		return next(ctx, cmds)
	}
}

// TestGatewayOnlyRefusesTheEndpoint: a replica that takes interactions
// over the gateway alone has no discord.public_key, and refuses every
// POST to /discord/interactions, however signed, a PING too: no key of
// anyone's may stand in for the application's.
func TestGatewayOnlyRefusesTheEndpoint(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	url, prefix := apptest.Redis(t)
	b := bridge{App: apptest.Start(t, apptest.Config(t, gatewayYAML(fake), url, prefix), app.Options{}), fake: fake}
	gw.WaitIdentified(t)

	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	for name, payload := range map[string]map[string]any{
		"a PING":  discord.Ping(),
		"a click": discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil),
	} {
		body, _ := json.Marshal(payload)
		req, _ := http.NewRequest(http.MethodPost, b.URL()+"/discord/interactions", bytes.NewReader(body))
		req.Header = discord.Sign(discord.SigningKey, time.Now(), body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, resp.StatusCode)
		}
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("after refused interactions: %v; want pending", rec.M["status"])
	}
}

// TestGatewayConnectionIsMeasured: the replica holding the gateway says
// on /metrics whether its session is up, and counts each time it went
// down. discordgo reopens a session that dropped by itself, resuming it,
// and told the bridge nothing: a session that could not be reopened left
// Discord's clicks unreceived with nothing to alert on. A replica without
// the lease shows 0.
func TestGatewayConnectionIsMeasured(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	url, prefix := apptest.Redis(t)
	a, logs := apptest.StartWatched(t, apptest.Config(t, gatewayYAML(fake), url, prefix), app.Options{}, botToken)
	b := bridge{App: a, fake: fake, logs: logs}
	check := func(a *app.App, when, up, drops string) {
		t.Helper()
		if got, want := apptest.Samples(t, a, "askbridge_connection_up"), `askbridge_connection_up{surface="discord"} `+up; got != want {
			t.Errorf("%s: %q; want %q", when, got, want)
		}
		if got, want := apptest.Samples(t, a, "askbridge_connection_drops_total"), `askbridge_connection_drops_total{surface="discord"} `+drops; got != want {
			t.Errorf("%s: %q; want %q", when, got, want)
		}
	}
	logs.WaitFor(t, "discord gateway connected", 10*time.Second)
	check(a, "connected", "1", "0")
	other := apptest.Start(t, apptest.Config(t, gatewayYAML(fake), url, prefix), app.Options{})
	check(other, "the replica without the lease", "0", "0")

	held, release := gw.HoldNext()
	gw.Drop()
	select {
	case <-held: // discordgo dials again once it has closed the session that dropped
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnection within 10 s of the drop")
	}
	check(a, "dropped, reconnecting", "0", "1")
	release()

	// A click over the resumed session is answered: it is open again.
	gw.WaitSessions(t, 1, 10*time.Second)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	gw.Dispatch(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("a click after the reconnection left the request %v", rec.M["status"])
	}
	check(a, "resumed", "1", "1")
}

// TestGatewayClosedSessionStaysClosed: discordgo reopens a session that
// dropped, retrying with backoff in a loop of its own that closing the
// session does not stop. A replica that stopped (or lost the lease) while
// it retried found its session reopened afterwards: one nothing owned,
// taking every interaction beside the lease holder's.
func TestGatewayClosedSessionStaysClosed(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	url, prefix := apptest.Redis(t)
	r := apptest.Run(t, apptest.Config(t, gatewayYAML(fake), url, prefix), app.Options{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	gw.WaitIdentified(t)
	gw.WaitHeartbeat(t) // open: a drop now is the listener's to notice alone

	cut := gw.CutNext()
	gw.Drop()
	select {
	case <-cut: // the first reconnection fails; discordgo waits, then retries
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnection within 10 s of the drop")
	}
	held, release := gw.HoldNext()
	r.Stop()
	select {
	case <-held: // the retry
	case <-time.After(10 * time.Second):
		t.Fatal("no second reconnection within 10 s of the first")
	}
	release()
	select {
	case err := <-r.Done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("app.Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("app did not stop within 15s")
	}
	gw.WaitResumed(t)
	gw.WaitSessions(t, 0, 10*time.Second)
}

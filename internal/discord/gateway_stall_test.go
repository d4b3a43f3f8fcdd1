package discord_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/pending"
)

// discordgo's Open reads the gateway's HELLO and READY with no deadline,
// holding the session's lock, which Close waits for: a gateway that took
// the connection and said nothing held Open for good, and a replica that
// was to stop (or to hand the lease over) with it.

// TestGatewayStalledBeforeHelloStops: a replica told to stop while its
// gateway says nothing stops. Its handshake has an hour: stopping alone
// ends it.
func TestGatewayStalledBeforeHelloStops(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	held, _ := gw.HoldNext()
	stop, done := gatewayReplica(t, fake, discord.Options{GatewayHandshake: time.Hour})
	waitClosed(t, held, "the replica did not connect to the gateway within 10 s")
	stop()
	waitClosed(t, done, "the replica did not stop within 10 s while its gateway said nothing")
}

// TestGatewayStalledBeforeHelloIsRetried: a connection whose gateway says
// nothing fails once the handshake's time has passed, saying so, and the
// replica connects again, as after any gateway that failed to open.
func TestGatewayStalledBeforeHelloIsRetried(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	held, _ := gw.HoldNext()
	logs := &apptest.LogBuffer{}
	gatewayReplica(t, fake, discord.Options{LeaseTTL: 3 * time.Second, GatewayHandshake: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	waitClosed(t, held, "the replica did not connect to the gateway within 10 s")
	logs.WaitFor(t, "opening the discord gateway failed; retrying", 10*time.Second)
	if !strings.Contains(logs.String(), "gateway handshake stalled: not READY within 1s") {
		t.Errorf("the failure does not say the gateway stalled:\n%s", logs)
	}
	gw.WaitIdentified(t)
	// Ended once the session is open, not between its READY and its first
	// heartbeat: a connection that drops there sets discordgo's reconnect
	// loop racing its heartbeat's (the race detector fails the test).
	gw.WaitHeartbeat(t)
}

// TestGatewayHandshakeTimeEndsAtReady: the handshake's time bounds the
// way to READY alone: the connection then lasts past it, heartbeats and
// their ACKs going on over it.
func TestGatewayHandshakeTimeEndsAtReady(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	gw.HeartbeatEvery(200 * time.Millisecond)
	const within = 2 * time.Second
	gatewayReplica(t, fake, discord.Options{GatewayHandshake: within})
	gw.WaitIdentified(t)
	// Not a wait for an event: the time that must pass for the handshake's
	// deadline, counted from the dial before this READY, to be behind.
	<-time.After(within)
	// Two heartbeats from now on: a connection cut at that deadline could
	// carry one sent before, not both; the second would come over a new
	// connection.
	gw.WaitHeartbeat(t)
	gw.WaitHeartbeat(t)
	if n := gw.Dialled(); n != 1 {
		t.Errorf("%d connections to the gateway; want the first alone, never cut", n)
	}
}

// TestGatewayStalledReconnectionStops: discordgo reconnects a session that
// dropped in a loop of its own, whose Open holds the session's lock: a
// replica stopping while that reconnection stalled waited on it in Close
// for good. Its handshake has an hour: stopping alone ends it.
func TestGatewayStalledReconnectionStops(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	gw := fake.StartGateway(t)
	stop, done := gatewayReplica(t, fake, discord.Options{GatewayHandshake: time.Hour})
	gw.WaitIdentified(t)
	gw.WaitHeartbeat(t) // open: a drop now is the listener's to notice alone
	held, _ := gw.HoldNext()
	gw.Drop()
	waitClosed(t, held, "no reconnection within 10 s of the drop")
	stop()
	waitClosed(t, done, "the replica did not stop within 10 s while its reconnection stalled")
}

// TestGatewayUnreachableNamesAPIURL: a gateway that can't be opened for
// want of a connection to discord.api_url says so, naming api_url's host
// (discordgo's error names discord.com/api/v9 whatever api_url says).
func TestGatewayUnreachableNamesAPIURL(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // its port now refuses connections
	logs := &apptest.LogBuffer{}
	gatewayReplica(t, &discord.FakeDiscord{URL: closed.URL + "/api/v10/"}, discord.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	logs.WaitFor(t, "opening the discord gateway failed; retrying", 10*time.Second)
	if s := logs.String(); !strings.Contains(s, closed.URL+"/…") || strings.Contains(s, "discord.com") {
		t.Errorf("the failure does not name discord.api_url's host (%s) alone:\n%s", closed.URL, s)
	}
}

// gatewayReplica runs the gateway of a replica of fake's bot with opt (its
// store set here) until stop is called or t ends; done is closed once it
// has stopped.
func gatewayReplica(t *testing.T, fake *discord.FakeDiscord, opt discord.Options) (stop func(), done <-chan struct{}) {
	t.Helper()
	cfg, err := config.Parse([]byte(gatewayYAML(fake)))
	if err != nil {
		t.Fatal(err)
	}
	url, prefix := apptest.Redis(t)
	rdb, err := pending.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	opt.Store = pending.New(rdb, pending.Options{Prefix: prefix})
	s, err := discord.New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		s.Interactions(storeResolver{opt.Store}).Run(ctx)
		close(stopped)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(15 * time.Second):
			t.Error("the replica did not stop within 15 s of the test's end")
		}
	})
	return cancel, stopped
}

// waitClosed waits until c is closed, failing t with failure after 10 s.
func waitClosed(t *testing.T, c <-chan struct{}, failure string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
	}
}

package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// A request that no target took is discarded and its agent told 503
// NO_PROVIDER: askbridge_requests_created_total does not count it, or a
// Slack outage would read as requests created and never resolved. One that
// a target took is counted. The failed post is, from 0.
func TestCreatedCountsOnlyRequestsATargetTook(t *testing.T) {
	a, fake := startOnSlack(t)
	question := map[string]any{"questions": []any{map[string]any{"id": "go", "question": "Deploy?"}}}
	// A configured surface's failures are there from the start, at 0: an
	// alert on their increase sees the first one.
	if got, want := apptest.Samples(t, a, "askbridge_post_failures_total"), `askbridge_post_failures_total{surface="slack"} 0`; got != want {
		t.Errorf("at start: %q; want %q", got, want)
	}

	fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "channel_not_found"})
	if status, rec := apptest.Do(t, a.URL(), http.MethodPost, "/v1/questions", question); status != http.StatusServiceUnavailable {
		t.Fatalf("create with the post refused: %d %v; want 503 NO_PROVIDER", status, rec.M)
	}
	if got := apptest.Samples(t, a, "askbridge_requests_created_total"); got != "" {
		t.Errorf("after a create that no target took: %s; want no sample", got)
	}
	if got, want := apptest.Samples(t, a, "askbridge_post_failures_total"), `askbridge_post_failures_total{surface="slack"} 1`; got != want {
		t.Errorf("after a post that failed: %q; want %q", got, want)
	}
	apptest.Create(t, a.URL(), "/v1/questions", question)
	if got, want := apptest.Samples(t, a, "askbridge_requests_created_total"), `askbridge_requests_created_total{kind="question",route="default"} 1`; got != want {
		t.Errorf("after a create that was posted: %q; want %q", got, want)
	}
}

// An edit of an ended request's message that fails is counted, from 0,
// before it is logged: messages that keep their buttons after their
// request is over can be alerted on by their surface, as failed posts
// are. askbridge_unedited_requests can't tell them apart: it counts the
// requests being edited as they end, never 0 for long under traffic.
func TestEditFailuresAreCounted(t *testing.T) {
	cfg, fake := slackConfig(t)
	a, logs := apptest.StartWatched(t, cfg, app.Options{})
	if got, want := apptest.Samples(t, a, "askbridge_edit_failures_total"), `askbridge_edit_failures_total{surface="slack"} 0`; got != want {
		t.Errorf("at start: %q; want %q", got, want)
	}
	id := apptest.Create(t, a.URL(), "/v1/questions", map[string]any{"questions": []any{map[string]any{"id": "go", "question": "Deploy?"}}})
	apptest.Posted(t, a.URL(), "/v1/questions", id, 1)
	fake.FailNext("chat.update", slacktest.FakeFail{Error: "invalid_blocks"})
	if status, rec := apptest.Do(t, a.URL(), http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, rec.M)
	}
	logs.WaitFor(t, "editing a finished request's message failed", 10*time.Second)
	if got, want := apptest.Samples(t, a, "askbridge_edit_failures_total"), `askbridge_edit_failures_total{surface="slack"} 1`; got != want {
		t.Errorf("after an edit that failed: %q; want %q", got, want)
	}
}

// A request more than a minute past its expiry that no sweeper has
// expired (sweepers behind, or none running) is counted: its agent is not
// told it timed out, and its buttons stay live though an answer is
// refused. One just past it, which the next sweep expires, is not: under
// traffic that would never read 0.
func TestOverdueRequestsAreCounted(t *testing.T) {
	url, prefix := apptest.Redis(t)
	clk := apptest.NewClock(time.Now())
	// No sweep within the test: the count is the one before it.
	a := apptest.Start(t, apptest.Config(t, "store: {sweep_interval: 1h}\n", url, prefix), app.Options{Now: clk.Now})
	apptest.Create(t, a.URL(), "/v1/questions", map[string]any{"questions": []any{map[string]any{"id": "go", "question": "Deploy?"}}, "expires_in": "1m"})
	start := clk.Now()
	for _, tc := range []struct {
		at   time.Duration // after the create
		want string
	}{
		{0, "askbridge_overdue_requests 0"},
		{90 * time.Second, "askbridge_overdue_requests 0"},  // 30 s past its expiry
		{150 * time.Second, "askbridge_overdue_requests 1"}, // 90 s past it
	} {
		clk.Advance(start.Add(tc.at).Sub(clk.Now()))
		if got := apptest.Samples(t, a, "askbridge_overdue_requests"); got != tc.want {
			t.Errorf("%v after the create: %q; want %q", tc.at, got, tc.want)
		}
	}
}

// startOnSlack starts a replica whose default route posts to a fake
// Slack's channel C0AGENTS.
func startOnSlack(t *testing.T) (*app.App, *slacktest.FakeSlack) {
	cfg, fake := slackConfig(t)
	return apptest.Start(t, cfg, app.Options{}), fake
}

// slackConfig is the config of a replica whose default route posts to
// a fake Slack's channel C0AGENTS, and the fake.
func slackConfig(t *testing.T) (*config.Config, *slacktest.FakeSlack) {
	const token = "xoxb-1111-2222-METRICSBOTTOKEN"
	fake := slacktest.NewFakeSlack(t, token)
	url, prefix := apptest.Redis(t)
	return apptest.Config(t, fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: metrics-signing-secret
  api_url: %s
routes:
  - name: default
    targets:
      - slack: {channel: C0AGENTS}
`, token, fake.URL), url, prefix), fake
}

// A client's retry of a create whose post is slow to fail re-attaches to
// the request being posted. When no target takes it, the retry's wait and
// any read after it get the 503 NO_PROVIDER the create got, not a 404 for
// a request that never was: an agent's harness falls through on it.
func TestReattachToADiscardedCreateIsNoProvider(t *testing.T) {
	a, fake := startOnSlack(t)
	question := map[string]any{"questions": []any{map[string]any{"id": "go", "question": "Deploy?"}}, "tool_call_id": "call-slow-1"}
	post := fake.Hold("chat.postMessage")
	fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "not_in_channel"})
	first := apptest.Go(a.URL(), http.MethodPost, "/v1/questions", question)
	<-post.Arrived()
	status, retry := apptest.Do(t, a.URL(), http.MethodPost, "/v1/questions", question)
	if status != http.StatusOK || retry.M["status"] != "pending" {
		t.Fatalf("the retry while the post is under way: %d %v; want 200 with the pending request", status, retry.M)
	}
	id, _ := retry.M["id"].(string)
	waited := apptest.Go(a.URL(), http.MethodGet, "/v1/questions/"+id+"?wait=30s", nil)
	apptest.WaitWaiting(t, a, 1)
	post.Release()

	for name, ch := range map[string]<-chan apptest.Result{"the create": first, "the retry's wait": waited} {
		if r := apptest.Await(t, ch, 10*time.Second); r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Rec.Raw("error"), `"NO_PROVIDER"`) || !strings.Contains(r.Rec.Raw("error"), "not_in_channel") {
			t.Errorf("%s: %d %s; want 503 NO_PROVIDER saying why", name, r.Status, r.Rec.Raw("error"))
		}
	}
	if status, rec := apptest.Do(t, a.URL(), http.MethodGet, "/v1/questions/"+id, nil); status != http.StatusServiceUnavailable || !strings.Contains(rec.Raw("error"), `"NO_PROVIDER"`) {
		t.Errorf("a read after the discard: %d %s; want 503 NO_PROVIDER", status, rec.Raw("error"))
	}
	// Only reads and waits tell of the discard: a cancel, an answer or a
	// lookup by tool_call_id find nothing (404), as for any unknown id.
	for _, tc := range []struct{ method, path string }{
		{http.MethodDelete, "/v1/questions/" + id},
		{http.MethodPost, "/v1/questions/" + id + "/answer"},
		{http.MethodGet, "/v1/questions?tool_call_id=call-slow-1"},
	} {
		if status, rec := apptest.Do(t, a.URL(), tc.method, tc.path, map[string]any{"answers": []any{}}); status != http.StatusNotFound {
			t.Errorf("%s %s after the discard: %d %s; want 404", tc.method, tc.path, status, rec.Raw("error"))
		}
	}
	// Asked again, it is posted afresh.
	if status, rec := apptest.Do(t, a.URL(), http.MethodPost, "/v1/questions", question); status != http.StatusCreated {
		t.Errorf("asked again once the target takes it: %d %v; want 201", status, rec.M)
	}
}

// A replica that takes its Slack clicks over Socket Mode says on /metrics
// whether its connection is up, from the start, and counts each time it
// went down: a connection that can't be made again leaves the replica
// deaf to clicks, which Slack does not tell anyone. A replica that takes
// them over the Request URL has no such series.
func TestSocketModeConnectionIsMeasured(t *testing.T) {
	const token, appToken = "xoxb-1111-2222-METRICSBOTTOKEN", "xapp-1-A0001-1234-METRICSAPPTOKEN"
	fake := slacktest.NewFakeSlack(t, token)
	sock := fake.SocketMode(appToken)
	sock.Refuse("service_unavailable")
	url, prefix := apptest.Redis(t)
	a, logs := apptest.StartWatched(t, apptest.Config(t, fmt.Sprintf(`
slack:
  bot_token: %s
  app_token: %s
  api_url: %s
routes:
  - name: default
    targets:
      - slack: {channel: C0AGENTS}
`, token, appToken, fake.URL), url, prefix), app.Options{}, token, appToken)
	const refused, connected = "slack socket mode could not connect", "slack socket mode connected"
	check := func(when, up, drops string) {
		t.Helper()
		if got, want := apptest.Samples(t, a, "askbridge_connection_up"), `askbridge_connection_up{surface="slack"} `+up; got != want {
			t.Errorf("%s: %q; want %q", when, got, want)
		}
		if got, want := apptest.Samples(t, a, "askbridge_connection_drops_total"), `askbridge_connection_drops_total{surface="slack"} `+drops; got != want {
			t.Errorf("%s: %q; want %q", when, got, want)
		}
	}
	// Each line is logged once the event before it has been counted.
	// Slack's refusal may be logged more than once before the test
	// stops it (each retry's), so the refusal after the drop is the one
	// past those logged before it.
	logs.WaitFor(t, refused, 10*time.Second)
	check("while Slack refuses the first connection", "0", "0")
	sock.Refuse("")
	logs.WaitFor(t, connected, 10*time.Second)
	check("connected", "1", "0")
	before := strings.Count(logs.String(), refused)
	sock.Refuse("service_unavailable")
	sock.Disconnect(t, "refresh_requested")
	logs.WaitForN(t, refused, before+1, 10*time.Second)
	check("dropped, and refused a new connection", "0", "1")
	sock.Refuse("")
	logs.WaitForN(t, connected, 2, 10*time.Second)
	check("connected again", "1", "1")

	if other, _ := startOnSlack(t); apptest.Samples(t, other, "askbridge_connection_up") != "" {
		t.Error("a replica on the Request URL has askbridge_connection_up; want no sample")
	}
}

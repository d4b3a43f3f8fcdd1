package app_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// A request that no target took is discarded and its agent told 503
// NO_PROVIDER: askbridge_requests_created_total does not count it, or a
// Slack outage would read as requests created and never resolved. One that
// a target took is counted.
func TestCreatedCountsOnlyRequestsATargetTook(t *testing.T) {
	const token = "xoxb-1111-2222-METRICSBOTTOKEN"
	fake := slacktest.NewFakeSlack(t, token)
	url, prefix := apptest.Redis(t)
	a := apptest.Start(t, apptest.Config(t, fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: metrics-signing-secret
  api_url: %s
routes:
  - name: default
    targets:
      - slack: {channel: C0AGENTS}
`, token, fake.URL), url, prefix), app.Options{})
	question := map[string]any{"questions": []any{map[string]any{"id": "go", "question": "Deploy?"}}}

	fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "channel_not_found"})
	if status, rec := apptest.Do(t, a.URL(), http.MethodPost, "/v1/questions", question); status != http.StatusServiceUnavailable {
		t.Fatalf("create with the post refused: %d %v; want 503 NO_PROVIDER", status, rec.M)
	}
	if got := created(t, a); got != "" {
		t.Errorf("after a create that no target took: %s; want no sample", got)
	}
	apptest.Create(t, a.URL(), "/v1/questions", question)
	if got, want := created(t, a), `askbridge_requests_created_total{kind="question",route="default"} 1`; got != want {
		t.Errorf("after a create that was posted: %q; want %q", got, want)
	}
}

// created is the replica's askbridge_requests_created_total samples.
func created(t *testing.T, a *app.App) string {
	t.Helper()
	res, err := http.Get(a.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var samples []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "askbridge_requests_created_total{") {
			samples = append(samples, strings.TrimSpace(line))
		}
	}
	return strings.Join(samples, "\n")
}

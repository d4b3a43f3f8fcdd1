package app_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// TestOpenAPIWarnedAtStart: a replica whose API is open while Slack's
// callbacks reach it from outside says so once as it starts, naming the
// keys and no secret; with a token it says nothing of it.
func TestOpenAPIWarnedAtStart(t *testing.T) {
	const token = "xoxb-1111-2222-OPENAPIBOTTOKEN"
	fake := slacktest.NewFakeSlack(t, token)
	url, prefix := apptest.Redis(t)
	slack := fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: LEAK-openapi-signing-secret
  api_url: %s
routes:
  - name: default
    targets:
      - slack: {channel: C0AGENTS}
`, token, fake.URL)
	for _, tt := range []struct {
		name, yaml string
		warned     bool
	}{
		{"open", slack, true},
		{"with a token", slack + "api: {tokens: [{name: agent, token: LEAK-openapi-api-token, scopes: [ask, answer]}]}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs apptest.LogBuffer
			a, err := app.New(apptest.Config(t, tt.yaml, url, prefix), slog.New(slog.NewTextHandler(&logs, nil)), app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			out := logs.String()
			if got := strings.Count(out, "level=WARN msg=\"no api.tokens: the API is open"); got != map[bool]int{true: 1, false: 0}[tt.warned] {
				t.Errorf("%d warnings of an open API; want warned %v. Log:\n%s", got, tt.warned, out)
			}
			if tt.warned && !strings.Contains(out, "slack.signing_secret") {
				t.Errorf("the warning does not name the key:\n%s", out)
			}
			if strings.Contains(out, "LEAK") || strings.Contains(out, token) {
				t.Errorf("a secret is in the log:\n%s", out)
			}
		})
	}
}

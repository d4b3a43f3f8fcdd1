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

// TestUnusedSurfaceWarnedAtStart: a replica with a slack: section that no
// route's targets use says so once as it starts, naming the section and
// no secret; with a Slack target it says nothing of it.
func TestUnusedSurfaceWarnedAtStart(t *testing.T) {
	const token = "xoxb-1111-2222-UNUSEDBOTTOKEN"
	fake := slacktest.NewFakeSlack(t, token)
	url, prefix := apptest.Redis(t)
	slack := fmt.Sprintf(`
api: {tokens: [{name: agent, token: LEAK-unused-api-token, scopes: [ask, answer]}]}
slack:
  bot_token: %s
  signing_secret: LEAK-unused-signing-secret
  api_url: %s
`, token, fake.URL)
	for _, tt := range []struct {
		name, yaml string
		warned     bool
	}{
		{"no target", slack + "routes: [{name: default, targets: []}]\n", true},
		{"a slack target", slack + "routes: [{name: default, targets: [{slack: {channel: C0AGENTS}}]}]\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs apptest.LogBuffer
			a, err := app.New(apptest.Config(t, tt.yaml, url, prefix), slog.New(slog.NewTextHandler(&logs, nil)), app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			out := logs.String()
			if got := strings.Count(out, "level=WARN msg=\"the slack: section is set but no route's targets use it"); got != map[bool]int{true: 1, false: 0}[tt.warned] {
				t.Errorf("%d warnings of an unused slack: section; want warned %v. Log:\n%s", got, tt.warned, out)
			}
			if strings.Contains(out, "LEAK") || strings.Contains(out, token) {
				t.Errorf("a secret is in the log:\n%s", out)
			}
		})
	}
}

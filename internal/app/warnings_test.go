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

// TestStartWarnings: a replica says once, as it starts, what in its config
// works against its users, naming the keys and no secret: an API open
// while Slack's callbacks reach it from outside, a slack: section that
// no route's targets use (nothing is posted there), and a Slack bot token
// that expires within 12 hours (token rotation). Fixed, it says nothing
// of them.
func TestStartWarnings(t *testing.T) {
	const token = "xoxb-1111-2222-WARNINGSBOTTOKEN"
	fake := slacktest.NewFakeSlack(t, token)
	url, prefix := apptest.Redis(t)
	slack := fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: LEAK-warnings-signing-secret
  api_url: %s
`, token, fake.URL)
	const (
		tokens   = "api: {tokens: [{name: agent, token: LEAK-warnings-api-token, scopes: [ask, answer]}]}\n"
		targeted = "routes: [{name: default, targets: [{slack: {channel: C0AGENTS}}]}]\n"
		untarget = "routes: [{name: default, targets: []}]\n"
		openAPI  = `level=WARN msg="no api.tokens: the API is open`
		unused   = `level=WARN msg="the slack: section is set but no route's targets use it`
		rotating = `level=WARN msg="slack.bot_token is from a Slack app with token rotation on (xoxe.xoxb-…): Slack expires it 12 hours after issuing it and the bridge does not renew it`
	)
	// The token of an app with token rotation on; the fake need not take
	// it: New calls no Slack method.
	rotates := strings.Replace(slack, token, "xoxe.xoxb-1111-LEAK-warnings-rotating", 1)
	for _, tt := range []struct {
		name, yaml, warning string
		warned              bool
		names               string // a key the warning names
	}{
		{"an open API", slack + targeted, openAPI, true, "slack.signing_secret"},
		{"an API with a token", slack + targeted + tokens, openAPI, false, ""},
		{"a slack: section without a target", slack + untarget + tokens, unused, true, "slack:"},
		{"a slack target", slack + targeted + tokens, unused, false, ""},
		{"a bot token that expires", rotates + targeted + tokens, rotating, true, "token_expired"},
		{"a bot token that does not expire", slack + targeted + tokens, rotating, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs apptest.LogBuffer
			a, err := app.New(apptest.Config(t, tt.yaml, url, prefix), slog.New(slog.NewTextHandler(&logs, nil)), app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			out := logs.String()
			if got := strings.Count(out, tt.warning); got != map[bool]int{true: 1, false: 0}[tt.warned] {
				t.Errorf("%d warnings %s; want warned %v. Log:\n%s", got, tt.warning, tt.warned, out)
			}
			if tt.names != "" && !strings.Contains(out, tt.names) {
				t.Errorf("the warning does not name %s:\n%s", tt.names, out)
			}
			if strings.Contains(out, "LEAK") || strings.Contains(out, token) {
				t.Errorf("a secret is in the log:\n%s", out)
			}
		})
	}
}

package discord_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// waitForSlack waits for a call of method to the fake Slack whose text
// contains contains.
func waitForSlack(t *testing.T, fake *slacktest.FakeSlack, method, contains string) {
	t.Helper()
	fake.WaitFor(t, method+" containing "+contains, 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return slices.ContainsFunc(calls, func(c slacktest.FakeCall) bool {
			return c.Method == method && c.OK && strings.Contains(c.Text(), contains)
		})
	})
}

// TestAnswerOnDiscordEditsSlack: a route posts to Discord and Slack; the
// answer given on Discord edits the Slack message too, from the same
// dispatcher step, and says who answered where.
func TestAnswerOnDiscordEditsSlack(t *testing.T) {
	slack := slacktest.NewFakeSlack(t, "xoxb-cross")
	targets := defaultTarget + `
      - slack: {channel: C0CROSS}
slack:
  bot_token: xoxb-cross
  signing_secret: cross-signing-secret
  api_url: ` + slack.URL
	b := start(t, targets)
	id := b.create(t, "/v1/questions", cleanupQuestion())

	msg := b.fake.WaitCalls(t, "create", 1)[0]
	waitForSlack(t, slack, "chat.postMessage", "Proceed with the destructive cleanup?")

	resp := b.click(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if respType(resp) != 7 {
		t.Fatalf("the click was answered with %v, want UPDATE_MESSAGE", resp)
	}
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("status %v", rec.M["status"])
	}
	waitForSlack(t, slack, "chat.update", "Answered by ada")
}

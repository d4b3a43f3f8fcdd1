package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// A refused interaction's error, which the log carries, says which check
// refused it and what to look at: the clock for a stale timestamp, and
// which way it is off (the amount is surface.StaleTimestamp's, read from a
// clock this test can't pin: slack-go reads time.Now);
// slack.signing_secret for a signature that does not match.
func TestVerifySaysWhichCheckRefused(t *testing.T) {
	const secret = "the-signing-secret"
	h := &Interactions{s: &Surface{cfg: &config.Slack{SigningSecret: config.Secret(secret)}}}
	const body = "payload=%7B%7D"
	for _, tc := range []struct {
		name   string
		secret string
		at     time.Time
		want   string // "" for accepted
		not    string
	}{
		{"fresh", secret, time.Now(), "", ""},
		{"behind", secret, time.Now().Add(-time.Hour), "stale timestamp, 1h0m", "signing_secret"},
		{"ahead", secret, time.Now().Add(time.Hour), "ahead of this machine's clock (more than 5m0s): if Slack's own requests are refused, check this machine's clock", "signing_secret"},
		{"another secret", "not-the-signing-secret", time.Now(), "bad signature: if Slack's own requests are refused, slack.signing_secret is not the app's Signing Secret", "clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.verify(slacktest.Sign(tc.secret, tc.at, body), []byte(body))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not)):
				t.Errorf("error %v; want it to say %q, and nothing of %q", err, tc.want, tc.not)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error %v quotes the signing secret", err)
			}
		})
	}
}

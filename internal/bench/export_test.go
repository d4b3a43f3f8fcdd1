package bench

import "github.com/askbridge/askbridge/internal/slack/slacktest"

var RequestID = requestID

func HasControls(blocks string) bool {
	return hasControls(slacktest.FakeCall{Form: map[string][]string{"blocks": {blocks}}})
}

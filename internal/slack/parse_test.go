package slack

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// parseCallback decodes a click into what slack-go's full parse gives for
// every field the bridge reads, and leaves other payloads to slack-go.
func TestParseCallbackReadsWhatSlackGoReads(t *testing.T) {
	blocks := `[{"type":"section","text":{"type":"mrkdwn","text":"Deploy?"}},` +
		`{"type":"actions","block_id":"b1","elements":[` +
		`{"type":"button","action_id":"ab:pick:r1:0:0","text":{"type":"plain_text","text":"Yes"},"value":"0"},` +
		`{"type":"static_select","action_id":"ab:select:r1:0","placeholder":{"type":"plain_text","text":"Pick"},` +
		`"options":[{"text":{"type":"plain_text","text":"A"},"value":"0"}]}]}]`
	msg := slacktest.FakeCall{Method: "chat.postMessage", TS: "1700000000.000001",
		Form: map[string][]string{"channel": {"C1"}, "blocks": {blocks}, "text": {"Deploy?"}, "thread_ts": {"1699999999.000001"}}}
	user := slacktest.SlackUser("U1", "ada")
	state := map[string]any{"b1": map[string]any{"ab:multi:r1:0": map[string]any{"type": "checkboxes",
		"selected_options": []any{map[string]any{"text": map[string]any{"type": "plain_text", "text": "A"}, "value": "0"}}}}}
	selected := map[string]any{"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": "A"}, "value": "0"}}

	payloads := map[string]map[string]any{
		"button":          slacktest.BlockActions(t, msg, user, "ab:pick:", nil, nil),
		"select":          slacktest.BlockActions(t, msg, user, "ab:select:", selected, nil),
		"button in state": slacktest.BlockActions(t, msg, user, "ab:pick:", nil, state),
		"view submission": slacktest.ViewSubmission(slacktest.FakeCall{JSON: map[string]any{"view": map[string]any{
			"callback_id": "ab:modal:r1", "private_metadata": "m", "blocks": []any{}}}}, user, map[string]any{"b": slacktest.TextValue("hi")}),
	}
	for name, p := range payloads {
		request := func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(slacktest.FormBody(p)))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}
		want, err := slackapi.InteractionCallbackParse(request())
		if err != nil {
			t.Fatalf("%s: slack-go: %v", name, err)
		}
		got, err := parseCallback([]byte(slacktest.FormBody(p)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for field, pair := range map[string][2]any{
			"type":         {got.Type, want.Type},
			"user":         {got.User, want.User},
			"container":    {got.Container, want.Container},
			"channel":      {got.Channel.ID, want.Channel.ID},
			"message ts":   {got.Message.Timestamp, want.Message.Timestamp},
			"message text": {got.Message.Text, want.Message.Text},
			"trigger":      {got.TriggerID, want.TriggerID},
			"actions":      {got.ActionCallback.BlockActions, want.ActionCallback.BlockActions},
			"state":        {got.BlockActionState, want.BlockActionState},
			"view":         {got.View, want.View},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("%s: %s = %+v; slack-go reads %+v", name, field, pair[0], pair[1])
			}
		}
	}
	for _, body := range []string{"", "payload=", "payload=%7B", "payload=" + strings.Repeat("%5B", 10), "payload=%zz"} {
		if _, err := parseCallback([]byte(body)); err == nil {
			t.Errorf("parseCallback(%q) succeeded", body)
		}
	}
}

package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

func TestReadChatReply(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     chatReply
		err      bool
	}{
		{
			name: "Slack's order, the message left unread",
			in:   `{"ok":true,"channel":"C1","ts":"1.2","message":{"blocks":[` + strings.Repeat(`{"type":"divider"},`, 50) + `not JSON, never read`,
			want: chatReply{OK: true, Channel: "C1", TS: "1.2"},
		},
		{
			name: "the message first",
			in:   `{"message":{"text":"x","blocks":[{"type":"section"}]},"ts":"1.2","ok":true,"warning":"missing_charset","channel":"C1"}`,
			want: chatReply{OK: true, Channel: "C1", TS: "1.2"},
		},
		{
			name: "a failure",
			in:   `{"ok":false,"error":"invalid_blocks","response_metadata":{"messages":["[ERROR] must be more than 0 characters [json-pointer:/blocks/0/text]"]}}`,
			want: chatReply{Error: "invalid_blocks", Meta: struct {
				Messages []string `json:"messages"`
			}{[]string{"[ERROR] must be more than 0 characters [json-pointer:/blocks/0/text]"}}},
		},
		{name: "not an object", in: `["ok"]`, err: true},
		{name: "HTML", in: `<html>502 Bad Gateway</html>`, err: true},
		{name: "cut short", in: `{"ok":true,"channel":"C1"`, err: true},
		{name: "a wrong type", in: `{"ok":"yes"}`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readChatReply(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v; want an error: %v", err, tc.err)
			}
			if !tc.err && (got.OK != tc.want.OK || got.Channel != tc.want.Channel || got.TS != tc.want.TS ||
				got.Error != tc.want.Error || strings.Join(got.Meta.Messages, "|") != strings.Join(tc.want.Meta.Messages, "|")) {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}

// The fake refuses a JSON body that does not parse, as Slack does.
func TestFakeSlackRefusesBadJSON(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	req, _ := http.NewRequest(http.MethodPost, fake.URL+"chat.postMessage", strings.NewReader(`{"channel":"C1","text":`))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := readChatReply(resp.Body)
	if err != nil || got.OK || got.Error != "invalid_json" {
		t.Errorf("a cut-off JSON body was answered %+v, %v; want invalid_json", got, err)
	}
}

// hooked keeps the bridge's HTTP client to Slack's response_urls.
func TestHooked(t *testing.T) {
	s := &Surface{apiURL: "http://127.0.0.1:4321/api/"}
	for u, want := range map[string]bool{
		"https://hooks.slack.com/actions/T0001/1/abc":     true,
		"https://hooks.slack-gov.com/actions/T0001/1/abc": true,
		"http://127.0.0.1:4321/actions/T0001/UEVE/1":      true, // the configured API's origin
		"": false,
		"http://hooks.slack.com/actions/T0001/1/abc":    false,
		"https://hooks.slack.com.example.com/actions":   false,
		"https://user:pw@hooks.slack.com/actions/T0001": false,
		"https://slack.com/api/chat.postMessage":        false,
		"http://127.0.0.1:4322/actions/T0001/UEVE/1":    false,
		"http://169.254.169.254/latest/meta-data/":      false,
		"::not a url": false,
	} {
		if got := s.hooked(u); got != want {
			t.Errorf("hooked(%q) = %v, want %v", u, got, want)
		}
	}
}

// fakeCall makes one JSON call of method on fake and returns the answer's
// ok and error, and its response_metadata messages.
func fakeCall(t *testing.T, fake *slacktest.FakeSlack, method string, body map[string]any) (ok bool, code string, msgs []string) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, fake.URL+method, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		Meta  struct {
			Messages []string `json:"messages"`
		} `json:"response_metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.OK, out.Error, out.Meta.Messages
}

// The fake refuses blocks and views over Block Kit's limits, as Slack does
// (invalid_blocks for a message, invalid_arguments for a view), and takes
// the same at the limit: a test whose message or modal would not get
// through Slack fails against the fake too.
func TestFakeSlackHoldsBlockKitLimits(t *testing.T) {
	txt := func(typ string, n int) map[string]any {
		return map[string]any{"type": typ, "text": strings.Repeat("x", n)}
	}
	section := func(n int) map[string]any { return map[string]any{"type": "section", "text": txt("mrkdwn", n)} }
	button := func(text, value int) map[string]any {
		return map[string]any{"type": "button", "action_id": "a", "text": txt("plain_text", text), "value": strings.Repeat("v", value)}
	}
	actions := func(els ...any) map[string]any { return map[string]any{"type": "actions", "elements": els} }
	option := func(i, text int) map[string]any {
		return map[string]any{"text": txt("plain_text", text), "value": strconv.Itoa(i)}
	}
	sel := func(n, text int) map[string]any {
		var opts []any
		for i := range n {
			opts = append(opts, option(i, text))
		}
		return map[string]any{"type": "static_select", "action_id": "s", "placeholder": txt("plain_text", 5), "options": opts}
	}
	blocks := func(n int) []any {
		var out []any
		for range n {
			out = append(out, section(10))
		}
		return out
	}
	view := func(title int, bl []any) map[string]any {
		return map[string]any{"type": "modal", "title": txt("plain_text", title), "submit": txt("plain_text", 4), "blocks": bl}
	}
	input := func(maxLen int) map[string]any {
		return map[string]any{"type": "input", "block_id": "q0", "label": txt("plain_text", 5), "element": map[string]any{
			"type": "plain_text_input", "action_id": "v", "max_length": maxLen}}
	}
	for _, tc := range []struct {
		name       string
		fits, over []any
	}{
		{"blocks in a message", blocks(50), blocks(51)},
		{"section text", []any{section(3000)}, []any{section(3001)}},
		{"header text", []any{map[string]any{"type": "header", "text": txt("plain_text", 150)}},
			[]any{map[string]any{"type": "header", "text": txt("plain_text", 151)}}},
		{"button text", []any{actions(button(75, 1))}, []any{actions(button(76, 1))}},
		{"button value", []any{actions(button(5, 2000))}, []any{actions(button(5, 2001))}},
		{"select options", []any{actions(sel(100, 5))}, []any{actions(sel(101, 5))}},
		{"option text", []any{actions(sel(2, 75))}, []any{actions(sel(2, 76))}},
		{"empty text", []any{section(1)}, []any{section(0)}},
		{"block_id", []any{map[string]any{"type": "divider", "block_id": strings.Repeat("b", 255)}},
			[]any{map[string]any{"type": "divider", "block_id": strings.Repeat("b", 256)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			if ok, code, msgs := fakeCall(t, fake, "chat.postMessage", map[string]any{"channel": "C1", "text": "t", "blocks": tc.fits}); !ok {
				t.Errorf("at the limit: %s %v", code, msgs)
			}
			if ok, code, msgs := fakeCall(t, fake, "chat.update", map[string]any{"channel": "C1", "ts": "1700000000.000001", "text": "t", "blocks": tc.over}); ok || code != "invalid_blocks" || len(msgs) == 0 {
				t.Errorf("over the limit, chat.update answered ok=%v %s %v; want invalid_blocks with a message", ok, code, msgs)
			}
		})
	}
	for _, tc := range []struct {
		name       string
		fits, over map[string]any
	}{
		{"view title", view(24, nil), view(25, nil)},
		{"blocks in a modal", view(5, blocks(100)), view(5, blocks(101))},
		{"input max_length", view(5, []any{input(3000)}), view(5, []any{input(3001)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			if ok, code, msgs := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.a1", "view": tc.fits}); !ok {
				t.Errorf("at the limit: %s %v", code, msgs)
			}
			if ok, code, msgs := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.b2", "view": tc.over}); ok || code != "invalid_arguments" || len(msgs) == 0 {
				t.Errorf("over the limit, views.open answered ok=%v %s %v; want invalid_arguments with a message", ok, code, msgs)
			}
		})
	}
	t.Run("a trigger_id opens one view", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, testToken)
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.3", "view": view(5, nil)}); !ok {
			t.Fatalf("first views.open: %s", code)
		}
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.3", "view": view(5, nil)}); ok || code != "exchanged_trigger_id" {
			t.Errorf("the same trigger again: ok=%v %s; want exchanged_trigger_id", ok, code)
		}
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"view": view(5, nil)}); ok || code != "invalid_trigger_id" {
			t.Errorf("no trigger: ok=%v %s; want invalid_trigger_id", ok, code)
		}
		// "The expected format for the trigger_id argument is
		// "132456.7890123.abcdef"."
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.xyz", "view": view(5, nil)}); ok || code != "invalid_trigger_id" {
			t.Errorf("a trigger not of Slack's format: ok=%v %s; want invalid_trigger_id", ok, code)
		}
	})
	t.Run("a view past 250 kB", func(t *testing.T) {
		// Each section is 58 bytes of JSON and its text: 100 of 2,400
		// characters are 245,800 bytes, of 2,500 255,800.
		sections := func(text string) []any {
			var out []any
			for range 100 {
				out = append(out, map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}})
			}
			return out
		}
		fake := slacktest.NewFakeSlack(t, testToken)
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.c3", "view": view(5, sections(strings.Repeat("x", 2400)))}); !ok {
			t.Errorf("a view of 246 kB: %s", code)
		}
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.d4", "view": view(5, sections(strings.Repeat("x", 2500)))}); ok || code != "view_too_large" {
			t.Errorf("a view of 256 kB: ok=%v %s; want view_too_large", ok, code)
		}
		// Bytes, not characters: 1,250 of "é" are 2,500 bytes.
		if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.e5", "view": view(5, sections(strings.Repeat("é", 1250)))}); ok || code != "view_too_large" {
			t.Errorf("a view of 256 kB in 131,000 characters: ok=%v %s; want view_too_large", ok, code)
		}
	})
	t.Run("an ephemeral where the bot is not", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, testToken)
		fake.SetChannel("C1", slacktest.FakeChannel{Name: "ops"})
		if ok, code, _ := fakeCall(t, fake, "chat.postEphemeral", map[string]any{"channel": "C1", "user": "UADA", "text": "t"}); ok || code != "not_in_channel" {
			t.Errorf("chat.postEphemeral answered ok=%v %s; want not_in_channel", ok, code)
		}
	})
}

// TestFakeSlackUpdateSemantics: chat.update as Slack documents it. Without
// blocks, an edit keeps the message's blocks ("If you don't include this
// field, the message's previous blocks will be retained"), so an edit that
// sent none would leave the buttons live; it takes a conversation's id,
// never a person's ("ensure that this value is a DM ID"); and its text is
// parsed as chat.postMessage parses it with parse none only.
func TestFakeSlackUpdateSemantics(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	button := map[string]any{"type": "button", "action_id": "a", "text": map[string]any{"type": "plain_text", "text": "Yes"}}
	if ok, code, _ := fakeCall(t, fake, "chat.postMessage", map[string]any{"channel": "C1", "text": "t",
		"blocks": []any{map[string]any{"type": "actions", "elements": []any{button}}}}); !ok {
		t.Fatalf("chat.postMessage: %s", code)
	}
	ts := fake.Calls("chat.postMessage")[0].TS
	if ok, code, _ := fakeCall(t, fake, "chat.update", map[string]any{"channel": "C1", "ts": ts, "text": "answered"}); !ok {
		t.Fatalf("chat.update: %s", code)
	}
	if blocks := fake.Messages("C1")[0]["blocks"]; len(blocks.([]map[string]any)) != 1 {
		t.Errorf("an edit of the text alone left blocks %v; Slack keeps the message's", blocks)
	}
	if ok, code, _ := fakeCall(t, fake, "chat.update", map[string]any{"channel": "C1", "ts": ts, "text": "answered", "blocks": []any{}}); !ok {
		t.Fatalf("chat.update: %s", code)
	}
	if blocks := fake.Messages("C1")[0]["blocks"]; len(blocks.([]map[string]any)) != 0 {
		t.Errorf("an edit with no blocks left %v; an empty array removes them", blocks)
	}
	// Its parse "Defaults to client, unlike chat.postMessage": the
	// text's markup is kept as sent with parse none only.
	const marked = "Answered · <!date^1700000000^{date_short_pretty}|2023-11-14> &amp; done"
	for _, tc := range []struct{ parse, want string }{
		{"", "Answered · &lt;!date^1700000000^{date_short_pretty}|2023-11-14&gt; &amp; done"},
		{"none", marked},
	} {
		body := map[string]any{"channel": "C1", "ts": ts, "text": marked}
		if tc.parse != "" {
			body["parse"] = tc.parse
		}
		if ok, code, _ := fakeCall(t, fake, "chat.update", body); !ok {
			t.Fatalf("chat.update: %s", code)
		}
		if got := fake.Messages("C1")[0]["text"]; got != tc.want {
			t.Errorf("edited with parse %q, the text is %q; want %q", tc.parse, got, tc.want)
		}
	}
	for _, ch := range []string{"UADA", ""} {
		if ok, code, _ := fakeCall(t, fake, "chat.update", map[string]any{"channel": ch, "ts": ts, "text": "t"}); ok || code != "channel_not_found" {
			t.Errorf("chat.update in channel %q answered ok=%v %s; want channel_not_found", ch, ok, code)
		}
	}
}

// TestFakeSlackViewsUpdate: views.update as Slack documents it. Exactly
// one of view_id and external_id names the view; a view_id views.open did
// not answer is not_found; a hash that is not the view's current one is a
// hash_conflict (a replacement that would undo a newer one).
func TestFakeSlackViewsUpdate(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	api := slackapi.New(testToken, slackapi.OptionAPIURL(fake.URL))
	view := noticeModal("Answer", "Ship it?")
	opened, err := api.OpenView("1.2.abc", view)
	if err != nil {
		t.Fatalf("views.open: %v", err)
	}
	for _, tc := range []struct {
		name                     string
		externalID, hash, viewID string
		want                     string // "" for ok
	}{
		{"both", "x", "", opened.ID, "invalid_arguments"},
		{"a view never opened", "", "", "V999", "not_found"},
		{"an external_id no view has", "x", "", "", "not_found"},
		{"a stale hash", "", "1.stale", opened.ID, "hash_conflict"},
		{"the view opened, its hash", "", opened.Hash, opened.ID, ""},
		{"the view opened", "", "", opened.ID, ""},
	} {
		_, err := api.UpdateView(view, tc.externalID, tc.hash, tc.viewID)
		if tc.want == "" && err != nil || tc.want != "" && !refusedWith(err, tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// A view goes to views.open with <, > and & as they are, and is measured
// (jsonSize, which fits the answer form) in the bytes Slack receives: the
// fake reads the 250 kB in bytes of the view as received, and refuses the
// same view as json.Marshal escapes it (slack-go's OpenViewContext sent
// it so), 6 bytes for each of them.
func TestViewSentAsMeasured(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, _, _ := newSurface(t, fake)
	text := strings.Repeat("<&>", 900)
	var blocks []slackapi.Block
	for i := range 40 {
		blocks = append(blocks, input(choiceBlock(i), "Notes, <&>?", textInput(true, "Type here", text, maxInputLength), true))
	}
	view := slackapi.ModalViewRequest{Type: slackapi.VTModal, Title: plain("Answer"), Submit: plain("Send"),
		Blocks: slackapi.Blocks{BlockSet: blocks}, PrivateMetadata: origin{Text: "&lt;x&gt;"}.metadata()}

	escaped, _ := json.Marshal(view)
	if len(escaped) <= limitViewBytes {
		t.Fatalf("the view escaped is %d bytes; the test needs it past %d", len(escaped), limitViewBytes)
	}
	var sent map[string]any
	_ = json.Unmarshal(escaped, &sent)
	if ok, code, _ := fakeCall(t, fake, "views.open", map[string]any{"trigger_id": "1.2.abc", "view": sent}); ok || code != "view_too_large" {
		t.Errorf("the view escaped, %d bytes: ok=%v %s; want view_too_large", len(escaped), ok, code)
	}

	if _, err := s.openView(context.Background(), "1.2.abd", view); err != nil {
		t.Fatalf("views.open: %v", err)
	}
	call := fake.Calls("views.open")[1]
	var body struct {
		View json.RawMessage `json:"view"`
	}
	if err := json.Unmarshal([]byte(call.Body), &body); err != nil {
		t.Fatal(err)
	}
	if got, want := len(body.View), jsonSize(view); got != want || strings.Contains(call.Body, `\u0026`) {
		t.Errorf("the view sent is %d bytes (& escaped: %v); jsonSize measured %d", got, strings.Contains(call.Body, `\u0026`), want)
	}
	if call.View()["blocks"].([]any)[0].(map[string]any)["element"].(map[string]any)["initial_value"] != text {
		t.Error("the view sent does not read as the view")
	}
}

// A view_submission's answer is held to what Slack takes, as a views.*
// call is.
func TestViewResponseErrors(t *testing.T) {
	for body, refused := range map[string]bool{
		``: false,
		`{"response_action":"errors","errors":{"q0":"Type an answer."}}`:                                                                        false,
		`{"response_action":"update","view":{"type":"modal","title":{"type":"plain_text","text":"Too late"},"blocks":[]}}`:                      false,
		`{"response_action":"update","view":{"type":"modal","title":{"type":"plain_text","text":"Twenty-five characters ok"},"blocks":[]}}`:     true,
		`{"response_action":"update","view":{"type":"modal","title":{"type":"plain_text","text":"A"},"blocks":[{"type":"section","text":{}}]}}`: true,
		`{"response_action":"errors","errors":{}}`: true,
		`{"response_action":"close"}`:              true,
	} {
		if got := len(slacktest.ViewResponseErrors(body)) > 0; got != refused {
			t.Errorf("%s: refused %v, want %v", body, got, refused)
		}
	}
	// Errors name input blocks of the view submitted: one keyed to a
	// section, or to no block, shows no field's error in Slack.
	opened := slacktest.FakeCall{Method: "views.open", JSON: map[string]any{"view": map[string]any{"type": "modal", "blocks": []any{
		map[string]any{"type": "section", "block_id": "s0", "text": map[string]any{"type": "plain_text", "text": "Ship it?"}},
		map[string]any{"type": "input", "block_id": "q0", "label": map[string]any{"type": "plain_text", "text": "Why?"},
			"element": map[string]any{"type": "plain_text_input", "action_id": "v"}},
	}}}}
	submitted := slacktest.ViewSubmission(opened, slacktest.SlackUser("UADA", "ada"), nil)
	for key, refused := range map[string]bool{"q0": false, "s0": true, "q9": true} {
		body := `{"response_action":"errors","errors":{"` + key + `":"Type an answer."}}`
		if got := len(slacktest.SubmissionErrors(submitted, body)) > 0; got != refused {
			t.Errorf("errors keyed %s: refused %v, want %v", key, got, refused)
		}
	}
}

package slack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// typedQuestion is a request of one question without options: its
// Answer… button opens a form.
func typedQuestion() map[string]any {
	return map[string]any{"questions": []any{map[string]any{
		"id": "replicas", "question": "How many replicas?", "input": map[string]any{"type": "integer"},
	}}}
}

// toldAfterForm clicks the control of msg named prefix as who and returns
// what who is told once views.open has been answered.
func toldAfterForm(t *testing.T, b bridge, msg slacktest.FakeCall, who map[string]any, prefix string, edit func(map[string]any)) string {
	t.Helper()
	payload := slacktest.BlockActions(t, msg, who, prefix, nil, nil)
	if edit != nil {
		edit(payload)
	}
	b.click(t, payload)
	user, _ := who["id"].(string)
	var told []string
	b.fake.WaitFor(t, "a note to "+user, 10*time.Second, func(calls []slacktest.FakeCall) bool {
		told = ephemerals(calls, user)
		return len(told) > 0
	})
	if n := len(told); n != 1 {
		t.Errorf("%s was told %d things: %q", user, n, told)
	}
	return told[0]
}

// A form Slack did not open for want of time (the click's trigger_id
// expired, or Slack was slow or busy) opens on the next click, and the
// person is told to click again. A form Slack refused (its view, or a
// trigger_id it can't read) would be refused on every click: the person
// is told so and how else to answer, and the refusal, Slack's messages
// with it, is logged as an error for whoever runs the bridge.
func TestFormSlackDidNotOpen(t *testing.T) {
	const clickAgain = "Slack did not open the form in time; please click again."
	expired := slacktest.FakeFail{Error: "invalid_arguments", Messages: []string{"`trigger_id` expired [json-pointer:/trigger_id]"}}
	badView := slacktest.FakeFail{Error: "invalid_arguments", Messages: []string{
		"[ERROR] must be less than 25 characters [json-pointer:/view/title/text]",
		"[ERROR] failed to match all allowed schemas [json-pointer:/view/blocks/0]",
	}}
	busy := slacktest.FakeFail{Status: http.StatusServiceUnavailable}
	for _, tc := range []struct {
		name    string
		fails   []slacktest.FakeFail
		trigger string // the click's trigger_id, when not the fake's
		refused bool   // told the form can't be shown, and logged as an error
		reopens bool   // the click again opens it (every failure spent)
		logged  string // in the error's line
	}{
		{name: "trigger expired", fails: []slacktest.FakeFail{{Error: "expired_trigger_id"}}, reopens: true},
		{name: "trigger expired, said in a message", fails: []slacktest.FakeFail{expired}, reopens: true},
		{name: "slack busy", fails: []slacktest.FakeFail{busy, busy, busy, busy, busy}},
		{name: "slack internal error", fails: []slacktest.FakeFail{{Error: "internal_error"}, {Error: "internal_error"}, {Error: "internal_error"}, {Error: "internal_error"}, {Error: "internal_error"}}},
		{name: "view refused", fails: []slacktest.FakeFail{badView}, refused: true, logged: "json-pointer:/view/title/text"},
		{name: "view too large", fails: []slacktest.FakeFail{{Error: "view_too_large"}}, refused: true, logged: "view_too_large"},
		{name: "trigger_id unreadable", trigger: "not-a-trigger", refused: true, logged: "invalid_trigger_id"},
		{name: "token revoked", fails: []slacktest.FakeFail{{Error: "token_revoked"}}, refused: true, logged: "token_revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, defaultTarget)
			id := b.create(t, "/v1/questions", typedQuestion())
			msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
			b.fake.FailNext("views.open", tc.fails...)
			var edit func(map[string]any)
			if tc.trigger != "" {
				edit = func(p map[string]any) { p["trigger_id"] = tc.trigger }
			}
			told := toldAfterForm(t, b, msg, ada, "ab:answer:"+id, edit)
			if !tc.refused {
				if told != clickAgain {
					t.Errorf("ada was told %q; want %q", told, clickAgain)
				}
				if strings.Contains(b.logs.String(), "level=ERROR") {
					t.Errorf("a form not opened in time was logged as an error:\n%s", b.logs)
				}
				if tc.reopens {
					b.click(t, slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil))
					b.fake.WaitCalls(t, "views.open", 1)
				}
				return
			}
			want := "Slack refused to show this form, so clicking again won't open it (the bridge's log says why). " +
				"Whoever runs the bridge can answer it in the bridge's web inbox, or with `bridge answer " + id + "`."
			if told != want {
				t.Errorf("ada was told %q; want %q", told, want)
			}
			b.logs.WaitFor(t, "level=ERROR msg=\"Slack refused to open a form", 10*time.Second)
			var line string
			for _, l := range strings.Split(b.logs.String(), "\n") {
				if strings.Contains(l, "level=ERROR") {
					line = l
				}
			}
			if !strings.Contains(line, tc.logged) || !strings.Contains(line, "request_id="+id) {
				t.Errorf("the error's line does not say %q of request %s:\n%s", tc.logged, id, line)
			}
		})
	}
}

// A form of the largest request the API takes (20 questions of 100
// options, labels and descriptions past what a form's option shows)
// would be over twice the 250 kB Slack opens: it gives way until it fits
// (descriptions, then details and listings, then option texts cut to
// their first characters), opens, and its submission answers with the
// labels whole. In letters: TestFormAtTheLimitsFits takes emoji and CJK,
// of several bytes each, up to five times the 250 kB; fitting such a
// form under the race detector on a busy machine can outlast the click's
// 2.5 s, which is not what this test is about.
func TestFormAtTheLimitsOpens(t *testing.T) {
	b := start(t, defaultTarget)
	amp := func(n int) string { return strings.Repeat("a", n) }
	var qs []any
	for i := range seam.MaxQuestions {
		var opts []any
		for j := range seam.MaxOptions {
			opts = append(opts, map[string]any{"label": fmt.Sprintf("%03d", j) + amp(77), "description": amp(80)})
		}
		qs = append(qs, map[string]any{"id": fmt.Sprintf("q%d", i), "header": amp(seam.MaxHeaderLen), "question": "?" + amp(seam.MaxQuestionLen-1),
			"detail": amp(300), "multiSelect": i%2 == 0, "options": opts})
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // "&" as an agent sends it
	if err := enc.Encode(map[string]any{"questions": qs}); err != nil || body.Len() > seam.MaxBodyBytes {
		t.Fatalf("the request's body is %d bytes (%v); the API takes %d", body.Len(), err, seam.MaxBodyBytes)
	}
	resp, err := http.Post(b.URL()+"/v1/questions", "application/json", &body)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	id := created.ID
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	opened := openAnswerForm(t, b, msg, id)
	if !opened.OK {
		b.logs.WaitFor(t, "Slack refused to open a form", 10*time.Second)
		t.Fatalf("Slack refused the form:\n%s", b.logs)
	}
	label := func(n int) string { return fmt.Sprintf("%q", fmt.Sprintf("%03d", n)+amp(77)) } // as JSON
	values := map[string]any{}
	var want []string
	for i := range seam.MaxQuestions {
		var el map[string]any
		for _, bl := range opened.Blocks() {
			if bl["block_id"] == fmt.Sprintf("q%d", i) {
				el, _ = bl["element"].(map[string]any)
			}
		}
		opts, _ := el["options"].([]any)
		if len(opts) != seam.MaxOptions {
			t.Fatalf("question %d's field offers %d options: %v", i, len(opts), el)
		}
		state := map[string]any{"type": el["type"]}
		if i%2 == 0 {
			state["selected_options"] = []any{opts[0], opts[57], opts[99]}
			want = append(want, fmt.Sprintf(`{"id":"q%d","selected":[%s,%s,%s]}`, i, label(0), label(57), label(99)))
		} else {
			state["selected_option"] = opts[99]
			want = append(want, fmt.Sprintf(`{"id":"q%d","selected":[%s]}`, i, label(99)))
		}
		values[fmt.Sprintf("q%d", i)] = map[string]any{"v": state}
		values[fmt.Sprintf("q%do", i)] = slacktest.TextValue("")
	}
	if body := b.click(t, slacktest.ViewSubmission(opened, ada, values)); body != "" {
		t.Fatalf("the submission got %.300q, want an empty 200 (closes the modal)", body)
	}
	got := b.wait(t, "/v1/questions", id).Raw("answer")
	if w := `{"answers":[` + strings.Join(want, ",") + `]}`; got != w {
		t.Errorf("answer\n%.400s\nwant\n%.400s", got, w)
	}
}

// A form is sent with <, > and & as they are: JSON escaped each to 6
// bytes (\u003c), and 20 typed questions prefilled with 3,000 of them
// made a form of 367 kB, past Slack's 250 kB (view_too_large), that never
// opened; as they are, it is 67 kB. Sent unchanged, it answers with every
// prefill as the agent gave it.
func TestFormOfEscapedTextOpens(t *testing.T) {
	b := start(t, defaultTarget)
	prefill := strings.Repeat("<&>", seam.MaxInputValueLen/3)
	var qs []any
	for i := range seam.MaxQuestions {
		qs = append(qs, map[string]any{"id": fmt.Sprintf("q%d", i), "question": fmt.Sprintf("Notes for step %d?", i),
			"input": map[string]any{"type": "string", "value": prefill}})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": qs})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	opened := openAnswerForm(t, b, msg, id)
	if !opened.OK {
		t.Fatalf("Slack refused the form of %d bytes", len(opened.Body))
	}
	if strings.Contains(opened.Body, `\u0026`) {
		t.Errorf("the form was sent with & escaped")
	}
	t.Logf("the form's call is %d bytes", len(opened.Body))
	values := map[string]any{}
	var want []string
	for i := range seam.MaxQuestions {
		field, _ := modalBlock(opened, fmt.Sprintf("q%d", i))["element"].(map[string]any)
		initial, _ := field["initial_value"].(string)
		values[fmt.Sprintf("q%d", i)] = slacktest.TextValue(initial)
		want = append(want, fmt.Sprintf(`{"id":"q%d","selected":[],"custom":"%s"}`, i, prefill))
	}
	if body := b.click(t, slacktest.ViewSubmission(opened, ada, values)); body != "" {
		t.Fatalf("the submission got %.300q, want an empty 200 (closes the modal)", body)
	}
	got := b.wait(t, "/v1/questions", id).Raw("answer")
	if w := `{"answers":[` + strings.Join(want, ",") + `]}`; got != w {
		t.Errorf("answer\n%.400s\nwant\n%.400s", got, w)
	}
}

// Where the bridge has a public URL, a person whose form Slack refused is
// handed the request's link: the message's own where anyone may answer,
// else a personal one, once they are checked as a responder.
func TestFormRefusedHandsTheLink(t *testing.T) {
	refuse := slacktest.FakeFail{Error: "invalid_arguments", Messages: []string{"[ERROR] no more than 100 items allowed [json-pointer:/view/blocks]"}}
	t.Run("anyone may answer", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, botToken)
		redisURL, prefix := apptest.Redis(t)
		b := startConfig(t, fake, "base_url: https://bridge.example.com/\n"+configYAML(fake, `
      - slack:
          channel: `+channel), redisURL, prefix)
		id := b.create(t, "/v1/questions", typedQuestion())
		msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
		open, _ := msg.Action("askbridge_open")
		url, _ := open["url"].(string)
		if !strings.HasPrefix(url, "https://bridge.example.com/r/"+id+"?") {
			t.Fatalf("the message's Open in browser links to %q", url)
		}
		fake.FailNext("views.open", refuse)
		told := toldAfterForm(t, b, msg, eve, "ab:answer:"+id, nil)
		if want := "Slack refused to show this form, so clicking again won't open it (the bridge's log says why). Answer it in the browser instead: <" + url + "|Open in browser>"; told != want {
			t.Errorf("eve was told %q; want %q", told, want)
		}
	})
	t.Run("responders limited", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, botToken)
		redisURL, prefix := apptest.Redis(t)
		b := startConfig(t, fake, "base_url: https://bridge.example.com/\n"+configYAML(fake, limitedTarget), redisURL, prefix)
		id := b.create(t, "/v1/questions", typedQuestion())
		msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
		fake.FailNext("views.open", refuse)
		told := toldAfterForm(t, b, msg, ada, "ab:answer:"+id, nil)
		const lead = "Slack refused to show this form, so clicking again won't open it (the bridge's log says why). Answer it in the browser instead. "
		m := personalLinkRE.FindStringSubmatch(strings.TrimPrefix(told, lead))
		if !strings.HasPrefix(told, lead) || m == nil || !strings.HasPrefix(m[2], "/r/"+id+"?") {
			t.Errorf("ada was told %q; want a link of her own to %s", told, id)
		}
	})
}

// openAnswerForm clicks Answer… on msg, the message of request id, and
// returns the views.open it made, refused or not (a refusal fails at once).
func openAnswerForm(t *testing.T, b bridge, msg slacktest.FakeCall, id string) slacktest.FakeCall {
	t.Helper()
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil))
	var opened slacktest.FakeCall
	b.fake.WaitFor(t, "the form", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		i := slices.IndexFunc(calls, func(c slacktest.FakeCall) bool { return c.Method == "views.open" })
		if i >= 0 {
			opened = calls[i]
		}
		return i >= 0
	})
	return opened
}

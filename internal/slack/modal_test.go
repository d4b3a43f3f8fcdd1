package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// serve sends payload to a handler of s as Slack does, waits for the work
// it started and returns the answer's body.
func serve(t *testing.T, s *Surface, store *pending.Store, payload map[string]any) string {
	t.Helper()
	h := s.Interactions(store)
	body := slacktest.FormBody(payload)
	req := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(body))
	req.Header = slacktest.Sign("s", time.Now(), body)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	h.work.Drain()
	if w.Code != http.StatusOK {
		t.Fatalf("interaction: %d %s", w.Code, w.Body)
	}
	if errs := slacktest.SubmissionErrors(payload, w.Body.String()); len(errs) > 0 {
		t.Errorf("Slack would refuse the answer %s: %v", w.Body, errs)
	}
	return w.Body.String()
}

// ada is the person who answers in these tests.
var ada = slacktest.SlackUser("UADA", "ada")

// openThenDiscard posts rec, its post's reply lost (nothing recorded), has
// ada open its Answer… modal, and then discards rec, as the dispatcher
// does when no post of a request seemed to go through. It returns the
// message and the opened modal.
func openThenDiscard(t *testing.T, s *Surface, store *pending.Store, fake *slacktest.FakeSlack, rec *pending.Record) (msg, opened slacktest.FakeCall) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Post(ctx, rec, target); err != nil {
		t.Fatal(err)
	}
	msg = fake.Calls("chat.postMessage")[0]
	serve(t, s, store, slacktest.BlockActions(t, msg, ada, "ab:answer:"+rec.ID, nil, nil))
	opened = fake.WaitCalls(t, "views.open", 1)[0]
	if ok, err := store.Discard(ctx, rec.ID); !ok || err != nil {
		t.Fatalf("Discard: %v, %v", ok, err)
	}
	return msg, opened
}

// TestModalOnAReplacedRequest: a modal opened for a request that was then
// discarded and created again under its tool_call_id, asking something
// else, does not answer the new request with its fields: the person is
// told the request they answered no longer exists.
func TestModalOnAReplacedRequest(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, _ := newSurface(t, fake)
	ctx := context.Background()
	ask := func(q string) *pending.Record {
		rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default", Client: "agent", ToolCallID: "call-1",
			Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: q}}}})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	rec := ask("Which host may we restart?")
	_, opened := openThenDiscard(t, s, store, fake, rec)
	if again := ask("Which host may we wipe?"); again.ID != rec.ID {
		t.Fatalf("created again as %s; want %s", again.ID, rec.ID)
	}

	body := serve(t, s, store, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("web-3")}))
	if !strings.Contains(body, surface.MsgGone) {
		t.Errorf("the modal got %q; want it replaced by a notice that the request no longer exists", body)
	}
	if got, err := store.Get(ctx, rec.ID); err != nil || got.Status != seam.StatusPending {
		t.Errorf("the request asking something else: %v, %v; want it pending", got.Status, err)
	}
}

// TestModalOnAGoneRequestKeepsTheQuestion: a modal submitted after its
// request was discarded (its post's reply was lost) retires the message
// it was opened from as a click on the message would: its text stays,
// its controls go, a line says the request no longer exists.
func TestModalOnAGoneRequestKeepsTheQuestion(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, _ := newSurface(t, fake)
	ctx := context.Background()
	rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: "What is the rollback plan for the payments DB?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	msg, opened := openThenDiscard(t, s, store, fake, rec)

	body := serve(t, s, store, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("restore the snapshot")}))
	if !strings.Contains(body, surface.MsgGone) {
		t.Errorf("the modal got %q; want it replaced by a notice that the request no longer exists", body)
	}
	ups := fake.Calls("chat.update")
	if len(ups) != 1 || ups[0].Field("ts") != msg.TS {
		t.Fatalf("%d edits; want the message %s edited once", len(ups), msg.TS)
	}
	for _, b := range ups[0].Blocks() {
		if b["type"] == "actions" || b["type"] == "input" {
			t.Errorf("the retired message keeps controls: %v", b)
		}
	}
	txt := ups[0].Text()
	if !strings.Contains(txt, "What is the rollback plan for the payments DB?") || !strings.Contains(txt, surface.MsgGone) {
		t.Errorf("the retired message lost its question or does not say why:\n%s", txt)
	}
}

// TestOriginFitsPrivateMetadata: the message's text rides in the modal's
// private_metadata whole when it fits Slack's 3,000 characters, and cut,
// never over, when it does not.
func TestOriginFitsPrivateMetadata(t *testing.T) {
	o := origin{Channel: "C0AGENTS", TS: "1700000000.000001", Thread: "1700000000.000000",
		Respond: "https://hooks.slack.com/actions/T0001/1700000100123/AbCdEfGhIjKlMnOpQrStUvWx", Hash: strings.Repeat("f", 64)}
	for _, tc := range []struct {
		name, text string
		whole      bool
	}{
		{"a fallback as posted", "<!subteam^S0123ABC> deploy-bot asks: Ship &lt;v2&gt; &amp; migrate?", true},
		{"escapes at the fallback's longest", strings.Repeat("&amp;", 300), true},
		{"control characters, 6 each in JSON", strings.Repeat("\x01", 2000), false},
		{"much too long", nasty(10000, "t"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o.Text = tc.text
			md := o.metadata()
			if n := surface.Len(md); n > 3000 {
				t.Fatalf("private_metadata is %d long, limit 3000", n)
			}
			got := parseOrigin(md)
			if got.Channel != o.Channel || got.TS != o.TS || got.Thread != o.Thread || got.Respond != o.Respond || got.Hash != o.Hash {
				t.Errorf("origin %+v, want %+v", got, o)
			}
			switch {
			case tc.whole && got.Text != tc.text:
				t.Errorf("text %q, want it whole", got.Text)
			case !tc.whole && (got.Text == "" || !strings.HasPrefix(tc.text, strings.TrimSuffix(got.Text, "…"))):
				t.Errorf("text %q, want the start of the message's text", got.Text)
			}
		})
	}
}

// TestModalFieldRequired: a text field is required as input.required says
// and, with no input to say, when its question is the request's only one;
// a blank required field is refused beside it, a blank optional one skips
// its question.
func TestModalFieldRequired(t *testing.T) {
	free := func(id string) seam.Question { return seam.Question{ID: id, Question: id + "?"} }
	typed := func(id string, required bool) seam.Question {
		return seam.Question{ID: id, Question: id + "?", Input: &seam.Input{Type: seam.InputInteger, Required: required}}
	}
	for _, tc := range []struct {
		name     string
		qs       []seam.Question
		required []bool
	}{
		{"a lone question", []seam.Question{free("a")}, []bool{true}},
		{"a lone typed question, required", []seam.Question{typed("a", true)}, []bool{true}},
		{"a lone typed question, optional", []seam.Question{typed("a", false)}, []bool{false}},
		{"several", []seam.Question{free("a"), typed("b", true), typed("c", false)}, []bool{false, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := questionRecord(tc.qs...)
			v := answerModal(rec, origin{}, shown{})
			blank := viewValues{}
			for i := range tc.qs {
				var in *slackapi.InputBlock
				for _, b := range v.Blocks.BlockSet {
					if ib, ok := b.(*slackapi.InputBlock); ok && ib.BlockID == choiceBlock(i) {
						in = ib
					}
				}
				if in == nil || in.Optional == tc.required[i] {
					t.Errorf("question %d: its field is required %v, want %v", i, in != nil && !in.Optional, tc.required[i])
				}
				blank[choiceBlock(i)] = map[string]slackapi.BlockAction{inputAction: {Value: "  "}}
			}
			a, errs := answerFrom(rec.Questions, blank, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID})
			for i := range tc.qs {
				if (errs[choiceBlock(i)] != "") != tc.required[i] {
					t.Errorf("question %d sent blank: errors %v, want one only when required", i, errs)
				}
			}
			if errs != nil {
				return
			}
			norm, err := rec.Questions.Normalize(a)
			got, _ := json.Marshal(norm)
			if err != nil || strings.Contains(string(got), "custom") {
				t.Errorf("blank optional fields gave %s, %v; want every question skipped", got, err)
			}
		})
	}
}

// TestModalClickDeliveredTwice: Slack's retry of an Answer… click (or a
// Socket Mode redelivery) carries the trigger_id the first delivery
// already opened the modal with, and Slack refuses it
// (exchanged_trigger_id). The modal is open: the person must not be told
// that it did not open and to click again.
func TestModalClickDeliveredTwice(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, _ := newSurface(t, fake)
	rec, _, err := store.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: "Why did the deploy fail?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Post(context.Background(), rec, target); err != nil {
		t.Fatal(err)
	}
	msg := fake.Calls("chat.postMessage")[0]
	click := slacktest.BlockActions(t, msg, ada, "ab:answer:"+rec.ID, nil, nil)
	serve(t, s, store, click)
	serve(t, s, store, click) // the same delivery again; serve waits for its work

	opens := fake.Calls("views.open")
	if len(opens) != 2 || !opens[0].OK || opens[1].OK {
		t.Fatalf("views.open calls %v; want the first to open the modal and the second to be refused", opens)
	}
	for _, c := range fake.Calls("") {
		if user, text, ok := c.Ephemeral(); ok {
			t.Errorf("%s was told %q; the modal is open", user, text)
		}
	}
}

// TestTruncateMrkdwn: text cut to fit a section keeps no half of an escape
// or a link: Slack would show "&am" or the bracket as they are.
func TestTruncateMrkdwn(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ok &amp; fine", "ok &amp; fine"},
		{"abcdefgh&amp;&amp;", "abcdefgh…"},      // cut inside the first escape
		{"abcdefg&lt;xyz", "abcdefg&lt;x…"},      // an escape kept whole
		{"ab <https://x.io|a link>", "ab …"},     // inside a link
		{"abc <!date^1^{time}|then>", "abc …"},   // inside a date
		{"<@U1> said abcdefghij", "<@U1> said…"}, // a mention kept whole
	} {
		max := 13
		if got := truncateMrkdwn(c.in, max); got != c.want || surface.Len(got) > max {
			t.Errorf("truncateMrkdwn(%q, %d) = %q, want %q", c.in, max, got, c.want)
		}
	}
}

// down fails every Redis command while on: Redis gone for a moment.
type down struct{ on atomic.Bool }

func (d *down) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *down) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d.on.Load() {
			err := errors.New("connection refused (test)")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (d *down) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if d.on.Load() {
			return errors.New("connection refused (test)")
		}
		return next(ctx, cmds)
	}
}

// A form sent while Redis is away for a moment stays open with what was
// typed in it (response_action errors), saying to send it again with its
// button as it reads, Send: a notice in its place threw away answers
// typed on a phone. Sent again, it answers the request.
func TestSubmitDuringAHiccupKeepsTheForm(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	redisDown := &down{}
	s, store, _ := newSurface(t, fake, redisDown)
	ctx := context.Background()
	rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{
			{ID: "why", Question: "Why did the deploy fail?"},
			{ID: "fix", Question: "What should change?"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Post(ctx, rec, target); err != nil {
		t.Fatal(err)
	}
	msg := fake.Calls("chat.postMessage")[0]
	serve(t, s, store, slacktest.BlockActions(t, msg, ada, "ab:answer:"+rec.ID, nil, nil))
	opened := fake.WaitCalls(t, "views.open", 1)[0]
	typed := map[string]any{
		"q0": slacktest.TextValue("the migration timed out on the orders table"),
		"q1": slacktest.TextValue("roll back first"),
	}

	redisDown.on.Store(true)
	body := serve(t, s, store, slacktest.ViewSubmission(opened, ada, typed))
	redisDown.on.Store(false)
	var resp struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Action != "errors" || !strings.Contains(resp.Errors["q0"], "tap Send again") {
		t.Fatalf("a submission during a Redis hiccup got %s; want the form kept, its first field saying to send it again", body)
	}
	if got, err := store.Get(ctx, rec.ID); err != nil || got.Status != seam.StatusPending {
		t.Fatalf("after the hiccup: %v, %v", got, err)
	}

	if body := serve(t, s, store, slacktest.ViewSubmission(opened, ada, typed)); body != "" {
		t.Fatalf("sent again: %s; want the form closed", body)
	}
	got, err := store.Get(ctx, rec.ID)
	if err != nil || got.Status != seam.StatusAnswered {
		t.Fatalf("sent again: %v, %v", got, err)
	}
	if raw, _ := json.Marshal(got.Answer); !strings.Contains(string(raw), "roll back first") {
		t.Errorf("answer %s", raw)
	}
}

// The same when Slack can't list the user group whose member sent the
// form (its cached list went stale while they typed): the form stays
// open, saying to send it again, and the request stays pending.
func TestSubmitDuringAGroupListFailureKeepsTheForm(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	fake.SetGroup("SONCALL", "UOPS")
	s, store, _ := newSurface(t, fake)
	ctx := context.Background()
	rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "oncall",
		Questions: &seam.Questions{Questions: []seam.Question{
			{ID: "why", Question: "Why did the deploy fail?"},
			{ID: "fix", Question: "What should change?"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	oncall := dispatch.Target{Key: "oncall/0", Config: config.Target{Slack: &config.SlackTarget{Channel: "C3", Responders: config.SlackResponders{Groups: []string{"SONCALL"}}}}}
	if _, err := s.Post(ctx, rec, oncall); err != nil {
		t.Fatal(err)
	}
	ops := slacktest.SlackUser("UOPS", "ops")
	msg := fake.Calls("chat.postMessage")[0]
	serve(t, s, store, slacktest.BlockActions(t, msg, ops, "ab:answer:"+rec.ID, nil, nil))
	opened := fake.WaitCalls(t, "views.open", 1)[0]

	s.who.mu.Lock()
	clear(s.who.groups) // stale: typing took longer than the list is kept
	s.who.mu.Unlock()
	fail := slacktest.FakeFail{Status: http.StatusServiceUnavailable}
	fake.FailNext("usergroups.users.list", fail, fail, fail, fail, fail, fail)
	body := serve(t, s, store, slacktest.ViewSubmission(opened, ops, map[string]any{
		"q0": slacktest.TextValue("the migration timed out"), "q1": slacktest.TextValue("roll back first"),
	}))
	var resp struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Action != "errors" || !strings.Contains(resp.Errors["q0"], "could not check whether you may answer") {
		t.Fatalf("a submission Slack's group list failed got %s; want the form kept, saying to send it again", body)
	}
	if got, err := store.Get(ctx, rec.ID); err != nil || got.Status != seam.StatusPending {
		t.Fatalf("after the failure: %v, %v", got, err)
	}
}

// A form opened by someone whose user group is not cached is replaced by
// a notice once Slack's list shows they may not answer; while it can't
// say (the list failing), the form stays with what they type in it, as
// its submission does: a notice in its place threw away an answer a
// responder was typing. The submission is checked, and answers.
func TestFormOpenedWhileTheGroupCantBeListedStays(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	fake.SetGroup("SONCALL", "UOPS")
	s, store, _ := newSurface(t, fake)
	ctx := context.Background()
	ask := func() (*pending.Record, slacktest.FakeCall) {
		t.Helper()
		rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "oncall",
			Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: "Why did the deploy fail?"}}}})
		if err != nil {
			t.Fatal(err)
		}
		oncall := dispatch.Target{Key: "oncall/0", Config: config.Target{Slack: &config.SlackTarget{Channel: "C3", Responders: config.SlackResponders{Groups: []string{"SONCALL"}}}}}
		if _, err := s.Post(ctx, rec, oncall); err != nil {
			t.Fatal(err)
		}
		calls := fake.Calls("chat.postMessage")
		return rec, calls[len(calls)-1]
	}
	ops := slacktest.SlackUser("UOPS", "ops")

	rec, msg := ask()
	fail := slacktest.FakeFail{Status: http.StatusServiceUnavailable}
	fake.FailNext("usergroups.users.list", fail, fail, fail, fail, fail, fail)
	serve(t, s, store, slacktest.BlockActions(t, msg, ops, "ab:answer:"+rec.ID, nil, nil)) // waits for the check
	opened := fake.WaitCalls(t, "views.open", 1)[0]
	if got := fake.Calls("views.update"); len(got) != 0 {
		t.Fatalf("the form was replaced while the group could not be listed: %s", got[0].Body)
	}
	if body := serve(t, s, store, slacktest.ViewSubmission(opened, ops, map[string]any{"q0": slacktest.TextValue("the migration timed out")})); body != "" {
		t.Fatalf("the submission, the list working again, got %s; want the form closed", body)
	}
	if got, err := store.Get(ctx, rec.ID); err != nil || got.Status != seam.StatusAnswered {
		t.Fatalf("after the submission: %v, %v", got, err)
	}

	// Someone the list, once read, does not name: the form is replaced.
	s.who.mu.Lock()
	clear(s.who.groups)
	s.who.mu.Unlock()
	rec, msg = ask()
	serve(t, s, store, slacktest.BlockActions(t, msg, slacktest.SlackUser("UEVE", "eve"), "ab:answer:"+rec.ID, nil, nil))
	update := fake.WaitCalls(t, "views.update", 1)[0]
	if !update.OK || !strings.Contains(update.Body, "can't answer this") {
		t.Errorf("eve's form was replaced with %s; want the notice that she can't answer", update.Body)
	}
}

// In a form an option's label is shown whole where Slack's 75 characters
// hold it: the number a message's buttons carry (for labels a phone cuts
// on a button) is not put in front of it there, where it cut the label.
func TestFormShowsWholeLabels(t *testing.T) {
	long := "Yes, delete the three stale files from the staging bucket and their caches!"
	q := seam.Question{ID: "q", Question: "Clean up?", Options: []seam.Option{{Label: long}, {Label: "No"}}}
	rec := questionRecord(q, seam.Question{ID: "r", Question: "Anything else?"})
	raw, _ := json.Marshal(answerModal(rec, origin{}, shown{}).Blocks)
	if !strings.Contains(string(raw), `"text":"`+long+`"`) {
		t.Errorf("the form does not show the %d-character label whole: %s", surface.Len(long), raw)
	}
}

// A description or label longer than a form's option shows (75
// characters) is cut there, and the form lists the options in full above
// its choice, as the message does: on a phone the form covers the
// message. Options that fit add nothing.
func TestFormListsCutOptionsInFull(t *testing.T) {
	long := "Removes the three stale files from the staging bucket, and then their caches on every edge."
	cut := seam.Question{ID: "q", Question: "Clean up?", MultiSelect: true, Options: []seam.Option{{Label: "Yes", Description: long}, {Label: "No"}}}
	fits := seam.Question{ID: "r", Question: "Region?", Options: []seam.Option{{Label: "eu", Description: "Frankfurt"}, {Label: "us"}}}
	rec := questionRecord(cut, fits)
	for name, v := range map[string]slackapi.ModalViewRequest{"answer": answerModal(rec, origin{}, shown{}), "other": otherModal(rec, 0, origin{}, nil, shown{})} {
		raw, _ := json.Marshal(v.Blocks)
		if !strings.Contains(string(raw), `"type":"context","elements":[{"type":"plain_text","text":"• Yes — `+long+`\n• No"`) {
			t.Errorf("the %s form does not list the options in full: %s", name, raw)
		}
		if n := strings.Count(string(raw), `"type":"context"`); n != 1 {
			t.Errorf("the %s form has %d context blocks, want 1 (the options that fit add none)", name, n)
		}
	}
}

// An optional boolean offers Skip beside Yes and No: radio buttons can't
// be cleared once tapped or prefilled, and Skip leaves the question
// unanswered. A required one offers only Yes and No.
func TestOptionalBooleanCanBeSkipped(t *testing.T) {
	qs := []seam.Question{
		{ID: "urgent", Question: "Mark it urgent?", Input: &seam.Input{Type: seam.InputBoolean, Value: "true", Required: false}},
		{ID: "notify", Question: "Notify the team?", Input: &seam.Input{Type: seam.InputBoolean, Required: true}},
	}
	rec := questionRecord(qs...)
	raw, _ := json.Marshal(answerModal(rec, origin{}, shown{}).Blocks)
	if n := strings.Count(string(raw), `"value":"`+surface.SkipValue+`"`); n != 1 {
		t.Errorf("%d Skip options in the form, want 1 (the optional boolean's): %s", n, raw)
	}
	pick := func(v string) map[string]slackapi.BlockAction {
		return map[string]slackapi.BlockAction{inputAction: {SelectedOption: slackapi.OptionBlockObject{Value: v}}}
	}
	r := surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}
	a, errs := answerFrom(rec.Questions, viewValues{"q0": pick(surface.SkipValue), "q1": pick("false")}, r)
	if errs != nil {
		t.Fatalf("errors %v", errs)
	}
	norm, err := rec.Questions.Normalize(a)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(norm)
	if want := `{"answers":[{"id":"urgent","selected":[]},{"id":"notify","selected":[],"custom":"false"}]}`; string(got) != want {
		t.Errorf("answer %s, want %s (urgent skipped)", got, want)
	}
	if _, errs := answerFrom(rec.Questions, viewValues{"q0": pick("true"), "q1": pick(surface.SkipValue)}, r); errs["q1"] == "" {
		t.Errorf("Skip on the required boolean was taken: %v", errs)
	}
}

// largestRequest is a request at the limits the API takes, written in
// ch: 20 questions, every other one a multi-select, each with a header
// and a question at their limits, a detail longer than a form shows, and
// 100 options whose labels and descriptions pass a form's 75 characters
// (by labelLen and descLen). It fails t should the API refuse it:
// Validate, or a body, as an agent sends it, over seam.MaxBodyBytes.
func largestRequest(t testing.TB, ch string, labelLen, descLen int) *seam.Questions {
	t.Helper()
	text := func(n int) string { return strings.Repeat(ch, n/surface.Len(ch)) }
	qs := &seam.Questions{}
	for i := range seam.MaxQuestions {
		q := seam.Question{ID: fmt.Sprintf("q%02d", i) + strings.Repeat("i", seam.MaxIDLen-3), Header: text(seam.MaxHeaderLen),
			Question: "?" + text(seam.MaxQuestionLen-1), Detail: text(300), MultiSelect: i%2 == 0}
		for j := range seam.MaxOptions {
			q.Options = append(q.Options, seam.Option{Label: fmt.Sprintf("%03d", j) + text(labelLen-3), Description: text(descLen)})
		}
		qs.Questions = append(qs.Questions, q)
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(qs); err != nil {
		t.Fatal(err)
	}
	if body.Len() > seam.MaxBodyBytes {
		t.Fatalf("the request's body is %d bytes; the API takes %d", body.Len(), seam.MaxBodyBytes)
	}
	if err := qs.Validate(); err != nil {
		t.Fatalf("the API refuses the request: %v", err)
	}
	return qs
}

// viewChoices returns the options of each choice of a view, by block id.
func viewChoices(t *testing.T, v slackapi.ModalViewRequest) map[string][]slackapi.OptionBlockObject {
	t.Helper()
	out := map[string][]slackapi.OptionBlockObject{}
	for _, b := range v.Blocks.BlockSet {
		in, ok := b.(*slackapi.InputBlock)
		if !ok {
			continue
		}
		raw, _ := json.Marshal(in.Element)
		var el struct {
			Options []slackapi.OptionBlockObject `json:"options"`
		}
		if err := json.Unmarshal(raw, &el); err != nil {
			t.Fatal(err)
		}
		if len(el.Options) > 0 {
			out[in.BlockID] = el.Options
		}
	}
	return out
}

// A form of the largest request the API takes (20 questions of 100
// options, labels and descriptions past what a form shows) is many times
// Slack's 250 kB, most of all in characters of several bytes (emoji,
// CJK): it gives way until it fits, and loses nothing a person needs
// to choose right. Every option stays, its text its label, or its number
// and first characters, the number it is listed whole under where the
// question is shown whole (the message, its thread or the web inbox);
// each question and its fields keep their block ids, and a
// line says what the form leaves out and where it is shown whole
// (checkFormPlaces). Its submission answers with the labels whole.
func TestFormAtTheLimitsFits(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ch                string
		labelLen, descLen int
	}{
		{"ampersands", "&", 80, 80},
		{"letters", "a", 200, 200},
		{"letters within an option's text", "a", 75, 75},
		{"emoji", "😀", 80, 80},
		{"CJK", "語", 80, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs := largestRequest(t, tc.ch, tc.labelLen, tc.descLen)
			rec := questionRecord(qs.Questions...)
			o := origin{Channel: "C0123456789", TS: "1700000000.000100", Thread: "1700000000.000001", Text: strings.Repeat("&lt;&amp;", 500)}
			var parts []slackapi.Block
			for i := range qs.Questions {
				part, _ := questionBlocks(qs.Questions, i, formFits[0], inMessage)
				parts = append(parts, part...)
			}
			whole := jsonSize(modal(rec, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, "Answer 20 questions", "Send", o, parts))
			if whole <= limitViewBytes {
				t.Fatalf("the whole form is %d bytes: it needs no fitting", whole)
			}
			v := answerModal(rec, o, shown{})
			checkModal(t, "answer modal", v)
			raw, _ := encodeJSON(v)
			t.Logf("the view: %d bytes whole, %d fitted", whole, len(raw))
			msg, thread := sentTexts(t, render(rec, "", true))
			if places := checkFormPlaces(t, qs.Questions, jsonBlocks(t, v.Blocks.BlockSet), msg, thread, rec.ID, false); !slices.Contains(places, atInbox) {
				t.Errorf("the form does not say what it leaves to the web inbox: %q", places)
			}
			var all []int // the Other… modal of a multi-select, every option ticked: whole, it fits
			for n := range seam.MaxOptions {
				all = append(all, n)
			}
			checkModal(t, "other modal", otherModal(rec, 0, o, all, shown{}))
			choices := viewChoices(t, v)
			values := viewValues{}
			want := seam.Answer{}
			for i, q := range qs.Questions {
				opts := choices[choiceBlock(i)]
				if len(opts) != len(q.Options) {
					t.Fatalf("question %d offers %d of its %d options", i, len(opts), len(q.Options))
				}
				for n, opt := range opts {
					text, label := opt.Text.Text, q.Options[n].Label
					numbered := strings.HasPrefix(text, strconv.Itoa(n+1)+". "+label[:3])
					if opt.Value != strconv.Itoa(n) || text != label && !numbered {
						t.Fatalf("question %d's option %d is %q, value %q", i, n, text, opt.Value)
					}
				}
				picked := []int{99}
				if q.MultiSelect {
					picked = []int{0, 57, 99}
				}
				var a slackapi.BlockAction
				it := seam.AnswerItem{ID: q.ID, Selected: []string{}}
				for _, n := range picked {
					if q.MultiSelect {
						a.SelectedOptions = append(a.SelectedOptions, opts[n])
					} else {
						a.SelectedOption = opts[n]
					}
					it.Selected = append(it.Selected, q.Options[n].Label)
				}
				values[choiceBlock(i)] = map[string]slackapi.BlockAction{inputAction: a}
				values[otherBlock(i)] = map[string]slackapi.BlockAction{inputAction: {Value: ""}}
				want.Answers = append(want.Answers, it)
			}
			a, errs := answerFrom(qs, values, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID})
			if errs != nil {
				t.Fatalf("the submission was refused: %v", errs)
			}
			got, err := qs.Normalize(a)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Errorf("answer\n%.300s\nwant\n%.300s", g, w)
			}
		})
	}
}

// The form of a request of one question never gives way, even at the
// seam's limits ("<&>" throughout). Were it to,
// options cut to their first words would carry numbers its message does
// not list them by: the message of one question numbers them only where
// a label is longer than an option holds (shapeOf), not where a form may
// give way, as a message of several questions does (questionText).
func TestOneQuestionFormNeverGivesWay(t *testing.T) {
	for _, multi := range []bool{false, true} {
		q := seam.Question{ID: strings.Repeat("i", seam.MaxIDLen), Header: escapeHeavy(seam.MaxHeaderLen),
			Question: escapeHeavy(seam.MaxQuestionLen), Detail: escapeHeavy(seam.MaxDetailLen), MultiSelect: multi}
		for n := range seam.MaxOptions {
			q.Options = append(q.Options, seam.Option{Label: fmt.Sprintf("%03d", n) + escapeHeavy(seam.MaxLabelLen-3),
				Description: escapeHeavy(seam.MaxDescriptionLen)})
		}
		qs := &seam.Questions{Questions: []seam.Question{q}}
		if err := qs.Validate(); err != nil {
			t.Fatalf("the API refuses the request: %v", err)
		}
		if formGivesWay(qs.Questions) {
			t.Errorf("the form of one question (multi-select %v) may give way", multi)
		}
	}
}

// A form just over Slack's limit loses the options' descriptions first,
// and only them: the labels stay whole. The line that says so names
// where they are, for questions past the message's thread the bridge's
// web inbox.
func TestFormDropsDescriptionsFirst(t *testing.T) {
	qs := largestRequest(t, "a", 20, 75)
	rec := questionRecord(qs.Questions...)
	v := answerModal(rec, origin{}, shown{})
	checkModal(t, "answer modal", v)
	raw, _ := json.Marshal(v.Blocks)
	if strings.Contains(string(raw), `"description"`) {
		t.Error("the fitted form's options still carry descriptions")
	}
	if !strings.Contains(string(raw), "In the bridge's web inbox, at /r/"+rec.ID+", not shown here: the options' descriptions.") {
		t.Error("the form does not say the descriptions are in the web inbox")
	}
	for i, q := range qs.Questions {
		for n, opt := range viewChoices(t, v)[choiceBlock(i)] {
			if opt.Text.Text != q.Options[n].Label {
				t.Fatalf("question %d's option %d shows %q, not its label %q", i, n, opt.Text.Text, q.Options[n].Label)
			}
		}
	}
}

// jsonLen counts as a view is sent (encodeJSON: encoding/json's, <, >
// and & as they are), which decodes to the same text; cutJSON keeps
// within it.
func TestJSONLen(t *testing.T) {
	for _, s := range []string{"", "plain", "a<b>&c", "\u2028\u2029", `"\`, "\x01\n\t\b\f\r\x1f", "\xff\xfe", "😀語…", "\ufffd",
		`\u0026 as text`, `\\u003c`, `\`, "<\\u003e\\"} {
		raw, err := encodeJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonLen(s), len(raw)-2; got != want {
			t.Errorf("jsonLen(%q) = %d, want %d", s, got, want)
		}
		var back string
		if err := json.Unmarshal(raw, &back); err != nil || back != string([]rune(s)) {
			t.Errorf("%q is sent as %s, which reads as %q (%v)", s, raw, back, err)
		}
		for _, max := range []int{4, 7, 12, 20} {
			long := strings.Repeat(s+"x", 30)
			if c := cutJSON(long, maxOptionText, max); jsonLen(c) > max || !strings.HasSuffix(c, "…") {
				t.Errorf("cutJSON(%q, %d) = %q, %d bytes", long, max, c, jsonLen(c))
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// viewSize adds up a view's size from its parts' as encoding/json writes
// the whole: answerModal measures a form by it.
func TestViewSizeAddsUp(t *testing.T) {
	one := questionRecord(seam.Question{ID: "q", Question: "Deploy?", Options: []seam.Option{{Label: "Yes & go"}, {Label: "No"}}})
	two := questionRecord(seam.Question{ID: "a", Question: "Name?"}, seam.Question{ID: "b", Question: "Région <eu>?", Detail: "why\nnot"})
	big := questionRecord(largestRequest(t, "&", 80, 80).Questions...)
	o := origin{Channel: "C0123456789", TS: "1700000000.000100", Text: "<&>"}
	for name, rec := range map[string]*pending.Record{"one": one, "two": two, "the largest": big} {
		qs := rec.Questions.Questions
		view := func(blocks []slackapi.Block) slackapi.ModalViewRequest {
			return modal(rec, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, "Answer", "Send", o, blocks)
		}
		var parts [][]slackapi.Block
		var sizes []int
		for i := range qs {
			part, _ := questionBlocks(qs, i, formFits[i%len(formFits)], inMessage)
			parts = append(parts, part)
			sizes = append(sizes, jsonSize(parts[i]))
		}
		if got, want := viewSize(jsonSize(view([]slackapi.Block{})), sizes), jsonSize(view(slices.Concat(parts...))); got != want {
			t.Errorf("%s: viewSize = %d; the view's JSON is %d bytes", name, got, want)
		}
	}
}

// BenchmarkAnswerModalAtTheLimits: the form of the API's largest request
// in "&" (690 kB of view JSON whole), fitted to Slack's 250 kB, within
// the click's 2.5 s. go test -run x -bench AnswerModal ./internal/slack
func BenchmarkAnswerModalAtTheLimits(b *testing.B) {
	rec := questionRecord(largestRequest(b, "&", 80, 80).Questions...)
	o := origin{Channel: "C0123456789", TS: "1700000000.000100", Thread: "1700000000.000001", Text: strings.Repeat("&lt;&amp;", 500)}
	for b.Loop() {
		answerModal(rec, o, shown{})
	}
}

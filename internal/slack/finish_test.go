package slack_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// waitEdited waits until the store holds no ended request whose messages
// are still to be edited: the replicas have edited them and said so.
func waitEdited(t *testing.T, b bridge) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := b.Store().Count(context.Background(), 0)
		n := c.Unedited
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ended requests still unedited after 10s (%v)", n, err)
		}
		time.Sleep(10 * time.Millisecond) // nothing signals the store's index
	}
}

// TestUneditedEndIsEditedByFinisher: Redis ran the resolve script (the
// request is answered and its agent woken) but the replica that ran it
// never edited the message: Redis went away before its reply, say. A
// replica's finisher edits it once pending.FinishGrace has passed.
func TestUneditedEndIsEditedByFinisher(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	url, prefix := apptest.Redis(t)
	clk := apptest.NewClock(time.Now())
	rs := []bridge{
		startOptions(t, fake, configYAML(fake, defaultTarget), url, prefix, app.Options{Now: clk.Now}),
		startOptions(t, fake, configYAML(fake, defaultTarget), url, prefix, app.Options{Now: clk.Now}),
	}
	id := rs[0].create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]

	// What the lost reply leaves: the script ran; nobody edits.
	_, err := rs[0].Store().Resolve(context.Background(), id, pending.Resolution{
		Status: seam.StatusAnswered,
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "cleanup", Selected: []string{"No, keep them"}}}},
		By:     &pending.Responder{Surface: "slack", UserID: "UBOB", Name: "bob"},
		Kind:   seam.KindQuestion,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := rs[1].wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("the agent got %v; want answered", rec.M)
	}
	if n := len(fake.Calls("chat.update")); n != 0 {
		t.Fatalf("%d edits within the grace; want none (nothing has taken it over)", n)
	}
	if got := metric(t, rs[1], "askbridge_unedited_requests"); got != "1" {
		t.Errorf("askbridge_unedited_requests = %q within the grace; want 1", got)
	}

	clk.Advance(pending.FinishGrace)
	upd := fake.WaitCalls(t, "chat.update", 1)[0]
	if upd.Field("ts") != msg.TS || upd.Field("channel") != channel {
		t.Errorf("edited %s/%s; want %s/%s", upd.Field("channel"), upd.Field("ts"), channel, msg.TS)
	}
	if hasActions(upd) {
		t.Errorf("the edited message still has controls: %v", upd.Blocks())
	}
	if txt := upd.Text(); !strings.Contains(txt, "Answered by bob · No, keep them") {
		t.Errorf("the edited message does not say who answered what:\n%s", txt)
	}
	waitEdited(t, rs[0])
	if got := metric(t, rs[1], "askbridge_unedited_requests"); got != "0" {
		t.Errorf("askbridge_unedited_requests = %q once edited; want 0", got)
	}
	if n := len(fake.Calls("chat.update")); n != 1 {
		t.Errorf("%d edits; want 1 (one finisher took it over)", n)
	}
}

// metric returns the value of an unlabelled metric on b's /metrics.
func metric(t *testing.T, b bridge, name string) string {
	t.Helper()
	resp, err := http.Get(b.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return ""
}

// TestEndOfAnUneditableMessage: a message that can never be edited (a
// person deleted it, or its channel was archived) counts as edited when
// its request ends, rather than being retried by a finisher for an hour.
func TestEndOfAnUneditableMessage(t *testing.T) {
	for _, slackErr := range []string{"message_not_found", "is_archived", "cant_update_message", "edit_window_closed"} {
		t.Run(slackErr, func(t *testing.T) {
			b := start(t, defaultTarget)
			id := b.create(t, "/v1/questions", cleanupQuestion())
			b.fake.WaitCalls(t, "chat.postMessage", 1)
			apptest.Posted(t, b.URL(), "/v1/questions", id, 1)
			b.fake.FailNext("chat.update", slacktest.FakeFail{Error: slackErr})
			if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
				t.Fatalf("cancel: %d", status)
			}
			// The cancel edits before it answers: the request is out of the
			// finish index by now, or never will be.
			if c, err := b.Store().Count(context.Background(), 0); err != nil || c.Unedited != 0 {
				t.Errorf("%d requests left for a finisher (%v); want none", c.Unedited, err)
			}
		})
	}
}

// startOverdue starts a replica of yaml whose sweeps are an hour apart,
// on a clock of its own, and posts a question that it then leaves a
// second past its expiry: overdue, and not yet expired by any sweeper.
func startOverdue(t *testing.T, fake *slacktest.FakeSlack, yaml string) (b bridge, id string, msg slacktest.FakeCall) {
	t.Helper()
	url, prefix := apptest.Redis(t)
	clk := apptest.NewClock(time.Now())
	yaml = strings.Replace(yaml, "sweep_interval: 50ms", "sweep_interval: 1h", 1)
	b = startOptions(t, fake, yaml, url, prefix, app.Options{Now: clk.Now})
	q := cleanupQuestion()
	q["expires_in"] = "60s"
	id = b.create(t, "/v1/questions", q)
	msg = fake.WaitCalls(t, "chat.postMessage", 1)[0]
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1)
	clk.Advance(61 * time.Second)
	return b, id, msg
}

// TestClickAfterExpiry: a click that comes after the request's expiry,
// before any sweeper has expired it (sweeps an hour apart here), is too
// late: the request expires then, the person is told so, the agent hears
// "expired", and the message is edited to say it.
func TestClickAfterExpiry(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	b, id, msg := startOverdue(t, fake, configYAML(fake, defaultTarget))
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil))
	calls := fake.WaitFor(t, "a note to ada and the edit", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UADA")) == 1 && len(fake.Calls("chat.update")) == 1
	})
	if got := ephemerals(calls, "UADA")[0]; got != "Already expired unanswered" {
		t.Errorf("ada was told %q", got)
	}
	upd := fake.Calls("chat.update")[0]
	if upd.Field("ts") != msg.TS || hasActions(upd) || !strings.Contains(upd.Text(), "Expired unanswered") {
		t.Errorf("the edit of %s: %s", upd.Field("ts"), upd.Text())
	}
	rec := b.get(t, "/v1/questions", id)
	if rec.M["status"] != "expired" || rec.M["answer"] != nil {
		t.Errorf("the request after a late click: %v", rec.M)
	}
	waitEdited(t, b)
}

// TestModalAfterExpiry: a button that opens a modal, clicked after the
// request's expiry but before a sweeper has expired it, opens no form to
// fill in for nothing: the person is told it expired, as a click that
// answers is.
func TestModalAfterExpiry(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	b, id, msg := startOverdue(t, fake, configYAML(fake, defaultTarget))
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:other:"+id, nil, nil))
	calls := fake.WaitFor(t, "a note to ada", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UADA")) == 1
	})
	if got := ephemerals(calls, "UADA")[0]; got != "Already expired unanswered" {
		t.Errorf("ada was told %q", got)
	}
	if opened := fake.Calls("views.open"); len(opened) != 0 {
		t.Errorf("a form was opened for an expired request: %v", opened[0].View()["title"])
	}
}

// TestSubmitAfterExpiry: a modal opened in time and submitted after the
// request's expiry, before a sweeper has expired it, says so in the
// modal; it closed as if the answer were taken, and the person heard
// otherwise only later, apart from it.
func TestSubmitAfterExpiry(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	url, prefix := apptest.Redis(t)
	clk := apptest.NewClock(time.Now())
	yaml := strings.Replace(configYAML(fake, defaultTarget), "sweep_interval: 50ms", "sweep_interval: 1h", 1)
	b := startOptions(t, fake, yaml, url, prefix, app.Options{Now: clk.Now})
	q := cleanupQuestion()
	q["expires_in"] = "60s"
	id := b.create(t, "/v1/questions", q)
	msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:other:"+id, nil, nil))
	opened := fake.WaitCalls(t, "views.open", 1)[0]
	clk.Advance(61 * time.Second)

	body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0o": slacktest.TextValue("after the freeze")}))
	if !strings.Contains(body, `"response_action":"update"`) || !strings.Contains(body, "Already expired unanswered") {
		t.Errorf("a submission after the expiry got %s; want the modal to say the request expired", body)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["answer"] != nil {
		t.Errorf("the request after a late submission: %v", rec.M)
	}
}

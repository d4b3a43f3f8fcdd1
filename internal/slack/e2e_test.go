package slack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/seam"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
	"github.com/askbridge/askbridge/internal/surface"
)

const (
	botToken      = "xoxb-1111-2222-SECRETBOTTOKEN"
	signingSecret = "8f742231b10e8888abcd99yyyzzz85a5SECRET"
	appToken      = "xapp-1-A0001-SECRETAPPTOKEN"
	channel       = "C0AGENTS"
)

var (
	ada = slacktest.SlackUser("UADA", "ada")
	bob = slacktest.SlackUser("UBOB", "bob")
	eve = slacktest.SlackUser("UEVE", "eve")
	ops = slacktest.SlackUser("UOPS", "olga")
)

// bridge is one running replica under test.
type bridge struct {
	*app.App
	fake *slacktest.FakeSlack
	logs *apptest.LogBuffer // the replica's, at debug
}

// targetYAML is a route target; the default answers UADA, UBOB and the
// members of user group SOPS.
const defaultTarget = `
      - slack:
          channel: ` + channel + `
          responders:
            users: [UADA, UBOB]
            groups: [SOPS]`

// configYAML is a whole config pointing Slack at fake.
func configYAML(fake *slacktest.FakeSlack, targets string) string {
	return fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: %s
  api_url: %s
store:
  sweep_interval: 50ms
routes:
  - name: default
    targets:%s
`, botToken, signingSecret, fake.URL, targets)
}

// startReplicas starts n replicas sharing one Redis and one fake Slack.
func startReplicas(t *testing.T, n int, targets string) []bridge {
	t.Helper()
	fake := slacktest.NewFakeSlack(t, botToken)
	fake.SetGroup("SOPS", "UOPS")
	url, prefix := apptest.Redis(t)
	var out []bridge
	for range n {
		out = append(out, startConfig(t, fake, configYAML(fake, targets), url, prefix))
	}
	return out
}

// startConfig starts a replica of yaml on the Redis at url. Its log, at
// debug level, is checked for secrets when the test ends.
func startConfig(t *testing.T, fake *slacktest.FakeSlack, yaml, url, prefix string) bridge {
	t.Helper()
	return startOptions(t, fake, yaml, url, prefix, app.Options{})
}

// startOptions is startConfig with app options (a fake clock).
func startOptions(t *testing.T, fake *slacktest.FakeSlack, yaml, url, prefix string, opt app.Options) bridge {
	t.Helper()
	// A response_url lets whoever holds it post to the channel.
	a, logs := apptest.StartWatched(t, apptest.Config(t, yaml, url, prefix), opt, botToken, signingSecret, appToken, "/actions/T0001/")
	return bridge{App: a, fake: fake, logs: logs}
}

func start(t *testing.T, targets string) bridge {
	t.Helper()
	return startReplicas(t, 1, targets)[0]
}

// record is an API answer (apptest.Record).
type record = apptest.Record

func (b bridge) do(t *testing.T, method, path string, body any) (int, record) {
	t.Helper()
	return apptest.Do(t, b.URL(), method, path, body)
}

func (b bridge) create(t *testing.T, path string, body any) string {
	t.Helper()
	return apptest.Create(t, b.URL(), path, body)
}

func (b bridge) wait(t *testing.T, path, id string) record {
	t.Helper()
	return apptest.Wait(t, b.URL(), path, id)
}

func (b bridge) get(t *testing.T, path, id string) record {
	t.Helper()
	return apptest.Get(t, b.URL(), path, id)
}

// send posts an interaction payload signed at at, as Slack does.
func (b bridge) send(t *testing.T, payload any, at time.Time, secret string) (int, string) {
	t.Helper()
	status, body, err := b.post(payload, at, secret)
	if err != nil {
		t.Fatal(err)
	}
	return status, body
}

// post is send for any goroutine: it returns what went wrong instead of
// failing the test, which only the test's goroutine may do.
func (b bridge) post(payload any, at time.Time, secret string) (int, string, error) {
	body := slacktest.FormBody(payload)
	req, _ := http.NewRequest(http.MethodPost, b.URL()+"/slack/interactions", strings.NewReader(body))
	req.Header = slacktest.Sign(secret, at, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("interaction: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), nil
}

// click sends a correctly signed interaction and expects 200.
func (b bridge) click(t *testing.T, payload any) string {
	t.Helper()
	status, body := b.send(t, payload, time.Now(), signingSecret)
	if status != http.StatusOK {
		t.Fatalf("interaction: %d %s", status, body)
	}
	if errs := slacktest.SubmissionErrors(payload, body); len(errs) > 0 {
		t.Errorf("Slack would refuse the answer %s: %v", body, errs)
	}
	return body
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func cleanupQuestion() map[string]any {
	return map[string]any{
		"questions": []any{map[string]any{
			"id": "cleanup", "question": "Proceed with the destructive cleanup?", "header": "Confirm",
			"options": []any{
				map[string]any{"label": "Yes, delete them (Recommended)", "description": "Removes the three stale files."},
				map[string]any{"label": "No, keep them"},
			},
		}},
		"caller": map[string]any{"name": "deploy-bot", "session": "run-42"},
	}
}

// hasActions reports whether a message still has controls.
func hasActions(c slacktest.FakeCall) bool {
	for _, b := range c.Blocks() {
		if b["type"] == "actions" || b["type"] == "input" {
			return true
		}
	}
	return false
}

// ephemerals returns the texts told to user.
func ephemerals(calls []slacktest.FakeCall, user string) []string {
	var out []string
	for _, c := range calls {
		if to, text, ok := c.Ephemeral(); ok && to == user {
			out = append(out, text)
		}
	}
	return out
}

func TestButtonAnswerEndToEnd(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())

	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	if got := msg.Field("channel"); got != channel {
		t.Fatalf("posted to %q, want %q", got, channel)
	}
	yes, _ := msg.Action("ab:pick:" + id + ":0:0")
	if yes == nil || yes["style"] != "primary" {
		t.Fatalf("the recommended option is not a primary button: %v", yes)
	}
	if !strings.Contains(msg.Text(), "Removes the three stale files.") {
		t.Errorf("the option's description is not shown:\n%s", msg.Text())
	}

	type result struct{ rec record }
	waited := make(chan result, 1)
	go func() { waited <- result{b.wait(t, "/v1/questions", id)} }()

	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil))

	var rec record
	select {
	case r := <-waited:
		rec = r.rec
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting GET did not return")
	}
	if rec.M["status"] != "answered" {
		t.Fatalf("status %v, want answered: %v", rec.M["status"], rec)
	}
	if got, want := rec.Raw("answer"), `{"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}`; got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	by, _ := rec.M["answered_by"].(map[string]any)
	if by["surface"] != "slack" || by["user_id"] != "UADA" || by["name"] != "ada" {
		t.Errorf("answered_by %v", by)
	}

	upd := b.fake.WaitCalls(t, "chat.update", 1)[0]
	if upd.Field("ts") != msg.TS || upd.Field("channel") != channel {
		t.Errorf("updated %s/%s, want %s/%s", upd.Field("channel"), upd.Field("ts"), channel, msg.TS)
	}
	if hasActions(upd) {
		t.Errorf("the edited message still has controls: %v", upd.Blocks())
	}
	if txt := upd.Text(); !strings.Contains(txt, "Answered by ada · Yes, delete them (Recommended)") || !strings.Contains(txt, "Proceed with the destructive cleanup?") {
		t.Errorf("the edited message does not say who answered what, or lost the question:\n%s", txt)
	}
}

// TestEditKeepsItsTextMarkup: an edit's text (what notifications, search
// and screen readers show of a message of blocks) keeps its markup, the
// time of the status line, as a post's does: chat.update, unlike
// chat.postMessage, parses text as "client" unless told "none", which
// stores it escaped and shows "<!date^…>" as typed.
func TestEditKeepsItsTextMarkup(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:1", nil, nil))
	b.fake.WaitCalls(t, "chat.update", 1)
	text, _ := b.fake.Messages(channel)[0]["text"].(string)
	if !strings.HasPrefix(text, "Answered by ada · No, keep them · <!date^") {
		t.Errorf("the edited message's text is %q; want its status line, the time as markup", text)
	}
}

func TestSignatureRefused(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	payload := slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil)

	for _, tc := range []struct {
		name   string
		at     time.Time
		secret string
	}{
		{"bad signature", time.Now(), "not-the-signing-secret"},
		{"stale timestamp", time.Now().Add(-6 * time.Minute), signingSecret},
		{"future timestamp", time.Now().Add(6 * time.Minute), signingSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, body := b.send(t, payload, tc.at, tc.secret); status != http.StatusUnauthorized {
				t.Errorf("status %d (%s), want 401", status, body)
			} else if !strings.Contains(body, `"code":"UNAUTHORIZED"`) {
				t.Errorf("refused with %s; want the API's error shape, code UNAUTHORIZED", body)
			}
		})
	}
	t.Run("unsigned", func(t *testing.T) {
		resp, err := http.Post(b.URL()+"/slack/interactions", "application/x-www-form-urlencoded", strings.NewReader(slacktest.FormBody(payload)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	})
	t.Run("body changed after signing", func(t *testing.T) {
		body := slacktest.FormBody(payload)
		req, _ := http.NewRequest(http.MethodPost, b.URL()+"/slack/interactions", strings.NewReader(body+"&x=1"))
		req.Header = slacktest.Sign(signingSecret, time.Now(), body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	})
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("a refused interaction changed the request: %v", rec.M["status"])
	}
	if n := len(b.fake.Calls("")); n != 1 {
		t.Errorf("refused interactions made Slack calls: %d calls in all", n)
	}
	// Five refusals within a minute: the first is logged, the rest
	// counted in the next line (surface.Refusals).
	if n := strings.Count(b.logs.String(), "refused an interaction with a bad or stale signature"); n != 1 {
		t.Errorf("%d log lines for five refused interactions; want 1", n)
	}
}

func TestUnauthorizedUserChangesNothing(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]

	b.click(t, slacktest.BlockActions(t, msg, eve, "ab:pick:"+id+":0:1", nil, nil))
	calls := b.fake.WaitFor(t, "an ephemeral refusal", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UEVE")) == 1
	})
	if got := ephemerals(calls, "UEVE")[0]; !strings.Contains(got, "can't answer this") {
		t.Errorf("refusal %q", got)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("an unauthorized click changed the request: %v", rec)
	}
	if n := len(b.fake.Calls("chat.update")); n != 0 {
		t.Errorf("an unauthorized click edited the message %d times", n)
	}

	// A member of the responders' user group may answer.
	b.click(t, slacktest.BlockActions(t, msg, ops, "ab:pick:"+id+":0:1", nil, nil))
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}` {
		t.Errorf("answer %s", got)
	}
	if n := len(b.fake.Calls("usergroups.users.list")); n < 1 {
		t.Errorf("the user group was never looked up")
	}
}

// TestRoutesEditedSinceThePost: a post records its target as "route/i".
// A target added in front of a restricted one, rolled out while a request
// is pending, gives that key to the new target, open; a click on the old
// message must still be checked against the responders of the target that
// posted it. The new target is configured by a channel's id (the click's
// channel is not its own), by a person's id (their DM) or by a channel's
// name: the last two post where Slack says, so the click's channel can't
// be compared with the one they name, and the post's recorded channel
// (Post.To) tells.
func TestRoutesEditedSinceThePost(t *testing.T) {
	for _, open := range []string{"C0OPEN", "U0EVE", "#open-questions"} {
		t.Run(open, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, botToken)
			url, prefix := apptest.Redis(t)
			const restricted = `
      - slack:
          channel: C0RESTRICT
          responders:
            users: [UADA]`
			before := startConfig(t, fake, configYAML(fake, restricted), url, prefix)
			id := before.create(t, "/v1/questions", cleanupQuestion())
			msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
			apptest.Posted(t, before.URL(), "/v1/questions", id, 1) // recorded under default/0

			after := startConfig(t, fake, configYAML(fake, `
      - slack:
          channel: "`+open+`"`+restricted), url, prefix)
			// The button's value names default/0 too, now the open
			// target's: the click reads the record.
			after.click(t, slacktest.BlockActions(t, msg, eve, "ab:pick:"+id+":0:1", nil, nil))
			fake.WaitFor(t, "an ephemeral refusal", 10*time.Second, func(calls []slacktest.FakeCall) bool {
				return len(ephemerals(calls, "UEVE")) == 1
			})
			if rec := after.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
				t.Fatalf("eve, not a responder of C0RESTRICT, answered after %s was added in front of it: %s by %s", open, rec.M["status"], rec.Raw("answered_by"))
			}

			after.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:1", nil, nil))
			if by := after.wait(t, "/v1/questions", id).Raw("answered_by"); !strings.Contains(by, `"UADA"`) {
				t.Errorf("answered by %s; want ada", by)
			}
		})
	}
}

// TestDirectMessageTarget: a target configured by a person's id posts in
// the app's DM with them, whose id (D…) is not the one configured; a
// click there is checked against that target's responders.
func TestDirectMessageTarget(t *testing.T) {
	b := start(t, `
      - slack:
          channel: U0ADA
          responders:
            users: [UADA]`)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1)
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:1", nil, nil))
	if by := b.wait(t, "/v1/questions", id).Raw("answered_by"); !strings.Contains(by, `"UADA"`) {
		t.Errorf("answered by %s; want ada, in the DM", by)
	}
}

func TestLateClickIsTold(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]

	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil))
	b.wait(t, "/v1/questions", id)
	b.fake.WaitCalls(t, "chat.update", 1) // the agent is woken before the edit
	b.click(t, slacktest.BlockActions(t, msg, bob, "ab:pick:"+id+":0:1", nil, nil))

	calls := b.fake.WaitFor(t, "bob told it is over", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UBOB")) == 1
	})
	if got := ephemerals(calls, "UBOB")[0]; !strings.HasPrefix(got, "Already answered by ada") {
		t.Errorf("late click told %q", got)
	}
	rec := b.get(t, "/v1/questions", id)
	if got := rec.Raw("answer"); !strings.Contains(got, "Yes, delete them") {
		t.Errorf("a late click changed the answer: %s", got)
	}
	if n := len(b.fake.Calls("chat.update")); n != 1 {
		t.Errorf("%d edits, want 1", n)
	}
}

func TestDuplicateDeliveryChangesNothing(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	payload := slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil)

	b.click(t, payload)
	b.wait(t, "/v1/questions", id)
	b.fake.WaitCalls(t, "chat.update", 1)
	b.click(t, payload) // Slack's retry of the same action

	// The second delivery finishes once its (silent) work is done; an
	// ephemeral to ada would show up as a call. Drive one more, unrelated
	// interaction through the same path and wait for it, so the duplicate
	// has been handled by then.
	b.click(t, slacktest.BlockActions(t, msg, bob, "ab:pick:"+id+":0:1", nil, nil))
	calls := b.fake.WaitFor(t, "bob told", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UBOB")) == 1
	})
	if got := ephemerals(calls, "UADA"); len(got) != 0 {
		t.Errorf("the duplicate delivery told ada %q", got)
	}
	if n := len(b.fake.Calls("chat.update")); n != 1 {
		t.Errorf("%d edits, want 1", n)
	}
}

// TestCarriedLabelMustBeOffered: a one-click button carries its option's
// label, and the click is resolved without reading the request first. A
// value altered on its way (Slack signs the click, not that the value is
// the bridge's) to a label the question does not offer records nothing;
// the person is told, and the request still takes a real answer.
func TestCarriedLabelMustBeOffered(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	forged := slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil)
	action := forged["actions"].([]any)[0].(map[string]any)
	var fields []string
	if err := json.Unmarshal([]byte(action["value"].(string)), &fields); err != nil || len(fields) != 4 {
		t.Fatalf("the button carries %v (%v); want [hash target question label]", action["value"], err)
	}
	fields[3] = "rm -rf / (Recommended)"
	v, _ := json.Marshal(fields)
	action["value"] = string(v)
	b.click(t, forged)
	b.fake.WaitFor(t, "ada told", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return slices.Contains(ephemerals(calls, "UADA"), "That answer is not one of the options; nothing was saved.")
	})
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("after a click carrying a label not offered: %v %s; want pending", rec.M["status"], rec.Raw("answer"))
	}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:1", nil, nil))
	if rec := b.wait(t, "/v1/questions", id); rec.Raw("answer") != `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}` {
		t.Errorf("the real click then: %s", rec.Raw("answer"))
	}
}

// TestCarriedAnswerMustFitItsQuestion: a one-click button carries its
// question's id with its option's label, and the click is resolved without
// reading the request. A value altered on its way must not record an
// answer the request's form would refuse: one naming a question the
// request does not ask, or, on a request of two questions (whose buttons
// carry nothing), one question's answer with an option of the other's and
// the rest left out. Nothing is recorded, and the person is told.
func TestCarriedAnswerMustFitItsQuestion(t *testing.T) {
	b := start(t, defaultTarget)
	two := cleanupQuestion()
	two["questions"] = append(two["questions"].([]any), map[string]any{
		"id": "envs", "question": "Which environments?", "header": "Envs",
		"options": []any{map[string]any{"label": "staging"}, map[string]any{"label": "prod"}},
	})
	for _, tc := range []struct {
		name   string
		body   map[string]any
		fields func(hash string) []string // the altered value
	}{
		{"a question the request does not ask", cleanupQuestion(), func(hash string) []string {
			return []string{hash, "default/0", "not-asked", "No, keep them"}
		}},
		{"another question's option, the rest left out", two, func(hash string) []string {
			return []string{hash, "default/0", "cleanup", "prod"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(b.fake.Calls("chat.postMessage"))
			id := b.create(t, "/v1/questions", tc.body)
			msg := b.fake.WaitCalls(t, "chat.postMessage", n+1)[n]
			// Dismiss is on every message; its click comes back as an
			// option's, carrying an answer.
			forged := slacktest.BlockActions(t, msg, ada, "ab:dismiss:"+id, nil, nil)
			action := forged["actions"].([]any)[0].(map[string]any)
			action["action_id"] = "ab:pick:" + id + ":0:1"
			hash := strings.TrimPrefix(action["block_id"].(string), "ab:")
			hash, _, _ = strings.Cut(hash, ":")
			v, _ := json.Marshal(tc.fields(hash))
			action["value"] = string(v)
			told := len(ephemerals(b.fake.Calls(""), "UADA"))
			b.click(t, forged)
			b.fake.WaitFor(t, "ada told", 10*time.Second, func(calls []slacktest.FakeCall) bool {
				return len(ephemerals(calls, "UADA")) > told
			})
			if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
				t.Fatalf("after a click carrying an answer that does not fit: %v %s; want pending", rec.M["status"], rec.Raw("answer"))
			}
			if got := ephemerals(b.fake.Calls(""), "UADA")[told]; got != "That answer is not one of the options; nothing was saved." {
				t.Errorf("ada was told %q", got)
			}
		})
	}
}

func TestDoubleClickOnTwoReplicas(t *testing.T) {
	rs := startReplicas(t, 2, defaultTarget)
	id := rs[0].create(t, "/v1/questions", cleanupQuestion())
	msg := rs[0].fake.WaitCalls(t, "chat.postMessage", 1)[0]

	var wg sync.WaitGroup
	wg.Go(func() { rs[0].click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil)) })
	wg.Go(func() { rs[1].click(t, slacktest.BlockActions(t, msg, bob, "ab:pick:"+id+":0:1", nil, nil)) })
	wg.Wait()

	rec := rs[1].wait(t, "/v1/questions", id)
	by := rec.M["answered_by"].(map[string]any)
	winner, loser, label := "UADA", "UBOB", "Yes, delete them (Recommended)"
	if by["user_id"] == "UBOB" {
		winner, loser, label = "UBOB", "UADA", "No, keep them"
	}
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"cleanup","selected":["`+label+`"]}]}` {
		t.Errorf("answer %s does not match the winner %s", got, winner)
	}
	calls := rs[0].fake.WaitFor(t, "the loser told", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, loser)) == 1
	})
	if got := ephemerals(calls, loser)[0]; !strings.HasPrefix(got, "Already answered by") {
		t.Errorf("the loser was told %q", got)
	}
	if got := ephemerals(calls, winner); len(got) != 0 {
		t.Errorf("the winner was told %q", got)
	}
	rs[0].fake.WaitCalls(t, "chat.update", 1)
	if n := len(rs[0].fake.Calls("chat.update")); n != 1 {
		t.Errorf("%d edits, want exactly 1", n)
	}
}

func TestTypedInputModal(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "replicas", "question": "How many replicas?", "header": "Replicas",
		"input": map[string]any{"type": "integer", "value": 3, "required": true},
	}}})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]

	click := slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil)
	b.click(t, click)
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	if opened.JSON["trigger_id"] != click["trigger_id"] {
		t.Errorf("views.open used trigger %v; the click's is %v", opened.JSON["trigger_id"], click["trigger_id"])
	}
	var field map[string]any
	for _, bl := range opened.Blocks() {
		if bl["block_id"] == "q0" {
			field, _ = bl["element"].(map[string]any)
		}
	}
	if field == nil || field["initial_value"] != "3" || field["type"] != "plain_text_input" {
		t.Fatalf("the modal's field is not a prefilled text input: %v", opened.Blocks())
	}
	// What the field takes is said below it: the prefill hides the
	// placeholder that says it too.
	if hint, _ := modalBlock(opened, "q0")["hint"].(map[string]any); hint["text"] != "A whole number" {
		t.Errorf("the field's hint is %v; want it to say it takes a whole number", hint)
	}

	body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("three")}))
	var resp struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Action != "errors" || !strings.Contains(resp.Errors["q0"], "whole number") {
		t.Fatalf("a bad integer got %q, want response_action errors on q0", body)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("a refused submission changed the request: %v", rec.M["status"])
	}
	// A long paste is refused with an error Slack takes (b.click checks
	// it): one that quoted it whole was over Slack's 2,000 characters.
	body = b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue(strings.Repeat("9 ", 1500))}))
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Action != "errors" || !strings.Contains(resp.Errors["q0"], "whole number") {
		t.Fatalf("a long bad integer got %.300q, want response_action errors on q0", body)
	}

	if body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue(" 42 ")})); body != "" {
		t.Fatalf("a good submission got %q, want an empty 200 (closes the modal)", body)
	}
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"replicas","selected":[],"custom":"42"}]}` {
		t.Errorf("answer %s", got)
	}
}

// TestPrefillReachesTheFormWhole: a text field's prefill is what a person
// who changes nothing sends, so it reaches the form whole and the field
// takes it back as it is. At the API's 3,000 characters in emoji, which
// count 6,000 as Slack's clients may count them (UTF-16), it was cut to
// 1,499 of them and "…", and the answer sent unchanged was not the text
// the agent gave.
func TestPrefillReachesTheFormWhole(t *testing.T) {
	for name, prefill := range map[string]string{
		"letters":                     strings.Repeat("a", seam.MaxInputValueLen),
		"emoji":                       strings.Repeat("😀", seam.MaxInputValueLen),
		"one emoji past it in UTF-16": strings.Repeat("a", seam.MaxInputValueLen-1) + "😀",
	} {
		t.Run(name, func(t *testing.T) {
			b := start(t, defaultTarget)
			id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
				"id": "notes", "question": "Release notes?", "input": map[string]any{"type": "string", "value": prefill},
			}}})
			msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
			b.click(t, slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil))
			opened := b.fake.WaitCalls(t, "views.open", 1)[0]
			if !opened.OK {
				t.Fatalf("Slack refused the form: %s", opened.Body)
			}
			field, _ := modalBlock(opened, "q0")["element"].(map[string]any)
			initial, _ := field["initial_value"].(string)
			if initial != prefill {
				r := []rune(initial)
				t.Fatalf("the field is prefilled with %d characters ending %q; want the %d sent",
					len(r), string(r[max(0, len(r)-4):]), utf8.RuneCountInString(prefill))
			}
			// Sent unchanged, it is within the field's max_length as
			// Slack's clients may count it, or the field has none.
			limit, ok := field["max_length"].(float64)
			if ok && float64(surface.Len(initial)) > limit {
				t.Errorf("the prefill counts %d in UTF-16, past the field's max_length %v", surface.Len(initial), limit)
			}
			if !ok {
				// Without max_length, the API's limit on an answer
				// holds, next to the field.
				body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue(strings.Repeat("a", seam.MaxCustomLen+1))}))
				if viewErrors(t, body)["q0"] == "" {
					t.Errorf("an answer past %d characters got %.300q; want an error on the field", seam.MaxCustomLen, body)
				}
			}
			if body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue(initial)})); body != "" {
				t.Fatalf("the form sent unchanged got %.300q, want an empty 200 (closes the modal)", body)
			}
			want := `{"answers":[{"id":"notes","selected":[],"custom":"` + prefill + `"}]}`
			if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != want {
				t.Errorf("answer %.80s…, %d bytes; want the prefill as sent, %d bytes", got, len(got), len(want))
			}
		})
	}
}

// TestBooleanFieldIsYesOrNo: a boolean field is answered in one tap, Yes
// or No, its prefill chosen; before, a phone typed "true". Required, its
// choice counts as filled. The edited message and a late click's note
// show the answer as the form labelled it, No, not the "false" the agent
// gets.
func TestBooleanFieldIsYesOrNo(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "canary", "question": "Start with a canary?", "input": map[string]any{"type": "boolean", "value": "yes", "required": true},
	}}})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	var field map[string]any
	for _, bl := range opened.Blocks() {
		if bl["block_id"] == "q0" {
			field, _ = bl["element"].(map[string]any)
		}
	}
	initial, _ := field["initial_option"].(map[string]any)
	if field == nil || field["type"] != "radio_buttons" || initial["value"] != "true" {
		t.Fatalf("the boolean field is %v; want Yes/No radio buttons, Yes chosen", field)
	}
	if body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{
		"q0": map[string]any{"v": map[string]any{"type": "radio_buttons", "selected_option": map[string]any{"value": "false", "text": map[string]any{"type": "plain_text", "text": "No"}}}},
	})); body != "" {
		t.Fatalf("the submission got %q, want an empty 200 (closes the modal)", body)
	}
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"canary","selected":[],"custom":"false"}]}` {
		t.Errorf("answer %s", got)
	}
	upd := b.fake.WaitCalls(t, "chat.update", 1)[0]
	if txt := upd.Text(); !strings.HasPrefix(txt, "Answered by ada · No · ") || strings.Contains(txt, "false") {
		t.Errorf("the edited message's text is %q; want the answer as the form labelled it, No", txt)
	}
	var line string // the status line's section, under the intro
	if bl := upd.Blocks(); len(bl) > 1 {
		text, _ := bl[1]["text"].(map[string]any)
		line, _ = text["text"].(string)
	}
	if !strings.HasPrefix(line, "Answered by ada · No · ") {
		t.Errorf("the edited message's status line is %q; want Answered by ada · No", line)
	}
	b.click(t, slacktest.BlockActions(t, msg, bob, "ab:answer:"+id, nil, nil))
	calls := b.fake.WaitFor(t, "bob told it is over", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UBOB")) == 1
	})
	if got := ephemerals(calls, "UBOB")[0]; got != "Already answered by ada · No" {
		t.Errorf("a late click was told %q, want Already answered by ada · No", got)
	}
}

func TestSeveralQuestionsOneModal(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{
		map[string]any{"id": "env", "question": "Which environment?", "options": []any{
			map[string]any{"label": "staging"}, map[string]any{"label": "production"}}},
		map[string]any{"id": "checks", "question": "Which checks?", "multiSelect": true, "options": []any{
			map[string]any{"label": "lint"}, map[string]any{"label": "unit"}, map[string]any{"label": "e2e"}}},
		map[string]any{"id": "note", "question": "Anything else?"},
	}})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	for _, want := range []string{"Which environment?", "Which checks?", "Anything else?"} {
		if !strings.Contains(msg.Text(), want) {
			t.Errorf("the message does not list %q", want)
		}
	}
	b.click(t, slacktest.BlockActions(t, msg, bob, "ab:answer:"+id, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]

	b.click(t, slacktest.ViewSubmission(opened, bob, map[string]any{
		"q0":  map[string]any{"v": map[string]any{"type": "radio_buttons", "selected_option": map[string]any{"value": "1", "text": map[string]any{"type": "plain_text", "text": "production"}}}},
		"q0o": slacktest.TextValue(""),
		"q1": map[string]any{"v": map[string]any{"type": "checkboxes", "selected_options": []any{
			map[string]any{"value": "2", "text": map[string]any{"type": "plain_text", "text": "e2e"}},
			map[string]any{"value": "0", "text": map[string]any{"type": "plain_text", "text": "lint"}}}}},
		"q1o": slacktest.TextValue("and a smoke test"),
		"q2":  slacktest.TextValue(""),
	}))
	rec := b.wait(t, "/v1/questions", id)
	// The checks in the options' order, not in the order they were ticked.
	want := `{"answers":[{"id":"env","selected":["production"]},{"id":"checks","selected":["lint","e2e"],"custom":"and a smoke test"},{"id":"note","selected":[]}]}`
	if got := rec.Raw("answer"); got != want {
		t.Errorf("answer\n%s\nwant\n%s", got, want)
	}
	// The same choice sent again, ticked in another order, is the answer
	// already recorded: the modal closes, not told it came too late.
	if body := b.click(t, slacktest.ViewSubmission(opened, bob, map[string]any{
		"q0":  map[string]any{"v": map[string]any{"type": "radio_buttons", "selected_option": map[string]any{"value": "1", "text": map[string]any{"type": "plain_text", "text": "production"}}}},
		"q0o": slacktest.TextValue(""),
		"q1": map[string]any{"v": map[string]any{"type": "checkboxes", "selected_options": []any{
			map[string]any{"value": "0", "text": map[string]any{"type": "plain_text", "text": "lint"}},
			map[string]any{"value": "2", "text": map[string]any{"type": "plain_text", "text": "e2e"}}}}},
		"q1o": slacktest.TextValue("and a smoke test"),
		"q2":  slacktest.TextValue(""),
	})); body != "" {
		t.Errorf("the same choice sent again got %s; want an empty 200 (closes the modal)", body)
	}
}

func TestMultiSelectInMessage(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "regions", "question": "Deploy to which regions?", "multi_select": true,
		"options": []any{map[string]any{"label": "eu"}, map[string]any{"label": "us"}, map[string]any{"label": "ap"}},
	}}})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	boxes, boxBlock := msg.Action("ab:multi:" + id)
	if boxes == nil || boxes["type"] != "checkboxes" {
		t.Fatalf("no checkboxes: %v", msg.Blocks())
	}
	if boxBlock == "" {
		boxBlock = "Xy7pQ"
	}

	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:submit:"+id, nil, nil))
	b.fake.WaitFor(t, "told to choose", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		return len(ephemerals(calls, "UADA")) == 1
	})

	state := map[string]any{boxBlock: map[string]any{boxes["action_id"].(string): map[string]any{
		"type": "checkboxes", "selected_options": []any{
			map[string]any{"value": "0", "text": map[string]any{"type": "plain_text", "text": "eu"}},
			map[string]any{"value": "2", "text": map[string]any{"type": "plain_text", "text": "ap"}}}}}}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:submit:"+id, nil, state))
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"regions","selected":["eu","ap"]}]}` {
		t.Errorf("answer %s", got)
	}
}

// viewErrors reads a view_submission's answer: the field errors it keeps
// the modal open with, by block id; nil for any other answer.
func viewErrors(t *testing.T, body string) map[string]string {
	t.Helper()
	var resp struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if body == "" || json.Unmarshal([]byte(body), &resp) != nil || resp.Action != "errors" {
		return nil
	}
	return resp.Errors
}

// modalBlock is the block of a view with id id.
func modalBlock(opened slacktest.FakeCall, id string) map[string]any {
	for _, bl := range opened.Blocks() {
		if bl["block_id"] == id {
			return bl
		}
	}
	return nil
}

// TestOtherOnMultiSelectKeepsTheTicks: Other… on a multi-select opens a
// modal with the boxes ticked in the message ticked, and the answer
// carries them with the typed text, checkboxes or a multi-select menu.
func TestOtherOnMultiSelectKeepsTheTicks(t *testing.T) {
	for _, tc := range []struct {
		name, element string
		labels        []string
	}{
		{"checkboxes", "checkboxes", []string{"eu", "us", "ap"}},
		{"a multi-select menu", "multi_static_select", []string{"eu", "us", "ap", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, defaultTarget)
			var opts []any
			for _, l := range tc.labels {
				opts = append(opts, map[string]any{"label": l})
			}
			id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
				"id": "regions", "question": "Deploy to which regions?", "multiSelect": true, "options": opts}}})
			msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
			boxes, block := msg.Action("ab:multi:" + id)
			if boxes == nil || boxes["type"] != tc.element {
				t.Fatalf("the message's multi-select is %v, want %s", boxes, tc.element)
			}
			if block == "" {
				block = "Xy7pQ"
			}
			picked := func(values ...string) []any {
				var out []any
				for _, v := range values {
					n, _ := strconv.Atoi(v)
					out = append(out, map[string]any{"value": v, "text": map[string]any{"type": "plain_text", "text": tc.labels[n]}})
				}
				return out
			}
			state := map[string]any{block: map[string]any{boxes["action_id"].(string): map[string]any{
				"type": tc.element, "selected_options": picked("0", "2")}}}
			b.click(t, slacktest.BlockActions(t, msg, ada, "ab:other:"+id, nil, state))

			opened := b.fake.WaitCalls(t, "views.open", 1)[0]
			choice, _ := modalBlock(opened, "q0")["element"].(map[string]any)
			var initial []string
			for _, o := range asList(choice["initial_options"]) {
				initial = append(initial, fmt.Sprint(o["value"]))
			}
			if choice["type"] != tc.element || strings.Join(initial, ",") != "0,2" {
				t.Fatalf("the modal's choice is %v with %v ticked; want %s with eu and ap ticked", choice["type"], initial, tc.element)
			}
			// The person unticks nothing, ticks us too, and types.
			if body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{
				"q0":  map[string]any{"v": map[string]any{"type": tc.element, "selected_options": picked("0", "1", "2")}},
				"q0o": slacktest.TextValue(" and sa-east "),
			})); body != "" {
				t.Fatalf("the submission got %q, want an empty 200", body)
			}
			want := `{"answers":[{"id":"regions","selected":["eu","us","ap"],"custom":"and sa-east"}]}`
			if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != want {
				t.Errorf("answer %s, want %s", got, want)
			}
		})
	}
}

func asList(v any) []map[string]any {
	var out []map[string]any
	list, _ := v.([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestBlankRequiredTextIsRefused: a required text field sent with only
// spaces is refused beside the field, the modal stays open and the
// request pending; a real answer then goes through.
func TestBlankRequiredTextIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		question map[string]any
		button   string // the control that opens the modal
		field    string // the block of the required field
		want     string // the answer once typed
	}{
		{"Other… beside options", map[string]any{"id": "go", "question": "Ship it?",
			"options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}}},
			"ab:other:", "q0o", `{"answers":[{"id":"go","selected":[],"custom":"after the freeze"}]}`},
		{"Send feedback… on a plan", map[string]any{"id": "plan", "question": "Approve this plan?", "detail": "1. drain\n2. deploy",
			"intent":  map[string]any{"kind": "plan-review", "approve": "Approve"},
			"options": []any{map[string]any{"label": "Approve"}, map[string]any{"label": "Keep planning"}}},
			"ab:other:", "q0o", `{"answers":[{"id":"plan","selected":[],"custom":"after the freeze"}]}`},
		{"a lone question without options", map[string]any{"id": "why", "question": "What is the rollback plan?"},
			"ab:answer:", "q0", `{"answers":[{"id":"why","selected":[],"custom":"after the freeze"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, defaultTarget)
			id := b.create(t, "/v1/questions", map[string]any{"questions": []any{tc.question}})
			msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
			b.click(t, slacktest.BlockActions(t, msg, ada, tc.button+id, nil, nil))
			opened := b.fake.WaitCalls(t, "views.open", 1)[0]
			if bl := modalBlock(opened, tc.field); bl == nil || bl["optional"] == true {
				t.Fatalf("the modal's %s is %v; want a required field", tc.field, bl)
			}

			body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{tc.field: slacktest.TextValue(" \n\t ")}))
			if errs := viewErrors(t, body); errs[tc.field] == "" {
				t.Fatalf("blank text got %q; want a field error on %s", body, tc.field)
			}
			if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
				t.Fatalf("blank text was recorded: %s %s", rec.M["status"], rec.Raw("answer"))
			}
			if body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{tc.field: slacktest.TextValue("after the freeze")})); body != "" {
				t.Fatalf("a real answer got %q, want an empty 200", body)
			}
			if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != tc.want {
				t.Errorf("answer %s, want %s", got, tc.want)
			}
		})
	}
}

// TestOptionalTypedFieldMayBeLeftEmpty: input.required false holds for a
// request's only question: the field is optional, and left empty the
// question is skipped.
func TestOptionalTypedFieldMayBeLeftEmpty(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "retries", "question": "Max retries? Empty keeps the default.", "input": map[string]any{"type": "integer", "required": false}}}})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	if bl := modalBlock(opened, "q0"); bl == nil || bl["optional"] != true {
		t.Fatalf("the field is %v; want it optional", bl)
	}
	if body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("  ")})); body != "" {
		t.Fatalf("an empty optional field got %q, want an empty 200", body)
	}
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"retries","selected":[]}]}` {
		t.Errorf("answer %s, want the question skipped", got)
	}
}

func TestSelectForManyOptions(t *testing.T) {
	b := start(t, defaultTarget)
	var opts []any
	for i := range 8 {
		opts = append(opts, map[string]any{"label": fmt.Sprintf("option %d", i)})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "pick", "question": "Which one?", "options": opts}}})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	sel, _ := msg.Action("ab:select:" + id)
	if sel == nil || sel["type"] != "static_select" {
		t.Fatalf("no static select: %v", msg.Blocks())
	}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:select:"+id, map[string]any{
		"selected_option": map[string]any{"value": "6", "text": map[string]any{"type": "plain_text", "text": "option 6"}}}, nil))
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"pick","selected":["option 6"]}]}` {
		t.Errorf("answer %s", got)
	}
}

func TestApprovalAllowAndReject(t *testing.T) {
	b := start(t, defaultTarget)
	approval := func(callID string) map[string]any {
		return map[string]any{"tool_name": "kubectl_apply", "reason": "Deploy the new version",
			"arguments": map[string]any{"manifest": "deploy.yaml", "namespace": "prod"}, "tool_call_id": callID}
	}
	allowID := b.create(t, "/v1/approvals", approval("call-1"))
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	if allow, _ := msg.Action("ab:allow:" + allowID); allow == nil || allow["style"] != "primary" {
		t.Fatalf("no primary Allow once: %v", msg.Blocks())
	}
	if reject, _ := msg.Action("ab:reject:" + allowID); reject == nil || reject["style"] != "danger" {
		t.Fatalf("no danger Reject: %v", msg.Blocks())
	}
	if !strings.Contains(msg.Text(), `"namespace": "prod"`) {
		t.Errorf("the arguments are not shown pretty:\n%s", msg.Text())
	}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:allow:"+allowID, nil, nil))
	if got := b.wait(t, "/v1/approvals", allowID).Raw("decision"); got != `{"outcome":"allowed-once"}` {
		t.Errorf("decision %s", got)
	}

	rejectID := b.create(t, "/v1/approvals", approval("call-2"))
	msg = b.fake.WaitCalls(t, "chat.postMessage", 2)[1]
	b.click(t, slacktest.BlockActions(t, msg, bob, "ab:reject:"+rejectID, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	b.click(t, slacktest.ViewSubmission(opened, bob, map[string]any{"note": slacktest.TextValue("  too risky on a Friday ")}))
	if got := b.wait(t, "/v1/approvals", rejectID).Raw("decision"); got != `{"outcome":"rejected","note":"too risky on a Friday"}` {
		t.Errorf("decision %s", got)
	}
	upd := b.fake.WaitFor(t, "the rejection shown", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, c := range calls {
			if c.Method == "chat.update" && strings.Contains(c.Text(), "Rejected by ") && strings.Contains(c.Text(), " · “too risky on a Friday”") {
				return true
			}
		}
		return false
	})
	_ = upd
}

func TestDismissAndCancel(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	if d, _ := msg.Action("ab:dismiss:" + id); d == nil || d["confirm"] == nil {
		t.Fatalf("no Dismiss with a confirmation: %v", msg.Blocks())
	}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:dismiss:"+id, nil, nil))
	rec := b.wait(t, "/v1/questions", id)
	if rec.M["status"] != "dismissed" || rec.M["error"] == nil || rec.M["error"].(map[string]any)["code"] != "ASK_CANCELLED" {
		t.Errorf("dismissed request: %v", rec)
	}
	if upd := b.fake.WaitCalls(t, "chat.update", 1)[0]; !strings.Contains(upd.Text(), "Dismissed by ada") || hasActions(upd) {
		t.Errorf("edit after dismissal:\n%s", upd.Text())
	}

	id2 := b.create(t, "/v1/questions", cleanupQuestion())
	b.fake.WaitCalls(t, "chat.postMessage", 2)
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id2, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	if upd := b.fake.WaitCalls(t, "chat.update", 2)[1]; !strings.Contains(upd.Text(), "Cancelled by the agent") || hasActions(upd) {
		t.Errorf("edit after cancel:\n%s", upd.Text())
	}
}

// posted is a WaitFor condition: n messages posted.
func posted(n int) func([]slacktest.FakeCall) bool {
	return func(calls []slacktest.FakeCall) bool {
		ok := 0
		for _, c := range calls {
			if c.Method == "chat.postMessage" && c.OK {
				ok++
			}
		}
		return ok >= n
	}
}

// TestMessageTooLongIsPostedShorter: Slack refuses a message whose blocks
// hold too much text together (msg_blocks_too_long), at a limit it does
// not document and which counts more than the bridge's own measure. The
// request is posted again with less of its text in the message and the
// rest in the thread: the agent gets no NO_PROVIDER, and every line is
// readable.
func TestMessageTooLongIsPostedShorter(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.SetBlocksTextLimit(9500) // as if Slack counted more than the bridge does
	var detail strings.Builder
	for i := range 300 {
		fmt.Fprintf(&detail, "line %04d of a long description\n", i)
	}
	opts := []any{}
	for i := range 8 {
		opts = append(opts, map[string]any{"label": fmt.Sprintf("option %d %s", i, strings.Repeat("x", 60)), "description": strings.Repeat("why ", 40)})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "q", "question": "Which one?", "detail": detail.String(), "options": opts,
	}}})
	posts := b.fake.WaitFor(t, "the shorter message and its thread", 10*time.Second, posted(2))
	var refused, msg *slacktest.FakeCall
	for i, c := range posts {
		switch {
		case c.Method != "chat.postMessage":
		case !c.OK && refused == nil:
			refused = &posts[i]
		case c.OK && msg == nil:
			msg = &posts[i]
		}
	}
	if refused == nil || !strings.Contains(refused.Body, "line 0100") || msg == nil {
		t.Fatalf("want a refused post holding much of the text, then a post; got %d calls", len(posts))
	}
	// Its options, text outside the budget, are answered in the modal.
	answer, _ := msg.Action("ab:answer:" + id)
	if answer == nil || strings.Contains(msg.Body, "static_select") {
		t.Fatalf("the shorter message's controls are not an Answer… button: %v", msg.Blocks())
	}
	b.click(t, slacktest.BlockActions(t, *msg, ada, "ab:answer:"+id, nil, nil))
	if opened := b.fake.WaitCalls(t, "views.open", 1)[0]; !strings.Contains(opened.Body, "option 7 ") {
		t.Errorf("the modal does not offer the options: %v", opened.Blocks())
	}
	var all strings.Builder
	for _, c := range b.fake.Calls("chat.postMessage") {
		if c.OK && (c.TS == msg.TS || c.Field("thread_ts") == msg.TS) {
			all.WriteString(c.Text())
		}
	}
	for i := range 300 {
		if line := fmt.Sprintf("line %04d of a long description", i); !strings.Contains(all.String(), line) {
			t.Fatalf("%q is neither in the message nor in its thread", line)
		}
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("the request is %v; want it pending, posted", rec.M["status"])
	}
	// The modal's fields are optional (an option, or text of one's own):
	// sent blank, it is refused and answers nothing.
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{}))
	var resp struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Action != "errors" || resp.Errors["q0"] != surface.MsgChooseOrWrite {
		t.Errorf("a blank Answer… form got %q; want response_action errors on q0", body)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("after a blank Answer… form the request is %v; want it pending", rec.M["status"])
	}

	// Its edit keeps the shorter text, which its thread goes on from, and
	// its controls go.
	b.fake.SetBlocksTextLimit(6000)
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	edits := b.fake.WaitFor(t, "the message edited", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, c := range calls {
			if c.Method == "chat.update" && c.OK {
				return true
			}
		}
		return false
	})
	var tries int
	for _, c := range edits {
		if c.Method == "chat.update" {
			tries++
			if c.OK && (hasActions(c) || !strings.Contains(c.Text(), "Cancelled by the agent") || c.Field("ts") != msg.TS) {
				t.Errorf("the edit of %s: %s; want it cancelled without controls", c.Field("ts"), c.Text())
			}
		}
	}
	if tries != 1 {
		t.Errorf("%d edits; want the shorter one at once (posted short, the message is not tried whole)", tries)
	}
}

// TestEditKeepsTheTextAsPosted: a message posted whole whose edit is too
// long for Slack (its status line, with a long answer escaped, takes
// more than its controls did) keeps the text it was posted with, which
// its thread goes on from: only the status line is shorter. Edited as a
// message refused whole is posted, half as long, it showed neither in
// the message nor in the thread the text between the two cuts.
func TestEditKeepsTheTextAsPosted(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.SetBlocksTextLimit(10500) // takes the message, not its edit with the answer below
	var detail strings.Builder
	for i := range 300 {
		fmt.Fprintf(&detail, "line %04d of a long description\n", i)
	}
	opts := []any{}
	for i := range 8 {
		opts = append(opts, map[string]any{"label": fmt.Sprintf("option %d %s", i, strings.Repeat("x", 60)), "description": strings.Repeat("why ", 40)})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "q", "question": "Which one?", "detail": detail.String(), "options": opts,
	}}})
	posts := b.fake.WaitFor(t, "the message and its thread", 10*time.Second, posted(2))
	msg := posts[0]
	if msg.Method != "chat.postMessage" || !msg.OK {
		t.Fatalf("the message was not posted whole at once: %s ok=%v", msg.Method, msg.OK)
	}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:other:"+id, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	// Its summary, 300 characters, is 1,500 escaped (&amp;).
	b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0o": slacktest.TextValue(strings.Repeat("&", 400))}))
	b.wait(t, "/v1/questions", id)

	edit := b.fake.WaitCalls(t, "chat.update", 1)[0]
	if refused := len(b.fake.Calls("chat.update")) - 1; refused < 1 {
		t.Fatalf("the whole edit was taken; the test wants Slack to refuse it")
	}
	if hasActions(edit) || !strings.Contains(edit.Text(), "Answered by ada") {
		t.Errorf("the edit: %s; want it answered by ada, without controls", edit.Text())
	}
	text := edit.Text()
	for _, c := range b.fake.Calls("chat.postMessage") {
		if c.OK && c.Field("thread_ts") == msg.TS {
			text += c.Text()
		}
	}
	for i := range 300 {
		if line := fmt.Sprintf("line %04d of a long description", i); !strings.Contains(text, line) {
			t.Fatalf("once edited, %q is neither in the message nor in its thread", line)
		}
	}
}

// longDetail is a question's detail of n numbered lines, too long for one
// message: mrkdwn as it is, escaped as it is.
func longDetail(n int) string {
	var detail strings.Builder
	for i := range n {
		fmt.Fprintf(&detail, "line %04d of a long description\n", i)
	}
	return detail.String()
}

// sectionText is the text of a section block, "" for another block.
func sectionText(b map[string]any) string {
	if b["type"] != "section" {
		return ""
	}
	text, _ := b["text"].(map[string]any)
	s, _ := text["text"].(string)
	return s
}

var moreRE = regexp.MustCompile(`_… (\d+) more characters continue in the thread below\._`)

// checkOnce checks that detail, a question's detail of longDetail's lines,
// is held exactly once by msg, a request's message as it stands, and its
// thread, replies: in order, every character once, the message's part
// first; and that the message's count of the detail's characters that
// continue in the thread is what the thread holds. The thread's sections
// go on from one another, each text continued under its title, the
// detail's last.
func checkOnce(t *testing.T, msg slacktest.FakeCall, replies []slacktest.FakeCall, detail string) {
	t.Helper()
	var shown strings.Builder
	count := -1
	for _, b := range msg.Blocks() {
		if s := sectionText(b); strings.HasPrefix(s, "line ") {
			shown.WriteString(s)
		}
		if b["type"] == "context" {
			if m := moreRE.FindStringSubmatch(jsonOf(t, b)); m != nil {
				count, _ = strconv.Atoi(m[1]) // the detail's note is the last
			}
		}
	}
	var all strings.Builder
	for _, r := range replies {
		for _, b := range r.Blocks() {
			all.WriteString(sectionText(b))
		}
	}
	const title = "*Details, continued:*\n"
	_, thread, _ := strings.Cut(all.String(), title)
	if strings.Contains(thread, title) {
		t.Errorf("the thread holds the detail's continuation twice")
	}
	if got := shown.String() + thread; got != detail {
		i := 0
		for i < min(len(got), len(detail)) && got[i] == detail[i] {
			i++
		}
		t.Errorf("the message (%d characters of the detail) and its thread (%d) hold %d characters, the detail %d; they part at %d: message ends %q, thread begins %q",
			shown.Len(), len(thread), len(got), len(detail), i, tail(shown.String(), 40), head(thread, 40))
	}
	if count != len(thread) {
		t.Errorf("the message says %d more characters continue in the thread; it holds %d", count, len(thread))
	}
}

func head(s string, n int) string { return s[:min(n, len(s))] }
func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// threadOf is the replies in msg's thread among calls, posted.
func threadOf(calls []slacktest.FakeCall, msg slacktest.FakeCall) []slacktest.FakeCall {
	var out []slacktest.FakeCall
	for _, c := range calls {
		if c.Method == "chat.postMessage" && c.OK && c.Field("thread_ts") == msg.TS {
			out = append(out, c)
		}
	}
	return out
}

// lastEdit waits for an edit Slack took and returns the last.
func lastEdit(t *testing.T, b bridge) slacktest.FakeCall {
	t.Helper()
	b.fake.WaitFor(t, "the message edited", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, c := range calls {
			if c.Method == "chat.update" && c.OK {
				return true
			}
		}
		return false
	})
	var last slacktest.FakeCall
	for _, c := range b.fake.Calls("chat.update") {
		if c.OK {
			last = c
		}
	}
	return last
}

// TestEditShowsTheTextAsPosted: a request's message, edited when it ends,
// shows its text cut where the post cut it, where the thread goes on
// from, though its intro is shorter then (without the target's mention
// and the expiry): the message and its thread hold every character once,
// and the message's count of what continues in the thread is right.
func TestEditShowsTheTextAsPosted(t *testing.T) {
	b := start(t, `
      - slack:
          channel: `+channel+`
          mention: "<!subteam^S0ONCALL>"`)
	detail := longDetail(400)
	id := b.create(t, "/v1/questions", map[string]any{"expires_in": "1h", "questions": []any{map[string]any{
		"id": "q", "question": "Which one?", "detail": detail,
	}}})
	msg := b.fake.WaitFor(t, "the message and its thread", 10*time.Second, posted(2))[0]
	if msg.Method != "chat.postMessage" || !msg.OK {
		t.Fatalf("the message was not posted whole at once: %s ok=%v", msg.Method, msg.OK)
	}
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1)
	replies := threadOf(b.fake.Calls("chat.postMessage"), msg)
	checkOnce(t, msg, replies, detail)

	cancelHoldsOnce(t, b, id, msg, replies, detail)
}

// cancelHoldsOnce cancels request id, posted as msg with replies in its
// thread, and checks the edit that ends it: no controls left, and it and
// the replies hold every character of detail once.
func cancelHoldsOnce(t *testing.T, b bridge, id string, msg slacktest.FakeCall, replies []slacktest.FakeCall, detail string) {
	t.Helper()
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	edit := lastEdit(t, b)
	if hasActions(edit) || !strings.Contains(edit.Text(), "Cancelled by the agent") || edit.Field("ts") != msg.TS {
		t.Fatalf("the edit of %s: %s; want it cancelled without controls", edit.Field("ts"), edit.Text())
	}
	checkOnce(t, edit, replies, detail)
}

// TestEditOfAShortenedPost: a message Slack refused whole, posted
// shorter with the rest in its thread, keeps that shorter text when its
// request ends, though Slack would take the edit whole: the message and
// its thread hold every character once, and the message's count of what
// continues in the thread is right. (Edited whole, it showed again text
// the thread holds, and counted what continues from the longer cut.)
func TestEditOfAShortenedPost(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.SetBlocksTextLimit(9500) // as if Slack counted more than the bridge does
	detail := longDetail(400)
	opts := []any{}
	for i := range 8 {
		opts = append(opts, map[string]any{"label": fmt.Sprintf("option %d %s", i, strings.Repeat("x", 60)), "description": strings.Repeat("why ", 40)})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "q", "question": "Which one?", "detail": detail, "options": opts,
	}}})
	var msg slacktest.FakeCall
	b.fake.WaitFor(t, "the shorter message and its thread", 10*time.Second, func(calls []slacktest.FakeCall) bool {
		refused := false
		for _, c := range calls {
			switch {
			case c.Method != "chat.postMessage":
			case !c.OK:
				refused = true
			case refused && msg.TS == "":
				msg = c
			case refused && c.Field("thread_ts") == msg.TS:
				return true
			}
		}
		return false
	})
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1)
	replies := threadOf(b.fake.Calls("chat.postMessage"), msg)
	checkOnce(t, msg, replies, detail)

	// Slack would take the edit whole now.
	b.fake.SetBlocksTextLimit(0)
	cancelHoldsOnce(t, b, id, msg, replies, detail)
}

func TestPlanReviewLongPlanAndFeedback(t *testing.T) {
	b := start(t, defaultTarget)
	var plan strings.Builder
	for i := range 600 {
		fmt.Fprintf(&plan, "step %04d: change module %d & check <output>\n", i, i)
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "plan", "question": "Approve this plan?", "detail": plan.String(),
		"intent":  map[string]any{"kind": "plan-review", "approve": "Approve"},
		"options": []any{map[string]any{"label": "Keep planning"}, map[string]any{"label": "Approve"}},
	}}})
	posts := b.fake.WaitFor(t, "the message and its thread", 10*time.Second, posted(2))
	msg := posts[0]
	if approve, _ := msg.Action("ab:pick:" + id + ":0:1"); approve == nil || approve["style"] != "primary" {
		t.Fatalf("the approve label is not the primary button: %v", msg.Blocks())
	}
	if fb, _ := msg.Action("ab:other:" + id); fb == nil || !strings.Contains(jsonOf(t, fb["text"]), "feedback") {
		t.Fatalf("no feedback button: %v", msg.Blocks())
	}
	// Every line of the plan is readable in the message or its thread.
	var all strings.Builder
	replies := 0
	for _, c := range b.fake.Calls("chat.postMessage") {
		if c.TS != msg.TS && c.Field("thread_ts") != msg.TS {
			continue
		}
		if c.TS != msg.TS {
			replies++
		}
		all.WriteString(c.Text())
	}
	text := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(all.String())
	for i := range 600 {
		if line := fmt.Sprintf("step %04d: change module %d & check <output>", i, i); !strings.Contains(text, line) {
			t.Fatalf("%q is neither in the message nor in its %d replies", line, replies)
		}
	}
	if strings.Contains(all.String(), "<output>") {
		t.Errorf("agent text reached Slack unescaped")
	}

	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:other:"+id, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0o": slacktest.TextValue("Split step 3 in two.")}))
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"plan","selected":[],"custom":"Split step 3 in two."}]}` {
		t.Errorf("answer %s", got)
	}
}

// A session's requests go into one thread, the later ones shown in the
// channel too (Slack tells only those who follow a thread of a reply in
// it, and nobody follows it by clicking a button), unless the target's
// mention calls people to them; the text a request continues with in its
// thread stays there.
func TestThreadBySession(t *testing.T) {
	for _, tc := range []struct {
		name, mention string
		broadcast     string
	}{
		{"no mention", "", "true"},
		{"a mention", `"<!subteam^S0ONCALL>"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := `
      - slack:
          channel: ` + channel + `
          thread_by_session: true`
			if tc.mention != "" {
				target += `
          mention: ` + tc.mention
			}
			b := start(t, target)
			ask := func(session, detail string) {
				q := cleanupQuestion()
				q["caller"] = map[string]any{"name": "deploy-bot", "session": session}
				q["questions"].([]any)[0].(map[string]any)["detail"] = detail
				b.create(t, "/v1/questions", q)
			}
			ask("run-1", "")
			ask("run-1", strings.Repeat("A step of the plan. ", 800)) // continues in the thread
			ask("run-2", "")
			posts := b.fake.WaitCalls(t, "chat.postMessage", 4)
			if th := posts[0].Field("thread_ts"); th != "" {
				t.Errorf("the first request of a session went into thread %q", th)
			}
			if th, bc := posts[1].Field("thread_ts"), posts[1].Field("reply_broadcast"); th != posts[0].TS || bc != tc.broadcast {
				t.Errorf("the second request of run-1 went to thread %q (reply_broadcast %q), want %q (%q)", th, bc, posts[0].TS, tc.broadcast)
			}
			if th, bc := posts[2].Field("thread_ts"), posts[2].Field("reply_broadcast"); th != posts[0].TS || bc != "" || !strings.HasPrefix(posts[2].Field("text"), "Continued") {
				t.Errorf("the second request's continuation: thread %q, reply_broadcast %q, text %q; want in the thread only", th, bc, posts[2].Field("text"))
			}
			if th, bc := posts[3].Field("thread_ts"), posts[3].Field("reply_broadcast"); th != "" || bc != "" {
				t.Errorf("another session's request went into thread %q (reply_broadcast %q)", th, bc)
			}
		})
	}
}

// A session's thread whose parent was deleted (before anyone replied) is
// forgotten: the request goes in the channel and starts the session's new
// thread, where the requests after it go.
func TestThreadBySessionParentDeleted(t *testing.T) {
	b := start(t, `
      - slack:
          channel: `+channel+`
          thread_by_session: true`)
	ask := func() string {
		q := cleanupQuestion()
		q["caller"] = map[string]any{"name": "deploy-bot", "session": "run-1"}
		return b.create(t, "/v1/questions", q)
	}
	ask()
	first := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	b.fake.DeleteMessage(first.TS)

	id := ask() // fails the test unless created
	posts := b.fake.Calls("chat.postMessage")[1:]
	if len(posts) != 2 || posts[0].OK || posts[0].Field("thread_ts") != first.TS || !posts[1].OK || posts[1].Field("thread_ts") != "" {
		t.Fatalf("after the thread's parent was deleted: posts %+v, want one refused in its thread, then one in the channel", posts)
	}
	if p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any); len(p) != 1 {
		t.Errorf("recorded posts %v, want the one in the channel", p)
	}

	ask()
	if th := b.fake.Calls("chat.postMessage")[3].Field("thread_ts"); th != posts[1].TS {
		t.Errorf("the next request of the session went to thread %q, want the new thread %q", th, posts[1].TS)
	}
}

func TestAgentTextNeverPings(t *testing.T) {
	b := start(t, `
      - slack:
          channel: `+channel+`
          mention: "<!subteam^S0ONCALL>"`)
	b.create(t, "/v1/questions", map[string]any{
		"questions": []any{map[string]any{
			"id": "q", "question": "Ping <!channel> and <@U0BOSS>?", "header": "<!here>",
			"detail":  "see <https://evil.example|the docs> & <!everyone>",
			"options": []any{map[string]any{"label": "<!channel> yes", "description": "<@U0BOSS>"}, map[string]any{"label": "no"}},
		}},
		"caller": map[string]any{"name": "<!channel>", "session": "<@U0BOSS>"},
	})
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	if !strings.HasPrefix(msg.Field("text"), "<!subteam^S0ONCALL> ") {
		t.Errorf("the configured mention does not lead the notification text: %q", msg.Field("text"))
	}
	// mrkdwn text must not hold a live token; plain_text is never parsed.
	for _, bl := range msg.Blocks() {
		raw := jsonOf(t, bl)
		for _, tok := range []string{"<!channel>", "<@U0BOSS>", "<!everyone>", "<https://evil"} {
			if strings.Contains(raw, `"type":"mrkdwn"`) && strings.Contains(raw, tok) {
				t.Errorf("mrkdwn block carries %s: %s", tok, raw)
			}
		}
	}
	for _, tok := range []string{"<!channel>", "<@U0BOSS>", "<!here>"} {
		if strings.Contains(msg.Field("text"), tok) {
			t.Errorf("the notification text carries %s: %q", tok, msg.Field("text"))
		}
	}
	if msg.Field("link_names") == "true" || msg.Field("link_names") == "1" {
		t.Errorf("link_names is set")
	}
}

func TestRateLimitedPostIsPostedOnce(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	id := b.create(t, "/v1/questions", cleanupQuestion())
	posts := b.fake.Calls("chat.postMessage")
	if len(posts) != 2 || posts[0].Status != http.StatusTooManyRequests || !posts[1].OK {
		t.Fatalf("posts: %+v", posts)
	}
	rec := b.get(t, "/v1/questions", id)
	if p, _ := rec.M["posts"].([]any); len(p) != 1 {
		t.Errorf("recorded posts %v, want exactly one", rec.M["posts"])
	}
}

func TestFailedPostIsNoProvider(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "channel_not_found"})
	status, body := b.do(t, http.MethodPost, "/v1/questions", cleanupQuestion())
	e, _ := body.M["error"].(map[string]any)
	// The agent, which can't read the bridge's log, is told why.
	if m, _ := e["message"].(string); status != http.StatusServiceUnavailable || e["code"] != "NO_PROVIDER" ||
		!strings.Contains(m, `(target default/0: `) || !strings.HasSuffix(m, `slack chat.postMessage: channel_not_found)`) || strings.Contains(m, botToken) {
		t.Errorf("create with a failing post: %d %v", status, body)
	}
	if n := len(b.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("an ok:false error was retried: %d calls", n)
	}
}

// TestFailedPostNamesTheMissingScope: Slack refuses a token without
// chat:write with missing_scope and names the scope it needs. The agent's
// NO_PROVIDER and the log name it too: "missing_scope" alone leaves the
// team to guess which scope to add. (Until 2026-12-05 neither did.)
func TestFailedPostNamesTheMissingScope(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.Scopes = "usergroups:read,channels:history,groups:history" // no chat:write
	status, body := b.do(t, http.MethodPost, "/v1/questions", cleanupQuestion())
	e, _ := body.M["error"].(map[string]any)
	if m, _ := e["message"].(string); status != http.StatusServiceUnavailable || e["code"] != "NO_PROVIDER" ||
		!strings.Contains(m, "missing_scope") || !strings.Contains(m, "chat:write") {
		t.Errorf("create without chat:write: %d %v; want 503 NO_PROVIDER naming chat:write", status, body)
	}
	b.logs.WaitFor(t, "chat:write", 5*time.Second)
}

// TestExpiredBotToken: the token of an app with token rotation on
// expires 12 hours after Slack issued it, and Slack then refuses every
// call with token_expired (HTTP 200, ok:false). The agent's NO_PROVIDER
// says that the bot token expired and what to do, whole (until
// 2026-12-06 it was cut at 200 characters, before the reason); the log lines of a failed post and a failed edit say why
// too: "token_expired" alone leaves the team to guess.
func TestExpiredBotToken(t *testing.T) {
	const (
		expired = "token_expired (slack.bot_token: the bot token expired: use a Slack app without token rotation"
		why     = "the bridge does not renew tokens and an app can't turn rotation off once on)"
	)
	b := start(t, defaultTarget)
	b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "token_expired"})
	status, body := b.do(t, http.MethodPost, "/v1/questions", cleanupQuestion())
	e, _ := body.M["error"].(map[string]any)
	if m, _ := e["message"].(string); status != http.StatusServiceUnavailable || e["code"] != "NO_PROVIDER" ||
		!strings.Contains(m, expired) || !strings.Contains(m, why) || strings.Contains(m, botToken) {
		t.Errorf("create with an expired token: %d %v; want 503 NO_PROVIDER saying %q and %q", status, body, expired, why)
	}
	b.logs.WaitFor(t, `msg="posting failed"`, 5*time.Second)
	if line := logLine(b.logs.String(), `msg="posting failed"`); !strings.Contains(line, expired) || !strings.Contains(line, why) {
		t.Errorf("the failed post's log line does not say %q and %q: %s", expired, why, line)
	}

	id := b.create(t, "/v1/questions", cleanupQuestion())
	b.fake.FailNext("chat.update", slacktest.FakeFail{Error: "token_expired"})
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	b.logs.WaitFor(t, `msg="editing a finished request's message failed"`, 5*time.Second)
	if line := logLine(b.logs.String(), `msg="editing a finished request's message failed"`); !strings.Contains(line, expired) || !strings.Contains(line, why) {
		t.Errorf("the failed edit's log line does not say %q and %q: %s", expired, why, line)
	}
}

// logLine is the first line of log that holds text, or "".
func logLine(log, text string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, text) {
			return line
		}
	}
	return ""
}

func TestSocketMode(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	sock := fake.SocketMode(appToken)
	url, prefix := apptest.Redis(t)
	b := startConfig(t, fake, fmt.Sprintf(`
slack:
  bot_token: %s
  app_token: %s
  api_url: %s
routes:
  - name: default
    targets:%s
`, botToken, appToken, fake.URL, defaultTarget), url, prefix)

	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
	fake.WaitCalls(t, "apps.connections.open", 1)
	sock.Send(t, slacktest.Interactive("57d6a792-4d35-4d0b-b6aa-3361493e1caf", slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:1", nil, nil)))
	sock.WaitAck(t, "57d6a792-4d35-4d0b-b6aa-3361493e1caf")
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}` {
		t.Errorf("answer %s", got)
	}
	if upd := fake.WaitCalls(t, "chat.update", 1)[0]; !strings.Contains(upd.Text(), "Answered by ada") || hasActions(upd) {
		t.Errorf("the message after a click over Socket Mode:\n%s", upd.Text())
	}
	// Without a signing secret the Request URL accepts nothing.
	if status, _ := b.send(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil), time.Now(), ""); status != http.StatusUnauthorized {
		t.Errorf("the Request URL without a signing secret answered %d", status)
	}
}

func TestExpiryEditsTheMessage(t *testing.T) {
	b := start(t, defaultTarget)
	q := cleanupQuestion()
	q["expires_in"] = "1s"
	id := b.create(t, "/v1/questions", q)
	b.fake.WaitCalls(t, "chat.postMessage", 1)
	rec := b.wait(t, "/v1/questions", id)
	if rec.M["status"] != "expired" {
		t.Fatalf("status %v, want expired", rec.M["status"])
	}
	if upd := b.fake.WaitCalls(t, "chat.update", 1)[0]; !strings.Contains(upd.Text(), "Expired unanswered") || hasActions(upd) {
		t.Errorf("edit after expiry:\n%s", upd.Text())
	}
}

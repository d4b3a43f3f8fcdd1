package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/discord"
)

const (
	botToken = "MTEwMDAwMDAwMDAwMDAwMDAwMQ.SECRET.BOTTOKENxxxxxxxxxxxxxxxxxxxx"
	channel  = "1200000000000000001"
	opsRole  = "1300000000000000009"
)

var (
	ada = discord.Member("1500000000000000001", "ada")
	bob = discord.Member("1500000000000000002", "bob")
	eve = discord.Member("1500000000000000003", "eve")
	ops = discord.Member("1500000000000000004", "olga", opsRole)
)

const defaultTarget = `
      - discord:
          channel: "` + channel + `"
          mention: "<@&` + opsRole + `>"
          responders:
            users: ["1500000000000000001", "1500000000000000002"]
            roles: ["` + opsRole + `"]`

type bridge struct {
	*app.App
	fake *discord.FakeDiscord
	logs *apptest.LogBuffer // the replica's, at debug
}

func configYAML(fake *discord.FakeDiscord, targets string) string {
	return fmt.Sprintf(`
discord:
  bot_token: %s
  public_key: %s
  application_id: "1100000000000000001"
  api_url: %s
store:
  sweep_interval: 50ms
routes:
  - name: default
    targets:%s
`, botToken, discord.PublicKeyHex(), fake.URL, targets)
}

func startReplicas(t *testing.T, n int, targets string) []bridge {
	t.Helper()
	return startReplicasWith(t, n, targets, app.Options{})
}

// startReplicasWith is startReplicas with the replicas' options (a fake
// store clock, say).
func startReplicasWith(t *testing.T, n int, targets string, opt app.Options) []bridge {
	t.Helper()
	fake := discord.NewFakeDiscord(t, botToken)
	url, prefix := apptest.Redis(t)
	var out []bridge
	for range n {
		out = append(out, startOn(t, fake, url, prefix, targets, opt))
	}
	return out
}

// startOn starts a replica of targets on the Redis at url. Its log, at
// debug level, is checked for secrets when the test ends.
func startOn(t *testing.T, fake *discord.FakeDiscord, url, prefix, targets string, opt app.Options) bridge {
	t.Helper()
	a, logs := apptest.StartWatched(t, apptest.Config(t, configYAML(fake, targets), url, prefix), opt, botToken, "SECRET-INTERACTION-TOKEN")
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

// send posts an interaction signed by key at at, as Discord does.
func (b bridge) send(t *testing.T, payload any, at time.Time) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(payload)
	req, _ := http.NewRequest(http.MethodPost, b.URL()+"/discord/interactions", bytes.NewReader(body))
	req.Header = discord.Sign(discord.SigningKey, at, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("interaction: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode == http.StatusOK && out == nil {
		t.Fatalf("interaction answered 200 without JSON: %s", raw)
	}
	if in, ok := payload.(map[string]any); ok && resp.StatusCode == http.StatusOK {
		// Discord refuses such a response and shows "This interaction failed".
		for _, bad := range b.fake.Respond(in, out) {
			t.Errorf("Discord would refuse the response %s: %s", raw, bad)
		}
	}
	return resp.StatusCode, out
}

// click sends a signed interaction and returns its response.
func (b bridge) click(t *testing.T, payload any) map[string]any {
	t.Helper()
	status, resp := b.send(t, payload, time.Now())
	if status != http.StatusOK {
		t.Fatalf("interaction: %d %v", status, resp)
	}
	return resp
}

func respType(resp map[string]any) int {
	f, _ := resp["type"].(float64)
	return int(f)
}

func data(resp map[string]any) map[string]any {
	d, _ := resp["data"].(map[string]any)
	return d
}

// isEphemeral reports whether resp is an ephemeral message to the clicker.
func isEphemeral(resp map[string]any) bool {
	f, _ := data(resp)["flags"].(float64)
	return respType(resp) == 4 && int(f)&64 != 0
}

func content(resp map[string]any) string {
	s, _ := data(resp)["content"].(string)
	return s
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

func noControls(body map[string]any) bool { return len(discord.Components(body)) == 0 }

func TestButtonAnswerEndToEnd(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())

	msg := b.fake.WaitCalls(t, "create", 1)[0]
	if msg.Channel != channel {
		t.Fatalf("posted to %q, want %q", msg.Channel, channel)
	}
	yes := discord.Find(msg.Body, "ab:pick:"+id+":0:0")
	if yes == nil || yes["style"] != float64(1) || yes["label"] != "Yes, delete them (Recommended)" {
		t.Fatalf("the recommended option is not a primary button: %v", yes)
	}
	if txt := discord.Text(msg.Body); !strings.Contains(txt, "Removes the three stale files.") || !strings.HasPrefix(txt, "<@&"+opsRole+"> ") {
		t.Errorf("the description or the mention is missing:\n%s", txt)
	}
	am, _ := msg.Body["allowed_mentions"].(map[string]any)
	if p, ok := am["parse"].([]any); !ok || len(p) != 0 || fmt.Sprint(am["roles"]) != "["+opsRole+"]" {
		t.Errorf("allowed_mentions %v: want parse [] and only the configured role", am)
	}

	waited := make(chan record, 1)
	go func() { waited <- b.wait(t, "/v1/questions", id) }()

	resp := b.click(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if respType(resp) != 7 {
		t.Fatalf("the click was answered with %v, want UPDATE_MESSAGE", resp)
	}
	if c := content(resp); !strings.Contains(c, "Answered by ada · Yes, delete them (Recommended)") {
		t.Errorf("the updated message does not say who answered what: %q", c)
	}
	if !noControls(data(resp)) || !strings.Contains(discord.Text(data(resp)), "Proceed with the destructive cleanup?") {
		t.Errorf("the updated message keeps controls or lost the question: %v", data(resp))
	}

	var rec record
	select {
	case rec = <-waited:
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting GET did not return")
	}
	if got, want := rec.Raw("answer"), `{"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}`; got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	by, _ := rec.M["answered_by"].(map[string]any)
	if by["surface"] != "discord" || by["user_id"] != "1500000000000000001" || by["name"] != "ada" {
		t.Errorf("answered_by %v", by)
	}
	if n := len(b.fake.Calls("edit")); n != 0 {
		t.Errorf("the clicked message was also edited through the API (%d edits)", n)
	}
}

func TestSignatureAndPing(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	payload := discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil)

	if status, out := b.send(t, payload, time.Now().Add(-6*time.Minute)); status != http.StatusUnauthorized {
		t.Errorf("a stale timestamp got %d, want 401", status)
	} else if e, _ := out["error"].(map[string]any); e["code"] != "UNAUTHORIZED" {
		t.Errorf("a stale timestamp was answered %v; want the API's error shape, code UNAUTHORIZED", out)
	}
	body, _ := json.Marshal(payload)
	req, _ := http.NewRequest(http.MethodPost, b.URL()+"/discord/interactions", bytes.NewReader(body))
	req.Header = discord.Sign(discord.SigningKey, time.Now(), append(body, ' '))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a bad signature got %d, want 401", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, b.URL()+"/discord/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unsigned request got %d, want 401", resp.StatusCode)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("a refused interaction changed the request: %v", rec.M["status"])
	}
	if got := b.click(t, discord.Ping()); respType(got) != 1 {
		t.Errorf("PING answered %v, want PONG", got)
	}
	// Three refusals within a minute: the first is logged, the rest
	// counted in the next line (surface.Refusals).
	if n := strings.Count(b.logs.String(), "refused an interaction"); n != 1 {
		t.Errorf("%d log lines for three refused interactions; want 1", n)
	}
}

// A post Discord refuses with 401 names the key at fault and what to do
// about it (an operator sees "HTTP 401" alone otherwise), never the token.
func TestPostWithRefusedTokenNamesBotToken(t *testing.T) {
	fake := discord.NewFakeDiscord(t, "MTEwMDAwMDAwMDAwMDAwMDAwMQ.another.bot-token")
	url, prefix := apptest.Redis(t)
	b := startOn(t, fake, url, prefix, defaultTarget, app.Options{})
	if status, rec := b.do(t, http.MethodPost, "/v1/questions", cleanupQuestion()); status != http.StatusServiceUnavailable {
		t.Fatalf("create with a refused bot token: %d %v; want 503", status, rec.M)
	}
	b.logs.WaitFor(t, "posting failed", 10*time.Second)
	const hint = "Discord refused discord.bot_token: copy the bot's token again, or reset it: Developer Portal → your app → Bot → Reset Token"
	if s := b.logs.String(); !strings.Contains(s, "HTTP 401") || !strings.Contains(s, hint) {
		t.Errorf("the posting failure does not say %q:\n%s", hint, s)
	}
}

func TestRespondersAndLateClicks(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]

	resp := b.click(t, discord.Click(msg, eve, "ab:pick:"+id+":0:1", nil))
	if !isEphemeral(resp) || !strings.Contains(content(resp), "can't answer") {
		t.Errorf("eve was answered %v, want an ephemeral refusal", resp)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("eve's click changed the request")
	}
	// olga holds the ops role.
	resp = b.click(t, discord.Click(msg, ops, "ab:pick:"+id+":0:1", nil))
	if respType(resp) != 7 {
		t.Fatalf("a role holder's click got %v", resp)
	}
	rec := b.wait(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}` {
		t.Errorf("answer %s", got)
	}
	resp = b.click(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if !isEphemeral(resp) || !strings.HasPrefix(content(resp), "Already answered by olga") {
		t.Errorf("the late click was answered %v", resp)
	}
	if got := b.get(t, "/v1/questions", id).Raw("answer"); !strings.Contains(got, "No, keep them") {
		t.Errorf("a late click changed the answer: %s", got)
	}
}

// Discord marks an interaction's channel_id deprecated in favour of its
// channel (a partial channel, with parent_id in a thread). A click that
// carries only channel is checked against the target posting there, in
// the channel and in a session's thread alike: a responder answers, and
// anyone else is refused.
func TestClickWithoutChannelID(t *testing.T) {
	b := start(t, defaultTarget+`
          thread_by_session: true`)
	lone := func(in map[string]any) map[string]any { delete(in, "channel_id"); return in }
	for i, where := range []string{"channel", "thread"} {
		t.Run(where, func(t *testing.T) {
			id := b.create(t, "/v1/questions", cleanupQuestion())
			msg := b.fake.WaitCalls(t, "create", i+1)[i]
			if got := msg.Parent != ""; got != (where == "thread") {
				t.Fatalf("posted in %s (parent %q); want the %s", msg.Channel, msg.Parent, where)
			}
			if resp := b.click(t, lone(discord.Click(msg, eve, "ab:pick:"+id+":0:1", nil))); !isEphemeral(resp) || !strings.Contains(content(resp), "can't answer") {
				t.Errorf("eve, no responder, was answered %v; want an ephemeral refusal", resp)
			}
			if resp := b.click(t, lone(discord.Click(msg, ada, "ab:pick:"+id+":0:1", nil))); respType(resp) != 7 || !noControls(data(resp)) {
				t.Errorf("ada's click was answered %v; want the message updated without controls", resp)
			}
			if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "answered" {
				t.Errorf("the request is %v; want answered", rec.M["status"])
			}
		})
	}
}

// TestRoutesEditedSinceThePost: a post records its target as "route/i".
// A target added in front of a restricted one, rolled out while a request
// is pending, gives that key to the new target, open and in another
// channel; a click on the old message must still be checked against the
// responders of the target posting to its channel.
func TestRoutesEditedSinceThePost(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	url, prefix := apptest.Redis(t)
	const restricted = `
      - discord:
          channel: "1200000000000000001"
          responders:
            users: ["1500000000000000001"]`
	before := startOn(t, fake, url, prefix, restricted, app.Options{})
	id := before.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	apptest.Posted(t, before.URL(), "/v1/questions", id, 1) // recorded under default/0

	after := startOn(t, fake, url, prefix, `
      - discord:
          channel: "1200000000000000077"`+restricted, app.Options{})
	if resp := after.click(t, discord.Click(msg, eve, "ab:pick:"+id+":0:1", nil)); !isEphemeral(resp) || !strings.Contains(content(resp), "can't answer") {
		t.Errorf("eve was answered %v, want an ephemeral refusal", resp)
	}
	if rec := after.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("eve, not a responder of the channel, answered after the routes were edited: %s by %s", rec.M["status"], rec.Raw("answered_by"))
	}
	if resp := after.click(t, discord.Click(msg, ada, "ab:pick:"+id+":0:1", nil)); respType(resp) != 7 {
		t.Fatalf("ada's click got %v", resp)
	}
	if by := after.wait(t, "/v1/questions", id).Raw("answered_by"); !strings.Contains(by, `"1500000000000000001"`) {
		t.Errorf("answered by %s; want ada", by)
	}
}

func TestDoubleClickOnTwoReplicas(t *testing.T) {
	rs := startReplicas(t, 2, defaultTarget)
	id := rs[0].create(t, "/v1/questions", cleanupQuestion())
	msg := rs[0].fake.WaitCalls(t, "create", 1)[0]

	var wg sync.WaitGroup
	resps := make([]map[string]any, 2)
	wg.Go(func() { resps[0] = rs[0].click(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil)) })
	wg.Go(func() { resps[1] = rs[1].click(t, discord.Click(msg, bob, "ab:pick:"+id+":0:1", nil)) })
	wg.Wait()

	rec := rs[1].wait(t, "/v1/questions", id)
	by := rec.M["answered_by"].(map[string]any)
	win, lose, label := 0, 1, "Yes, delete them (Recommended)"
	if by["name"] == "bob" {
		win, lose, label = 1, 0, "No, keep them"
	}
	if got := rec.Raw("answer"); got != `{"answers":[{"id":"cleanup","selected":["`+label+`"]}]}` {
		t.Errorf("answer %s does not match the winner", got)
	}
	if respType(resps[win]) != 7 {
		t.Errorf("the winner got %v, want UPDATE_MESSAGE", resps[win])
	}
	if !isEphemeral(resps[lose]) || !strings.HasPrefix(content(resps[lose]), "Already answered by") {
		t.Errorf("the loser got %v", resps[lose])
	}
}

func TestTypedFieldError(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "replicas", "question": "How many replicas?", "header": "Replicas",
		"input": map[string]any{"type": "integer", "value": 3, "required": true},
	}}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]

	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	if respType(resp) != 9 {
		t.Fatalf("Answer… got %v, want a modal", resp)
	}
	in := discord.Find(data(resp), "q0")
	if in == nil || in["required"] != true || in["value"] != "3" || in["type"] != float64(4) {
		t.Errorf("the modal's input %v: want required set, the prefill", in)
	}
	modalID, _ := data(resp)["custom_id"].(string)

	resp = b.click(t, discord.Submit(msg, ada, modalID, discord.LabelText("q0", "three")))
	if !isEphemeral(resp) || !strings.Contains(content(resp), "Replicas must be a whole number") {
		t.Errorf("a bad number got %v, want an ephemeral naming the field", resp)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("a bad value was stored: %v", rec.M)
	}
	resp = b.click(t, discord.Submit(msg, ada, modalID, discord.LabelText("q0", " 42 ")))
	if respType(resp) != 7 {
		t.Fatalf("a good value got %v", resp)
	}
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"replicas","selected":[],"custom":"42"}]}` {
		t.Errorf("answer %s", got)
	}
}

// TestBooleanFieldIsYesOrNo: a boolean field is a radio group of Yes and
// No (on a phone both show in the form), its prefill chosen, and the question is shown whole beside it (a
// field's label is cut at 45 characters). The edited message and a late
// click's note show the answer as the form labelled it, Yes, not the
// "true" the agent gets.
func TestBooleanFieldIsYesOrNo(t *testing.T) {
	b := start(t, defaultTarget)
	const question = "Start the rollout with a canary in the eu-west region first?"
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "canary", "question": question, "input": map[string]any{"type": "boolean", "value": "no"},
	}}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	in := discord.Find(data(resp), "q0")
	opts, _ := in["options"].([]any)
	if respType(resp) != 9 || in == nil || in["type"] != float64(21) || len(opts) != 2 {
		t.Fatalf("Answer… got %v; want a modal with a Yes/No radio group", resp)
	}
	if no, _ := opts[1].(map[string]any); no["label"] != "No" || no["default"] != true {
		t.Errorf("options %v; want No chosen, as prefilled", opts)
	}
	if raw, _ := json.Marshal(data(resp)); !strings.Contains(string(raw), `"description":"`+question+`"`) {
		t.Errorf("the question is not shown whole: %s", raw)
	}
	modalID, _ := data(resp)["custom_id"].(string)
	resp = b.click(t, discord.Submit(msg, ada, modalID, discord.Fill(t, data(resp), map[string][]string{"q0": {"true"}})...))
	if respType(resp) != 7 {
		t.Fatalf("the submission got %v", resp)
	}
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"canary","selected":[],"custom":"true"}]}` {
		t.Errorf("answer %s", got)
	}
	if c := content(resp); !strings.HasPrefix(c, "**Answered by ada · Yes · ") || strings.Contains(c, "true") {
		t.Errorf("the edited message says %q; want the answer as the form labelled it, Yes", c)
	}
	if resp := b.click(t, discord.Click(msg, bob, "ab:answer:"+id+":0:0", nil)); !isEphemeral(resp) || content(resp) != "Already answered by ada · Yes" {
		t.Errorf("a late click got %v; want Already answered by ada · Yes", resp)
	}
}

// TestBlankRequiredTextIsRefused: Discord lets a required field through
// with only spaces in it and can't show a field error, so the person is
// told in a message only they see, and the request stays pending; a real
// answer then goes through.
func TestBlankRequiredTextIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		question map[string]any
		verb     string // the button that opens the modal
		field    string // the required field
		told     string
		want     string // the answer once typed
	}{
		{"Other… beside options", map[string]any{"id": "go", "question": "Ship it?",
			"options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}}},
			"other", "q0o", "Your answer was left blank", `{"answers":[{"id":"go","selected":[],"custom":"after the freeze"}]}`},
		{"Send feedback… on a plan", map[string]any{"id": "plan", "question": "Approve this plan?", "detail": "1. drain\n2. deploy",
			"intent":  map[string]any{"kind": "plan-review", "approve": "Approve"},
			"options": []any{map[string]any{"label": "Approve"}, map[string]any{"label": "Keep planning"}}},
			"other", "q0o", "Your feedback was left blank", `{"answers":[{"id":"plan","selected":[],"custom":"after the freeze"}]}`},
		{"a lone question without options", map[string]any{"id": "why", "question": "What is the rollback plan?", "header": "Rollback"},
			"answer", "q0", "Rollback was left blank", `{"answers":[{"id":"why","selected":[],"custom":"after the freeze"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, defaultTarget)
			id := b.create(t, "/v1/questions", map[string]any{"questions": []any{tc.question}})
			msg := b.fake.WaitCalls(t, "create", 1)[0]
			resp := b.click(t, discord.Click(msg, ada, "ab:"+tc.verb+":"+id+":0:0", nil))
			if in := discord.Find(data(resp), tc.field); respType(resp) != 9 || in == nil || in["required"] != true {
				t.Fatalf("the button got %v; want a modal with %s required", resp, tc.field)
			}
			modalID, _ := data(resp)["custom_id"].(string)
			submitted := discord.TextRow // as the modal sent it: Answer…'s field is in a Label
			if tc.verb == "answer" {
				submitted = discord.LabelText
			}

			resp = b.click(t, discord.Submit(msg, ada, modalID, submitted(tc.field, " \n\t ")))
			if !isEphemeral(resp) || !strings.Contains(content(resp), tc.told) {
				t.Errorf("blank text got %v; want an ephemeral saying %q", resp, tc.told)
			}
			if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
				t.Fatalf("blank text was recorded: %s %s", rec.M["status"], rec.Raw("answer"))
			}
			if resp := b.click(t, discord.Submit(msg, ada, modalID, submitted(tc.field, "after the freeze"))); respType(resp) != 7 {
				t.Fatalf("a real answer got %v", resp)
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
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	if in := discord.Find(data(resp), "q0"); respType(resp) != 9 || in == nil || in["required"] != false {
		t.Fatalf("Answer… got %v; want a modal with q0 optional", resp)
	}
	modalID, _ := data(resp)["custom_id"].(string)
	if resp := b.click(t, discord.Submit(msg, ada, modalID, discord.LabelText("q0", ""))); respType(resp) != 7 {
		t.Fatalf("an empty optional field got %v", resp)
	}
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"retries","selected":[]}]}` {
		t.Errorf("answer %s, want the question skipped", got)
	}
}

// TestMultiSelect: a multi-select is answered in the form, with text
// beside the choice, and sent by its Submit: a select in the message
// answered as soon as it closed, so that closing a phone's sheet to read
// the question again sent a partial choice.
func TestMultiSelect(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "envs", "question": "Deploy where?", "multiSelect": true,
		"options": []any{map[string]any{"label": "dev"}, map[string]any{"label": "staging"}, map[string]any{"label": "prod"}},
	}}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	for _, c := range discord.Components(msg.Body) {
		if c["type"] == float64(3) {
			t.Fatalf("the message holds a select, which answers as it closes: %v", c)
		}
	}
	resp := b.click(t, discord.Click(msg, bob, "ab:answer:"+id+":0:0", nil))
	sel := discord.Find(data(resp), "q0p0")
	if respType(resp) != 9 || sel == nil || sel["type"] != float64(22) || sel["max_values"] != float64(3) || discord.Find(data(resp), "q0o") == nil {
		t.Fatalf("Answer… got %v; want a form with a checkbox group of the three and a text field", resp)
	}
	modalID, _ := data(resp)["custom_id"].(string)
	form := data(resp)
	resp = b.click(t, discord.Submit(msg, bob, modalID, discord.Fill(t, form, map[string][]string{"q0p0": {"2", "0"}, "q0o": {"canary first"}})...))
	if respType(resp) != 7 {
		t.Fatalf("the submission got %v", resp)
	}
	// In the options' order, whatever order the group listed them in.
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"envs","selected":["dev","prod"],"custom":"canary first"}]}` {
		t.Errorf("answer %s", got)
	}
	// The same choice sent again, in another order, is the answer already
	// recorded: the message shows it, and bob is not told he came too late.
	resp = b.click(t, discord.Submit(msg, bob, modalID, discord.Fill(t, form, map[string][]string{"q0p0": {"0", "2"}, "q0o": {"canary first"}})...))
	if respType(resp) != 7 || isEphemeral(resp) {
		t.Errorf("the same choice sent again got %v; want the message updated with the outcome", resp)
	}
}

func TestSeveralQuestionsOneBatch(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{
		map[string]any{"id": "db", "question": "Which database?", "options": []any{map[string]any{"label": "Postgres"}, map[string]any{"label": "MySQL"}}},
		map[string]any{"id": "name", "question": "Service name?"},
		map[string]any{"id": "port", "question": "Port?", "input": map[string]any{"type": "integer"}},
	}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]

	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	if respType(resp) != 9 {
		t.Fatalf("Answer… got %v", resp)
	}
	d := data(resp)
	if n := len(d["components"].([]any)); n > 5 {
		t.Errorf("the modal holds %d fields", n)
	}
	for _, c := range discord.Components(d) {
		if c["type"] == float64(4) {
			if _, ok := c["required"]; !ok {
				t.Errorf("a text input without required: %v", c)
			}
		}
	}
	if db := discord.Find(d, "q0p0"); db == nil || db["type"] != float64(21) {
		t.Errorf("the database question's field is %v; want a radio group", db)
	}
	modalID := d["custom_id"].(string)
	fill := func(port string) []any {
		return discord.Fill(t, d, map[string][]string{"q0p0": {"1"}, "q1": {"billing"}, "q2": {port}})
	}

	resp = b.click(t, discord.Submit(msg, ada, modalID, fill("80x")...))
	if !isEphemeral(resp) || !strings.Contains(content(resp), "Question 3 must be a whole number") {
		t.Errorf("a bad port got %v", resp)
	}
	// Fix my answers… opens the form as it was sent: the radio group's
	// choice, the name and the bad port to correct, with what is wrong.
	if fix := discord.Find(data(resp), "ab:draft:"); fix == nil {
		t.Errorf("no button to open the form again: %v", resp)
	} else {
		again := data(b.click(t, discord.Click(discord.Reply(msg, data(resp)), ada, fix["custom_id"].(string), nil)))
		if got := prefilledOptions(discord.Find(again, "q0p0")); fmt.Sprint(got) != "[1]" {
			t.Errorf("the database chosen again: %v; want MySQL, as sent", got)
		}
		if in := discord.Find(again, "q1"); in == nil || in["value"] != "billing" {
			t.Errorf("the name: %v", in)
		}
		if in := discord.Find(again, "q2"); in == nil || in["value"] != "80x" {
			t.Errorf("the port: %v", in)
		}
		if raw, _ := json.Marshal(again); !strings.Contains(string(raw), `"description":"Must be a whole number`) {
			t.Errorf("the form does not say what is wrong with the port: %s", raw)
		}
		// Sent wrong again from there: the new note takes the place of the
		// one the form came from, rather than piling up below it.
		note := discord.Reply(msg, data(resp))
		again2 := b.click(t, discord.Submit(note, ada, again["custom_id"].(string), discord.Fill(t, again, map[string][]string{"q2": {"80y"}})...))
		if respType(again2) != 7 || discord.Find(data(again2), "ab:draft:") == nil || !strings.Contains(content(again2), "Question 3 must be a whole number") {
			t.Errorf("the form sent wrong again from its note got %v; want the note replaced by the new one, its button kept", again2)
		}
	}
	resp = b.click(t, discord.Submit(msg, ada, modalID, fill("8080")...))
	if respType(resp) != 7 {
		t.Fatalf("the batch got %v", resp)
	}
	want := `{"answers":[{"id":"db","selected":["MySQL"]},{"id":"name","selected":[],"custom":"billing"},{"id":"port","selected":[],"custom":"8080"}]}`
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != want {
		t.Errorf("answer %s\nwant   %s", got, want)
	}
}

// A form's text is editable: it opens holding the prefill, or what was
// typed in a form refused, whole, so that sending it unchanged sends the
// same text. Discord counts a text input's value in code points: 3000
// emoji (6000 UTF-16 units) fill 3000 of its 4000.
func TestFormTextOpensWhole(t *testing.T) {
	emoji := strings.Repeat("😀", 3000)
	tail := func(s string) string { r := []rune(s); return string(r[max(0, len(r)-3):]) }
	b := start(t, defaultTarget)

	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{
		map[string]any{"id": "motto", "question": "Motto?", "input": map[string]any{"type": "string", "value": emoji}},
	}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	in := discord.Find(data(resp), "q0")
	if got, _ := in["value"].(string); got != emoji {
		t.Errorf("the field opens holding %d characters of the 3000 prefilled, ending %q", utf8.RuneCountInString(got), tail(got))
	}
	modalID, _ := data(resp)["custom_id"].(string)
	if resp := b.click(t, discord.Submit(msg, ada, modalID, discord.Fill(t, data(resp), nil)...)); respType(resp) != 7 {
		t.Fatalf("the form sent unchanged got %v", resp)
	}
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != `{"answers":[{"id":"motto","selected":[],"custom":"`+emoji+`"}]}` {
		t.Errorf("the form sent unchanged answered %.120s…; want the prefill", got)
	}

	// Refused for its port: Fix my answers… opens the form holding what
	// was typed, in the text field and in Other….
	id = b.create(t, "/v1/questions", map[string]any{"questions": []any{
		map[string]any{"id": "db", "question": "Which database?", "options": []any{map[string]any{"label": "Postgres"}, map[string]any{"label": "MySQL"}}},
		map[string]any{"id": "name", "question": "Service name?"},
		map[string]any{"id": "port", "question": "Port?", "input": map[string]any{"type": "integer"}},
	}})
	msg = b.fake.WaitCalls(t, "create", 2)[1]
	form := data(b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil)))
	resp = b.click(t, discord.Submit(msg, ada, form["custom_id"].(string),
		discord.Fill(t, form, map[string][]string{"q0o": {emoji}, "q1": {emoji}, "q2": {"80x"}})...))
	fix := discord.Find(data(resp), "ab:draft:")
	if fix == nil {
		t.Fatalf("the refused form got %v; want a note with Fix my answers…", resp)
	}
	again := data(b.click(t, discord.Click(discord.Reply(msg, data(resp)), ada, fix["custom_id"].(string), nil)))
	for _, field := range []string{"q0o", "q1"} {
		got, _ := discord.Find(again, field)["value"].(string)
		if got != emoji {
			t.Errorf("field %s opens again holding %d characters of the 3000 typed, ending %q", field, utf8.RuneCountInString(got), tail(got))
		}
	}
}

func TestApprovalRejectWithReason(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/approvals", map[string]any{
		"tool_name": "kubectl_apply", "reason": "Roll out v2 @everyone", "arguments": map[string]any{"file": "deploy.yaml"},
	})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	// The title shows the tool's name as written: its _ backslashed.
	if txt := discord.Text(msg.Body); !strings.Contains(txt, `kubectl\_apply`) || !strings.Contains(txt, "deploy.yaml") || strings.Contains(txt, "@everyone") {
		t.Errorf("the approval does not show the tool and arguments, or pings:\n%s", txt)
	}
	resp := b.click(t, discord.Click(msg, bob, "ab:reject:"+id+":0:0", nil))
	if respType(resp) != 9 {
		t.Fatalf("Reject got %v", resp)
	}
	note := discord.Find(data(resp), "note")
	if note == nil || note["required"] != false {
		t.Errorf("the reason field %v must say required: false", note)
	}
	resp = b.click(t, discord.Submit(msg, bob, data(resp)["custom_id"].(string), discord.TextRow("note", "  not on a Friday ")))
	if respType(resp) != 7 || !strings.Contains(content(resp), "Rejected") {
		t.Fatalf("the rejection got %v", resp)
	}
	if got := b.wait(t, "/v1/approvals", id).Raw("decision"); got != `{"outcome":"rejected","note":"not on a Friday"}` {
		t.Errorf("decision %s", got)
	}
}

func TestRateLimitStormPostsOnce(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("create", discord.FakeFail{Status: 429, RetryAfter: 0.05}, discord.FakeFail{Status: 429, RetryAfter: 0.05},
		discord.FakeFail{Status: 502}, discord.FakeFail{Status: 429, RetryAfter: 0.05})
	id := b.create(t, "/v1/questions", cleanupQuestion())
	if n := len(b.fake.Calls("create")); n != 1 {
		t.Errorf("posted %d times, want exactly once", n)
	}
	if n := len(b.fake.AllCalls("create")); n != 5 {
		t.Errorf("%d attempts, want 5", n)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("status %v", rec.M["status"])
	}
}

// TestPostWithoutEmbedLinksIsLogged: where the bot lacks Embed Links,
// Discord posts a request's message without the embeds that hold its
// text, and says nothing but the message it answers with. The operator
// is told, once a post, what the people there see and what to grant.
// (Until 2026-12-05 nothing said so.)
func TestPostWithoutEmbedLinksIsLogged(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.DenyEmbeds(channel)
	b.create(t, "/v1/questions", cleanupQuestion())
	b.logs.WaitFor(t, "Discord posted the request without its embeds, which hold its text: the bot lacks Embed Links in the channel", 5*time.Second)
	b.fake.WaitCalls(t, "edit", 1)
	if n := strings.Count(b.logs.String(), "Discord posted the request without its embeds"); n != 1 {
		t.Errorf("logged %d times for one post, want once", n)
	}
}

// TestPostWithoutEmbedLinksShowsTheQuestion: a message Discord posted
// without its embeds is edited to hold the question in its content, under
// its buttons as before, and it keeps it when the request ends, whether
// its own button ended it (the outcome in the click's response, whose
// embeds Discord keeps) or anything else did (Finish's edit, whose embeds
// Discord drops too).
// (Until 2026-12-06 people saw buttons under no question, and the outcome
// above none.)
func TestPostWithoutEmbedLinksShowsTheQuestion(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.DenyEmbeds(channel)
	const question, desc = "Proceed with the destructive cleanup?", "Removes the three stale files."
	readable := func(t *testing.T, what string, body map[string]any) {
		t.Helper()
		if es, _ := body["embeds"].([]any); len(es) > 0 {
			t.Errorf("%s sends embeds Discord drops here: %v", what, es)
		}
		if c, _ := body["content"].(string); !strings.Contains(c, question) || !strings.Contains(c, desc) || !strings.Contains(c, "**Confirm**") {
			t.Errorf("%s: the content %q does not show the question", what, c)
		}
	}

	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	fixed := b.fake.WaitCalls(t, "edit", 1)[0]
	if fixed.MessageID != msg.MessageID || fixed.Channel != channel {
		t.Fatalf("edited %s in %s, want the request's message %s", fixed.MessageID, fixed.Channel, msg.MessageID)
	}
	readable(t, "the posted message", fixed.Body)
	if !strings.HasPrefix(fixed.Body["content"].(string), "<@&"+opsRole+"> ") {
		t.Errorf("the content lost the target's mention: %q", fixed.Body["content"])
	}
	yes := discord.Find(fixed.Body, "ab:pick:"+id+":0:0")
	if yes == nil {
		t.Fatalf("the edit lost the buttons: %v", fixed.Body["components"])
	}
	for _, bad := range discord.InvalidMessage(fixed.Body, false) {
		t.Errorf("Discord would refuse the edit: %s", bad)
	}

	// Answered on the message itself: the outcome in the response, which
	// Discord shows with its embeds (an app may always Embed Links in its
	// responses).
	resp := b.click(t, discord.Click(fixed, ada, yes["custom_id"].(string), nil))
	if respType(resp) != 7 || !noControls(data(resp)) || !strings.Contains(content(resp), "Answered by ada") ||
		!strings.Contains(discord.Text(data(resp)), question) {
		t.Fatalf("the click got %v; want the message updated with its outcome, under the question", resp)
	}

	// Ended elsewhere: Finish's edit, done when the cancel returns.
	id = b.create(t, "/v1/questions", cleanupQuestion())
	msg = b.fake.WaitCalls(t, "create", 2)[1]
	editsOf := func() []discord.FakeCall {
		var out []discord.FakeCall
		for _, c := range b.fake.Calls("edit") {
			if c.MessageID == msg.MessageID {
				out = append(out, c)
			}
		}
		return out
	}
	for n := 2; len(editsOf()) == 0; n++ {
		b.fake.WaitCalls(t, "edit", n)
	}
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	edits := editsOf()
	last := edits[len(edits)-1]
	if !noControls(last.Body) || !strings.Contains(discord.Text(last.Body), "Cancelled by the agent") {
		t.Fatalf("the last edit %v; want the outcome, without controls", last.Body)
	}
	readable(t, "the cancelled message", last.Body)
}

// TestEndOfABareMessageIsOneEdit: a request's message that Discord posted
// without its embeds (the bot lacks Embed Links there) shows how the
// request ended in one edit, above its text in its content, its controls
// gone, however it ended outside a click on it. Only a message that had
// its embeds when posted, whose channel drops them by its end, takes a
// second edit: the first one's answer is the first word of it.
// (Until 2026-12-05 every end of a bare message took two edits, and
// showed its outcome above no request between them.)
func TestEndOfABareMessageIsOneEdit(t *testing.T) {
	const other = "1200000000000000009"
	const question, desc = "Proceed with the destructive cleanup?", "Removes the three stale files."
	for _, tc := range []struct {
		name    string
		targets string
		bare    string // the channel whose message is checked, where the bot lacks Embed Links
		before  bool   // Embed Links taken before the post; else after it
		end     func(t *testing.T, b bridge, id string)
		outcome string
		edits   int // of the message, after the post
	}{
		{"withdrawn", defaultTarget, channel, true, func(t *testing.T, b bridge, id string) {
			if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
				t.Fatalf("cancel: %d", status)
			}
		}, "Cancelled by the agent", 1},
		{"answered on the other target's message", defaultTarget + `
      - discord:
          channel: "` + other + `"`, other, true, func(t *testing.T, b bridge, id string) {
			var there discord.FakeCall
			for _, m := range b.fake.Posted() {
				if m.Channel == channel {
					there = m
				}
			}
			if resp := b.click(t, discord.Click(there, ada, "ab:pick:"+id+":0:0", nil)); respType(resp) != 7 {
				t.Fatalf("the click got %v; want UPDATE_MESSAGE", resp)
			}
		}, "Answered by ada", 1},
		{"Embed Links taken after the post", defaultTarget, channel, false, func(t *testing.T, b bridge, id string) {
			if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
				t.Fatalf("cancel: %d", status)
			}
		}, "Cancelled by the agent", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, tc.targets)
			if tc.before {
				b.fake.DenyEmbeds(tc.bare)
			}
			id := b.create(t, "/v1/questions", cleanupQuestion())
			var msg discord.FakeCall
			for _, m := range b.fake.Posted() {
				if m.Channel == tc.bare {
					msg = m
				}
			}
			editsOf := func() []discord.FakeCall {
				var out []discord.FakeCall
				for _, c := range b.fake.Calls("edit") {
					if c.MessageID == msg.MessageID {
						out = append(out, c)
					}
				}
				return out
			}
			posted := 0
			if tc.before {
				posted = 1 // Post's own, to show the text: done when the create returns
			} else {
				b.fake.DenyEmbeds(tc.bare)
			}
			if n := len(editsOf()); msg.MessageID == "" || n != posted {
				t.Fatalf("message %q in %s edited %d times by its post; want %d", msg.MessageID, tc.bare, n, posted)
			}
			tc.end(t, b, id)
			if rec := b.wait(t, "/v1/questions", id); rec.M["status"] == "pending" {
				t.Fatalf("the request did not end: %v", rec.M)
			}
			waitEdited(t, b)

			edits := editsOf()[posted:]
			if len(edits) != tc.edits {
				t.Fatalf("the end took %d edits of the message; want %d: %+v", len(edits), tc.edits, edits)
			}
			last := edits[len(edits)-1].Body
			if es, ok := last["embeds"].([]any); !ok || len(es) != 0 {
				t.Errorf("the edit sends embeds %v; want none (\"embeds\": []), which Discord drops here", last["embeds"])
			}
			if cs, ok := last["components"].([]any); !ok || len(cs) != 0 {
				t.Errorf("the edit leaves components %v; want none (\"components\": [])", last["components"])
			}
			c, _ := last["content"].(string)
			if at := strings.Index(c, tc.outcome); at < 0 || at > strings.Index(c, question) ||
				!strings.Contains(c, desc) || !strings.Contains(c, "**Confirm**") {
				t.Errorf("the content %q; want %q above the question", c, tc.outcome)
			}
			for _, bad := range discord.InvalidMessage(last, false) {
				t.Errorf("Discord would refuse the edit: %s", bad)
			}
		})
	}
}

// TestClickOnABareMessageShowsItsOutcomeInPlace: a click that ends the
// request of a message Discord posted without its embeds is answered with
// the outcome in place (UPDATE_MESSAGE), with the request in embeds, which
// Discord keeps in a response (an app may always Embed Links there:
// discord-api-docs#5316), not in the content as well; no edit through the
// API follows.
func TestClickOnABareMessageShowsItsOutcomeInPlace(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.DenyEmbeds(channel)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	fixed := b.fake.WaitCalls(t, "edit", 1)[0]
	resp := b.click(t, discord.Click(fixed, ada, "ab:pick:"+id+":0:0", nil))
	d := data(resp)
	if respType(resp) != 7 {
		t.Fatalf("the click got %v; want UPDATE_MESSAGE", resp)
	}
	es, _ := d["embeds"].([]any)
	if len(es) == 0 || !strings.Contains(discord.Text(d), "Proceed with the destructive cleanup?") {
		t.Errorf("the response's embeds %v; want the question in them", d["embeds"])
	}
	if c := content(resp); !strings.Contains(c, "Answered by ada") || strings.Contains(c, "Proceed with the destructive cleanup?") {
		t.Errorf("the response's content %q; want the outcome, and the question in the embeds only", c)
	}
	if cs, ok := d["components"].([]any); !ok || len(cs) != 0 {
		t.Errorf("the response leaves components %v; want none", d["components"])
	}
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("status %v", rec.M["status"])
	}
	waitEdited(t, b)
	if n := len(b.fake.Calls("edit")); n != 1 {
		t.Errorf("%d edits through the API; want only the post's (the click's response showed the outcome)", n)
	}
}

// waitEdited waits until the store has no ended request whose messages
// are not known to be edited: every Finish of b's requests is done.
func waitEdited(t *testing.T, b bridge) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := b.Store().Count(context.Background(), 0)
		if err == nil && c.Unedited == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ended requests still unedited after 10s (%v)", c.Unedited, err)
		}
		time.Sleep(10 * time.Millisecond) // nothing signals the store's index
	}
}

func TestFailedPostIsNoProvider(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("create", discord.FakeFail{Status: 403})
	status, rec := b.do(t, http.MethodPost, "/v1/questions", cleanupQuestion())
	if status != http.StatusServiceUnavailable || !strings.Contains(rec.Raw("error"), "NO_PROVIDER") {
		t.Errorf("got %d %v", status, rec.M)
	}
}

func TestDismissAndCancelEditMessages(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	edit := b.fake.WaitCalls(t, "edit", 1)[0]
	if edit.MessageID != msg.MessageID || !noControls(edit.Body) || !strings.Contains(discord.Text(edit.Body), "Cancelled by the agent") {
		t.Errorf("the cancel edit %v", edit.Body)
	}

	id = b.create(t, "/v1/questions", cleanupQuestion())
	msg = b.fake.WaitCalls(t, "create", 2)[1]
	// Dismiss sits beside the options: on a phone a slip of the thumb
	// would end the request. It asks first, in a note only ada sees.
	resp := b.click(t, discord.Click(msg, ada, discord.Find(msg.Body, "ab:dismiss:"+id+":")["custom_id"].(string), nil))
	sure := discord.Find(data(resp), "ab:dismiss:"+id+":")
	if !isEphemeral(resp) || sure == nil || !strings.Contains(content(resp), "Dismiss this question?") {
		t.Fatalf("Dismiss got %v; want a note only ada sees asking to confirm, with a button", resp)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("Dismiss ended the request before it was confirmed: %v", rec.M["status"])
	}
	resp = b.click(t, discord.Click(discord.Reply(msg, data(resp)), ada, sure["custom_id"].(string), nil))
	if respType(resp) != 7 || !noControls(data(resp)) || !strings.Contains(content(resp), "Dismissed by ada") {
		t.Errorf("the confirmation got %v; want its note to say the request was dismissed", resp)
	}
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "dismissed" {
		t.Errorf("status %v", rec.M["status"])
	}
	if edit := b.fake.WaitCalls(t, "edit", 2)[1]; edit.MessageID != msg.MessageID || !noControls(edit.Body) || !strings.Contains(discord.Text(edit.Body), "Dismissed by ada") {
		t.Errorf("the request's message was edited to %v; want it dismissed, without controls", edit)
	}
}

// Allow once answers at once, but where the request goes on in the
// messages below its own (long arguments), it asks first: on a phone the
// rest is out of sight.
func TestAllowOnceOfALongRequestAsksFirst(t *testing.T) {
	b := start(t, defaultTarget)
	short := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2", "arguments": map[string]any{"file": "deploy.yaml"}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	if resp := b.click(t, discord.Click(msg, bob, discord.Find(msg.Body, "ab:allow:"+short+":")["custom_id"].(string), nil)); respType(resp) != 7 || !strings.Contains(content(resp), "Allowed once") {
		t.Errorf("Allow once of a short request got %v; want it allowed at once", resp)
	}

	long := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2",
		"arguments": map[string]any{"manifest": strings.Repeat("kind: Deployment\nreplicas: 3\n", 400)}})
	msg = b.fake.WaitCalls(t, "create", 2)[1]
	if n := len(b.fake.Calls("create")); n < 3 {
		t.Fatalf("%d messages posted; want the request's and the rest of its arguments after it", n)
	}
	resp := b.click(t, discord.Click(msg, bob, discord.Find(msg.Body, "ab:allow:"+long+":")["custom_id"].(string), nil))
	sure := discord.Find(data(resp), "ab:allow:"+long+":")
	if !isEphemeral(resp) || sure == nil || !strings.Contains(content(resp), "messages below") {
		t.Fatalf("Allow once of a long request got %v; want a note asking to confirm, with a button", resp)
	}
	if rec := b.get(t, "/v1/approvals", long); rec.M["status"] != "pending" {
		t.Fatalf("the request was allowed before it was confirmed: %v", rec.M["status"])
	}
	if resp := b.click(t, discord.Click(discord.Reply(msg, data(resp)), bob, sure["custom_id"].(string), nil)); respType(resp) != 7 || !strings.Contains(content(resp), "Allowed once") {
		t.Errorf("the confirmation got %v", resp)
	}
	if got := b.wait(t, "/v1/approvals", long).Raw("decision"); got != `{"outcome":"allowed-once"}` {
		t.Errorf("decision %s", got)
	}
}

// Where Discord drops the bot's embeds, a request's message shows its
// text in its content, cut to 2000 characters, and nothing follows it:
// Allow once of arguments longer than that asks first, pointing to the
// whole request in the web inbox; of arguments that fit, it answers.
func TestAllowOnceOfALongBareRequestAsksFirst(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.DenyEmbeds(channel)
	short := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2", "arguments": map[string]any{"file": "deploy.yaml"}})
	msg := b.fake.WaitCalls(t, "edit", 1)[0]
	if resp := b.click(t, discord.Click(msg, bob, discord.Find(msg.Body, "ab:allow:"+short+":")["custom_id"].(string), nil)); respType(resp) != 7 || !strings.Contains(content(resp), "Allowed once") {
		t.Errorf("Allow once of a short request got %v; want it allowed at once", resp)
	}

	// About 2,200 characters: one embed holds them, the content does not.
	long := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2",
		"arguments": map[string]any{"manifest": strings.Repeat("kind: Deployment\nreplicas: 3\n", 70)}})
	var edits []discord.FakeCall
	for n := 2; len(edits) == 0; n++ {
		for _, c := range b.fake.WaitCalls(t, "edit", n) {
			if discord.Find(c.Body, "ab:allow:"+long+":") != nil {
				edits = append(edits, c)
			}
		}
	}
	msg = edits[0]
	if txt := msg.Body["content"].(string); !strings.Contains(txt, "kind: Deployment") || !strings.Contains(txt, "/r/"+long) {
		t.Fatalf("the bare message %q; want the arguments' start and where the rest is", txt)
	}
	if n := len(b.fake.Posted()); n != 2 {
		t.Errorf("%d messages posted; want one a request: the rest would lose its embeds too", n)
	}
	resp := b.click(t, discord.Click(msg, bob, discord.Find(msg.Body, "ab:allow:"+long+":")["custom_id"].(string), nil))
	sure := discord.Find(data(resp), "ab:allow:"+long+":")
	if !isEphemeral(resp) || sure == nil || !strings.Contains(content(resp), "/r/"+long) || strings.Contains(content(resp), "messages below") {
		t.Fatalf("Allow once of a long bare request got %v; want a note asking to confirm, pointing to the web inbox", resp)
	}
	if rec := b.get(t, "/v1/approvals", long); rec.M["status"] != "pending" {
		t.Fatalf("the request was allowed before it was confirmed: %v", rec.M["status"])
	}
}

// The content of a message without embeds begins with the target's
// mention, which leaves that much less room for the request's text:
// arguments cut by it alone are cut all the same, and Allow once asks
// first. (Until 2026-12-06 it was judged on the message without the
// mention: cut by fewer characters than the mention's, it was allowed at
// once, unread.)
func TestAllowOnceOfABareRequestCutByItsMentionAsksFirst(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.DenyEmbeds(channel)
	approval := func(manifest int) (string, discord.FakeCall) {
		t.Helper()
		before := len(b.fake.Calls("edit"))
		id := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2",
			"arguments": map[string]any{"manifest": strings.Repeat("x", manifest)}})
		return id, b.fake.WaitCalls(t, "edit", before+1)[before]
	}
	_, fits := approval(100)
	shown := fits.Body["content"].(string)
	if strings.Contains(shown, "not shown") || !strings.HasPrefix(shown, "<@&"+opsRole+"> ") {
		t.Fatalf("the first message %q; want it whole, under the target's mention", shown)
	}
	// A few characters more than the message holds: fewer than its mention.
	over := 100 + 2000 - utf8.RuneCountInString(shown) + 5 // Discord's 2000 characters of content
	id, msg := approval(over)
	if !strings.Contains(msg.Body["content"].(string), "/r/"+id) {
		t.Fatalf("the bare message %q; want it cut, saying where the rest is", msg.Body["content"])
	}
	resp := b.click(t, discord.Click(msg, bob, discord.Find(msg.Body, "ab:allow:"+id+":")["custom_id"].(string), nil))
	if !isEphemeral(resp) || discord.Find(data(resp), "ab:allow:"+id+":") == nil || !strings.Contains(content(resp), "/r/"+id) {
		t.Fatalf("Allow once of a request its message cut got %v; want a note asking to confirm, pointing to the web inbox", resp)
	}
	if rec := b.get(t, "/v1/approvals", id); rec.M["status"] != "pending" {
		t.Fatalf("the request was allowed before it was confirmed: %v", rec.M["status"])
	}
}

const threadTarget = `
      - discord:
          channel: "` + channel + `"
          thread_by_session: true`

func TestThreadBySession(t *testing.T) {
	b := start(t, threadTarget)
	b.create(t, "/v1/questions", cleanupQuestion())
	first := b.fake.WaitCalls(t, "create", 1)[0]
	th := b.fake.WaitCalls(t, "thread", 1)[0]
	if th.MessageID != first.MessageID {
		t.Errorf("the thread starts from %s, want the first message %s", th.MessageID, first.MessageID)
	}
	b.create(t, "/v1/questions", cleanupQuestion())
	second := b.fake.WaitCalls(t, "create", 2)[1]
	if second.Channel == channel {
		t.Errorf("the session's second request went to the channel, not its thread")
	}
	if n := len(b.fake.Calls("thread")); n != 1 {
		t.Errorf("%d threads for one session", n)
	}
}

// TestClickInThreadBeforeThePostIsRecorded: in a session's thread, a long
// request's message is up (and has pinged) while the bridge still posts
// the rest of its text, a message at a time within Discord's rate limit;
// its post is recorded only after that. A responder's click meanwhile is
// taken, and anyone else's refused: Discord says the thread is in the
// target's channel.
func TestClickInThreadBeforeThePostIsRecorded(t *testing.T) {
	b := start(t, defaultTarget+`
          thread_by_session: true`)
	b.create(t, "/v1/questions", cleanupQuestion())
	thread := b.fake.WaitCalls(t, "thread", 1)[0].MessageID

	held, release := b.fake.Hold("create", func(c discord.FakeCall) bool {
		content, _ := c.Body["content"].(string)
		return strings.HasPrefix(content, "Continued")
	})
	q := cleanupQuestion()
	q["questions"].([]any)[0].(map[string]any)["detail"] = strings.Repeat("A long plan line.\n", 500)
	done := apptest.Go(b.URL(), http.MethodPost, "/v1/questions", q)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the long request's continuation was not posted within 10s")
	}
	msg := b.fake.WaitCalls(t, "create", 2)[1]
	if msg.Channel != thread {
		t.Fatalf("the session's second request went to %s; want its thread %s", msg.Channel, thread)
	}
	pick := discord.Find(msg.Body, "ab:pick:")["custom_id"].(string)
	id := strings.Split(pick, ":")[2]
	if p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any); len(p) != 0 {
		t.Fatalf("the post is recorded already (%v): the click would not test the unrecorded case", p)
	}

	if resp := b.click(t, discord.Click(msg, eve, pick, nil)); !isEphemeral(resp) || !strings.Contains(content(resp), "can't answer") {
		t.Errorf("eve, no responder, was answered %v; want an ephemeral refusal", resp)
	}
	if resp := b.click(t, discord.Click(msg, ada, pick, nil)); respType(resp) != 7 || !noControls(data(resp)) {
		t.Errorf("ada's click was answered %v; want the message updated without controls", resp)
	}
	release()
	if r := apptest.Await(t, done, 30*time.Second); r.Status != http.StatusCreated {
		t.Fatalf("the agent got %d %v; want 201", r.Status, r.Rec.M)
	}
	rec := b.wait(t, "/v1/questions", id)
	if by, _ := rec.M["answered_by"].(map[string]any); rec.M["status"] != "answered" || by["name"] != "ada" {
		t.Errorf("the request is %v, answered by %v; want answered by ada", rec.M["status"], rec.M["answered_by"])
	}
}

// TestDeadSessionThread: a session's thread is deleted, or locked by a
// moderator, or the bot may no longer post in threads. The session's next
// request is posted in the channel and starts a new thread, and the
// requests after it go into that one; the agent never gets NO_PROVIDER.
// A failure that says nothing about the thread keeps it.
func TestDeadSessionThread(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(f *discord.FakeDiscord, thread string)
	}{
		{"deleted", (*discord.FakeDiscord).DeleteThread},
		{"not found, without Discord's code", func(f *discord.FakeDiscord, _ string) {
			f.FailNext("create", discord.FakeFail{Status: http.StatusNotFound, Message: "404: Not Found"})
		}},
		{"locked", (*discord.FakeDiscord).LockThread},
		{"no right to post in threads", func(f *discord.FakeDiscord, _ string) {
			f.FailNext("create", discord.FakeFail{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, threadTarget)
			b.create(t, "/v1/questions", cleanupQuestion())
			dead := b.fake.WaitCalls(t, "thread", 1)[0].MessageID // a thread shares its first message's id
			tc.kill(b.fake, dead)

			id := b.create(t, "/v1/questions", cleanupQuestion())
			msg := b.fake.WaitCalls(t, "create", 2)[1]
			if msg.Channel != channel {
				t.Fatalf("posted in %s after the thread died; want the channel %s", msg.Channel, channel)
			}
			th := b.fake.WaitCalls(t, "thread", 2)[1]
			if th.MessageID != msg.MessageID || th.Channel != channel {
				t.Errorf("the new thread starts from %s in %s; want the new message %s in %s", th.MessageID, th.Channel, msg.MessageID, channel)
			}
			p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
			if len(p) != 1 || p[0].(map[string]any)["message_id"] != msg.MessageID || p[0].(map[string]any)["channel"] != channel {
				t.Errorf("recorded posts %v; want message %s in the channel", p, msg.MessageID)
			}

			b.create(t, "/v1/questions", cleanupQuestion())
			if next := b.fake.WaitCalls(t, "create", 3)[2]; next.Channel != th.MessageID {
				t.Errorf("the session's next request went to %s; want its new thread %s", next.Channel, th.MessageID)
			}
			if n := len(b.fake.Calls("thread")); n != 2 {
				t.Errorf("%d threads started; want 2 (the dead one and its successor)", n)
			}
		})
	}

	t.Run("other failure", func(t *testing.T) {
		b := start(t, threadTarget)
		b.create(t, "/v1/questions", cleanupQuestion())
		thread := b.fake.WaitCalls(t, "thread", 1)[0].MessageID
		b.fake.FailNext("create", discord.FakeFail{Status: http.StatusBadRequest, Code: 50035, Message: "Invalid Form Body"})
		if status, rec := b.do(t, http.MethodPost, "/v1/questions", cleanupQuestion()); status != http.StatusServiceUnavailable {
			t.Fatalf("a refused post got %d %v; want 503 NO_PROVIDER", status, rec.M)
		}
		b.create(t, "/v1/questions", cleanupQuestion())
		if next := b.fake.WaitCalls(t, "create", 2)[1]; next.Channel != thread {
			t.Errorf("after a failure that is not the thread's, the session posted in %s; want its thread %s", next.Channel, thread)
		}
		if n := len(b.fake.AllCalls("create")); n != 3 {
			t.Errorf("%d creates; want 3 (the refused one not tried again in the channel)", n)
		}
	})
}

// A session's thread that was closed (archived, not locked: by a person,
// or by Discord after a week without a message) takes the session's next
// request, whose message opens it again, as any message sent in an
// archived thread does on Discord: no new thread, no call to open it.
func TestClosedSessionThreadTakesTheNextRequest(t *testing.T) {
	b := start(t, threadTarget)
	b.create(t, "/v1/questions", cleanupQuestion())
	thread := b.fake.WaitCalls(t, "thread", 1)[0].MessageID
	b.fake.ArchiveThread(thread)

	id := b.create(t, "/v1/questions", cleanupQuestion())
	if msg := b.fake.WaitCalls(t, "create", 2)[1]; msg.Channel != thread {
		t.Fatalf("the session's next request went to %s; want its closed thread %s", msg.Channel, thread)
	}
	if n := len(b.fake.AllCalls("thread")); n != 1 {
		t.Errorf("%d threads started; want the session's one", n)
	}
	if n := len(b.fake.AllCalls("modify channel")); n != 0 {
		t.Errorf("%d calls to change the thread; want none (the message opens it)", n)
	}
	if b.fake.ThreadArchived(thread) {
		t.Error("the thread is still closed after a message was sent in it")
	}
	p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
	if len(p) != 1 || p[0].(map[string]any)["channel"] != thread {
		t.Errorf("recorded posts %v; want one in the thread %s", p, thread)
	}
}

// A click on a message whose request the store no longer has (its post's
// reply was lost and the request discarded) edits that message in the
// answer: nothing else would take its buttons off.
func TestClickOnAGoneRequestRetiresItsMessage(t *testing.T) {
	b := start(t, defaultTarget)
	b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	gone := "aaaaaaaaaaaaaaaa" // a message posted for a request not in the store
	resp := b.click(t, discord.Click(msg, ada, "ab:pick:"+gone+":0:1", nil))
	if respType(resp) != 7 {
		t.Fatalf("the click was answered %v; want the message updated", resp)
	}
	comps, ok := data(resp)["components"].([]any)
	if !ok || len(comps) != 0 || !strings.HasSuffix(content(resp), "*This request no longer exists.*") {
		t.Errorf("the message was updated to %v; want no components and a line that the request no longer exists", data(resp))
	}
	if body, _ := msg.Body["content"].(string); body != "" && !strings.HasPrefix(content(resp), body) {
		t.Errorf("the message's content %q was not kept: %q", body, content(resp))
	}
}

// A request whose post's reply was lost is discarded, and the agent's
// retry creates it again under the same id, here asking something else.
// The first message is still in the channel, live: its button must not
// answer the second request with what is in the same place, and the
// message is retired.
func TestClickOnAReplacedRequestRetiresItsMessage(t *testing.T) {
	b := start(t, defaultTarget)
	ask := func(labels ...string) map[string]any {
		q := cleanupQuestion()
		var opts []any
		for _, l := range labels {
			opts = append(opts, map[string]any{"label": l})
		}
		q["questions"].([]any)[0].(map[string]any)["options"] = opts
		q["tool_call_id"] = "call-1"
		return q
	}
	// Posted, but the answer lost: the bridge sees a refusal and discards
	// the request.
	b.fake.FailNext("create", discord.FakeFail{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions", Applied: true})
	if status, rec := b.do(t, http.MethodPost, "/v1/questions", ask("Keep them", "Archive them")); status != http.StatusServiceUnavailable {
		t.Fatalf("the first create: %d %v; want 503 NO_PROVIDER", status, rec.M)
	}
	first := b.fake.Posted()[0]
	id := b.create(t, "/v1/questions", ask("Delete them", "Delete the backups too"))
	if posted := b.fake.Posted(); len(posted) != 2 || posted[1].MessageID == first.MessageID {
		t.Fatalf("%d messages posted; want the second request's own beside the first", len(posted))
	}
	if p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any); len(p) != 1 || p[0].(map[string]any)["message_id"] == first.MessageID {
		t.Fatalf("the second request records posts %v; want its own message, not the first's %s", p, first.MessageID)
	}

	archive := discord.Find(first.Body, "ab:pick:"+id+":0:1")
	if archive == nil {
		t.Fatalf("the first message has no button for %s: %v", id, first.Body)
	}
	resp := b.click(t, discord.Click(first, ada, archive["custom_id"].(string), nil))
	if respType(resp) != 7 || !noControls(data(resp)) || !strings.HasSuffix(content(resp), "*This request no longer exists.*") {
		t.Errorf("a click on the first message was answered %v; want the message retired", resp)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("a click on the first message ended the second request: %s %s", rec.M["status"], rec.Raw("answer"))
	}
}

// A message its request does not list (posted, but its answer lost, while
// the other target took the request) is not edited when the request ends;
// a click on it, come late, answers with the outcome in its place, which
// takes its controls off.
func TestLateClickOnAnUnrecordedMessage(t *testing.T) {
	b := start(t, defaultTarget+`
      - discord:
          channel: "1200000000000000009"`)
	b.fake.FailNext("create", discord.FakeFail{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions", Applied: true})
	id := b.create(t, "/v1/questions", cleanupQuestion())
	listed := map[string]bool{}
	for _, p := range b.get(t, "/v1/questions", id).M["posts"].([]any) {
		listed[p.(map[string]any)["message_id"].(string)] = true
	}
	var lost discord.FakeCall
	for _, m := range b.fake.Posted() {
		if !listed[m.MessageID] {
			lost = m
		}
	}
	if len(listed) != 1 || lost.MessageID == "" {
		t.Fatalf("recorded %v of %d posted; want one recorded, one not", listed, len(b.fake.Posted()))
	}
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	resp := b.click(t, discord.Click(lost, ada, discord.Find(lost.Body, "ab:pick:"+id+":0:0")["custom_id"].(string), nil))
	if respType(resp) != 7 || !noControls(data(resp)) || !strings.Contains(content(resp), "Cancelled") {
		t.Errorf("a late click on the unrecorded message was answered %v; want it updated to the outcome, without controls", resp)
	}
}

// TestEndOfAnUneditableMessage: a message that can never be edited (a
// person deleted it, or its thread was deleted or locked) counts as
// edited when its request ends, rather than being retried by a finisher
// for an hour.
func TestEndOfAnUneditableMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(f *discord.FakeDiscord, thread string)
	}{
		{"deleted by a person", func(f *discord.FakeDiscord, _ string) {
			f.FailNext("edit", discord.FakeFail{Status: http.StatusNotFound, Code: 10008, Message: "Unknown Message"})
		}},
		{"in a deleted thread", (*discord.FakeDiscord).DeleteThread},
		{"in a locked thread", (*discord.FakeDiscord).LockThread},
		// Should Discord let the bot open a locked thread it started (its
		// Threads topic says a creator may), the edit fails all the same,
		// and the thread is closed again, as it was found.
		{"in a locked thread its creator may open", func(f *discord.FakeDiscord, thread string) {
			f.CreatorOpensLocked = true
			f.LockThread(thread)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, threadTarget)
			b.create(t, "/v1/questions", cleanupQuestion())
			thread := b.fake.WaitCalls(t, "thread", 1)[0].MessageID
			id := b.create(t, "/v1/questions", cleanupQuestion()) // posted in the session's thread
			tc.kill(b.fake, thread)
			if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
				t.Fatalf("cancel: %d", status)
			}
			if n := len(b.fake.AllCalls("edit")); n != 1 {
				t.Errorf("%d edits tried; want 1", n)
			}
			// The cancel edits before it answers: the request is out of the
			// finish index by now, or never will be.
			if c, err := b.Store().Count(context.Background(), 0); err != nil || c.Unedited != 0 {
				t.Errorf("%d requests left for a finisher (%v); want none", c.Unedited, err)
			}
			if strings.Contains(tc.name, "locked") && !b.fake.ThreadArchived(thread) {
				t.Error("the thread is left open; it was archived before the end")
			}
		})
	}
}

// A request whose message is in a thread that was closed (archived, not
// locked: by a person, or by Discord after a week without a message) is
// edited all the same: the thread is opened again, the edit lands, and
// the thread is closed again, as it was found.
func TestEndInAClosedThreadIsEdited(t *testing.T) {
	b := start(t, threadTarget)
	b.create(t, "/v1/questions", cleanupQuestion())
	thread := b.fake.WaitCalls(t, "thread", 1)[0].MessageID
	id := b.create(t, "/v1/questions", cleanupQuestion()) // posted in the session's thread
	b.fake.ArchiveThread(thread)
	if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	edits := b.fake.Calls("edit")
	if len(edits) != 1 || edits[0].Channel != thread || !noControls(edits[0].Body) {
		t.Fatalf("edits that landed: %+v; want the cancelled request's message in the thread, without controls", edits)
	}
	var changes []any
	for _, c := range b.fake.Calls("modify channel") {
		if c.Channel != thread {
			t.Errorf("modified channel %s; want only the thread %s", c.Channel, thread)
		}
		changes = append(changes, c.Body["archived"])
	}
	if fmt.Sprint(changes) != "[false true]" {
		t.Errorf("the thread's archived set to %v; want opened, then closed again", changes)
	}
	if !b.fake.ThreadArchived(thread) {
		t.Error("the thread is left open; it was archived before the edit")
	}
}

// A closed thread opened to edit a message, that changes before the edit
// is done: closed again (by the edit of another request's message there,
// done first), it is opened again and the edit lands, and it is closed
// after; written in by a person (which would open it anyway), it is left
// open: it is in use again.
func TestEndInAThreadThatChangesBeforeTheEdit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		meanwhile func(f *discord.FakeDiscord, thread string)
		archived  bool // at the end
	}{
		{"closed again", (*discord.FakeDiscord).ArchiveThread, true},
		{"written in", (*discord.FakeDiscord).PostInThread, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, threadTarget)
			b.create(t, "/v1/questions", cleanupQuestion())
			thread := b.fake.WaitCalls(t, "thread", 1)[0].MessageID
			id := b.create(t, "/v1/questions", cleanupQuestion())
			b.fake.ArchiveThread(thread)
			// The first edit is refused (the thread is closed); the
			// second, after the opening, is held while the thread changes.
			edits := 0
			held, release := b.fake.Hold("edit", func(c discord.FakeCall) bool {
				edits++
				return edits == 2
			})
			cancelled := apptest.Go(b.URL(), http.MethodDelete, "/v1/questions/"+id, nil)
			select {
			case <-held:
			case <-time.After(10 * time.Second):
				t.Fatal("no edit after the thread was opened")
			}
			tc.meanwhile(b.fake, thread)
			release()
			if r := <-cancelled; r.Err != nil || r.Status != http.StatusOK {
				t.Fatalf("cancel: %d %v", r.Status, r.Err)
			}
			if edits := b.fake.Calls("edit"); len(edits) != 1 || !noControls(edits[0].Body) {
				t.Fatalf("edits that landed: %+v; want the message without controls", edits)
			}
			if got := b.fake.ThreadArchived(thread); got != tc.archived {
				t.Errorf("the thread archived at the end: %v; want %v", got, tc.archived)
			}
			if tc.archived {
				return
			}
			for _, c := range b.fake.AllCalls("modify channel") {
				if c.Body["archived"] == true {
					t.Errorf("the thread was asked to close: %+v", c.Body)
				}
			}
		})
	}
}

// TestPlanOfLinksIsPosted: a long plan full of markdown links (file
// references, as agents write them) is posted, its first part with the
// question and the rest below, every message within Discord's limits
// (the fake refuses what Discord refuses).
func TestPlanOfLinksIsPosted(t *testing.T) {
	b := start(t, defaultTarget)
	plan := strings.Repeat("1. edit [handler.go](internal/api/handler.go) and [the test](internal/api/handler_test.go)\n", 120)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "plan", "question": "Approve this plan?", "detail": plan,
		"intent":  map[string]any{"kind": "plan-review", "approve": "Approve"},
		"options": []any{map[string]any{"label": "Approve"}, map[string]any{"label": "Keep planning"}},
	}}})
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Fatalf("status %v", rec.M["status"])
	}
	if n := len(b.fake.Posted()); n < 2 {
		t.Errorf("%d messages posted; want the question and the rest of its plan", n)
	}
	if n := len(b.fake.AllCalls("create")) - len(b.fake.Calls("create")); n != 0 {
		t.Errorf("Discord refused %d of the creates", n)
	}
}

// TestThreadStartAppliedThenFailed: Discord starts the session's thread
// but answers 500; the retry is refused with 160004, "A thread has already
// been created for this message". The thread is the session's all the same
// (it shares the message's id), and the next request goes into it.
func TestThreadStartAppliedThenFailed(t *testing.T) {
	b := start(t, threadTarget)
	b.fake.FailNext("thread", discord.FakeFail{Status: http.StatusInternalServerError, Message: "500: Internal Server Error", Applied: true})
	b.create(t, "/v1/questions", cleanupQuestion())
	first := b.fake.WaitCalls(t, "create", 1)[0]
	// The create answers once its post, thread start included, is done.
	if tries := b.fake.AllCalls("thread"); len(tries) != 2 || tries[1].Status != http.StatusBadRequest {
		t.Fatalf("thread starts %+v; want the applied one's retry refused with Discord's 400 (160004)", tries)
	}
	b.create(t, "/v1/questions", cleanupQuestion())
	if next := b.fake.WaitCalls(t, "create", 2)[1]; next.Channel != first.MessageID {
		t.Errorf("the session's second request went to %s; want the thread %s started from its first message", next.Channel, first.MessageID)
	}
	if n := len(b.fake.AllCalls("thread")); n != 2 {
		t.Errorf("%d thread starts; want 2: the session has its thread", n)
	}
}

// A form of several questions sent with nothing chosen or written (Submit
// tapped too soon, on a phone) is refused, as a lone question's is: it
// would end the request for good with every question skipped.
func TestEmptyFormOfSeveralQuestionsIsRefused(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{
		map[string]any{"id": "db", "question": "Which database?", "options": []any{map[string]any{"label": "Postgres"}, map[string]any{"label": "MySQL"}}},
		map[string]any{"id": "region", "question": "Which region?", "options": []any{map[string]any{"label": "eu-west-1"}, map[string]any{"label": "us-east-1"}}},
	}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	modalID, _ := data(resp)["custom_id"].(string)
	resp = b.click(t, discord.Submit(msg, ada, modalID, discord.Fill(t, data(resp), map[string][]string{"q1o": {" "}})...))
	if !isEphemeral(resp) || !strings.Contains(content(resp), "Nothing was chosen, so nothing was saved") {
		t.Errorf("an empty form got type %d %q; want it refused, as a lone question's is", respType(resp), content(resp))
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("status %v, answer %s: the request was answered with nothing", rec.M["status"], rec.Raw("answer"))
	}
}

// A form covers the message on a phone: a question longer than a Label's
// description (100 characters, one line) is shown in full at the top of
// the form that answers it, as a Text Display.
func TestFormShowsALongQuestionInFull(t *testing.T) {
	b := start(t, defaultTarget)
	long := "The nightly backup of orders-db failed at 02:14 with ENOSPC on /var/lib/pg. " +
		"Before I retry, which volume should I move the WAL archive to, and should I keep the last 3 or the last 7 base backups?\n" +
		"Reply with the mount point and the count, e.g. /mnt/wal2, 7."
	shown := func(t *testing.T, resp map[string]any) {
		t.Helper()
		if respType(resp) != 9 {
			t.Fatalf("got %v, want a modal", resp)
		}
		comps, _ := data(resp)["components"].([]any)
		first, _ := comps[0].(map[string]any)
		text, _ := first["content"].(string)
		if first["type"] != float64(10) || !strings.Contains(text, "base backups?") || !strings.Contains(text, "/mnt/wal2, 7.") {
			t.Errorf("the form's first component is %v; want the question in full", first)
		}
	}
	t.Run("a lone free-text question", func(t *testing.T) {
		id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{"id": "wal", "question": long}}})
		msg := b.fake.WaitCalls(t, "create", 1)[0]
		shown(t, b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil)))
	})
	t.Run("several questions", func(t *testing.T) {
		id := b.create(t, "/v1/questions", map[string]any{"questions": []any{
			map[string]any{"id": "wal", "question": long},
			map[string]any{"id": "go", "question": "Retry now?", "options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}}},
		}})
		msg := b.fake.WaitCalls(t, "create", 2)[1]
		shown(t, b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil)))
	})
}

// A single-choice question whose options a form splits into two lists:
// the second says to choose in one list only, and a pick in both is
// refused in words that say so, with a button that opens the form again
// filled as it was sent (but for the two picks), for that person only;
// sent again with one pick, it answers.
func TestSplitSingleChoiceSaysOneList(t *testing.T) {
	b := start(t, defaultTarget)
	var opts []any
	for i := range 30 {
		opts = append(opts, map[string]any{"label": fmt.Sprintf("svc-%02d", i)})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": []any{
		map[string]any{"id": "svc", "header": "Service", "question": "Which service to roll back?", "options": opts},
		map[string]any{"id": "why", "question": "Why?"},
	}})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	raw, _ := json.Marshal(data(resp))
	if !strings.Contains(string(raw), "one option in all, in one list only") {
		t.Errorf("the form does not say to choose in one list: %s", raw)
	}
	form := data(resp)
	modalID, _ := form["custom_id"].(string)
	const why = "the deploy at 14:02 broke the checkout"
	resp = b.click(t, discord.Submit(msg, ada, modalID, discord.Fill(t, form, map[string][]string{
		"q0p0": {"3"}, "q0p1": {"27"}, "q1": {why}, "q0o": {"or the one after it"}})...))
	if c := content(resp); !isEphemeral(resp) || !strings.Contains(c, "Service takes one option, and 2 were chosen, one in each of its lists (svc-03 and svc-27): choose one, in one list only.") {
		t.Errorf("two picks told %q", c)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("status %v; want still pending", rec.M["status"])
	}
	fix := discord.Find(data(resp), "ab:draft:"+id+":")
	if fix == nil || fix["type"] != float64(2) {
		t.Fatalf("no button to open the form again: %v", resp)
	}
	told := discord.Reply(msg, data(resp))

	// Someone else's click (the message is ada's alone; a forged one) opens
	// the form empty: ada's draft is hers.
	resp = b.click(t, discord.Click(told, bob, fix["custom_id"].(string), nil))
	if in := discord.Find(data(resp), "q1"); respType(resp) != 9 || in == nil || in["value"] != nil {
		t.Errorf("bob's click got %v; want the form, empty", resp)
	}

	resp = b.click(t, discord.Click(told, ada, fix["custom_id"].(string), nil))
	if respType(resp) != 9 {
		t.Fatalf("Fix my answers… got %v; want the form", resp)
	}
	again := data(resp)
	if in := discord.Find(again, "q1"); in == nil || in["value"] != why {
		t.Errorf("the reason typed is not kept: %v", in)
	}
	if in := discord.Find(again, "q0o"); in == nil || in["value"] != "or the one after it" {
		t.Errorf("the other answer typed is not kept: %v", in)
	}
	for _, part := range []string{"q0p0", "q0p1"} {
		if in := discord.Find(again, part); in == nil || len(prefilledOptions(in)) != 0 {
			t.Errorf("%s comes back chosen: %v; want both lists cleared", part, in)
		}
	}
	if raw, _ := json.Marshal(again); !strings.Contains(string(raw), `"description":"You chose svc-03 and svc-27: choose one, in one list only."`) {
		t.Errorf("the form does not say what to fix beside the question: %s", raw)
	}
	// The form as sent again: one pick, the rest as it came back.
	resp = b.click(t, discord.Submit(told, ada, again["custom_id"].(string), discord.Fill(t, again, map[string][]string{"q0p1": {"27"}, "q0o": {""}})...))
	if respType(resp) == 4 {
		t.Fatalf("the fixed form got %q", content(resp))
	}
	// The form was opened from the note only ada sees, which said nothing
	// was saved: it now says what was, and its button is gone.
	if c := content(resp); respType(resp) != 7 || !noControls(data(resp)) || !strings.Contains(c, "Answered by ada · Service: svc-27") {
		t.Errorf("the fixed form was answered %v; want its note updated to the outcome, without its button", resp)
	}
	if edit := b.fake.WaitCalls(t, "edit", 1)[0]; edit.MessageID != msg.MessageID || !noControls(edit.Body) {
		t.Errorf("the request's message was edited to %v; want it without controls", edit)
	}
	want := `{"answers":[{"id":"svc","selected":["svc-27"]},{"id":"why","selected":[],"custom":"` + why + `"}]}`
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != want {
		t.Errorf("answer %s\nwant   %s", got, want)
	}
	if by := b.get(t, "/v1/questions", id).M["answered_by"]; !strings.Contains(fmt.Sprint(by), "ada") {
		t.Errorf("answered by %v; want ada", by)
	}
	// A note of an earlier refusal, its button tapped once the request is
	// over: the note says so in its place and loses the button.
	resp = b.click(t, discord.Click(told, ada, fix["custom_id"].(string), nil))
	if respType(resp) != 7 || !noControls(data(resp)) || !strings.HasPrefix(content(resp), "Already answered by ada") {
		t.Errorf("Fix my answers… after the end got %v; want its note updated to say the request is over, without its button", resp)
	}
}

// prefilledOptions are the values of a select's or group's options
// chosen by default.
func prefilledOptions(c map[string]any) []string {
	var out []string
	opts, _ := c["options"].([]any)
	for _, o := range opts {
		if m, _ := o.(map[string]any); m["default"] == true {
			out = append(out, fmt.Sprint(m["value"]))
		}
	}
	return out
}

// Discord takes UPDATE_MESSAGE and DEFERRED_UPDATE_MESSAGE only for an
// interaction on a message: a command, or a form that no button opened,
// gets a message only its person sees (send checks every response with
// the fake's Respond).
func TestResponsesWithoutAMessage(t *testing.T) {
	b := start(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	lone := func(in map[string]any) map[string]any { delete(in, "message"); return in }
	command := lone(discord.Click(msg, ada, "", nil))
	command["type"], command["data"] = 2, map[string]any{"id": "1300000000000000077", "name": "ask", "type": 1}
	for name, in := range map[string]map[string]any{
		"a command":    command,
		"another form": lone(discord.Submit(msg, ada, "feedback", discord.TextRow("t", "hi"))),
	} {
		t.Run(name, func(t *testing.T) {
			if got := b.click(t, in); !isEphemeral(got) || content(got) == "" {
				t.Errorf("answered %v, want a message only the person sees", got)
			}
		})
	}
	// One of askbridge's forms, sent without the message it was opened
	// from (Discord never does: they all open from its buttons), answers,
	// and says so.
	got := b.click(t, lone(discord.Submit(msg, ada, "ab:other:"+id+":0:0", discord.TextRow("q0o", "keep the logs"))))
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("the form's answer was not taken: %v", rec.M)
	}
	if !isEphemeral(got) || !strings.HasPrefix(content(got), "Answered by ada") {
		t.Errorf("answered %v, want the outcome for the person alone", got)
	}
}

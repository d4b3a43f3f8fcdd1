package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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

// values returns the value of every button of m by action id.
func values(m message) map[string]string {
	out := map[string]string{}
	for _, bl := range m.blocks {
		if a, ok := bl.(*slackapi.ActionBlock); ok {
			for _, el := range a.Elements.ElementSet {
				if b, ok := el.(*slackapi.ButtonBlockElement); ok {
					out[b.ActionID] = b.Value
				}
			}
		}
	}
	return out
}

func TestCarry(t *testing.T) {
	ref := func(verb, id string, o int) string { return surface.Ref{Verb: verb, ID: id, O: o}.String() }

	rec := benchRecord()
	rec.Hash = "5f0c2a9e"
	m := render(rec, "", true)
	m.carry(rec, "default/0")
	got := values(m)
	for o, opt := range rec.Questions.Questions[0].Options {
		c, ok := parseCarried(surface.VerbPick, got[ref(surface.VerbPick, rec.ID, o)])
		if !ok || c.hash != rec.Hash || c.target != "default/0" || c.qid != "deploy" || c.label != opt.Label {
			t.Errorf("option %d carries %+v (%v); want its label %q, question deploy, target default/0, hash %s", o, c, ok, opt.Label, rec.Hash)
		}
		res := c.resolution(surface.VerbPick)
		norm, err := rec.Questions.Normalize(*res.Answer)
		if err != nil || !slices.EqualFunc(norm.Answers, res.Answer.Answers, func(a, b seam.AnswerItem) bool {
			return a.ID == b.ID && a.Custom == b.Custom && slices.Equal(a.Selected, b.Selected)
		}) {
			t.Errorf("option %d resolves to %+v; the request would normalise it to %+v (%v)", o, res.Answer, norm, err)
		}
	}
	if c, ok := parseCarried(surface.VerbDismiss, got[ref(surface.VerbDismiss, rec.ID, 0)]); !ok || c.target != "default/0" || c.qid != "" {
		t.Errorf("Dismiss carries %+v (%v)", c, ok)
	}
	if v := got[ref(surface.VerbOther, rec.ID, 0)]; strings.HasPrefix(v, "[") {
		t.Errorf("Other… carries %q; its click opens a modal on the request as read", v)
	}

	appr := &pending.Record{ID: "apprx2x9m4wz3hy6", Kind: seam.KindApproval, Status: seam.StatusPending, Hash: "77aa",
		Approval: &seam.Approval{ToolName: "deploy", Reason: "ship it"}}
	m = render(appr, "", true)
	m.carry(appr, "ops/1")
	got = values(m)
	if c, ok := parseCarried(surface.VerbAllow, got[ref(surface.VerbAllow, appr.ID, 0)]); !ok || c.target != "ops/1" {
		t.Errorf("Allow once carries %+v (%v)", c, ok)
	}
	if v := got[ref(surface.VerbReject, appr.ID, 0)]; strings.HasPrefix(v, "[") {
		t.Errorf("Reject carries %q; its click opens a modal", v)
	}

	// Options whose pick is not the whole answer carry nothing.
	for name, change := range map[string]func(r *pending.Record){
		"multi-select": func(r *pending.Record) { r.Questions.Questions[0].MultiSelect = true },
		"typed field":  func(r *pending.Record) { r.Questions.Questions[0].Input = &seam.Input{Type: "text"} },
		"two questions": func(r *pending.Record) {
			r.Questions.Questions = append(r.Questions.Questions, seam.Question{ID: "why", Question: "Why?", Options: []seam.Option{{Label: "A"}, {Label: "B"}}})
		},
	} {
		// Rendered as a one-tap question, so that the buttons are there,
		// and carried for the request as changed.
		rec := benchRecord()
		rec.Hash = "5f0c2a9e"
		m := render(rec, "", true)
		change(rec)
		m.carry(rec, "default/0")
		picks := 0
		for id, v := range values(m) {
			if r, _ := surface.ParseRef(id); r.Verb == surface.VerbPick {
				picks++
				if strings.HasPrefix(v, "[") {
					t.Errorf("%s: %s carries %q", name, id, v)
				}
			}
		}
		if picks == 0 {
			t.Fatalf("%s: no option buttons to check", name)
		}
	}

	// A value over Slack's limit is not set; nor one without a hash.
	rec = benchRecord()
	m = render(rec, "", true)
	before := values(m)
	m.carry(rec, "default/0")
	if got := values(m); !maps.Equal(got, before) {
		t.Errorf("a record without a hash got values: %v", got)
	}
	rec.Hash = "5f0c2a9e"
	m.carry(rec, strings.Repeat("r", maxButtonValue))
	if got := values(m); !maps.Equal(got, before) {
		t.Errorf("values too long for Slack were set: %v", got)
	}

	for _, v := range []string{"", "1", "[", `["5f0c"]`, `["","default/0","q","l"]`, `["5f0c",""]`, `["5f0c","default/0","q"]`, `["5f0c","default/0"]`, `[1,2]`} {
		if c, ok := parseCarried(surface.VerbPick, v); ok {
			t.Errorf("parseCarried(pick, %q) = %+v; want nothing", v, c)
		}
	}
	if _, ok := parseCarried(surface.VerbAllow, `["5f0c","default/0","q","label"]`); ok {
		t.Error("Allow once took an option's value")
	}
}

// commands records the names of the Redis commands it sees while on.
type commands struct {
	mu    sync.Mutex
	on    bool
	names []string
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		if c.on {
			c.names = append(c.names, cmd.Name())
		}
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// during returns the commands f sends.
func (c *commands) during(f func()) []string {
	c.mu.Lock()
	c.on, c.names = true, nil
	c.mu.Unlock()
	f()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.names
}

// TestClickResolvesInOneRoundTrip: a button that carries its answer is
// resolved by the resolve script alone, with what the person is told
// unchanged; one whose target is no longer configured is resolved as
// before, from the request read first.
func TestClickResolvesInOneRoundTrip(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	cmds := &commands{}
	s, store, _ := newSurface(t, fake, cmds)
	ctx := context.Background()
	ops := dispatch.Target{Key: "ops/0", Config: config.Target{Slack: s.targets["ops/0"]}}
	question := func(call string, labels ...string) pending.NewRequest {
		q := seam.Question{ID: "q", Question: "Go?"}
		for _, l := range labels {
			q.Options = append(q.Options, seam.Option{Label: l})
		}
		return pending.NewRequest{Kind: seam.KindQuestion, Route: "default", Client: "agent", ToolCallID: call,
			Questions: &seam.Questions{Questions: []seam.Question{q}}}
	}
	approval := pending.NewRequest{Kind: seam.KindApproval, Route: "default", Approval: &seam.Approval{ToolName: "deploy", Reason: "ship it"}}
	// post creates and posts r to t, recording the post unless lost.
	post := func(t *testing.T, r pending.NewRequest, to dispatch.Target, lost bool) (*pending.Record, slacktest.FakeCall) {
		t.Helper()
		rec, _, err := store.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		n := len(fake.Calls("chat.postMessage"))
		posts, err := s.Post(ctx, rec, to)
		if err != nil {
			t.Fatal(err)
		}
		posts[0].Target = to.Key
		if !lost {
			if _, err := store.AddPost(ctx, rec.ID, posts[0]); err != nil {
				t.Fatal(err)
			}
		}
		return rec, fake.Calls("chat.postMessage")[n]
	}
	// click sends payload as Slack does and returns the Redis commands it
	// took and what the person was told, once its work is done.
	click := func(t *testing.T, payload map[string]any) (sent []string, told []string) {
		t.Helper()
		h := s.Interactions(store)
		body := slacktest.FormBody(payload)
		req := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(body))
		req.Header = slacktest.Sign("s", time.Now(), body)
		w := httptest.NewRecorder()
		n := len(fake.Calls(""))
		sent = cmds.during(func() {
			h.ServeHTTP(w, req)
			h.work.Drain()
		})
		if w.Code != http.StatusOK {
			t.Fatalf("interaction: %d %s", w.Code, w.Body)
		}
		for _, c := range fake.Calls("")[n:] {
			if _, text, ok := c.Ephemeral(); ok {
				told = append(told, text)
			}
		}
		return sent, told
	}
	ended := func(t *testing.T, id string) *pending.Record {
		t.Helper()
		rec, err := store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	answerOf := func(rec *pending.Record) string {
		b, _ := json.Marshal(rec.Answer)
		return string(b)
	}
	oneTrip := func(t *testing.T, sent []string) {
		t.Helper()
		if slices.Contains(sent, "hgetall") || !slices.Contains(sent, "evalsha") {
			t.Errorf("the click sent %v; want the resolve script and no read", sent)
		}
	}
	ada, eve := slacktest.SlackUser("UADA", "ada"), slacktest.SlackUser("UEVE", "eve")
	// retired checks that msg, whose request the store no longer has, was
	// edited to say so, its text kept and its controls gone.
	retired := func(t *testing.T, msg slacktest.FakeCall) {
		t.Helper()
		for _, u := range fake.Calls("chat.update") {
			if u.Field("ts") == msg.TS && u.Field("channel") == msg.Field("channel") {
				live := false
				for _, b := range u.Blocks() {
					live = live || b["type"] == "actions" || b["type"] == "input"
				}
				if len(u.Blocks()) == 0 || live || !strings.Contains(u.Text(), surface.MsgGone) || !strings.Contains(u.Text(), msg.Field("text")) {
					t.Errorf("the message was edited to %s", u.Body)
				}
				return
			}
		}
		t.Errorf("the message of a request that no longer exists was not edited; it keeps live buttons")
	}

	t.Run("an option", func(t *testing.T) {
		rec, msg := post(t, question("", "Yes", "No"), target, false)
		sent, told := click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:1", nil, nil))
		oneTrip(t, sent)
		if got := ended(t, rec.ID); answerOf(got) != `{"answers":[{"id":"q","selected":["No"]}]}` || got.ResolvedBy.UserID != "UADA" || len(told) != 0 {
			t.Errorf("answer %s by %+v, told %q", answerOf(got), got.ResolvedBy, told)
		}
		// The same click delivered again changes nothing and tells nothing;
		// another option is told it is over.
		if sent, told := click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:1", nil, nil)); len(told) != 0 || slices.Contains(sent, "hgetall") {
			t.Errorf("the click delivered again sent %v and told %q; want one round trip, nothing told", sent, told)
		}
		if _, told := click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:0", nil, nil)); len(told) != 1 || !strings.Contains(told[0], "Already answered by ada") {
			t.Errorf("a late click was told %q; want that ada answered", told)
		}
	})

	t.Run("allow once", func(t *testing.T) {
		rec, msg := post(t, approval, target, false)
		sent, _ := click(t, slacktest.BlockActions(t, msg, ada, "ab:allow:"+rec.ID, nil, nil))
		oneTrip(t, sent)
		if got := ended(t, rec.ID); got.Decision == nil || got.Decision.Outcome != seam.OutcomeAllowedOnce {
			t.Errorf("decision %+v; want allowed once", got.Decision)
		}
	})

	t.Run("dismiss", func(t *testing.T) {
		rec, msg := post(t, question("", "Yes", "No"), target, false)
		sent, _ := click(t, slacktest.BlockActions(t, msg, ada, "ab:dismiss:"+rec.ID, nil, nil))
		oneTrip(t, sent)
		if got := ended(t, rec.ID); got.Status != seam.StatusDismissed {
			t.Errorf("status %s; want dismissed", got.Status)
		}
	})

	// Refused: nothing is resolved, the person is told they can't answer.
	// A value names its target by key ("route/index"); edited routes may
	// give the key to another target, in another channel.
	for _, tc := range []struct {
		name     string
		who      map[string]any
		value    func(string) (string, bool) // the click's value from the posted one; false: none
		wantRead bool                        // the request read first; else nothing sent to Redis
	}{
		{"not a responder", eve, func(v string) (string, bool) { return v, true }, false},
		{"not a responder, on a message without values", eve, func(string) (string, bool) { return "", false }, true},
		{"a target configured for another channel", ada, func(v string) (string, bool) {
			return strings.Replace(v, ops.Key, target.Key, 1), true // default/0: C1, anyone
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, msg := post(t, question("", "Yes", "No"), ops, false)
			p := slacktest.BlockActions(t, msg, tc.who, "ab:pick:"+rec.ID+":0:0", nil, nil)
			action := actionOf(p)
			if v, ok := tc.value(action["value"].(string)); ok {
				action["value"] = v
			} else {
				delete(action, "value")
			}
			sent, told := click(t, p)
			asWanted := len(sent) == 0
			if tc.wantRead {
				asWanted = slices.Contains(sent, "hgetall") && !slices.Contains(sent, "evalsha")
			}
			if !asWanted || len(told) != 1 || told[0] != surface.MsgCantAnswer {
				t.Errorf("the click sent %v and was told %q; want %s and %q", sent, told,
					map[bool]string{true: "the request read, nothing resolved", false: "nothing sent"}[tc.wantRead], surface.MsgCantAnswer)
			}
			if got := ended(t, rec.ID); got.Status != seam.StatusPending {
				t.Errorf("status %s; want pending", got.Status)
			}
		})
	}

	t.Run("a target no longer configured", func(t *testing.T) {
		rec, msg := post(t, question("", "Yes", "No"), target, false)
		p := slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:0", nil, nil)
		action := actionOf(p)
		action["value"] = strings.Replace(action["value"].(string), target.Key, "gone/3", 1)
		if sent, _ := click(t, p); !slices.Contains(sent, "hgetall") {
			t.Errorf("the click sent %v; want the request read first", sent)
		}
		if a := answerOf(ended(t, rec.ID)); a != `{"answers":[{"id":"q","selected":["Yes"]}]}` {
			t.Errorf("answer %s", a)
		}
	})

	// A create whose post's reply was lost is discarded, and the agent's
	// retry creates the request again under the same id, here asking
	// something else; the first message is still in the channel, live.
	t.Run("a request replaced under its tool_call_id", func(t *testing.T) {
		old, msg := post(t, question("call-1", "Yes", "No"), target, true)
		if ok, err := store.Discard(ctx, old.ID); !ok || err != nil {
			t.Fatalf("Discard: %v, %v", ok, err)
		}
		again, _ := post(t, question("call-1", "Ship", "Hold"), target, false)
		if again.ID != old.ID {
			t.Fatalf("created again as %s; want %s", again.ID, old.ID)
		}
		_, told := click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+old.ID+":0:1", nil, nil))
		if len(told) != 1 || told[0] != surface.MsgGone {
			t.Errorf("a click on the first message was told %q; want %q", told, surface.MsgGone)
		}
		if got := ended(t, again.ID); got.Status != seam.StatusPending {
			t.Errorf("the request asking something else is %s (%s); want it pending", got.Status, answerOf(got))
		}
		retired(t, msg)
	})

	// A message its request does not list (its recording failed, or its
	// post's reply was lost while another target took the request): ending
	// the request edits only the messages it lists, so a click on this one,
	// whether it answers or comes late, edits it.
	edited := func(t *testing.T, msg slacktest.FakeCall, want string) {
		t.Helper()
		for _, u := range fake.Calls("chat.update") {
			if u.Field("ts") != msg.TS || u.Field("channel") != msg.Field("channel") {
				continue
			}
			for _, b := range u.Blocks() {
				if b["type"] == "actions" {
					t.Errorf("the message was edited with live controls: %s", u.Body)
				}
			}
			if !strings.Contains(u.Text(), want) {
				t.Errorf("the message was edited to %s; want it to say %q", u.Body, want)
			}
			return
		}
		t.Errorf("a message its request does not list was not edited; it keeps live buttons")
	}
	// Its create is over: the posting lease has passed since it began.
	later := func(t *testing.T) {
		now := s.now
		s.now = func() time.Time { return time.Now().Add(pending.PostingLease) }
		t.Cleanup(func() { s.now = now })
	}
	t.Run("an unrecorded message, answered", func(t *testing.T) {
		later(t)
		rec, msg := post(t, question("", "Yes", "No"), target, true)
		click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:0", nil, nil))
		if got := ended(t, rec.ID); got.Status != seam.StatusAnswered {
			t.Fatalf("status %s; want answered", got.Status)
		}
		edited(t, msg, "Answered by ada")
	})
	t.Run("an unrecorded message, clicked late", func(t *testing.T) {
		later(t)
		rec, msg := post(t, question("", "Yes", "No"), target, true)
		if _, err := store.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
			t.Fatal(err)
		}
		_, told := click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:0", nil, nil))
		if len(told) != 1 {
			t.Errorf("the late click was told %q; want one notice", told)
		}
		edited(t, msg, "Cancelled")
	})

	t.Run("an unrecorded message of a request whose create may be under way", func(t *testing.T) {
		rec, msg := post(t, question("", "Yes", "No"), target, true)
		n := len(fake.Calls("chat.update"))
		click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:0", nil, nil))
		if got := len(fake.Calls("chat.update")) - n; got != 0 {
			t.Errorf("%d edits; want none: the replica recording the post edits it", got)
		}
	})

	// The same through a control that carries no answer of its own: a
	// select, the multi-select's Submit, Answer… (which opens a modal).
	// Their clicks read the request; what their places mean is the first
	// request's, which the actions block's block_id tells apart.
	for i, tc := range []struct {
		name   string
		first  func(*seam.Question)
		action string // the clicked control's action_id prefix, after "ab:"
		with   func(msg slacktest.FakeCall) (with, state map[string]any)
	}{
		{"a select", func(q *seam.Question) {}, "select:", func(slacktest.FakeCall) (map[string]any, map[string]any) {
			return map[string]any{"selected_option": map[string]any{"value": "5", "text": map[string]any{"type": "plain_text", "text": "f"}}}, nil
		}},
		{"a multi-select's Submit", func(q *seam.Question) { q.MultiSelect = true }, "submit:", func(msg slacktest.FakeCall) (map[string]any, map[string]any) {
			boxes, block := msg.Action("ab:multi:")
			return nil, map[string]any{block: map[string]any{boxes["action_id"].(string): map[string]any{
				"type": "checkboxes", "selected_options": []any{map[string]any{"value": "1"}}}}}
		}},
		{"Answer…", func(q *seam.Question) { q.Options = nil }, "answer:", func(slacktest.FakeCall) (map[string]any, map[string]any) { return nil, nil }},
	} {
		t.Run("a request replaced under its tool_call_id, through "+tc.name, func(t *testing.T) {
			call := fmt.Sprintf("call-r%d", i)
			first := question(call, "a", "b", "c", "d", "e", "f")
			tc.first(&first.Questions.Questions[0])
			old, msg := post(t, first, target, true)
			if ok, err := store.Discard(ctx, old.ID); !ok || err != nil {
				t.Fatalf("Discard: %v, %v", ok, err)
			}
			again, _ := post(t, question(call, "drop a", "drop b", "drop c", "drop d", "drop e", "DROP PROD"), target, false)
			if again.ID != old.ID {
				t.Fatalf("created again as %s; want %s", again.ID, old.ID)
			}
			modals := len(fake.Calls("views.open"))
			with, state := tc.with(msg)
			_, told := click(t, slacktest.BlockActions(t, msg, ada, "ab:"+tc.action+old.ID, with, state))
			if len(told) != 1 || told[0] != surface.MsgGone {
				t.Errorf("a click on the first message was told %q; want %q", told, surface.MsgGone)
			}
			if got := ended(t, again.ID); got.Status != seam.StatusPending {
				t.Errorf("the request asking something else is %s (%s); want it pending", got.Status, answerOf(got))
			}
			if n := len(fake.Calls("views.open")) - modals; n != 0 {
				t.Errorf("%d modals opened for the request asking something else", n)
			}
			retired(t, msg)
		})
	}

	// The same, on a message posted before this version: the click reads
	// the request first and finds none.
	t.Run("a discarded request, on a message without values", func(t *testing.T) {
		rec, msg := post(t, question("", "Yes", "No"), target, true)
		if ok, err := store.Discard(ctx, rec.ID); !ok || err != nil {
			t.Fatalf("Discard: %v, %v", ok, err)
		}
		p := slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:1", nil, nil)
		delete(actionOf(p), "value")
		if _, told := click(t, p); len(told) != 1 || told[0] != surface.MsgGone {
			t.Errorf("the click was told %q; want %q", told, surface.MsgGone)
		}
		retired(t, msg)
	})
}

// actionOf is the clicked action of a block_actions payload.
func actionOf(payload map[string]any) map[string]any {
	return payload["actions"].([]any)[0].(map[string]any)
}

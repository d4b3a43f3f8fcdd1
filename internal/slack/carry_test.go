package slack

import (
	"context"
	"encoding/json"
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
	created := time.UnixMilli(1700000000123)
	ref := func(verb, id string, o int) string { return surface.Ref{Verb: verb, ID: id, O: o}.String() }

	rec := benchRecord()
	rec.CreatedAt = created
	m := render(rec, "", true)
	m.carry(rec, "default/0")
	got := values(m)
	for o, opt := range rec.Questions.Questions[0].Options {
		c, ok := parseCarried(surface.VerbPick, got[ref(surface.VerbPick, rec.ID, o)])
		if !ok || !c.created.Equal(created) || c.target != "default/0" || c.qid != "deploy" || c.label != opt.Label {
			t.Errorf("option %d carries %+v (%v); want its label %q, question deploy, target default/0, created %v", o, c, ok, opt.Label, created)
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

	appr := &pending.Record{ID: "apprx2x9m4wz3hy6", Kind: seam.KindApproval, Status: seam.StatusPending, CreatedAt: created,
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
	for name, change := range map[string]func(q *seam.Question){
		"multi-select": func(q *seam.Question) { q.MultiSelect = true },
		"typed field":  func(q *seam.Question) { q.Input = &seam.Input{Type: "text"} },
	} {
		rec := benchRecord()
		change(&rec.Questions.Questions[0])
		m := render(rec, "", true)
		m.carry(rec, "default/0")
		for id, v := range values(m) {
			if r, _ := surface.ParseRef(id); r.Verb == surface.VerbPick && strings.HasPrefix(v, "[") {
				t.Errorf("%s: %s carries %q", name, id, v)
			}
		}
	}

	// A value over Slack's limit is not set.
	rec = benchRecord()
	m = render(rec, "", true)
	before := values(m)
	m.carry(rec, strings.Repeat("r", maxButtonValue))
	if got := values(m); !maps.Equal(got, before) {
		t.Errorf("values too long for Slack were set: %v", got)
	}

	for _, v := range []string{"", "1", "[", `["1700000000123"]`, `["x","default/0"]`, `["-5","default/0"]`, `["1700000000123",""]`, `["1700000000123","default/0","q"]`, `[1,2]`} {
		if c, ok := parseCarried(surface.VerbPick, v); ok {
			t.Errorf("parseCarried(pick, %q) = %+v; want nothing", v, c)
		}
	}
	if _, ok := parseCarried(surface.VerbAllow, `["1700000000123","default/0","q","label"]`); ok {
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
// resolved by the resolve script alone; one that cannot be trusted to (a
// target no longer configured, a request since created again under its
// id) is resolved as before, from the request read first.
func TestClickResolvesInOneRoundTrip(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	cmds := &commands{}
	s, store, _ := newSurface(t, fake, cmds)
	ctx := context.Background()
	nr := func(call string, labels ...string) pending.NewRequest {
		q := seam.Question{ID: "q", Question: "Go?"}
		for _, l := range labels {
			q.Options = append(q.Options, seam.Option{Label: l})
		}
		return pending.NewRequest{Kind: seam.KindQuestion, Route: "default", Client: "agent", ToolCallID: call,
			Questions: &seam.Questions{Questions: []seam.Question{q}}}
	}
	// post creates and posts r, recording the post unless lost.
	post := func(t *testing.T, r pending.NewRequest, lost bool) (*pending.Record, slacktest.FakeCall) {
		rec, _, err := store.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		n := len(fake.Calls("chat.postMessage"))
		posts, err := s.Post(ctx, rec, target)
		if err != nil {
			t.Fatal(err)
		}
		posts[0].Target = target.Key
		if !lost {
			if _, err := store.AddPost(ctx, rec.ID, posts[0]); err != nil {
				t.Fatal(err)
			}
		}
		return rec, fake.Calls("chat.postMessage")[n]
	}
	// click sends payload as Slack does and returns the Redis commands it
	// took, once its work is done.
	click := func(t *testing.T, payload map[string]any) []string {
		h := s.Interactions(store)
		body := slacktest.FormBody(payload)
		req := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(body))
		req.Header = slacktest.Sign("s", time.Now(), body)
		w := httptest.NewRecorder()
		return cmds.during(func() {
			h.ServeHTTP(w, req)
			h.work.Drain()
			if w.Code != http.StatusOK {
				t.Fatalf("interaction: %d %s", w.Code, w.Body)
			}
		})
	}
	answer := func(t *testing.T, id string) string {
		rec, err := store.Get(ctx, id)
		if err != nil || rec.Answer == nil {
			t.Fatalf("request %s: %+v, %v; want it answered", id, rec, err)
		}
		b, _ := json.Marshal(rec.Answer)
		return string(b)
	}
	user := slacktest.SlackUser("UADA", "ada")

	t.Run("carried", func(t *testing.T) {
		rec, msg := post(t, nr("", "Yes", "No"), false)
		got := click(t, slacktest.BlockActions(t, msg, user, "ab:pick:"+rec.ID+":0:1", nil, nil))
		if slices.Contains(got, "hgetall") || !slices.Contains(got, "evalsha") {
			t.Errorf("the click sent %v; want the resolve script and no read", got)
		}
		if a := answer(t, rec.ID); a != `{"answers":[{"id":"q","selected":["No"]}]}` {
			t.Errorf("answer %s", a)
		}
	})

	t.Run("a target no longer configured", func(t *testing.T) {
		rec, msg := post(t, nr("", "Yes", "No"), false)
		p := slacktest.BlockActions(t, msg, user, "ab:pick:"+rec.ID+":0:0", nil, nil)
		action := p["actions"].([]any)[0].(map[string]any)
		action["value"] = strings.Replace(action["value"].(string), target.Key, "gone/3", 1)
		if got := click(t, p); !slices.Contains(got, "hgetall") {
			t.Errorf("the click sent %v; want the request read first", got)
		}
		if a := answer(t, rec.ID); a != `{"answers":[{"id":"q","selected":["Yes"]}]}` {
			t.Errorf("answer %s", a)
		}
	})

	// A create whose post's reply was lost is discarded, and the agent's
	// retry creates the request again under the same id; the first message
	// is still in the channel, live.
	t.Run("a request created again under its id", func(t *testing.T) {
		old, msg := post(t, nr("call-1", "Yes", "No"), true)
		again := old
		for again.CreatedAt.Equal(old.CreatedAt) { // until a later millisecond
			if ok, err := store.Discard(ctx, again.ID); !ok || err != nil {
				t.Fatalf("Discard: %v, %v", ok, err)
			}
			again, _ = post(t, nr("call-1", "Ship", "Hold"), true)
		}
		if again.ID != old.ID {
			t.Fatalf("created again as %s; want %s", again.ID, old.ID)
		}
		got := click(t, slacktest.BlockActions(t, msg, user, "ab:pick:"+old.ID+":0:1", nil, nil))
		if !slices.Contains(got, "hgetall") {
			t.Errorf("the click sent %v; want the request read once the resolve found another", got)
		}
		// As before: the option's place in the request as it is now.
		if a := answer(t, again.ID); a != `{"answers":[{"id":"q","selected":["Hold"]}]}` {
			t.Errorf("answer %s", a)
		}
	})
}

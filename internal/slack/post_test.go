package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

const testToken = "xoxb-test-SECRET"

// newSurface builds a surface on fake and an embedded Redis, with a retry
// policy that records its waits instead of sleeping. hooks see the
// surface's Redis commands.
func newSurface(t *testing.T, fake *slacktest.FakeSlack, hooks ...redis.Hook) (*Surface, *pending.Store, *[]time.Duration) {
	t.Helper()
	store := embeddedStore(t, hooks...)
	var waits []time.Duration
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{
			{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}},
			{Name: "ops", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C2", Responders: config.SlackResponders{Users: []string{"UOPS"}}}}}},
			{Name: "oncall", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C3", Responders: config.SlackResponders{Groups: []string{"SONCALL"}}}}}},
		},
	}
	s, err := New(cfg, Options{Store: store, Retry: surface.Retry{Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return s, store, &waits
}

// embeddedStore is a store on an embedded Redis of its own, whose
// commands hooks see.
func embeddedStore(t *testing.T, hooks ...redis.Hook) *pending.Store {
	t.Helper()
	emb, err := pending.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	rdb, err := pending.Dial(emb.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.(*redis.Client).Close() })
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	return pending.New(rdb, pending.Options{})
}

func createQuestion(t *testing.T, store *pending.Store) *pending.Record {
	t.Helper()
	rec, _, err := store.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "q", Question: "Go?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

var target = dispatch.Target{Key: "default/0", Config: config.Target{Slack: &config.SlackTarget{Channel: "C1"}}}

func TestPostThroughARateLimitStorm(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, waits := newSurface(t, fake)
	fake.FailNext("chat.postMessage",
		slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "3"},
		slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "1"},
		slacktest.FakeFail{Status: http.StatusServiceUnavailable},
		slacktest.FakeFail{Error: "ratelimited"},
	)
	posts, err := s.Post(context.Background(), createQuestion(t, store), target)
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	calls := fake.Calls("chat.postMessage")
	ok := 0
	for _, c := range calls {
		if c.OK {
			ok++
		}
	}
	if len(calls) != 5 || ok != 1 {
		t.Errorf("%d calls, %d of them posted; want 5 calls posting exactly once", len(calls), ok)
	}
	if len(posts) != 1 || posts[0].MessageID != calls[4].TS || posts[0].Channel != "C1" || posts[0].Surface != "slack" {
		t.Errorf("posts %+v", posts)
	}
	want := []time.Duration{3 * time.Second, time.Second, 500 * time.Millisecond, time.Second}
	if len(*waits) != len(want) {
		t.Fatalf("waits %v, want %v", *waits, want)
	}
	for i := range want {
		if (*waits)[i] != want[i] {
			t.Errorf("wait %d: %v, want %v (Retry-After, then backoff)", i, (*waits)[i], want[i])
		}
	}
}

func TestPostFailsFastAndBounded(t *testing.T) {
	t.Run("ok:false", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, testToken)
		s, store, waits := newSurface(t, fake)
		fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "not_in_channel"})
		_, err := s.Post(context.Background(), createQuestion(t, store), target)
		if err == nil || !strings.Contains(err.Error(), "not_in_channel") {
			t.Fatalf("Post: %v", err)
		}
		if n := len(fake.Calls("chat.postMessage")); n != 1 || len(*waits) != 0 {
			t.Errorf("%d calls, waits %v: an ok:false error was retried", n, *waits)
		}
	})
	t.Run("4xx", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, testToken)
		s, store, _ := newSurface(t, fake)
		fake.FailNext("chat.postMessage", slacktest.FakeFail{Status: http.StatusBadRequest})
		if _, err := s.Post(context.Background(), createQuestion(t, store), target); err == nil {
			t.Fatal("Post succeeded")
		}
		if n := len(fake.Calls("chat.postMessage")); n != 1 {
			t.Errorf("%d calls: a 400 was retried", n)
		}
	})
	t.Run("endless 5xx", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, testToken)
		s, store, _ := newSurface(t, fake)
		var fails []slacktest.FakeFail
		for range 10 {
			fails = append(fails, slacktest.FakeFail{Status: http.StatusBadGateway})
		}
		fake.FailNext("chat.postMessage", fails...)
		_, err := s.Post(context.Background(), createQuestion(t, store), target)
		if err == nil {
			t.Fatal("Post succeeded")
		}
		if n := len(fake.Calls("chat.postMessage")); n != 5 {
			t.Errorf("%d calls, want the 5 attempts of the policy", n)
		}
	})
	t.Run("unreachable, retried", func(t *testing.T) {
		// The error reaches the log and, in NO_PROVIDER, the agent:
		// after retries too, without the API URL's query.
		store := embeddedStore(t)
		cfg := &config.Config{Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: "http://127.0.0.1:1/api/?key=SECRETQUERY&m="}}
		s, err := New(cfg, Options{Store: store, Retry: surface.Retry{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Post(context.Background(), createQuestion(t, store), target)
		if err == nil || !strings.Contains(err.Error(), "attempts") || strings.Contains(err.Error(), "SECRETQUERY") {
			t.Fatalf("Post: %v; want a retried failure without the URL's query", err)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, "xoxb-another")
		s, store, _ := newSurface(t, fake)
		_, err := s.Post(context.Background(), createQuestion(t, store), target)
		if err == nil || strings.Contains(err.Error(), testToken) {
			t.Fatalf("Post: %v", err)
		}
		// The code alone leaves the operator to guess which key is wrong.
		const fix = "invalid_auth (slack.bot_token: Slack knows no such token; copy the Bot User OAuth Token (xoxb-…) again from OAuth & Permissions"
		if !strings.Contains(err.Error(), fix) {
			t.Errorf("error %q does not say %q", err, fix)
		}
	})
}

func TestFinishRemovesControls(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, _ := newSurface(t, fake)
	rec := createQuestion(t, store)
	posts, err := s.Post(context.Background(), rec, target)
	if err != nil {
		t.Fatal(err)
	}
	ended, err := store.Resolve(context.Background(), rec.ID, pending.Resolution{Status: seam.StatusExpired})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(context.Background(), ended, posts[0]); err != nil {
		t.Fatal(err)
	}
	upd := fake.Calls("chat.update")
	if len(upd) != 1 || upd[0].Field("ts") != posts[0].MessageID {
		t.Fatalf("updates %+v", upd)
	}
	for _, b := range upd[0].Blocks() {
		if b["type"] == "actions" {
			t.Errorf("the expired message keeps its controls")
		}
	}
	if !strings.Contains(upd[0].Text(), "Expired unanswered") || !strings.Contains(upd[0].Text(), "Go?") {
		t.Errorf("the expired message:\n%s", upd[0].Text())
	}
}

// A message Slack refused whole, posted short, is recorded so, and its
// edits keep that shorter text, its thread going on from it: short, then
// short with a brief status line. A post recorded before posts said so is
// edited as before: whole, whole with a brief status line, then short.
func TestFinishKeepsTheShortLayout(t *testing.T) {
	var detail strings.Builder
	for i := range 300 {
		fmt.Fprintf(&detail, "line %04d of a long description\n", i)
	}
	var opts []seam.Option
	for i := range 8 {
		opts = append(opts, seam.Option{Label: fmt.Sprintf("option %d %s", i, strings.Repeat("x", 60)), Description: strings.Repeat("why ", 40)})
	}
	ended := func(rec *pending.Record) *pending.Record {
		e := *rec
		e.Status, e.ResolvedAt = seam.StatusAnswered, time.Unix(1700000500, 0)
		e.ResolvedBy = &pending.Responder{Surface: surfaceName, UserID: "UADA", Name: "ada"}
		e.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{}, Custom: strings.Repeat("&", 400)}}}
		return &e
	}
	for _, tc := range []struct {
		name  string
		short bool // as recorded
		// limit is what Slack takes of an edit of e (0: 12,000), want
		// the edits tried, the last taken.
		limit func(e *pending.Record) int
		want  func(e *pending.Record) []message
	}{
		{
			"short", true,
			func(*pending.Record) int { return 0 },
			func(e *pending.Record) []message { return []message{renderShort(e, "", false)} },
		},
		{
			"short, too long with its status line", true,
			func(e *pending.Record) int {
				return (textLen(renderShort(e, "", false).blocks...) + textLen(renderBrief(e, "", true).blocks...)) / 2
			},
			func(e *pending.Record) []message {
				return []message{renderShort(e, "", false), renderBrief(e, "", true)}
			},
		},
		{
			"recorded before posts said so", false,
			func(*pending.Record) int { return 6000 },
			func(e *pending.Record) []message {
				return []message{render(e, "", false), renderBrief(e, "", false), renderShort(e, "", false)}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			s, store, _ := newSurface(t, fake)
			rec, _, err := store.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
				Questions: &seam.Questions{Questions: []seam.Question{{ID: "q", Question: "Which one?", Detail: detail.String(), Options: opts}}}})
			if err != nil {
				t.Fatal(err)
			}
			fake.SetBlocksTextLimit(9500) // takes the short message, not the whole one
			posts, err := s.Post(context.Background(), rec, target)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(fake.Calls("chat.postMessage")); len(posts) != 1 || !posts[0].Short || n < 3 {
				t.Fatalf("posts %+v after %d calls; want one, short, after one refused and with its thread", posts, n)
			}
			p := posts[0]
			p.Short = tc.short
			e := ended(rec)
			want := tc.want(e)
			fake.SetBlocksTextLimit(tc.limit(e))
			if err := s.Finish(context.Background(), e, p); err != nil {
				t.Fatal(err)
			}
			edits := fake.Calls("chat.update")
			if len(edits) != len(want) {
				t.Fatalf("%d edits tried; want %d", len(edits), len(want))
			}
			for i, c := range edits {
				raw, _ := json.Marshal(want[i].blocks)
				var blocks []map[string]any
				_ = json.Unmarshal(raw, &blocks)
				got := c.Blocks()
				for _, b := range got {
					delete(b, "block_id") // the fake's, on the message it took
				}
				if c.Field("text") != want[i].text || !reflect.DeepEqual(got, blocks) {
					t.Errorf("edit %d is not the one wanted", i+1)
				}
				if last := i == len(edits)-1; c.OK != last {
					t.Errorf("edit %d taken: %v; want only the last taken", i+1, c.OK)
				}
			}
		})
	}
}

// A message posted short that its request does not list (a copy: its
// post's reply lost, say) is recorded short by the click that finds it,
// on a button or through a form opened from it, so that its end edit
// keeps the shorter text its thread goes on from, though Slack would take
// it whole: whole, it would show again what the thread holds.
func TestCopyPostedShortEndsShort(t *testing.T) {
	var detail strings.Builder
	for i := range 300 {
		fmt.Fprintf(&detail, "line %04d of a long description\n", i)
	}
	var opts []seam.Option
	for i := range 8 {
		opts = append(opts, seam.Option{Label: fmt.Sprintf("option %d %s", i, strings.Repeat("x", 60)), Description: strings.Repeat("why ", 40)})
	}
	for _, tc := range []struct {
		name  string
		click func(t *testing.T, s *Surface, store *pending.Store, fake *slacktest.FakeSlack, rec *pending.Record, msg slacktest.FakeCall)
	}{
		{"Dismiss", func(t *testing.T, s *Surface, store *pending.Store, _ *slacktest.FakeSlack, rec *pending.Record, msg slacktest.FakeCall) {
			serve(t, s, store, slacktest.BlockActions(t, msg, ada, "ab:dismiss:"+rec.ID, nil, nil))
		}},
		{"a form submitted late", func(t *testing.T, s *Surface, store *pending.Store, fake *slacktest.FakeSlack, rec *pending.Record, msg slacktest.FakeCall) {
			serve(t, s, store, slacktest.BlockActions(t, msg, ada, "ab:answer:"+rec.ID, nil, nil))
			opened := fake.WaitCalls(t, "views.open", 1)[0]
			if _, err := store.Resolve(context.Background(), rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
				t.Fatal(err)
			}
			serve(t, s, store, slacktest.ViewSubmission(opened, ada, map[string]any{"q0o": slacktest.TextValue("the first")}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			s, store, _ := newSurface(t, fake)
			s.now = func() time.Time { return time.Now().Add(pending.PostingLease) } // its create is over
			ctx := context.Background()
			rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
				Questions: &seam.Questions{Questions: []seam.Question{{ID: "q", Question: "Which one?", Detail: detail.String(), Options: opts}}}})
			if err != nil {
				t.Fatal(err)
			}
			fake.SetBlocksTextLimit(9500) // takes the short message, not the whole one
			posts, err := s.Post(ctx, rec, target)
			if err != nil || len(posts) != 1 || !posts[0].Short {
				t.Fatalf("posts %+v, %v; want one, short", posts, err)
			}
			fake.SetBlocksTextLimit(0) // would take it whole now
			var msg slacktest.FakeCall
			for _, c := range fake.Calls("chat.postMessage") {
				if c.OK && c.TS == posts[0].MessageID {
					msg = c
				}
			}
			tc.click(t, s, store, fake, rec, msg) // the post never recorded
			ended, err := store.Get(ctx, rec.ID)
			if err != nil || ended.Status == seam.StatusPending {
				t.Fatalf("the request: %v, %v; want it ended", ended, err)
			}
			if p, ok := ended.PostOf(surfaceName, msg.Field("channel"), msg.TS); !ok || !p.Short {
				t.Errorf("the clicked message is recorded as %+v (%v); want it short", p, ok)
			}
			want := renderShort(ended, "", false)
			if textLen(render(ended, "", false).blocks...) == textLen(want.blocks...) {
				t.Fatal("the request's end renders as long whole as short: the test tells nothing")
			}
			edits := fake.Calls("chat.update")
			if len(edits) != 1 {
				t.Fatalf("%d edits; want one", len(edits))
			}
			raw, _ := json.Marshal(want.blocks)
			var blocks []map[string]any
			_ = json.Unmarshal(raw, &blocks)
			got := edits[0].Blocks()
			for _, b := range got {
				delete(b, "block_id") // the fake's, on the message it took
			}
			if !reflect.DeepEqual(got, blocks) {
				t.Errorf("the copy was edited to %d characters of text; want the short end's, %d (whole: %d)",
					surface.Len(sentText(got, "")), textLen(want.blocks...), textLen(render(ended, "", false).blocks...))
			}
		})
	}
}

// chat.postMessage and chat.update go out as slack-go sent them, a form
// with the blocks as JSON, but with the token in the Authorization header
// only; Slack's whole-message answer is read for the channel and ts.
func TestChatCallsOnTheWire(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, _ := newSurface(t, fake)
	rec := createQuestion(t, store)
	posts, err := s.Post(context.Background(), rec, target)
	if err != nil {
		t.Fatal(err)
	}
	call := fake.Calls("chat.postMessage")[0]
	if posts[0].MessageID != call.TS || posts[0].Channel != "C1" {
		t.Errorf("post %+v; the fake posted ts %s in C1", posts[0], call.TS)
	}
	// JSON, as Slack recommends for methods that take blocks; without the
	// charset Slack answers with a missing_charset warning.
	if call.ContentType != "application/json; charset=utf-8" {
		t.Errorf("chat.postMessage sent Content-Type %q; want JSON with its charset", call.ContentType)
	}
	if keys := slices.Sorted(maps.Keys(call.JSON)); !slices.Equal(keys, []string{"blocks", "channel", "text", "unfurl_links", "unfurl_media"}) {
		t.Errorf("chat.postMessage arguments %v", keys)
	}
	if call.TokenInForm || strings.Contains(call.Body, testToken) {
		t.Error("the token went in the body; want the Authorization header only")
	}
	if call.Field("unfurl_links") != "false" || call.Field("unfurl_media") != "false" || len(call.Blocks()) == 0 {
		t.Errorf("chat.postMessage %s", call.Body)
	}

	rec.Status = seam.StatusCancelled
	if err := s.Finish(context.Background(), rec, posts[0]); err != nil {
		t.Fatal(err)
	}
	edit := fake.Calls("chat.update")[0]
	if edit.ContentType != call.ContentType {
		t.Errorf("chat.update sent Content-Type %q; want %q", edit.ContentType, call.ContentType)
	}
	if edit.Field("ts") != call.TS || edit.Field("channel") != "C1" || len(edit.Blocks()) == 0 {
		t.Errorf("chat.update %s", edit.Body)
	}

	t.Run("a refused token", func(t *testing.T) {
		other := slacktest.NewFakeSlack(t, "xoxb-another-token")
		s, store, _ := newSurface(t, other)
		_, err := s.Post(context.Background(), createQuestion(t, store), target)
		if err == nil || !strings.Contains(err.Error(), "invalid_auth") || strings.Contains(err.Error(), testToken) {
			t.Fatalf("Post with a refused token: %v; want invalid_auth, without the token", err)
		}
	})
}

// Looking for a post Slack failed asks Slack who the bridge's bot is
// (auth.test) once per try of the post, never retrying on its own: those
// retries, inside the post's, waited out the post's time while Slack
// failed, and the request showed twice.
func TestLookupAsksWhoItIsOncePerTry(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, waits := newSurface(t, fake)
	ctx := context.Background()
	rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "q", Question: "Go?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	busy := slacktest.FakeFail{Status: http.StatusServiceUnavailable}
	fake.FailNext("chat.postMessage", slacktest.FakeFail{Status: http.StatusInternalServerError, Applied: true}, busy, busy)
	fake.FailNext("auth.test", slices.Repeat([]slacktest.FakeFail{busy}, 30)...)
	if _, err := s.Post(ctx, rec, target); err != nil {
		t.Fatal(err)
	}
	posts, asked := len(fake.Calls("chat.postMessage")), len(fake.Calls("auth.test"))
	if asked > posts-1 || len(*waits) > posts-1 {
		t.Errorf("%d posts, %d auth.test calls, waits %v: want at most one ask and one wait per try after the first", posts, asked, *waits)
	}

	// Once Slack answers, it is not asked again.
	fake = slacktest.NewFakeSlack(t, testToken)
	s, store, _ = newSurface(t, fake)
	for _, q := range []string{"Go?", "And now?"} {
		rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
			Questions: &seam.Questions{Questions: []seam.Question{{ID: "q", Question: q}}}})
		if err != nil {
			t.Fatal(err)
		}
		fake.FailNext("chat.postMessage", slacktest.FakeFail{Status: http.StatusInternalServerError, Applied: true})
		if _, err := s.Post(ctx, rec, target); err != nil {
			t.Fatal(err)
		}
	}
	if n, looked := len(fake.Calls("auth.test")), len(fake.Calls("conversations.history")); n != 1 || looked != 2 {
		t.Errorf("two lookups asked auth.test %d times (%d lookups); want once", n, looked)
	}
}

// A DM's history is read with im:history, not a channel's scope: Slack
// refuses it without, naming the scope it lacks.
func TestFindPostsInADMNeedsIMHistory(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store, _ := newSurface(t, fake)
	ctx := context.Background()
	rec := createQuestion(t, store)
	dm := dispatch.Target{Key: "default/0", Config: config.Target{Slack: &config.SlackTarget{Channel: "UADA"}}}
	posts, err := s.Post(ctx, rec, dm)
	if err != nil || len(posts) != 1 || posts[0].Channel != "DADA" {
		t.Fatalf("Post to a person = %+v, %v; want a post in their DM", posts, err)
	}
	since := time.Now().Add(-time.Minute)
	fake.Scopes = "chat:write,channels:history,groups:history"
	if _, err := s.findPosts(ctx, "DADA", "", since, rec.ID, rec.Hash); !refusedWith(err, "missing_scope") || !strings.Contains(err.Error(), "im:history") {
		t.Errorf("reading a DM without im:history: %v; want missing_scope, needs im:history", err)
	}
	fake.Scopes = "chat:write,im:history"
	if found, err := s.findPosts(ctx, "DADA", "", since, rec.ID, rec.Hash); err != nil || !slices.Equal(found, []string{posts[0].MessageID}) {
		t.Errorf("reading a DM with im:history found %v, %v; want %s", found, err, posts[0].MessageID)
	}
}

package discord

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// Once another ending on this replica has handed its outcome to a clicked
// message, the click answers with that outcome, whatever its own resolve
// answered, and tells the ending's Finish that it was shown: otherwise
// Finish waits inPlaceWait and edits the message a second time.
func TestSettledShowsAHandedOutcome(t *testing.T) {
	now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "go", Question: "Ship it?", Header: "Ship",
			Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}}
	ended := *rec
	ended.Status, ended.ResolvedAt = seam.StatusCancelled, now
	ended.ResolvedBy = &pending.Responder{Surface: "api", Name: "ci"}
	want := render(&ended, "", false).content

	for name, r := range map[string]resolved{
		"resolved":         {rec: &ended},
		"already resolved": {rec: &ended, err: pending.ErrAlreadyResolved},
		"not found":        {err: pending.ErrNotFound},
		"Redis failed":     {err: errors.New("LOADING Redis is loading the dataset in memory")},
	} {
		t.Run(name, func(t *testing.T) {
			h := &Interactions{s: &Surface{inPlace: newInPlace()}, log: slog.New(slog.DiscardHandler)}
			in := &interaction{Message: &sourceMessage{ID: "1200000000000000001"}}
			sl := h.s.inPlace.register(in.Message.ID)
			sent := h.s.inPlace.deliver(in.Message.ID, &ended)

			resp := h.settled(rec, pending.Resolution{Status: seam.StatusAnswered}, in, sl, r)
			if resp.Type != respUpdate || resp.Data == nil || resp.Data.Content == nil || *resp.Data.Content != want {
				t.Fatalf("answered %+v, want the handed outcome in place", resp)
			}
			resp.delivered(nil)
			select {
			case err := <-sent:
				if err != nil {
					t.Errorf("Finish heard %v", err)
				}
			default:
				t.Error("Finish was not told that the outcome was shown")
			}
		})
	}
}

// blockedResolver resolves once released, with the outcome it is given.
type blockedResolver struct {
	started chan struct{}
	release chan resolved
}

func (b *blockedResolver) Resolve(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error) {
	close(b.started)
	r := <-b.release
	return r.rec, r.err
}

// A resolve that outlasts the ack budget is answered with a deferred
// update; once that response reached Discord (the fake refuses a
// follow-up, or an edit of the original response, before), the person is
// shown what an answer in time would have shown them. A note a refused
// form left (ephemeral, its button having opened the form just sent) is
// edited in place, through Edit Original Interaction Response, which
// after a deferred update edits the message the component was on: the
// answer is in, or the request is over, and its "Fix my answers…" button
// goes; left, it would go on saying that nothing was saved. So is a
// request's message nothing else will edit. Otherwise they are told in an
// ephemeral follow-up; Finish edits the request's messages.
func TestASlowResolveIsFollowedUp(t *testing.T) {
	now := time.Date(2026, 12, 4, 14, 0, 0, 0, time.UTC)
	const msgID, noteID = "1200000000000000001", "1200000000000000002"
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, CreatedAt: now,
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "go", Question: "Ship it?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}},
		Posts:     []pending.Post{{Surface: surfaceName, Channel: "1100000000000000001", MessageID: msgID}}}
	other := *rec
	other.Status, other.ResolvedAt = seam.StatusAnswered, now
	other.ResolvedBy = &pending.Responder{Surface: "slack", UserID: "U2", Name: "grace"}
	other.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "go", Selected: []string{"No"}}}}
	unlisted := other
	unlisted.Posts = nil
	mine := pending.Resolution{Status: seam.StatusAnswered, Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "go", Selected: []string{"Yes"}}}}}
	taken := *rec
	taken.Status, taken.ResolvedAt, taken.Answer = seam.StatusAnswered, now, mine.Answer
	taken.ResolvedBy = &pending.Responder{Surface: surfaceName, UserID: "U1", Name: "ada"}
	const noteText = "Choose one option. Nothing was saved yet: **Fix my answers…** opens the form again, filled as you sent it."
	redis := resolved{err: errors.New("LOADING Redis is loading the dataset in memory")}

	for _, tc := range []struct {
		name string
		note bool // sent from a refused form's note
		lone bool // a form sent without the message it was opened from
		r    resolved
		kind string // "followup", "original" or "" for nothing
		want string // its text
	}{
		{"Redis failed", false, false, redis, "followup", surface.MsgUnconfirmed},
		{"another answer came first", false, false, resolved{rec: &other, err: pending.ErrAlreadyResolved}, "followup", surface.LateReply(&other, statusFormat)},
		{"another answer came first, the message unlisted", false, false, resolved{rec: &unlisted, err: pending.ErrAlreadyResolved}, "original", render(&unlisted, "", false).content},
		{"the request is gone", false, false, resolved{err: pending.ErrNotFound}, "original", "*" + surface.MsgGone + "*"},
		{"taken", false, false, resolved{rec: &taken}, "", ""},
		{"a note: taken", true, false, resolved{rec: &taken}, "original", surface.StatusLine(&taken, statusFormat)},
		{"a note: another answer came first", true, false, resolved{rec: &other, err: pending.ErrAlreadyResolved}, "original", surface.LateReply(&other, statusFormat)},
		{"a note: the request is gone", true, false, resolved{err: pending.ErrNotFound}, "original", noteText + "\n*" + surface.MsgGone + "*"},
		{"a note: Redis failed", true, false, redis, "followup", surface.MsgUnconfirmed},
		{"a lone form: taken", false, true, resolved{rec: &taken}, "original", surface.StatusLine(&taken, statusFormat)},
		{"a lone form: another answer came first", false, true, resolved{rec: &other, err: pending.ErrAlreadyResolved}, "original", surface.LateReply(&other, statusFormat)},
		{"a lone form: Redis failed", false, true, redis, "original", surface.MsgUnconfirmed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := NewFakeDiscord(t, "bot-token-of-the-follow-up-test")
			api, err := newSession(&config.Discord{APIURL: fake.URL, BotToken: config.Secret(fake.Token)}, http.DefaultClient)
			if err != nil {
				t.Fatal(err)
			}
			res := &blockedResolver{started: make(chan struct{}), release: make(chan resolved, 1)}
			h := &Interactions{s: &Surface{api: api, inPlace: newInPlace(), log: slog.New(slog.DiscardHandler)},
				resolve: res, log: slog.New(slog.DiscardHandler), work: surface.NewWork()}
			in := &interaction{ID: "1300000000000000009", ApplicationID: FakeAppID, Token: "SECRET-INTERACTION-TOKEN", Type: typeComponent,
				Member: &member{User: user{ID: "U1", Username: "ada"}}, Message: &sourceMessage{ID: msgID}}
			if tc.note {
				in.Type = typeModalSubmit
				in.Message = &sourceMessage{ID: noteID, Flags: flagEphemeral, Content: noteText}
			}
			deferred := respDeferredUpdate
			if tc.lone {
				in.Type, in.Message, deferred = typeModalSubmit, nil, respDeferredMsg
			}

			ctx, cancel := context.WithCancel(context.Background())
			answered := make(chan *response, 1)
			go func() { answered <- h.settle(ctx, rec, mine, in) }()
			<-res.started
			cancel() // the ack budget passes
			resp := <-answered
			if resp.Type != deferred {
				t.Fatalf("answered %+v past the budget, want a deferred response of type %d", resp, deferred)
			}
			wireIn, _ := json.Marshal(in)
			var inMap, respMap map[string]any
			_ = json.Unmarshal(wireIn, &inMap)
			wireResp, _ := json.Marshal(resp)
			_ = json.Unmarshal(wireResp, &respMap)
			if bad := InvalidResponse(respMap); len(bad) > 0 {
				t.Errorf("Discord would refuse %s: %v", wireResp, bad)
			}
			if why := RefusedResponse(inMap, respMap); why != "" {
				t.Errorf("Discord would refuse %s: %s", wireResp, why)
			}
			res.release <- tc.r
			fake.Acknowledge(in.Token)
			resp.delivered(nil)
			if tc.kind == "" {
				h.work.Drain()
				if got := append(fake.AllCalls("followup"), fake.AllCalls("original")...); len(got) != 0 {
					t.Errorf("sent %v, want nothing", got)
				}
				return
			}
			got := fake.WaitCalls(t, tc.kind, 1)[0]
			h.work.Drain()
			if n := len(fake.AllCalls("followup")) + len(fake.AllCalls("original")); n != 1 {
				t.Errorf("%d follow-ups and edits, want 1", n)
			}
			if am, _ := got.Body["allowed_mentions"].(map[string]any); am == nil {
				t.Errorf("sent without allowed_mentions: %v", got.Body)
			}
			switch tc.kind {
			case "followup":
				if got.Body["content"] != tc.want || got.Body["flags"] != float64(flagEphemeral) {
					t.Errorf("followed up with %v, want %q for the person alone", got.Body, tc.want)
				}
			case "original":
				if c, _ := got.Body["content"].(string); !strings.HasSuffix(c, tc.want) {
					t.Errorf("edited the message to %q, want %q", c, tc.want)
				}
				if cs, ok := got.Body["components"].([]any); !tc.lone && (!ok || len(cs) != 0) {
					t.Errorf("the edited message keeps its controls: %v", got.Body["components"])
				}
				if f, _ := got.Body["flags"].(float64); int(f)&flagEphemeral != 0 {
					t.Errorf("an edit that sets the ephemeral flag: %v", got.Body)
				}
			}
		})
	}
}

// Edit Original Interaction Response is refused, as a follow-up is,
// before the interaction was answered and on a token Discord does not
// know (another application's).
func TestFakeEditsTheOriginalResponseOnlyOnceAnswered(t *testing.T) {
	fake := NewFakeDiscord(t, "bot-token-of-the-original-test")
	patch := func(app, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPatch, fake.URL+"webhooks/"+app+"/"+token+"/messages/@original",
			strings.NewReader(`{"content":"Answered by ada","components":[]}`))
		req.Header.Set("Authorization", "Bot "+fake.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	const token = "SECRET-INTERACTION-TOKEN-1"
	if status, out := patch(FakeAppID, token); status != http.StatusNotFound || out["code"] != float64(codeUnknownWebhook) {
		t.Errorf("before the response: %d %v, want 404 Unknown Webhook", status, out)
	}
	fake.Acknowledge(token)
	if status, out := patch("1200000000000000099", token); status != http.StatusNotFound || out["code"] != float64(codeUnknownWebhook) {
		t.Errorf("another application's: %d %v, want 404 Unknown Webhook", status, out)
	}
	if status, out := patch(FakeAppID, "SECRET-INTERACTION-TOKEN-2"); status != http.StatusNotFound {
		t.Errorf("an unknown token: %d %v, want 404 Unknown Webhook", status, out)
	}
	if status, out := patch(FakeAppID, token); status != http.StatusOK || out["content"] != "Answered by ada" {
		t.Errorf("once answered: %d %v, want the message edited", status, out)
	}
	if n := len(fake.Calls("original")); n != 1 {
		t.Errorf("%d edits recorded, want 1", n)
	}
}

// Right after a response through the Interactions Endpoint URL, Discord
// may answer a follow-up 404 Unknown Webhook for a while: the follow-up is
// tried again. A 5xx is not: the message may have been posted.
func TestFollowUpRidesOutUnknownWebhook(t *testing.T) {
	for name, tc := range map[string]struct {
		fails     []FakeFail
		tries, ok int
	}{
		"unknown at first": {[]FakeFail{{Status: http.StatusNotFound, Code: 10015, Message: "Unknown Webhook"}, {Status: http.StatusNotFound, Code: 10015, Message: "Unknown Webhook"}}, 3, 1},
		"a 5xx":            {[]FakeFail{{Status: http.StatusInternalServerError}}, 1, 0},
		"rate limited":     {[]FakeFail{{Status: http.StatusTooManyRequests, RetryAfter: 0.05}}, 2, 1},
	} {
		t.Run(name, func(t *testing.T) {
			fake := NewFakeDiscord(t, "bot-token-of-the-follow-up-test")
			api, err := newSession(&config.Discord{APIURL: fake.URL, BotToken: config.Secret(fake.Token)}, http.DefaultClient)
			if err != nil {
				t.Fatal(err)
			}
			s := &Surface{api: api, log: slog.New(slog.DiscardHandler)}
			in := &interaction{ID: "1300000000000000009", ApplicationID: FakeAppID, Token: "SECRET-INTERACTION-TOKEN"}
			fake.Acknowledge(in.Token)
			fake.FailNext("followup", tc.fails...)
			err = s.followUp(context.Background(), in, ephemeral(surface.MsgUnconfirmed).Data)
			if (err == nil) != (tc.ok == 1) {
				t.Errorf("followUp: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), in.Token) {
				t.Errorf("the error quotes the interaction token: %v", err)
			}
			if all, ok := len(fake.AllCalls("followup")), len(fake.Calls("followup")); all != tc.tries || ok != tc.ok {
				t.Errorf("%d tries, %d posted; want %d, %d", all, ok, tc.tries, tc.ok)
			}
		})
	}
}

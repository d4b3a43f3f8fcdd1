package discord

import (
	"context"
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
// update; should it then not end the request as the person said, they are
// told in an ephemeral follow-up, sent once the response reached Discord
// (the fake refuses a follow-up before). Finish edits the message itself
// when it did.
func TestASlowResolveIsFollowedUp(t *testing.T) {
	now := time.Date(2026, 12, 4, 14, 0, 0, 0, time.UTC)
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, CreatedAt: now,
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "go", Question: "Ship it?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}}
	other := *rec
	other.Status, other.ResolvedAt = seam.StatusAnswered, now
	other.ResolvedBy = &pending.Responder{Surface: "slack", UserID: "U2", Name: "grace"}
	other.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "go", Selected: []string{"No"}}}}
	mine := pending.Resolution{Status: seam.StatusAnswered, Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "go", Selected: []string{"Yes"}}}}}

	for _, tc := range []struct {
		name string
		r    resolved
		want string // the follow-up's text; "" for none
	}{
		{"Redis failed", resolved{err: errors.New("LOADING Redis is loading the dataset in memory")}, surface.MsgUnconfirmed},
		{"another answer came first", resolved{rec: &other, err: pending.ErrAlreadyResolved}, surface.LateReply(&other, statusFormat)},
		{"the request is gone", resolved{err: pending.ErrNotFound}, surface.MsgGone},
		{"taken", resolved{rec: &other}, ""},
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
			in := &interaction{ID: "1300000000000000009", ApplicationID: FakeAppID, Token: "SECRET-INTERACTION-TOKEN",
				Member: &member{User: user{ID: "U1", Username: "ada"}}, Message: &sourceMessage{ID: "1200000000000000001"}}

			ctx, cancel := context.WithCancel(context.Background())
			answered := make(chan *response, 1)
			go func() { answered <- h.settle(ctx, rec, mine, in) }()
			<-res.started
			cancel() // the ack budget passes
			resp := <-answered
			if resp.Type != respDeferredUpdate {
				t.Fatalf("answered %+v past the budget, want a deferred update", resp)
			}
			res.release <- tc.r
			fake.Acknowledge(in.Token)
			resp.delivered(nil)
			if tc.want == "" {
				h.work.Drain()
				if got := fake.AllCalls("followup"); len(got) != 0 {
					t.Errorf("followed up %v, want nothing", got)
				}
				return
			}
			got := fake.WaitCalls(t, "followup", 1)[0]
			if got.Body["content"] != tc.want || got.Body["flags"] != float64(flagEphemeral) {
				t.Errorf("followed up with %v, want %q for the person alone", got.Body, tc.want)
			}
			if am, _ := got.Body["allowed_mentions"].(map[string]any); am == nil {
				t.Errorf("a follow-up without allowed_mentions: %v", got.Body)
			}
			h.work.Drain()
			if n := len(fake.AllCalls("followup")); n != 1 {
				t.Errorf("%d follow-ups, want 1", n)
			}
		})
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
			err = s.followUp(context.Background(), in, surface.MsgUnconfirmed)
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

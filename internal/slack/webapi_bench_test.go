package slack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// BenchmarkChatCalls is what one request costs the bridge in Slack Web API
// calls: posting its message and editing it to its outcome, against a
// server that answers at once with what Slack answers (the whole message),
// so that the figure is the bridge's side: encoding, HTTP, reading the
// answer.
func BenchmarkChatCalls(b *testing.B) {
	rec := benchRecord()
	live := render(rec, "", true)
	ended := *rec
	ended.Status = seam.StatusAnswered
	done := render(&ended, "", false)
	s := benchSurface(b, live, Options{Store: pending.New(nil, pending.Options{})}) // the calls don't touch the store
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, ts, err := s.postMessage(ctx, "C0AGENTS", chatMessage{text: live.text, blocks: live.blocks})
		if err != nil || ts != "1700000000.000100" {
			b.Fatalf("postMessage: %q, %v", ts, err)
		}
		if err := s.updateMessage(ctx, "C0AGENTS", ts, chatMessage{text: done.text, blocks: done.blocks}); err != nil {
			b.Fatalf("updateMessage: %v", err)
		}
	}
}

// BenchmarkPost posts the request bridge bench creates to the route's one
// target, as dispatch does (Surface.Post): rendering, carrying, the call
// and reading its answer. It logs as bench's replicas do: text, errors
// only.
func BenchmarkPost(b *testing.B) {
	rec := benchRequest()
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	s := benchSurface(b, render(rec, "", true), Options{Store: pending.New(nil, pending.Options{}), Logger: log})
	t := dispatch.Target{Key: "default/0", Config: config.Target{Slack: &config.SlackTarget{Channel: "C0AGENTS"}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if posts, err := s.Post(ctx, rec, t); err != nil || len(posts) != 1 {
			b.Fatalf("Post = %+v, %v", posts, err)
		}
	}
}

// benchSurface returns a surface, made with opt, whose Slack answers every
// call at once as it answers a post of m: ok, channel and ts, then the
// whole message.
func benchSurface(b *testing.B, m message, opt Options) *Surface {
	blocks, err := json.Marshal(m.blocks)
	if err != nil {
		b.Fatal(err)
	}
	answer := []byte(`{"ok":true,"channel":"C0AGENTS","ts":"1700000000.000100","message":{"user":"U0FAKEBOT1","type":"message","ts":"1700000000.000100","bot_id":"B0FAKEBOT1","app_id":"A0001","text":` +
		string(must(json.Marshal(m.text))) + `,"team":"T0001","bot_profile":{"id":"B0FAKEBOT1","deleted":false,"name":"askbridge","updated":1700000000,"app_id":"A0001","icons":{"image_36":"https://a.slack-edge.com/80588/img/plugins/app/bot_36.png","image_48":"https://a.slack-edge.com/80588/img/plugins/app/bot_48.png","image_72":"https://a.slack-edge.com/80588/img/plugins/app/service_72.png"},"team_id":"T0001"},"blocks":` +
		string(blocks) + `}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	cfg := &config.Config{
		Slack:  &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: srv.URL + "/"},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C0AGENTS"}}}}},
	}
	s, err := New(cfg, opt)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchRecord is the question bridge bench asks.
func benchRecord() *pending.Record {
	return &pending.Record{ID: "b7kq2x9m4wz3hy6p", Kind: seam.KindQuestion, Status: seam.StatusPending, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{
			ID: "deploy", Header: "Deploy", Question: "Deploy build 4711 to production?",
			Options: []seam.Option{
				{Label: "Deploy now", Description: "Ships to every region."},
				{Label: "Wait for the canary"},
				{Label: "Roll back", Description: "Restores the previous release."},
			},
		}}}}
}

// benchRequest is benchRecord as bridge bench creates it: with who asks,
// in which session, when, until when, and its hash.
func benchRequest() *pending.Record {
	rec := benchRecord()
	rec.Caller = &seam.Caller{Name: "bench-agent", Session: "bench"}
	rec.CreatedAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec.ExpiresAt = rec.CreatedAt.Add(24 * time.Hour)
	rec.Hash = "11f97202a71009b7c94b7b5867f0abdd"
	return rec
}

// BenchmarkRender renders a question's message and its edit once it is
// answered, of a request as bridge bench creates it (benchRequest),
// answered by a person.
func BenchmarkRender(b *testing.B) {
	rec := benchRequest()
	ended := *rec
	ended.Status = seam.StatusAnswered
	ended.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "deploy", Selected: []string{"Deploy now"}}}}
	ended.ResolvedAt = rec.CreatedAt.Add(time.Minute)
	ended.ResolvedBy = &pending.Responder{Surface: "slack", UserID: "UBENCH", Name: "bench-person"}
	b.ReportAllocs()
	for b.Loop() {
		if m := render(rec, "", true); len(m.blocks) == 0 {
			b.Fatal("no blocks")
		}
		if m := render(&ended, "", false); len(m.blocks) == 0 {
			b.Fatal("no blocks")
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkParseCallback decodes a click on the bench's question as Slack
// posts it: the form, then the payload, which holds the whole message.
// Each round reads a body of its own, as each request does: parseCallback
// decodes the payload over it.
func BenchmarkParseCallback(b *testing.B) {
	form := []byte(url.Values{"payload": {benchPayload(b)}}.Encode())
	body := make([]byte, len(form))
	b.ReportAllocs()
	for b.Loop() {
		copy(body, form)
		cb, err := parseCallback(body)
		if err != nil || len(cb.ActionCallback.BlockActions) != 1 {
			b.Fatalf("parseCallback: %+v, %v", cb.ActionCallback, err)
		}
	}
	b.ReportMetric(float64(len(form)), "body-bytes")
}

// BenchmarkClick is a person's click on an option of the bench's question,
// as Slack posts it to /slack/interactions, signed: the handler's part of
// it, up to the resolve, which a resolver that answers at once stands in
// for (the end it answers lists the message, so nothing more is recorded).
func BenchmarkClick(b *testing.B) {
	rec := benchRequest()
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	s := benchSurface(b, render(rec, "", true), Options{Store: pending.New(nil, pending.Options{}), Logger: log})
	resolved := make(chan struct{}, 1)
	h := s.Interactions(resolverFunc(func(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error) {
		ended := *rec
		ended.Status, ended.Answer, ended.ResolvedBy = res.Status, res.Answer, res.By
		ended.Posts = []pending.Post{{Surface: surfaceName, Target: "default/0", Channel: "C0AGENTS", MessageID: "1700000000.000100"}}
		resolved <- struct{}{}
		return &ended, nil
	}))
	form := url.Values{"payload": {benchPayload(b)}}.Encode()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(form))
		r.Header = slacktest.Sign("s", time.Now(), form)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("the click was answered %d: %s", w.Code, w.Body)
		}
		select {
		case <-resolved:
		case <-time.After(5 * time.Second):
			b.Fatal("the click resolved nothing within 5s")
		}
	}
}

type resolverFunc func(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error)

func (f resolverFunc) Resolve(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error) {
	return f(ctx, id, res)
}

// benchPayload returns the JSON payload of a click on the bench's
// question, as Slack posts it.
func benchPayload(tb testing.TB) string {
	rec := benchRecord()
	rec.Hash = "11f97202a71009b7c94b7b5867f0abdd"
	live := render(rec, "", true)
	live.carry(rec, "default/0")
	var blocks any
	if err := json.Unmarshal(must(json.Marshal(live.blocks)), &blocks); err != nil {
		tb.Fatal(err)
	}
	msg := slacktest.FakeCall{Method: "chat.postMessage", TS: "1700000000.000100",
		JSON: map[string]any{"channel": "C0AGENTS", "text": live.text, "blocks": blocks}}
	payload, err := slacktest.Click(msg, slacktest.SlackUser("UBENCH", "bench-person"), "ab:pick:"+rec.ID+":0:1", nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(payload)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

const testAppToken = "xapp-1-A0001-1234-SECRETAPPTOKEN"

// lockedBuffer is a log written from every goroutine of the handler.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// socketSurface is a surface that takes its interactions over fake's
// Socket Mode (an app token, no signing secret). Its log is checked for
// the tokens when the test ends.
func socketSurface(t *testing.T, fake *slacktest.FakeSlack) (*Surface, *pending.Store) {
	t.Helper()
	store := embeddedStore(t)
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: testToken, AppToken: testAppToken, APIURL: fake.URL},
		Routes: []config.Route{
			{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}},
			{Name: "ops", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C2", Responders: config.SlackResponders{Users: []string{"UOPS"}}}}}},
		},
	}
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		for _, secret := range []string{testToken, testAppToken} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("a token reached the log:\n%s", logs.String())
			}
		}
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	s, err := New(cfg, Options{Store: store, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

// socketRun is Interactions.Run under way.
type socketRun struct {
	cancel context.CancelFunc
	done   chan error
}

func runSocket(t *testing.T, h *Interactions) *socketRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &socketRun{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- h.Run(ctx) }()
	t.Cleanup(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			t.Error("Run did not return within 15 s of its context ending")
		}
	})
	return r
}

// result waits for Run to return by itself.
func (r *socketRun) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15 s")
		return nil
	}
}

// stop ends Run, as the bridge's shutdown does, and waits for it and the
// work it started.
func (r *socketRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err := r.result(t); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// post posts rec to the route target key and returns the message.
func post(t *testing.T, s *Surface, fake *slacktest.FakeSlack, rec *pending.Record, key string) slacktest.FakeCall {
	t.Helper()
	tg := target
	if key != "default/0" {
		tg = dispatch.Target{Key: key, Config: config.Target{Slack: s.targets[key]}}
	}
	if _, err := s.Post(context.Background(), rec, tg); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls("chat.postMessage")
	return calls[len(calls)-1]
}

// envelope is an interactive envelope as Slack sends it; a redelivery
// carries the attempt and why.
func envelope(id string, payload map[string]any, retry int) map[string]any {
	env := slacktest.Interactive(id, payload)
	if retry > 0 {
		env["retry_attempt"], env["retry_reason"] = retry, "timeout"
	}
	return env
}

// TestSocketModeEnvelopes runs the interactions of the Request URL's
// tests over a fake Socket Mode connection: every envelope is acked by its
// envelope_id, a view_submission's ack carries what the Request URL would
// answer, and a redelivered envelope changes nothing.
func TestSocketModeEnvelopes(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	sock := fake.SocketMode(testAppToken)
	s, store := socketSurface(t, fake)
	ctx := context.Background()
	bob := slacktest.SlackUser("UBOB", "bob")

	pick := createQuestion(t, store)
	pickMsg := post(t, s, fake, pick, "default/0")
	typed, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: "Why restart it?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	typedMsg := post(t, s, fake, typed, "default/0")
	ops := createQuestion(t, store)
	opsMsg := post(t, s, fake, ops, "ops/0")

	run := runSocket(t, s.Interactions(store))
	sock.WaitConnected(t, 1)

	// An envelope is acked first and resolved after: a step that needs
	// the answer in place waits for it.
	answered := func(id string) func(t *testing.T) {
		return func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if rec, err := store.Wait(ctx, id, ""); err != nil {
				t.Fatalf("request %s: %v (status %s)", id, err, rec.Status)
			}
		}
	}
	click := slacktest.BlockActions(t, pickMsg, ada, "ab:pick:"+pick.ID+":0:0", nil, nil)
	answer := slacktest.BlockActions(t, typedMsg, ada, "ab:answer:"+typed.ID, nil, nil)
	var opened slacktest.FakeCall
	steps := []struct {
		name     string
		env      func() map[string]any
		response string // the ack's payload, "" for none
		after    func(t *testing.T)
	}{
		{"a click answers", func() map[string]any { return envelope("e-pick", click, 0) }, "", answered(pick.ID)},
		{"the click redelivered", func() map[string]any { return envelope("e-pick", click, 1) }, "", nil},
		{"a late click", func() map[string]any {
			return envelope("e-late", slacktest.BlockActions(t, pickMsg, bob, "ab:pick:"+pick.ID+":0:1", nil, nil), 0)
		}, "", nil},
		{"a click by someone who may not answer", func() map[string]any {
			return envelope("e-refused", slacktest.BlockActions(t, opsMsg, ada, "ab:pick:"+ops.ID+":0:0", nil, nil), 0)
		}, "", nil},
		{"Answer… opens the modal with the click's trigger_id", func() map[string]any { return envelope("e-answer", answer, 0) }, "",
			func(t *testing.T) {
				opened = fake.WaitCalls(t, "views.open", 1)[0]
				if got := opened.Field("trigger_id"); got != answer["trigger_id"] {
					t.Errorf("views.open with trigger_id %q, want the click's %q", got, answer["trigger_id"])
				}
			}},
		{"Answer… redelivered opens nothing more", func() map[string]any { return envelope("e-answer", answer, 1) }, "", nil},
		{"a blank answer is refused in the modal", func() map[string]any {
			return envelope("e-blank", slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("  ")}), 0)
		}, `{"errors":{"q0":"` + msgTypeAnswer + `"},"response_action":"errors"}`, nil},
		{"an answer closes the modal", func() map[string]any {
			return envelope("e-submit", slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("disk full")}), 0)
		}, "", answered(typed.ID)},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			env := st.env()
			sock.Send(t, env)
			ack := sock.WaitAck(t, env["envelope_id"].(string))
			got := ""
			if p, ok := ack["payload"]; ok {
				raw, _ := json.Marshal(p)
				got = string(raw)
			}
			if got != st.response {
				t.Errorf("ack payload %s, want %s", got, st.response)
			}
			if st.after != nil {
				st.after(t)
			}
		})
	}
	// The same submission again closes the modal.
	sock.Send(t, envelope("e-submit", slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("disk full")}), 1))
	if ack := sock.WaitAck(t, "e-submit"); ack["payload"] != nil {
		t.Errorf("the redelivered submission was answered %v, want an empty ack (closes the modal)", ack["payload"])
	}
	// Another answer, the request over, replaces the modal with a notice.
	sock.Send(t, envelope("e-other", slacktest.ViewSubmission(opened, ada, map[string]any{"q0": slacktest.TextValue("out of memory")}), 0))
	var update struct {
		Action string `json:"response_action"`
		View   struct {
			Title struct {
				Text string `json:"text"`
			} `json:"title"`
		} `json:"view"`
	}
	raw, _ := json.Marshal(sock.WaitAck(t, "e-other")["payload"])
	if err := json.Unmarshal(raw, &update); err != nil || update.Action != "update" || update.View.Title.Text != "Too late" {
		t.Errorf("a submission after the answer was answered %s, want response_action update with a Too late notice", raw)
	}
	run.stop(t) // returns once the work the envelopes started is done

	for id, want := range map[string]string{pick.ID: `{"answers":[{"id":"q","selected":["Yes"]}]}`, typed.ID: `{"answers":[{"id":"why","selected":[],"custom":"disk full"}]}`} {
		rec, err := store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(rec.Answer)
		if rec.Status != seam.StatusAnswered || string(raw) != want || rec.ResolvedBy.UserID != "UADA" {
			t.Errorf("request %s: %s %s by %+v, want answered %s by UADA", id, rec.Status, raw, rec.ResolvedBy, want)
		}
	}
	if rec, _ := store.Get(ctx, ops.ID); rec.Status != seam.StatusPending {
		t.Errorf("a refused click changed its request: %s", rec.Status)
	}
	calls := fake.Calls("")
	if got := ephemeralsTo(calls, "UADA"); len(got) != 1 || got[0] != surface.MsgCantAnswer {
		t.Errorf("ada was told %q, want only that she can't answer the ops request", got)
	}
	if got := ephemeralsTo(calls, "UBOB"); len(got) != 1 || !strings.HasPrefix(got[0], "Already answered by ada") {
		t.Errorf("bob was told %q, want that ada answered already", got)
	}
	if n := len(fake.Calls("views.open")); n != 2 {
		t.Errorf("views.open called %d times, want 2 (the second refused as exchanged)", n)
	}
}

// ephemeralsTo returns what user was told privately.
func ephemeralsTo(calls []slacktest.FakeCall, user string) []string {
	var out []string
	for _, c := range calls {
		if to, text, ok := c.Ephemeral(); ok && to == user {
			out = append(out, text)
		}
	}
	return out
}

// TestSocketModeReconnects: Slack's disconnect message (a connection's
// refresh, or one about to close) has the bridge open a new connection,
// and a click sent on it is answered.
func TestSocketModeReconnects(t *testing.T) {
	for _, reason := range []string{"refresh_requested", "warning"} {
		t.Run(reason, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			sock := fake.SocketMode(testAppToken)
			s, store := socketSurface(t, fake)
			rec := createQuestion(t, store)
			msg := post(t, s, fake, rec, "default/0")
			run := runSocket(t, s.Interactions(store))
			sock.WaitConnected(t, 1)
			sock.Disconnect(t, reason)
			sock.WaitConnected(t, 2)
			sock.Send(t, envelope("e-after", slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:1", nil, nil), 0))
			if ack := sock.WaitAck(t, "e-after"); ack["connection"] != 2 {
				t.Errorf("acked on connection %v, want 2", ack["connection"])
			}
			run.stop(t)
			if got, _ := store.Get(context.Background(), rec.ID); got.Status != seam.StatusAnswered {
				t.Errorf("the click after the reconnect left the request %s", got.Status)
			}
		})
	}
}

// TestSocketModeAppTokenRefused: an app token Slack refuses for good
// stops Socket Mode with an error that names slack.app_token and Slack's
// reason, never the token; a refusal that may pass (Slack busy) is tried
// again.
func TestSocketModeAppTokenRefused(t *testing.T) {
	for _, reason := range []string{"invalid_auth", "token_revoked", "not_allowed_token_type", "missing_scope"} {
		t.Run(reason, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			sock := fake.SocketMode(testAppToken)
			sock.Refuse(reason)
			s, store := socketSurface(t, fake)
			err := runSocket(t, s.Interactions(store)).result(t)
			if err == nil || !strings.Contains(err.Error(), "slack.app_token") || !strings.Contains(err.Error(), reason) {
				t.Errorf("Run: %v; want an error naming slack.app_token and %s", err, reason)
			}
			if err != nil && (strings.Contains(err.Error(), testAppToken) || strings.Contains(err.Error(), testToken)) {
				t.Errorf("the error carries a token: %v", err)
			}
		})
	}
	t.Run("service_unavailable is tried again", func(t *testing.T) {
		fake := slacktest.NewFakeSlack(t, testToken)
		sock := fake.SocketMode(testAppToken)
		sock.Refuse("service_unavailable")
		s, store := socketSurface(t, fake)
		run := runSocket(t, s.Interactions(store))
		fake.WaitFor(t, "apps.connections.open tried again", 10*time.Second, func(calls []slacktest.FakeCall) bool {
			n := 0
			for _, c := range calls {
				if c.Method == "apps.connections.open" {
					n++
				}
			}
			return n >= 2
		})
		sock.Refuse("")
		sock.WaitConnected(t, 1)
		run.stop(t)
	})
}

// TestSocketModeShutdownFinishesInFlight: an envelope being handled when
// the bridge stops is handled to the end, not cut short: here the modal a
// click asked for opens (views.open, once Slack's Retry-After has passed),
// where the person was told to click again before; and a click that
// arrives meanwhile, while the connection is still open, is handled too.
func TestSocketModeShutdownFinishesInFlight(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	sock := fake.SocketMode(testAppToken)
	s, store := socketSurface(t, fake)
	rec, _, err := store.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: "Why restart it?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	msg := post(t, s, fake, rec, "default/0")
	pick := createQuestion(t, store)
	pickMsg := post(t, s, fake, pick, "default/0")
	run := runSocket(t, s.Interactions(store))
	sock.WaitConnected(t, 1)
	fake.FailNext("views.open", slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	sock.Send(t, envelope("e-answer", slacktest.BlockActions(t, msg, ada, "ab:answer:"+rec.ID, nil, nil), 0))
	fake.WaitFor(t, "views.open refused", 3*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, c := range calls {
			if c.Method == "views.open" {
				return true
			}
		}
		return false
	})
	run.cancel() // the bridge stops while the click is handled
	// Until the connection closes, Slack may hand it another click.
	sock.Send(t, envelope("e-pick", slacktest.BlockActions(t, pickMsg, ada, "ab:pick:"+pick.ID+":0:0", nil, nil), 0))
	if err := run.result(t); err != nil {
		t.Errorf("Run: %v", err)
	}
	if opened := fake.Calls("views.open"); len(opened) != 2 || !opened[1].OK {
		t.Errorf("views.open: %d calls, want the second to open the modal", len(opened))
	}
	if got := ephemeralsTo(fake.Calls(""), "UADA"); len(got) != 0 {
		t.Errorf("ada was told %q", got)
	}
	if got, _ := store.Get(context.Background(), pick.ID); got.Status != seam.StatusAnswered {
		t.Errorf("a click received while stopping left its request %s", got.Status)
	}
}

// TestSocketModeStopsWhileDisconnected: acks that can't be written (the
// connection dropped, Slack refusing a new one, slack-go's queue of 20
// full) don't keep the bridge from stopping.
func TestSocketModeStopsWhileDisconnected(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	sock := fake.SocketMode(testAppToken)
	s, store := socketSurface(t, fake)
	rec, _, err := store.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Route: "default",
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "why", Question: "Why restart it?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	msg := post(t, s, fake, rec, "default/0")
	run := runSocket(t, s.Interactions(store))
	sock.WaitConnected(t, 1)
	const n = 25 // more than slack-go queues
	for range n {
		fake.FailNext("views.open", slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "2"})
	}
	for i := range n {
		sock.Send(t, envelope(fmt.Sprintf("e-%d", i), slacktest.BlockActions(t, msg, ada, "ab:answer:"+rec.ID, nil, nil), 0))
	}
	count := func(method string) func([]slacktest.FakeCall) bool {
		return func(calls []slacktest.FakeCall) bool {
			k := 0
			for _, c := range calls {
				if c.Method == method {
					k++
				}
			}
			return k >= map[string]int{"views.open": n, "apps.connections.open": 2}[method]
		}
	}
	fake.WaitFor(t, "every click's first views.open", 3*time.Second, count("views.open"))
	// The connection drops and Slack refuses a new one, before the
	// clicks' modals open (Retry-After) and their acks are queued.
	sock.Refuse("service_unavailable")
	sock.Disconnect(t, "refresh_requested")
	fake.WaitFor(t, "a refused reconnection", 3*time.Second, count("apps.connections.open"))
	run.cancel()
	if err := run.result(t); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestSocketModeOnlyRefusesTheRequestURL: a bridge that takes interactions
// over Socket Mode alone (app_token, no signing_secret) has no secret to
// check the Request URL's signatures with, and refuses every POST there,
// one signed with an empty secret too: otherwise anyone who reaches it
// could sign their own clicks.
func TestSocketModeOnlyRefusesTheRequestURL(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	s, store := socketSurface(t, fake)
	rec := createQuestion(t, store)
	msg := post(t, s, fake, rec, "default/0")
	body := slacktest.FormBody(slacktest.BlockActions(t, msg, ada, "ab:pick:"+rec.ID+":0:0", nil, nil))
	for _, secret := range []string{"", "s"} {
		req := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(body))
		req.Header = slacktest.Sign(secret, time.Now(), body)
		w := httptest.NewRecorder()
		h := s.Interactions(store)
		h.ServeHTTP(w, req)
		h.work.Drain()
		if w.Code != http.StatusUnauthorized {
			t.Errorf("signed with %q: %d %s, want 401", secret, w.Code, w.Body)
		}
	}
	if got, err := store.Get(context.Background(), rec.ID); err != nil || got.Status != seam.StatusPending {
		t.Errorf("after refused posts: %v, %v; want it pending", got.Status, err)
	}
}

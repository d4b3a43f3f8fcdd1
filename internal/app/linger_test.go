package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

const lingerToken = "xoxb-1111-2222-LINGERBOTTOKEN"

// A replica that has served hundreds of requests holds no more goroutines
// and no more waiters than one that has served a few: whichever way a
// request ends (a click in Slack, the agent's DELETE, its expiry), and
// whatever its waiting calls did (waited it out, gave up, went away), its
// waits, posts, edits and timers end with it. A bridge runs for months.
//
// Not parallel: it counts the test binary's goroutines.
func TestNothingLingersOnceRequestsEnd(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, lingerToken)
	url, prefix := apptest.Redis(t)
	cfg := apptest.Config(t, fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: linger-signing-secret
  api_url: %s
store:
  sweep_interval: 20ms
routes:
  - name: default
    targets:
      - slack:
          channel: C0AGENTS
          responders:
            users: [UADA]
`, lingerToken, fake.URL), url, prefix)
	a := apptest.Start(t, cfg, app.Options{})
	l := &lingering{t: t, a: a, fake: fake}

	l.round(5)
	before := l.settle()
	const n = 60 // of each ending: a goroutine left per request would be 300
	l.round(n)
	after := l.settle()
	t.Logf("goroutines: %d before, %d after", before, after)

	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before+lingerSlack {
		if time.Now().After(deadline) {
			var dump bytes.Buffer
			pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Fatalf("%d goroutines after %d more requests ended, %d before them:\n%s",
				runtime.NumGoroutine(), 5*n, before, dump.String())
		}
		<-tick.C
	}
}

// lingerSlack is how many goroutines may come and go between the counts
// without a request leaving them: idle keep-alive connections to the fake
// Slack and the like, bounded by concurrency, not by requests served.
const lingerSlack = 30

type lingering struct {
	t     *testing.T
	a     *app.App
	fake  *slacktest.FakeSlack
	posts int // messages posted so far, each to be edited once its request ends
}

// round runs n requests to each of five endings.
func (l *lingering) round(n int) {
	t := l.t
	t.Helper()
	base := l.a.URL()
	question := func(extra map[string]any) map[string]any {
		q := map[string]any{"questions": []any{map[string]any{
			"id": "go", "question": "Deploy?", "options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}},
		}}}
		for k, v := range extra {
			q[k] = v
		}
		return q
	}
	waiting := func(id string) (<-chan apptest.Result, <-chan apptest.Result) {
		return apptest.Go(base, http.MethodGet, "/v1/questions/"+id+"?wait=30s", nil),
			apptest.Go(base, http.MethodGet, "/v1/questions/"+id+"?wait=30s", nil)
	}
	ended := func(id, want string, waits ...<-chan apptest.Result) {
		t.Helper()
		for _, w := range waits {
			if r := apptest.Await(t, w, 15*time.Second); r.Status != http.StatusOK || r.Rec.M["status"] != want {
				t.Fatalf("%s: a waiting call got %d %v, want %s", id, r.Status, r.Rec.M, want)
			}
		}
	}
	for range n {
		// Answered by a click, two calls waiting.
		id := apptest.Create(t, base, "/v1/questions", question(nil))
		w1, w2 := waiting(id)
		msg := l.posted(id)
		apptest.Posted(t, base, "/v1/questions", id, 1)
		l.click(slacktest.BlockActions(t, msg, slacktest.SlackUser("UADA", "ada"), "ab:pick:"+id+":0:0", nil, nil))
		ended(id, "answered", w1, w2)

		// Cancelled by the agent, two calls waiting.
		id = apptest.Create(t, base, "/v1/questions", question(nil))
		w1, w2 = waiting(id)
		l.posted(id)
		if status, rec := apptest.Do(t, base, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
			t.Fatalf("cancel: %d %v", status, rec.M)
		}
		ended(id, "cancelled", w1, w2)

		// Expired, one call waiting.
		id = apptest.Create(t, base, "/v1/questions", question(map[string]any{"expires_in": "50ms"}))
		w1, _ = waiting(id)
		l.posted(id)
		ended(id, "expired", w1)

		// A wait that runs out, then the agent's DELETE.
		id = apptest.Create(t, base, "/v1/questions", question(nil))
		l.posted(id)
		if status, rec := apptest.Do(t, base, http.MethodGet, "/v1/questions/"+id+"?wait=5ms", nil); status != http.StatusOK || rec.M["status"] != "pending" {
			t.Fatalf("a wait that ran out: %d %v", status, rec.M)
		}
		apptest.Do(t, base, http.MethodDelete, "/v1/questions/"+id, nil)

		// A caller that goes away while it waits, then the agent's DELETE.
		id = apptest.Create(t, base, "/v1/questions", question(nil))
		l.posted(id)
		l.abandon(id)
		apptest.Do(t, base, http.MethodDelete, "/v1/questions/"+id, nil)
	}
}

// posted waits for id's message to reach Slack.
func (l *lingering) posted(id string) slacktest.FakeCall {
	l.t.Helper()
	var msg slacktest.FakeCall
	l.fake.WaitFor(l.t, "the message of "+id, 10*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, c := range calls {
			if c.Method == "chat.postMessage" && c.OK {
				if el, _ := c.Action("ab:pick:" + id + ":"); el != nil {
					msg = c
					return true
				}
			}
		}
		return false
	})
	l.posts++
	return msg
}

// click sends a signed block_actions payload, as Slack does.
func (l *lingering) click(payload map[string]any) {
	l.t.Helper()
	body := slacktest.FormBody(payload)
	req, _ := http.NewRequest(http.MethodPost, l.a.URL()+"/slack/interactions", bytes.NewReader([]byte(body)))
	req.Header = slacktest.Sign("linger-signing-secret", time.Now(), body)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		l.t.Fatalf("click: %d", res.StatusCode)
	}
}

// abandon starts a wait on id and goes away once the replica holds it.
func (l *lingering) abandon(id string) {
	l.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := l.a.Store().Waiting()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.a.URL()+"/v1/questions/"+id+"?wait=30s", nil)
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	l.waitFor(func() string { return "the abandoned call to be held" }, func() bool { return l.a.Store().Waiting() > held })
	cancel()
	if err := <-done; err == nil {
		l.t.Fatal("the abandoned call was answered")
	}
}

// settle waits until every request so far has no waiter left and every
// message has been edited to its outcome, closes the test's idle
// connections, and returns the goroutines left.
func (l *lingering) settle() int {
	l.t.Helper()
	l.fake.WaitFor(l.t, fmt.Sprintf("%d messages edited", l.posts), 15*time.Second, func(calls []slacktest.FakeCall) bool {
		edited := map[string]bool{}
		for _, c := range calls {
			if c.Method == "chat.update" && c.OK {
				edited[c.Field("ts")] = true
			}
		}
		return len(edited) >= l.posts
	})
	l.waitFor(func() string { return fmt.Sprintf("no call to be waiting (%d are)", l.a.Store().Waiting()) }, func() bool { return l.a.Store().Waiting() == 0 })
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	return runtime.NumGoroutine()
}

// waitFor polls ok until it holds, failing the test after 10s with what.
func (l *lingering) waitFor(what func() string, ok func() bool) {
	l.t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); !ok(); <-tick.C {
		if time.Now().After(deadline) {
			l.t.Fatalf("timed out waiting for %s", what())
		}
	}
}

package discord_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/discord"
)

// slackAPI is the least of Slack's Web API a route target needs: it takes
// chat.postMessage and chat.update as Slack does (form bodies, ok:true) and
// records which methods were called with which text.
type slackAPI struct {
	*httptest.Server
	mu    sync.Mutex
	calls []string // "method: text"
	seen  chan struct{}
}

func newSlackAPI(t *testing.T) *slackAPI {
	t.Helper()
	s := &slackAPI{seen: make(chan struct{}, 100)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Header.Get("Authorization") != "Bearer xoxb-cross" && r.Form.Get("token") != "xoxb-cross" {
			w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
			return
		}
		method := strings.TrimPrefix(r.URL.Path, "/")
		s.mu.Lock()
		s.calls = append(s.calls, method+": "+r.Form.Get("text")+" "+r.Form.Get("blocks"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true,"channel":"C0CROSS","ts":"1796212800.000100"}`))
		s.seen <- struct{}{}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *slackAPI) waitFor(t *testing.T, method, contains string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		for _, c := range s.calls {
			if strings.HasPrefix(c, method+": ") && strings.Contains(c, contains) {
				s.mu.Unlock()
				return
			}
		}
		s.mu.Unlock()
		select {
		case <-s.seen:
		case <-deadline:
			t.Fatalf("no %s containing %q; calls: %v", method, contains, s.calls)
		}
	}
}

// TestAnswerOnDiscordEditsSlack: a route posts to Discord and Slack; the
// answer given on Discord edits the Slack message too, from the same
// dispatcher step, and says who answered where.
func TestAnswerOnDiscordEditsSlack(t *testing.T) {
	slack := newSlackAPI(t)
	targets := defaultTarget + `
      - slack: {channel: C0CROSS}
slack:
  bot_token: xoxb-cross
  signing_secret: cross-signing-secret
  api_url: ` + slack.URL + `/`
	b := start(t, targets)
	id := b.create(t, "/v1/questions", cleanupQuestion())

	msg := b.fake.WaitCalls(t, "create", 1)[0]
	slack.waitFor(t, "chat.postMessage", "Proceed with the destructive cleanup?")

	resp := b.click(t, discord.Click(msg, ada, "ab:pick:"+id+":0:0", nil))
	if respType(resp) != 7 {
		t.Fatalf("the click was answered with %v, want UPDATE_MESSAGE", resp)
	}
	if rec := b.wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("status %v", rec.M["status"])
	}
	slack.waitFor(t, "chat.update", "Answered by ada")
}

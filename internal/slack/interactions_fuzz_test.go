package slack_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// FuzzInteractions sends signed /slack/interactions payloads to a running
// replica: whatever the payload, the bridge answers 200 or 400 (never a
// 5xx, never a dropped connection from a panicking handler), and a 200
// body is empty or JSON. The seeds are the payloads Slack sends for the
// controls of a real posted question.
func FuzzInteractions(f *testing.F) {
	fake := slacktest.NewFakeSlack(f, botToken)
	fake.SetGroup("SOPS", "UOPS")
	redisURL, prefix := apptest.Redis(f)
	a := startQuiet(f, apptest.Config(f, configYAML(fake, defaultTarget), redisURL, prefix))

	q, _ := json.Marshal(cleanupQuestion())
	resp, err := http.Post(a.URL()+"/v1/questions", "application/json", strings.NewReader(string(q)))
	if err != nil {
		f.Fatal(err)
	}
	var created map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	id, _ := created["id"].(string)
	msg := fake.WaitCalls(f, "chat.postMessage", 1)[0]

	seed := func(p any) {
		b, _ := json.Marshal(p)
		f.Add(string(b))
	}
	seed(slacktest.BlockActions(f, msg, eve, "ab:pick:"+id+":0:0", nil, nil)) // eve may not answer: leaves it pending
	seed(slacktest.BlockActions(f, msg, eve, "ab:dismiss:"+id, nil, nil))
	seed(slacktest.BlockActions(f, msg, bob, "ab:other:"+id, nil, nil))
	seed(slacktest.BlockActions(f, msg, ada, "ab:pick:"+id+":0:1", nil, nil))
	seed(slacktest.BlockActions(f, msg, ada, "ab:pick:"+id+":0:0", nil, nil))
	pick := slacktest.BlockActions(f, msg, ada, "ab:pick:"+id+":0:0", nil, nil)
	pick["actions"] = []any{map[string]any{"type": "static_select", "action_id": "ab:select:" + id + ":0:0", "block_id": "q0",
		"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": "x"}, "value": "-7"}, "action_ts": "1700000100.000200"}}
	seed(pick)
	seed(map[string]any{
		"type": "view_submission", "team": map[string]any{"id": "T0001", "domain": "acme"}, "user": ada,
		"api_app_id": "A0001", "trigger_id": "1700000200.123456.abcdef",
		"view": map[string]any{"id": "V0001", "type": "modal", "callback_id": "ab:answer:" + id + ":0:0", "private_metadata": id,
			"state": map[string]any{"values": map[string]any{"q0": map[string]any{"ab:pick:" + id + ":0:0": map[string]any{
				"type": "radio_buttons", "selected_option": map[string]any{"value": "1"}}}}}},
	})
	seed(map[string]any{"type": "view_closed", "user": ada, "view": map[string]any{"callback_id": "ab:answer:" + id + ":0:0"}})
	seed(map[string]any{"type": "block_actions", "user": ada, "actions": []any{map[string]any{"action_id": "ab:pick:" + id + ":99:99"}}})
	seed(map[string]any{"type": "shortcut", "callback_id": "x"})
	f.Add(`{"type":"block_actions","actions":null,"user":null}`)
	f.Add(`[]`)
	f.Add(`not json`)

	client := &http.Client{Timeout: 5 * time.Second} // Slack gives up after 3 s
	f.Fuzz(func(t *testing.T, payload string) {
		body := url.Values{"payload": {payload}}.Encode()
		req, _ := http.NewRequest(http.MethodPost, a.URL()+"/slack/interactions", strings.NewReader(body))
		req.Header = slacktest.Sign(signingSecret, time.Now(), body)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("the interaction broke the connection (a panic?) or hung: %v", err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		switch resp.StatusCode {
		case http.StatusOK:
			if len(raw) > 0 && !json.Valid(raw) {
				t.Fatalf("200 with a body that is not JSON: %q", raw)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
	})
}

// startQuiet runs a replica of cfg until f ends, logging nowhere: a fuzz
// worker must not call f.Log from the replica's goroutines while the fuzz
// target runs.
func startQuiet(f *testing.F, cfg *config.Config) *app.App {
	f.Helper()
	a, err := app.New(cfg, slog.New(slog.DiscardHandler), app.Options{})
	if err != nil {
		f.Fatalf("app.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	f.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			f.Errorf("the replica did not stop within 15s")
		}
	})
	return a
}

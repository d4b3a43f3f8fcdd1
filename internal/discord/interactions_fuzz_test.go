package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
)

// FuzzInteractions sends signed /discord/interactions bodies to a running
// replica: whatever the body, the bridge answers 200 with a JSON
// interaction response or 400 (never a 5xx, never a dropped connection
// from a panicking handler). The seeds are the interactions Discord sends
// for the controls and modals of a real posted question.
func FuzzInteractions(f *testing.F) {
	fake := discord.NewFakeDiscord(f, botToken)
	redisURL, prefix := apptest.Redis(f)
	a := startQuiet(f, apptest.Config(f, configYAML(fake, defaultTarget), redisURL, prefix))

	q, _ := json.Marshal(cleanupQuestion())
	resp, err := http.Post(a.URL()+"/v1/questions", "application/json", bytes.NewReader(q))
	if err != nil {
		f.Fatal(err)
	}
	var created map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	id, _ := created["id"].(string)
	msg := fake.WaitCalls(f, "create", 1)[0]

	seed := func(p any) {
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	seed(discord.Ping())
	seed(discord.Click(msg, eve, "ab:pick:"+id+":0:0", nil)) // eve may not answer: leaves it pending
	seed(discord.Click(msg, bob, "ab:other:"+id+":0:0", nil))
	seed(discord.Click(msg, bob, "ab:answer:"+id+":0:0", nil))
	seed(discord.Click(msg, eve, "ab:select:"+id+":0:0", []string{"1"}))
	seed(discord.Click(msg, eve, "ab:select:"+id+":0:0", []string{"-1", "999"}))
	seed(discord.Submit(msg, eve, "ab:other:"+id+":0:0", discord.TextRow("q0", "keep the logs")))
	seed(discord.Submit(msg, eve, "ab:answer:"+id+":0:0", discord.LabelSelect("q0p0", "0"), discord.LabelText("q0o", "x")))
	seed(discord.Submit(msg, ada, "ab:answer:"+id+":0:0", map[string]any{"type": 18, "component": nil}))
	seed(discord.Click(msg, ada, "ab:dismiss:"+id+":0:0", nil))
	seed(discord.Click(msg, ada, "ab:pick:"+id+":0:1", nil))
	f.Add([]byte(`{"type":3,"data":{"custom_id":"ab:pick:x:0:0"},"member":null,"user":null}`))
	f.Add([]byte(`{"type":2,"data":{"name":"ask"}}`))
	f.Add([]byte(`{"type":5,"data":{"components":[{"type":1,"components":[{"type":99}]}]}}`))
	f.Add([]byte(`null`))

	f.Fuzz(func(t *testing.T, body []byte) {
		req, _ := http.NewRequest(http.MethodPost, a.URL()+"/discord/interactions", bytes.NewReader(body))
		req.Header = discord.Sign(discord.SigningKey, time.Now(), body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("the interaction broke the connection (a panic?): %v", err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		switch resp.StatusCode {
		case http.StatusOK:
			var out map[string]any
			if json.Unmarshal(raw, &out) != nil || out["type"] == nil {
				t.Fatalf("200 without an interaction response: %q", raw)
			}
			var in map[string]any
			if json.Unmarshal(body, &in) == nil {
				if why := discord.RefusedResponse(in, out); why != "" {
					t.Fatalf("Discord would refuse the response %s to %s: %s", raw, body, why)
				}
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
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

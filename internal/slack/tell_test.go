package slack_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// A person told something privately (not allowed, too late, gone) is told
// through the click's response_url, which reaches them wherever they
// clicked; chat.postEphemeral, which refuses anyone not in the channel,
// only when the response_url fails or is not Slack's.
func TestTellingTheClicker(t *testing.T) {
	refusal := func(t *testing.T, b bridge, payload map[string]any) slacktest.FakeCall {
		t.Helper()
		b.click(t, payload)
		calls := b.fake.WaitFor(t, "a refusal to eve", 10*time.Second, func(calls []slacktest.FakeCall) bool {
			return len(ephemerals(calls, "UEVE")) == 1
		})
		for _, c := range calls {
			if to, text, ok := c.Ephemeral(); ok && to == "UEVE" {
				if !strings.Contains(text, "can't answer this") {
					t.Errorf("eve was told %q", text)
				}
				return c
			}
		}
		panic("unreachable")
	}

	t.Run("through the response_url", func(t *testing.T) {
		b := start(t, defaultTarget)
		id := b.create(t, "/v1/questions", cleanupQuestion())
		msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]

		c := refusal(t, b, slacktest.BlockActions(t, msg, eve, "ab:pick:"+id+":0:1", nil, nil))
		if c.Method != "response_url" {
			t.Fatalf("told with %s, want the click's response_url", c.Method)
		}
		if len(c.JSON) != 3 || c.JSON["response_type"] != "ephemeral" || c.JSON["replace_original"] != false {
			t.Errorf("response_url body %s: want an ephemeral reply that leaves the message as it is", c.Body)
		}
		if n := len(b.fake.Calls("chat.postEphemeral")); n != 0 {
			t.Errorf("chat.postEphemeral called %d times as well", n)
		}
	})

	t.Run("a response_url that fails", func(t *testing.T) {
		b := start(t, defaultTarget)
		id := b.create(t, "/v1/questions", cleanupQuestion())
		msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
		b.fake.FailNext("response_url", slacktest.FakeFail{Status: http.StatusNotFound, Error: "expired_url"})

		c := refusal(t, b, slacktest.BlockActions(t, msg, eve, "ab:pick:"+id+":0:1", nil, nil))
		if c.Method != "chat.postEphemeral" || c.Field("channel") != channel {
			t.Errorf("told with %s in %q, want chat.postEphemeral in %s", c.Method, c.Field("channel"), channel)
		}
		if tried := b.fake.Calls("response_url"); len(tried) != 1 || tried[0].OK {
			t.Errorf("response_url calls %+v, want the one that failed", tried)
		}
	})

	t.Run("a modal keeps its click's response_url", func(t *testing.T) {
		// for what its submission tells afterwards (too late, gone)
		b := start(t, defaultTarget)
		id := b.create(t, "/v1/questions", map[string]any{"questions": []any{map[string]any{
			"id": "replicas", "question": "How many replicas?", "header": "Replicas",
			"input": map[string]any{"type": "integer"},
		}}})
		msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
		payload := slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil)
		b.click(t, payload)
		opened := b.fake.WaitCalls(t, "views.open", 1)[0]
		var o struct {
			Respond string `json:"r"`
		}
		md, _ := opened.View()["private_metadata"].(string)
		if err := json.Unmarshal([]byte(md), &o); err != nil || o.Respond != payload["response_url"] {
			t.Errorf("the modal's private_metadata %q does not carry the click's response_url", md)
		}
	})

	t.Run("a response_url elsewhere is not followed", func(t *testing.T) {
		var hits atomic.Int32
		elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
		defer elsewhere.Close()
		b := start(t, defaultTarget)
		id := b.create(t, "/v1/questions", cleanupQuestion())
		msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]

		payload := slacktest.BlockActions(t, msg, eve, "ab:pick:"+id+":0:1", nil, nil)
		payload["response_url"] = elsewhere.URL + "/actions/T0001/UEVE/1"
		if c := refusal(t, b, payload); c.Method != "chat.postEphemeral" {
			t.Errorf("told with %s, want chat.postEphemeral", c.Method)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the bridge posted %d times to a response_url that is not Slack's", n)
		}
	})
}

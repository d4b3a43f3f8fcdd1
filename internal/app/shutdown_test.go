package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// A Slack click whose request is still being read when the replica is
// told to stop (SIGTERM) is acked, so the person takes it as given: its
// answer must be recorded before the replica closes its Redis client.
// The surfaces' callback work is drained only once the HTTP server has
// finished its handlers; drained at the same time, a click acked after
// the drain began ran unwaited and lost its answer to the closed client.
func TestClickInFlightAtStopIsRecorded(t *testing.T) {
	const (
		token  = "xoxb-1111-2222-STOPBOTTOKEN"
		secret = "stop-signing-secret"
	)
	fake := slacktest.NewFakeSlack(t, token)
	fake.SetGroup("S0ONCALL", "UADA")
	url, prefix := apptest.Redis(t)
	yaml := fmt.Sprintf(`
slack:
  bot_token: %s
  signing_secret: %s
  api_url: %s
routes:
  - name: default
    targets:
      - slack:
          channel: C0AGENTS
          responders:
            groups: [S0ONCALL]
`, token, secret, fake.URL)

	out := make(lines, 1000)
	a := apptest.Run(t, apptest.Config(t, yaml, url, prefix), app.Options{}, slog.New(slog.NewJSONHandler(out, nil)))
	runDone := a.Done

	id := apptest.Create(t, a.URL(), "/v1/questions", map[string]any{"questions": []any{map[string]any{
		"id": "go", "question": "Deploy?", "options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}},
	}}})
	var msg slacktest.FakeCall
	fake.WaitFor(t, "the message of "+id, 10*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, c := range calls {
			if el, _ := c.Action("ab:pick:" + id + ":"); c.Method == "chat.postMessage" && c.OK && el != nil {
				msg = c
				return true
			}
		}
		return false
	})
	apptest.Posted(t, a.URL(), "/v1/questions", id, 1)
	body := slacktest.FormBody(slacktest.BlockActions(t, msg, slacktest.SlackUser("UADA", "ada"), "ab:pick:"+id+":0:0", nil, nil))
	// The group's members are read after the ack, in the click's work.
	members := fake.Hold("usergroups.users.list")

	// The click's request is on its way: its headers sent, and its body
	// being read by the handler, which asks for it (100 Continue).
	conn, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head strings.Builder
	fmt.Fprintf(&head, "POST /slack/interactions HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", a.Addr(), len(body))
	for k, v := range slacktest.Sign(secret, time.Now(), body) {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v[0])
	}
	head.WriteString("\r\n")
	if _, err := conn.Write([]byte(head.String())); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	replies := bufio.NewReader(conn)
	if line, err := replies.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("the click's headers got %q, %v; want 100 Continue", line, err)
	}

	// SIGTERM: wait until the replica says it is stopping and its listener
	// is closed, then send the click's body.
	a.Stop()
	deadline := time.After(10 * time.Second)
	for stopping := false; !stopping; {
		select {
		case line := <-out:
			var rec struct{ Msg string }
			json.Unmarshal([]byte(line), &rec)
			stopping = strings.HasPrefix(rec.Msg, "stopping: ")
		case <-deadline:
			t.Fatal("the replica did not say it was stopping")
		}
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.Dial("tcp", a.Addr())
		if err != nil {
			break
		}
		c.Close()
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the listener stayed open after the stop")
		}
	}
	if _, err := conn.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := replies.ReadString('\n')
		if err != nil {
			t.Fatalf("the click got no answer: %v", err)
		}
		if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 100") {
			if !strings.HasPrefix(line, "HTTP/1.1 200") {
				t.Fatalf("the click got %q; want a 200 ack", line)
			}
			break
		}
	}

	select {
	case <-members.Arrived():
	case <-deadline:
		t.Fatal("the click's work never read the group's members")
	}
	// Slack answers the members call when the replica has stopped, or
	// after a second (a slow Slack), whichever comes first; a replica
	// that waits for the click's work is still running then.
	var runErr error
	select {
	case runErr = <-runDone:
		runDone = nil
	case <-time.After(time.Second):
	}
	members.Release()
	if runDone != nil {
		select {
		case runErr = <-runDone:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return")
		}
	}
	if runErr != nil {
		t.Fatalf("Run: %v", runErr)
	}

	other := apptest.Start(t, apptest.Config(t, "", url, prefix), app.Options{})
	if rec := apptest.Get(t, other.URL(), "/v1/questions", id); rec.M["status"] != "answered" {
		t.Errorf("after the stop the clicked request is %v; want answered (the click was acked)", rec.M["status"])
	}
}

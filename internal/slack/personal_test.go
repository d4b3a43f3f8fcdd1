package slack_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
	"github.com/askbridge/askbridge/internal/surface"
)

// limitedTarget is a target only ada may answer on.
const limitedTarget = `
      - slack:
          channel: ` + channel + `
          responders: {users: [UADA]}`

var personalLinkRE = regexp.MustCompile(`^Your own link to this request, good until <!date\^\d+\^[^>]+>: .* <(https://bridge\.example\.com(/r/[^|>]+))\|Open in browser>$`)

// A target that limits its responders can't put a link anyone may answer
// through in its channel. Its "Open in browser" hands each person who
// may answer a link of their own, privately; an answer sent through it
// is theirs, and the message is edited as for any other answer.
func TestPersonalLinkWhereRespondersAreLimited(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	redisURL, prefix := apptest.Redis(t)
	b := startConfig(t, fake, "base_url: https://bridge.example.com/\n"+configYAML(fake, limitedTarget), redisURL, prefix)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
	if raw, _ := json.Marshal(msg.Blocks()); bytes.Contains(raw, []byte("bridge.example.com")) {
		t.Fatalf("the message carries a link anyone in the channel could answer with: %s", raw)
	}
	open, _ := msg.Action("ab:link:" + id)
	if open == nil || open["url"] != nil || !strings.Contains(jsonOf(t, open), "Open in browser") {
		t.Fatalf("no Open in browser button asking for a personal link: %v", open)
	}
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1)

	told := func(user, what string) string {
		t.Helper()
		var got string
		fake.WaitFor(t, what, 10*time.Second, func(calls []slacktest.FakeCall) bool {
			for _, text := range ephemerals(calls, user) {
				got = text
				return true
			}
			return false
		})
		return got
	}
	b.click(t, slacktest.BlockActions(t, msg, eve, "ab:link:"+id, nil, nil))
	if text := told("UEVE", "eve's refusal"); text != surface.MsgCantAnswer {
		t.Fatalf("eve, who may not answer, was told %q", text)
	}
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:link:"+id, nil, nil))
	m := personalLinkRE.FindStringSubmatch(told("UADA", "ada's link"))
	if m == nil || !strings.HasPrefix(m[2], "/r/"+id+"?") {
		t.Fatalf("ada was not handed a link to %s: %v", id, fake.Calls("response_url"))
	}
	// Slack's iOS app opens a mrkdwn link with its & left as &amp;
	// (slackapi/bolt-js#2103): the link has none.
	if strings.Contains(m[1], "&") {
		t.Fatalf("ada's link %q has an &, which Slack's iOS app breaks", m[1])
	}
	u, _ := url.Parse(m[1])
	q := u.Query()

	res, err := http.Get(b.URL() + m[2])
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the link's page: %d", res.StatusCode)
	}
	body := `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}`
	req, _ := http.NewRequest(http.MethodPost, b.URL()+"/web/requests/"+id+"/answer", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Askbridge-Link", q.Get("l"))
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("answering through the link: %d", res.StatusCode)
	}

	rec := b.get(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != body {
		t.Errorf("answer %s", got)
	}
	if by := rec.Raw("answered_by"); by != `{"surface":"slack","user_id":"UADA","name":"ada"}` {
		t.Errorf("answered_by %s, want ada on Slack", by)
	}
	upd := fake.WaitCalls(t, "chat.update", 1)[0]
	if hasActions(upd) || !strings.Contains(upd.Text(), "ada") {
		t.Errorf("the message was not edited to ada's answer:\n%s", upd.Text())
	}
}

// A request past its expiry that no sweeper has expired yet (sweeps an
// hour apart here) gets no link, which would already have stopped working:
// the person is told it expired, as a sweep would have told them.
func TestNoPersonalLinkForAnOverdueRequest(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	b, id, msg := startOverdue(t, fake, "base_url: https://bridge.example.com/\n"+configYAML(fake, limitedTarget))
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:link:"+id, nil, nil))
	fake.WaitFor(t, "a note to ada", 10*time.Second, func(calls []slacktest.FakeCall) bool { return len(ephemerals(calls, "UADA")) == 1 })
	if got := ephemerals(fake.Calls(""), "UADA")[0]; got != surface.MsgOverdue {
		t.Errorf("ada was told %q", got)
	}
}

// A replica that has lost its base_url since another posted the button
// (a rolling change of config) says so, and hands out no link.
func TestNoPersonalLinkWithoutAPublicURL(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, botToken)
	redisURL, prefix := apptest.Redis(t)
	posting := startConfig(t, fake, "base_url: https://bridge.example.com/\n"+configYAML(fake, limitedTarget), redisURL, prefix)
	bare := startConfig(t, fake, configYAML(fake, limitedTarget), redisURL, prefix)
	id := posting.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "chat.postMessage", 1)[0]
	apptest.Posted(t, posting.URL(), "/v1/questions", id, 1)
	bare.click(t, slacktest.BlockActions(t, msg, ada, "ab:link:"+id, nil, nil))
	fake.WaitFor(t, "a note to ada", 10*time.Second, func(calls []slacktest.FakeCall) bool { return len(ephemerals(calls, "UADA")) == 1 })
	if got := ephemerals(fake.Calls(""), "UADA")[0]; got != surface.MsgNoPublicURL {
		t.Errorf("ada was told %q", got)
	}
}

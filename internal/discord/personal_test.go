package discord_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/surface"
	"github.com/askbridge/askbridge/internal/web"
)

// startLinked starts a replica with a public URL, so that its messages
// have an "Open in browser" button.
func startLinked(t *testing.T, targets string) bridge {
	t.Helper()
	return startLinkedAt(t, "https://bridge.example.com/", targets)
}

func startLinkedAt(t *testing.T, base, targets string) bridge {
	t.Helper()
	return startLinkedWith(t, base, targets, "", app.Options{})
}

// startLinkedWith is startLinkedAt with the sweeps sweep apart and opt.
func startLinkedWith(t *testing.T, base, targets, sweep string, opt app.Options) bridge {
	t.Helper()
	fake := discord.NewFakeDiscord(t, botToken)
	redisURL, prefix := apptest.Redis(t)
	yaml := configYAML(fake, targets)
	if sweep != "" {
		yaml = strings.Replace(yaml, "sweep_interval: 50ms", "sweep_interval: "+sweep, 1)
	}
	cfg := apptest.Config(t, "base_url: "+base+"\n"+yaml, redisURL, prefix)
	return bridge{App: apptest.Start(t, cfg, opt), fake: fake}
}

// personalLink is the link of an ephemeral response that hands one, as
// the path on the bridge and the header its page sends.
func personalLink(t *testing.T, resp map[string]any) (path, header string) {
	t.Helper()
	if !isEphemeral(resp) || !strings.Contains(content(resp), "Your own link to this request, good until <t:") {
		t.Fatalf("no personal link was handed out privately: %v", resp)
	}
	for _, c := range discord.Components(data(resp)) {
		if c["style"] == float64(5) && c["label"] == "Open in browser" {
			u, err := url.Parse(c["url"].(string))
			if err != nil || u.Host != "bridge.example.com" {
				t.Fatalf("link %v", c["url"])
			}
			q := u.Query()
			return u.RequestURI(), q.Get("l")
		}
	}
	t.Fatalf("the response has no link button: %v", resp)
	return "", ""
}

// answerByLink answers id through the web with a link's header.
func answerByLink(t *testing.T, b bridge, id, header, body string) {
	t.Helper()
	if status := sendByLink(t, b, id, header, body); status != http.StatusOK {
		t.Fatalf("answering through the link: %d", status)
	}
}

// sendByLink sends an answer through a link and returns the status.
func sendByLink(t *testing.T, b bridge, id, header, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.URL()+"/web/requests/"+id+"/answer", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Askbridge-Link", header)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A target that limits its responders can't put a link anyone may answer
// through in its channel. Its "Open in browser" hands each person who
// may answer a link of their own, privately; an answer sent through it
// is theirs.
func TestPersonalLinkWhereRespondersAreLimited(t *testing.T) {
	b := startLinked(t, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	var open map[string]any
	for _, c := range discord.Components(msg.Body) {
		if c["style"] == float64(5) {
			t.Fatalf("the message carries a link anyone in the channel could answer with: %v", c)
		}
		if id, _ := c["custom_id"].(string); strings.HasPrefix(id, "ab:link:") {
			open = c
		}
	}
	if open == nil || open["label"] != "Open in browser" {
		t.Fatalf("no Open in browser button asking for a personal link: %v", msg.Body)
	}

	resp := b.click(t, discord.Click(msg, eve, open["custom_id"].(string), nil))
	if !isEphemeral(resp) || content(resp) != surface.MsgCantAnswer || len(discord.Components(data(resp))) != 0 {
		t.Fatalf("eve, who may not answer, got %v", resp)
	}
	_, header := personalLink(t, b.click(t, discord.Click(msg, ada, open["custom_id"].(string), nil)))
	body := `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}`
	answerByLink(t, b, id, header, body)
	rec := b.get(t, "/v1/questions", id)
	if got := rec.Raw("answer"); got != body {
		t.Errorf("answer %s", got)
	}
	if by := rec.Raw("answered_by"); by != `{"surface":"discord","user_id":"1500000000000000001","name":"ada"}` {
		t.Errorf("answered_by %s, want ada on Discord", by)
	}
}

// A request larger than one Discord form holds can't be answered in
// Discord; on a bridge with a public URL, Answer… hands the person who
// may answer it a link of their own instead of pointing at the API.
func TestTooBigForAFormGetsAPersonalLink(t *testing.T) {
	b := startLinked(t, defaultTarget)
	var qs []any
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		qs = append(qs, map[string]any{"id": id, "question": "Name " + id + "?"})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": qs})
	msg := b.fake.WaitCalls(t, "create", 1)[0]

	path, header := personalLink(t, b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil)))
	res, err := http.Get(b.URL() + path)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the link's page: %d", res.StatusCode)
	}
	body := `{"answers":[{"id":"a","selected":[],"custom":"1"},{"id":"b","selected":[],"custom":"2"},{"id":"c","selected":[],"custom":"3"},{"id":"d","selected":[],"custom":"4"},{"id":"e","selected":[],"custom":"5"},{"id":"f","selected":[],"custom":"6"}]}`
	answerByLink(t, b, id, header, body)
	if got := b.wait(t, "/v1/questions", id).Raw("answer"); got != body {
		t.Errorf("answer %s", got)
	}
}

// Without a public URL there is no link to hand: the person is told why,
// and where on the bridge the request is answered.
func TestTooBigForAFormWithoutBaseURL(t *testing.T) {
	b := start(t, defaultTarget)
	var qs []any
	for _, q := range []string{"a", "b", "c", "d", "e", "f"} {
		qs = append(qs, map[string]any{"id": q, "question": "Value of " + q + "?"})
	}
	id := b.create(t, "/v1/questions", map[string]any{"questions": qs})
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:answer:"+id+":0:0", nil))
	if c := content(resp); !isEphemeral(resp) || !strings.Contains(c, "no public URL (base_url)") || !strings.Contains(c, "POST /v1/questions/"+id+"/answer") {
		t.Errorf("told %q", c)
	}
}

// A personal link too long for a link button (Discord takes 512
// characters; a long base_url) goes in the response's text instead.
func TestPersonalLinkTooLongForAButton(t *testing.T) {
	base := "https://bridge.example.com/" + strings.Repeat("long-path/", 40)
	b := startLinkedAt(t, base, defaultTarget)
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	resp := b.click(t, discord.Click(msg, ada, "ab:link:"+id+":0:0", nil))
	text := content(resp)
	at := strings.Index(text, base)
	if !isEphemeral(resp) || !strings.HasPrefix(text, "Your own link to this request, good until <t:") || at < 0 || int(data(resp)["flags"].(float64))&4 == 0 {
		t.Fatalf("no personal link in the text: %v", resp)
	}
	u, err := url.Parse(text[at:])
	if err != nil || !strings.HasSuffix(u.Path, "/r/"+id) {
		t.Fatalf("link %q", text[at:])
	}
	q := u.Query()
	answerByLink(t, b, id, q.Get("l"), `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}`)
}

// A personal link lasts an hour on the bridge's clock, the one that
// stamps and expires requests: the web pages that take the link read it
// too.
func TestPersonalLinkEndsOnTheBridgesClock(t *testing.T) {
	clk := apptest.NewClock(time.Now())
	b := startLinkedWith(t, "https://bridge.example.com/", defaultTarget, "3h", app.Options{Now: clk.Now})
	id := b.create(t, "/v1/questions", cleanupQuestion())
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	_, header := personalLink(t, b.click(t, discord.Click(msg, ada, "ab:link:"+id+":0:0", nil)))
	clk.Advance(web.PersonalTTL + time.Minute)
	if status := sendByLink(t, b, id, header, `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}`); status != http.StatusForbidden {
		t.Errorf("an answer through a personal link an hour and a minute old: %d, want 403", status)
	}
	if rec := b.get(t, "/v1/questions", id); rec.M["status"] != "pending" {
		t.Errorf("the request is %v, want pending", rec.M["status"])
	}
}

// A request past its expiry that no sweeper has expired yet (sweeps an
// hour apart here) gets no link, which would already have stopped working.
func TestNoPersonalLinkForAnOverdueRequest(t *testing.T) {
	clk := apptest.NewClock(time.Now())
	b := startLinkedWith(t, "https://bridge.example.com/", defaultTarget, "1h", app.Options{Now: clk.Now})
	q := cleanupQuestion()
	q["expires_in"] = "60s"
	id := b.create(t, "/v1/questions", q)
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	clk.Advance(61 * time.Second)
	resp := b.click(t, discord.Click(msg, ada, "ab:link:"+id+":0:0", nil))
	if !isEphemeral(resp) || content(resp) != surface.MsgOverdue || len(discord.Components(data(resp))) != 0 {
		t.Errorf("ada got %v", resp)
	}
}

// Nor does a form open for a request past its expiry and not yet swept:
// what the person filled in would be refused on submit. They are told at
// the tap, as for a link.
func TestNoFormForAnOverdueRequest(t *testing.T) {
	clk := apptest.NewClock(time.Now())
	b := startLinkedWith(t, "https://bridge.example.com/", defaultTarget, "1h", app.Options{Now: clk.Now})
	q := cleanupQuestion()
	q["expires_in"] = "60s"
	question := b.create(t, "/v1/questions", q)
	approval := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "arguments": map[string]any{"file": "deploy.yaml"}, "expires_in": "60s"})
	msgs := b.fake.WaitCalls(t, "create", 2)
	clk.Advance(61 * time.Second)
	for _, prefix := range []string{"ab:other:" + question + ":", "ab:reject:" + approval + ":"} {
		var resp map[string]any
		for _, m := range msgs {
			if c := discord.Find(m.Body, prefix); c != nil {
				resp = b.click(t, discord.Click(m, ada, c["custom_id"].(string), nil))
			}
		}
		if resp == nil {
			t.Fatalf("no control %s… was posted", prefix)
		}
		if !isEphemeral(resp) || content(resp) != surface.MsgOverdue {
			t.Errorf("%s…: ada got %v, want told it is past its expiry", prefix, resp)
		}
	}
}

// A replica that has lost its base_url since another posted the button
// (a rolling change of config) says so, and hands out no link.
func TestNoPersonalLinkWithoutAPublicURL(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	redisURL, prefix := apptest.Redis(t)
	yaml := configYAML(fake, defaultTarget)
	posting := bridge{App: apptest.Start(t, apptest.Config(t, "base_url: https://bridge.example.com/\n"+yaml, redisURL, prefix), app.Options{}), fake: fake}
	bare := bridge{App: apptest.Start(t, apptest.Config(t, yaml, redisURL, prefix), app.Options{}), fake: fake}
	id := posting.create(t, "/v1/questions", cleanupQuestion())
	msg := fake.WaitCalls(t, "create", 1)[0]
	apptest.Posted(t, posting.URL(), "/v1/questions", id, 1)
	resp := bare.click(t, discord.Click(msg, ada, "ab:link:"+id+":0:0", nil))
	if !isEphemeral(resp) || content(resp) != surface.MsgNoPublicURL || len(discord.Components(data(resp))) != 0 {
		t.Errorf("ada got %v", resp)
	}
}

package slack_test

// Fault tests (docs/reliability.md): many people clicking at once on
// several replicas, Redis going away under pending requests, and a Slack
// API that answers 429 and 5xx in bursts.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/pending"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
	"github.com/askbridge/askbridge/internal/surface"
)

// postedIDs maps the request id of each posted message to the message,
// read from the action ids of its controls (ab:<verb>:<id>...).
func postedIDs(calls []slacktest.FakeCall) map[string]slacktest.FakeCall {
	out := map[string]slacktest.FakeCall{}
	var walk func(v any, c slacktest.FakeCall)
	walk = func(v any, c slacktest.FakeCall) {
		switch v := v.(type) {
		case map[string]any:
			if a, ok := v["action_id"].(string); ok && strings.HasPrefix(a, "ab:") {
				if f := strings.Split(a, ":"); len(f) > 2 {
					out[f[2]] = c
				}
			}
			for _, x := range v {
				walk(x, c)
			}
		case []any:
			for _, x := range v {
				walk(x, c)
			}
		}
	}
	for _, c := range calls {
		if c.Method == "chat.postMessage" && c.OK {
			for _, b := range c.Blocks() {
				walk(b, c)
			}
		}
	}
	return out
}

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// tryClick sends a signed click, as click does, from any goroutine: it
// returns what went wrong instead of failing the test.
func (b bridge) tryClick(payload any) error {
	status, body, err := b.post(payload, time.Now(), signingSecret)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("interaction: %d %s", status, body)
	}
	return nil
}

// TestFaultDoubleClicks: n questions, each clicked at the same moment by
// two people on two replicas. Exactly one answer each, one edit of each
// message, and for each question exactly one "Already answered by" to
// its loser and nothing to its winner. The counts are read once both
// replicas have stopped in order (apptest.Stop): every click's work is
// done then, so a duplicate edit or note sent late is counted too, and
// the store holds nothing a finisher would edit again.
func TestFaultDoubleClicks(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	fake := slacktest.NewFakeSlack(t, botToken)
	fake.SetGroup("SOPS", "UOPS")
	url, prefix := apptest.Redis(t)
	rs := []bridge{
		startConfig(t, fake, configYAML(fake, defaultTarget), url, prefix),
		startConfig(t, fake, configYAML(fake, defaultTarget), url, prefix),
	}
	created := make([]apptest.Result, n)
	parallel(n, 16, func(i int) {
		created[i] = <-apptest.Go(rs[i%2].URL(), http.MethodPost, "/v1/questions", cleanupQuestion())
	})
	ids := make([]string, n)
	for i, r := range created {
		ids[i], _ = r.Rec.M["id"].(string)
		if r.Err != nil || r.Status != http.StatusCreated || ids[i] == "" {
			t.Fatalf("create %d: %d %v %v", i, r.Status, r.Rec.M, r.Err)
		}
	}
	msgs := postedIDs(fake.WaitCalls(t, "chat.postMessage", n))
	if len(msgs) != n {
		t.Fatalf("%d posted messages for %d questions", len(msgs), n)
	}

	// Ada picks the first option on replica 0, bob the second on replica
	// 1. Each click has a response_url of its own, where the bridge tells
	// the person who clicked: a note is known by it to its question.
	type click struct {
		b       bridge
		payload map[string]any
		id      string // the question's
		user    string
	}
	clicks := make([][2]click, n)
	clickOf := map[string]click{} // by response_url
	for i, id := range ids {
		for j, who := range []map[string]any{ada, bob} {
			p := slacktest.BlockActions(t, msgs[id], who, fmt.Sprintf("ab:pick:%s:0:%d", id, j), nil, nil)
			c := click{b: rs[j], payload: p, id: id, user: who["id"].(string)}
			clicks[i][j] = c
			clickOf[p["response_url"].(string)] = c
		}
	}
	parallel(n, 32, func(i int) {
		var wg sync.WaitGroup
		for _, c := range clicks[i] {
			wg.Go(func() {
				if err := c.b.tryClick(c.payload); err != nil {
					t.Errorf("question %s, %s's click: %v", c.id, c.user, err)
				}
			})
		}
		wg.Wait()
	})

	// Each question ended once, as its winner said.
	winners := make([]string, n)
	won := map[string]int{}
	for i, id := range ids {
		rec := rs[i%2].wait(t, "/v1/questions", id)
		by, _ := rec.M["answered_by"].(map[string]any)
		winner, _ := by["user_id"].(string)
		label := map[string]string{"UADA": "Yes, delete them (Recommended)", "UBOB": "No, keep them"}[winner]
		if rec.M["status"] != "answered" || label == "" {
			t.Fatalf("question %s: status %v, answered by %v", id, rec.M["status"], by)
		}
		if got := rec.Raw("answer"); got != `{"answers":[{"id":"cleanup","selected":["`+label+`"]}]}` {
			t.Errorf("question %s: answer %s does not match its winner %s", id, got, winner)
		}
		winners[i] = winner
		won[winner]++
	}

	// The edits and the losers' notes are sent after the acks, in each
	// replica's background work: stopped, a replica has finished it.
	apptest.Stop(t, rs[0].App)
	apptest.Stop(t, rs[1].App)
	rdb, err := pending.Connect(pending.Conn{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if c, err := pending.New(rdb, pending.Options{Prefix: prefix}).Count(context.Background(), 0); err != nil || c.Unedited != 0 {
		t.Errorf("%d answered questions left for a finisher to edit (again) (%v)", c.Unedited, err)
	}

	edits := map[string]int{}                 // by message ts
	notes := map[string]map[string][]string{} // by question, then by whom they told
	for _, c := range fake.Calls("") {
		switch c.Method {
		case "chat.update":
			if c.OK {
				edits[c.Field("ts")]++
			}
		case "chat.postEphemeral":
			to, text, _ := c.Ephemeral()
			t.Errorf("%s was told %q through chat.postEphemeral, not on their click's response_url", to, text)
		case "response_url":
			k, ok := clickOf[c.URL]
			to, text, note := c.Ephemeral()
			if !ok || !note || to != k.user {
				t.Errorf("a post to a response_url not an ephemeral note on a click's: %d %s", c.Status, c.Body)
				continue
			}
			if notes[k.id] == nil {
				notes[k.id] = map[string][]string{}
			}
			notes[k.id][to] = append(notes[k.id][to], text)
		}
	}
	names := map[string]string{"UADA": "ada", "UBOB": "bob"}
	for i, id := range ids {
		if e := edits[msgs[id].TS]; e != 1 {
			t.Errorf("question %s: its message was edited %d times, want 1", id, e)
		}
		delete(edits, msgs[id].TS)
		winner := winners[i]
		loser := map[string]string{"UADA": "UBOB", "UBOB": "UADA"}[winner]
		if told := notes[id][winner]; len(told) != 0 {
			t.Errorf("question %s: its winner %s was told %q", id, winner, told)
		}
		if told := notes[id][loser]; len(told) != 1 || !strings.HasPrefix(told[0], "Already answered by "+names[winner]) {
			t.Errorf("question %s: its loser %s was told %q; want one \"Already answered by %s…\"", id, loser, told, names[winner])
		}
	}
	for ts, e := range edits {
		t.Errorf("%d edits of message %s, which no question posted", e, ts)
	}
	t.Logf("%d questions: ada won %d, bob won %d", n, won["UADA"], won["UBOB"])
}

// TestFaultRedisRestart kills a Redis (its own, append-only file on) under
// pending requests, checks what the API and the Slack callbacks say while
// it is down, restarts it, and checks that everything proceeds: nothing
// answered while it was down, nothing lost, nothing answered twice.
func TestFaultRedisRestart(t *testing.T) {
	srv := apptest.StartRedisServer(t)
	fake := slacktest.NewFakeSlack(t, botToken)
	_, prefix := apptest.Redis(t)
	rs := []bridge{
		startConfig(t, fake, configYAML(fake, defaultTarget), srv.URL(), prefix),
		startConfig(t, fake, configYAML(fake, defaultTarget), srv.URL(), prefix),
	}
	const n = 10
	// Question multi is the same one as a multi-select, answered by its
	// Submit, which reads its request first as Other… does.
	const multi = 5
	ids := make([]string, n)
	for i := range ids {
		q := cleanupQuestion()
		if i == multi {
			q["questions"].([]any)[0].(map[string]any)["multi_select"] = true
		}
		ids[i] = rs[i%2].create(t, "/v1/questions", q)
	}
	msgs := postedIDs(fake.WaitCalls(t, "chat.postMessage", n))
	// submit is a click of the multi-select's Submit with "No, keep them"
	// ticked, as Slack sends it: the boxes' state beside the button.
	submit := func(user map[string]any) map[string]any {
		msg := msgs[ids[multi]]
		boxes, block := msg.Action("ab:multi:" + ids[multi])
		if boxes == nil {
			t.Fatalf("the multi-select's message has no checkboxes: %v", msg.Blocks())
		}
		if block == "" {
			block = "Xy7pQ"
		}
		state := map[string]any{block: map[string]any{boxes["action_id"].(string): map[string]any{
			"type": "checkboxes", "selected_options": []any{
				map[string]any{"value": "1", "text": map[string]any{"type": "plain_text", "text": "No, keep them"}}}}}}
		return slacktest.BlockActions(t, msg, user, "ab:submit:"+ids[multi], nil, state)
	}
	// The first two are answered before the crash. Their messages are
	// edited after the clicks' acks, in the background: the crash comes
	// once both are edited and the store knows it (else the edit, or a
	// sweeper's after the restart, would land during the checks below).
	for _, id := range ids[:2] {
		rs[0].click(t, slacktest.BlockActions(t, msgs[id], ada, "ab:pick:"+id+":0:0", nil, nil))
		rs[1].wait(t, "/v1/questions", id)
	}
	fake.WaitCalls(t, "chat.update", 2)
	waitEdited(t, rs[0])

	// Agents wait on the others through the outage: a 503 makes them ask
	// again; anything else that is not the answer is a failure. A call
	// that fails outright (the replica unreachable) ends the agent's wait
	// with its error, which the test reports: only the test's goroutine
	// may fail it.
	type outcome struct {
		id     string
		answer string
		seen   []int
		err    error
	}
	results := make(chan outcome, n)
	for i, id := range ids[2:] {
		go func() {
			b, o := rs[i%2], outcome{id: id}
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				r := <-apptest.Go(b.URL(), http.MethodGet, "/v1/questions/"+id+"?wait=2s", nil)
				if r.Err != nil {
					o.err = r.Err
					break
				}
				status, rec := r.Status, r.Rec
				o.seen = append(o.seen, status)
				if status == http.StatusOK && rec.M["status"] == "answered" {
					o.answer = rec.Raw("answer")
					break
				}
				if status == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond) // an agent's retry delay
				} else if status != http.StatusOK {
					break
				}
			}
			results <- o
		}()
	}

	srv.Kill()

	// While it is down: the API says 503 UNAVAILABLE ...
	for _, call := range []struct{ method, path string }{
		{http.MethodGet, "/v1/questions/" + ids[2]},
		{http.MethodPost, "/v1/questions/" + ids[2] + "/answer"},
		{http.MethodPost, "/v1/questions"},
	} {
		var body any = map[string]any{"answers": []any{map[string]any{"id": "cleanup", "selected": []string{"No, keep them"}}}}
		if call.path == "/v1/questions" {
			body = cleanupQuestion()
		}
		status, rec := rs[0].do(t, call.method, call.path, body)
		code, _ := rec.M["error"].(map[string]any)["code"].(string)
		if status != http.StatusServiceUnavailable || code != "UNAVAILABLE" {
			t.Errorf("%s %s with Redis down: %d %v; want 503 UNAVAILABLE", call.method, call.path, status, rec.M)
		}
	}
	// ... and a click is acknowledged and the person told to try again,
	// in the words that fit what the bridge knows: an option resolves
	// without reading its request, and the bridge cannot tell "not
	// written" from "written, reply lost" (MsgUnconfirmed); Other… reads
	// the request first, which fails, so nothing was written
	// (MsgTrouble), as does a multi-select's Submit. Each note is known
	// by its click's response_url.
	downClicks := []struct {
		name, action, want string
	}{
		{"an option", "ab:pick:" + ids[2] + ":0:1", surface.MsgUnconfirmed},
		{"an option", "ab:pick:" + ids[3] + ":0:1", surface.MsgUnconfirmed},
		{"Other…", "ab:other:" + ids[4], surface.MsgTrouble},
		{"a multi-select's Submit", "ab:submit:" + ids[multi], surface.MsgTrouble},
	}
	told := func(calls []slacktest.FakeCall, url string) []string {
		var out []string
		for _, c := range calls {
			if _, text, ok := c.Ephemeral(); ok && c.URL == url {
				out = append(out, text)
			}
		}
		return out
	}
	respond := make([]string, len(downClicks))
	for i, dc := range downClicks {
		var p map[string]any
		if id := strings.Split(dc.action, ":")[2]; id == ids[multi] {
			p = submit(bob)
		} else {
			p = slacktest.BlockActions(t, msgs[id], bob, dc.action, nil, nil)
		}
		respond[i] = p["response_url"].(string)
		rs[1].click(t, p)
	}
	calls := fake.WaitFor(t, "bob told to try again on each click", 30*time.Second, func(calls []slacktest.FakeCall) bool {
		for _, u := range respond {
			if len(told(calls, u)) == 0 {
				return false
			}
		}
		return true
	})
	for i, dc := range downClicks {
		if got := told(calls, respond[i]); len(got) != 1 || got[0] != dc.want {
			t.Errorf("a click of %s (%s) with Redis down was told %q; want once %q", dc.name, dc.action, got, dc.want)
		}
	}
	if views := fake.Calls("views.open"); len(views) != 0 {
		t.Errorf("Other… with Redis down opened %d forms; want none", len(views))
	}
	editsDown := len(fake.Calls("chat.update"))

	srv.Start()
	// go-redis's pool, after as many failed dials as it has connections,
	// answers a call that needs a new connection with the last dial error
	// until a background dial succeeds (it tries every second), though a
	// connection it holds is served: wait until each replica says it is
	// ready, which it does once its calls have been served again for a
	// while, none failing (Store.Ready), not at the first PING answered.
	for _, b := range rs {
		deadline := time.Now().Add(15 * time.Second)
		for {
			status, _ := b.do(t, http.MethodGet, "/readyz", nil)
			if status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a replica is not ready 15s after Redis came back: %d", status)
			}
			time.Sleep(50 * time.Millisecond) // nothing signals readiness
		}
	}

	// Nothing was answered while Redis was down, and nothing was lost.
	for i, id := range ids {
		rec := rs[i%2].get(t, "/v1/questions", id)
		want := "pending"
		if i < 2 {
			want = "answered"
		}
		if rec.M["status"] != want {
			t.Errorf("after the restart question %d is %v; want %s", i, rec.M["status"], want)
		}
	}
	if got := len(fake.Calls("chat.update")); got != editsDown || got != 2 {
		t.Errorf("%d edits after the outage; want the 2 of the answers before it", got)
	}
	// Everything proceeds: the rest are answered now, on either replica.
	for i, id := range ids[2:] {
		if id == ids[multi] {
			rs[i%2].click(t, submit(bob))
			continue
		}
		rs[i%2].click(t, slacktest.BlockActions(t, msgs[id], bob, "ab:pick:"+id+":0:1", nil, nil))
	}
	for range ids[2:] {
		var o outcome
		select {
		case o = <-results:
		case <-time.After(90 * time.Second):
			t.Fatal("an agent did not get its answer")
		}
		if o.err != nil {
			t.Errorf("agent waiting on %s: %v (statuses %v)", o.id, o.err, o.seen)
			continue
		}
		if o.answer != `{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}` {
			t.Errorf("agent waiting on %s got %q after statuses %v", o.id, o.answer, o.seen)
		}
		for _, s := range o.seen {
			if s != http.StatusOK && s != http.StatusServiceUnavailable {
				t.Errorf("agent waiting on %s saw status %d (statuses %v)", o.id, s, o.seen)
			}
		}
	}
	fake.WaitCalls(t, "chat.update", n)
	edited := map[string]int{}
	for _, c := range fake.Calls("chat.update") {
		edited[c.Field("ts")]++
	}
	for i, id := range ids {
		if e := edited[msgs[id].TS]; e != 1 {
			t.Errorf("question %d: edited %d times, want 1", i, e)
		}
		rec := rs[0].get(t, "/v1/questions", id)
		by, _ := rec.M["answered_by"].(map[string]any)
		want := "UBOB"
		if i < 2 {
			want = "UADA"
		}
		if rec.M["status"] != "answered" || by["user_id"] != want {
			t.Errorf("question %d: %v by %v; want answered by %s", i, rec.M["status"], by["user_id"], want)
		}
	}
	// The clicks made while Redis was down were told nothing more.
	for i, dc := range downClicks {
		if got := told(fake.Calls(""), respond[i]); len(got) != 1 {
			t.Errorf("a click of %s (%s) with Redis down was told %d times in all: %q", dc.name, dc.action, len(got), got)
		}
	}
}

// TestFaultSlackBursts: the Slack API answers 429 with Retry-After and 5xx
// in bursts, to the post and to the edit. Each message is posted exactly
// once and edited exactly once, and the waiting agent gets its answer and
// never an error.
func TestFaultSlackBursts(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("chat.postMessage",
		slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "1"},
		slacktest.FakeFail{Status: http.StatusServiceUnavailable},
		slacktest.FakeFail{Status: http.StatusBadGateway},
	)
	b.fake.FailNext("chat.update",
		slacktest.FakeFail{Status: http.StatusInternalServerError},
		slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: "1"},
	)
	// The agent creates and waits in one call, through the post's burst.
	body := cleanupQuestion()
	body["tool_call_id"] = "call-burst"
	done := apptest.Go(b.URL(), http.MethodPost, "/v1/questions?wait=30s", body)
	msg := b.fake.WaitCalls(t, "chat.postMessage", 1)[0]
	id := ""
	for k := range postedIDs([]slacktest.FakeCall{msg}) {
		id = k
	}
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1) // a person clicks long after
	b.click(t, slacktest.BlockActions(t, msg, ada, "ab:pick:"+id+":0:0", nil, nil))
	r := apptest.Await(t, done, 40*time.Second)
	if r.Status != http.StatusCreated || r.Rec.M["status"] != "answered" {
		t.Fatalf("the agent got %d %v; want 201 answered", r.Status, r.Rec.M)
	}
	b.fake.WaitCalls(t, "chat.update", 1)
	posts, edits := b.fake.Calls("chat.postMessage"), b.fake.Calls("chat.update")
	if ok := okCount(posts); ok != 1 || len(posts) != 4 {
		t.Errorf("posts: %d tries, %d ok; want 4 tries (3 refused), 1 ok", len(posts), ok)
	}
	if ok := okCount(edits); ok != 1 || len(edits) != 3 {
		t.Errorf("edits: %d tries, %d ok; want 3 tries (2 refused), 1 ok", len(edits), ok)
	}
	p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
	if len(p) != 1 {
		t.Errorf("recorded posts %v; want exactly one", p)
	}
	// The waiting create never read the record back: it lists the post
	// it made itself.
	if got := r.Rec.M["posts"]; !reflect.DeepEqual(got, any(p)) {
		t.Errorf("the agent's record lists posts %v; the store, %v", got, p)
	}
}

func okCount(calls []slacktest.FakeCall) int {
	n := 0
	for _, c := range calls {
		if c.OK {
			n++
		}
	}
	return n
}

// Slack may answer a chat.postMessage with internal_error or a 5xx after it
// has posted the message, and a connection may drop once the post is in,
// before or after Slack made it. With the history scope the bridge finds
// that message instead of posting the request again: one message,
// recorded, and edited when the request ends. Without it the request is
// posted again (and may show twice, the first copy never edited), so that
// it is asked at all.
func TestFaultSlackPostAppliedThenFailed(t *testing.T) {
	const all = "chat:write,usergroups:read,channels:history,groups:history"
	for _, tc := range []struct {
		name      string
		fail      slacktest.FakeFail
		scopes    string
		historyRL string // the history lookup is rate limited once, this Retry-After
		messages  int
	}{
		{"internal_error", slacktest.FakeFail{Error: "internal_error", Applied: true}, all, "", 1},
		{"HTTP 500", slacktest.FakeFail{Status: http.StatusInternalServerError, Applied: true}, all, "", 1},
		{"the connection dropped after the post", slacktest.FakeFail{Drop: true, Applied: true}, all, "", 1},
		{"the connection dropped before the post", slacktest.FakeFail{Drop: true}, all, "", 1},
		{"dropped, without channels:history", slacktest.FakeFail{Drop: true, Applied: true}, "chat:write,usergroups:read", "", 2},
		{"the lookup rate limited", slacktest.FakeFail{Error: "internal_error", Applied: true}, all, "1", 1},
		// A minute's wait (conversations.history for an app outside the
		// Marketplace) leaves the post no time: it is posted again.
		{"the lookup rate limited for a minute", slacktest.FakeFail{Error: "internal_error", Applied: true}, all, "60", 2},
		{"without channels:history", slacktest.FakeFail{Error: "internal_error", Applied: true}, "chat:write,usergroups:read", "", 2},
		// The bridge's message is its bot's: another app's copy of its
		// blocks is not taken for it.
		{"another app's copy", slacktest.FakeFail{Error: "internal_error", Applied: true, AppliedBy: "B0OTHERAPP"}, all, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, defaultTarget)
			b.fake.Scopes = tc.scopes
			b.fake.FailNext("chat.postMessage", tc.fail)
			if tc.historyRL != "" {
				b.fake.FailNext("conversations.history", slacktest.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: tc.historyRL})
			}
			id := b.create(t, "/v1/questions", cleanupQuestion())
			msgs := b.fake.Messages(channel)
			if len(msgs) != tc.messages {
				t.Fatalf("%d messages in the channel; want %d", len(msgs), tc.messages)
			}
			posts, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
			if len(posts) != 1 || posts[0].(map[string]any)["message_id"] != msgs[len(msgs)-1]["ts"] {
				t.Fatalf("recorded posts %v; want the last message, %v", posts, msgs[len(msgs)-1]["ts"])
			}
			if status, rec := b.do(t, http.MethodPost, "/v1/questions/"+id+"/answer",
				map[string]any{"answers": []any{map[string]any{"id": "cleanup", "selected": []string{"No, keep them"}}}}); status != http.StatusOK {
				t.Fatalf("answer: %d %v", status, rec.M)
			}
			b.fake.WaitCalls(t, "chat.update", 1)
			if tc.messages == 1 {
				raw, _ := json.Marshal(b.fake.Messages(channel))
				if strings.Contains(string(raw), `"type":"actions"`) {
					t.Errorf("a message keeps its controls after the answer: %s", raw)
				}
			}
		})
	}
}

// The same in a session's thread: the reply Slack posted and failed is
// found among the thread's replies (conversations.replies).
func TestFaultSlackThreadPostAppliedThenFailed(t *testing.T) {
	b := start(t, `
      - slack:
          channel: `+channel+`
          thread_by_session: true`)
	b.fake.Scopes = "chat:write,channels:history,groups:history"
	ask := func() string {
		q := cleanupQuestion()
		q["caller"] = map[string]any{"name": "deploy-bot", "session": "run-7"}
		return b.create(t, "/v1/questions", q)
	}
	ask() // starts the session's thread
	b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "fatal_error", Applied: true})
	id := ask()
	msgs := b.fake.Messages(channel)
	if len(msgs) != 2 || msgs[1]["thread_ts"] != msgs[0]["ts"] {
		t.Fatalf("messages %d; want the thread's parent and one reply in it", len(msgs))
	}
	posts, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
	if len(posts) != 1 || posts[0].(map[string]any)["message_id"] != msgs[1]["ts"] {
		t.Errorf("recorded posts %v; want the reply, %v", posts, msgs[1]["ts"])
	}
}

// A person's DM has an id the bridge learns only from a post's answer:
// after a post Slack made and failed, the first to a person, the request
// is posted again, and then looked for in the DM (im:history). The later
// copy is deleted: the request shows once, recorded, and is edited when
// it ends. Without im:history both copies stay; the later is recorded
// (TestFaultSlackCopyClicked: a click on the other makes it known).
func TestFaultSlackDMPostAppliedThenFailed(t *testing.T) {
	const history = "chat:write,channels:history,groups:history,im:history"
	for _, tc := range []struct {
		name     string
		scopes   string
		delete   *slacktest.FakeFail // how chat.delete fails
		messages int
	}{
		{"with im:history", history, nil, 1},
		// Both copies are recorded then, and both edited.
		{"with im:history, Slack refusing the delete", history, &slacktest.FakeFail{Error: "cant_delete_message"}, 2},
		{"without im:history", "chat:write,channels:history,groups:history", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, `
      - slack:
          channel: UADA`)
			b.fake.Scopes = tc.scopes
			b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "internal_error", Applied: true})
			if tc.delete != nil {
				b.fake.FailNext("chat.delete", *tc.delete)
			}
			id := b.create(t, "/v1/questions", cleanupQuestion())
			msgs := b.fake.Messages("DADA")
			if len(msgs) != tc.messages {
				t.Fatalf("%d messages in the DM; want %d", len(msgs), tc.messages)
			}
			first := b.fake.Calls("chat.postMessage")[0].TS
			if msgs[0]["ts"] != first {
				t.Errorf("the first message is %v; want the first copy, %v", msgs[0]["ts"], first)
			}
			var want []any // the ts of the copies recorded
			switch {
			case tc.scopes != history:
				want = []any{msgs[1]["ts"]} // the one posted again: the other is unknown
			default:
				for _, m := range msgs {
					want = append(want, m["ts"])
				}
			}
			posts, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
			var got []any
			for _, p := range posts {
				if p.(map[string]any)["channel"] != "DADA" {
					t.Errorf("a post recorded in %v; want DADA", p.(map[string]any)["channel"])
				}
				got = append(got, p.(map[string]any)["message_id"])
			}
			if !reflect.DeepEqual(sortedAny(got), sortedAny(want)) {
				t.Fatalf("recorded posts %v; want %v", got, want)
			}
			answer(t, b, id)
			b.fake.WaitCalls(t, "chat.update", len(want))
			if live := liveMessages(b.fake, "DADA"); len(live) != tc.messages-len(want) {
				t.Errorf("messages %v keep their controls after the answer; want %d", live, tc.messages-len(want))
			}
		})
	}
}

func sortedAny(v []any) []string {
	out := make([]string, 0, len(v))
	for _, x := range v {
		out = append(out, fmt.Sprint(x))
	}
	slices.Sort(out)
	return out
}

// Once the bridge has posted to a person, it knows their DM's id: a later
// post Slack made and failed is looked for there first, and not made again.
func TestFaultSlackDMKnownPostAppliedThenFailed(t *testing.T) {
	b := start(t, `
      - slack:
          channel: UADA`)
	b.fake.Scopes = "chat:write,im:history"
	b.create(t, "/v1/questions", cleanupQuestion())
	b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "internal_error", Applied: true})
	id := b.create(t, "/v1/questions", cleanupQuestion())
	if n := len(b.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("%d posts; want 2, the failed one not made again", n)
	}
	if n := len(b.fake.Calls("chat.delete")); n != 0 {
		t.Errorf("%d deletes; want none", n)
	}
	posts, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
	if msgs := b.fake.Messages("DADA"); len(msgs) != 2 || len(posts) != 1 || posts[0].(map[string]any)["message_id"] != msgs[1]["ts"] {
		t.Errorf("recorded %v of %d messages in the DM; want the second of two", posts, len(msgs))
	}
}

// A group DM's history takes mpim:history, not a private channel's
// groups:history: with it a post Slack made and failed is found there and
// not made again; with groups:history only, it shows twice.
func TestFaultSlackGroupDMPostAppliedThenFailed(t *testing.T) {
	for _, tc := range []struct {
		scopes   string
		messages int
	}{
		{"chat:write,mpim:history", 1},
		{"chat:write,channels:history,groups:history", 2},
	} {
		t.Run(tc.scopes, func(t *testing.T) {
			b := start(t, `
      - slack:
          channel: G0TEAM`)
			b.fake.SetChannel("G0TEAM", slacktest.FakeChannel{Name: "mpdm-ada--bo--askbridge-1", Member: true, GroupDM: true})
			b.fake.Scopes = tc.scopes
			b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "internal_error", Applied: true})
			id := b.create(t, "/v1/questions", cleanupQuestion())
			msgs := b.fake.Messages("G0TEAM")
			posts, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
			if len(msgs) != tc.messages || len(posts) != 1 || posts[0].(map[string]any)["message_id"] != msgs[len(msgs)-1]["ts"] {
				t.Errorf("recorded %v of %d messages in the group DM; want the last of %d", posts, len(msgs), tc.messages)
			}
		})
	}
}

// Where the bridge can't look for a post Slack made and failed (a DM
// without im:history, a channel without channels:history), the request
// shows twice, the later copy recorded. A click on the other copy is
// how the bridge learns of it: the click counts as any other, and every
// copy loses its controls when the request ends, however it ends.
func TestFaultSlackCopyClicked(t *testing.T) {
	for _, where := range []struct {
		name, target, channel string
	}{
		{"DM without im:history", `
      - slack:
          channel: UADA`, "DADA"},
		{"channel without channels:history", `
      - slack:
          channel: ` + channel, channel},
	} {
		for _, tc := range []struct {
			name   string
			ended  bool   // the request ends before the click on the unrecorded copy
			button string // the control clicked
		}{
			{"the copy's click answers", false, "ab:pick:"},
			{"the copy is clicked once the request has ended", true, "ab:pick:"},
			// A button that opens a modal (Other…, Answer…, Reject) is as
			// late: no modal, the person is told, and the copy edited.
			{"the copy's Other… is clicked once the request has ended", true, "ab:other:"},
		} {
			t.Run(where.name+"/"+tc.name, func(t *testing.T) {
				b := start(t, where.target)
				b.fake.Scopes = "chat:write"
				b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "internal_error", Applied: true})
				id := b.create(t, "/v1/questions", cleanupQuestion())
				if msgs := b.fake.Messages(where.channel); len(msgs) != 2 {
					t.Fatalf("%d messages; want 2, the first unrecorded", len(msgs))
				}
				first := b.fake.Calls("chat.postMessage")[0]
				if tc.ended {
					answer(t, b, id)
					b.fake.WaitCalls(t, "chat.update", 1)
				}
				b.click(t, slacktest.BlockActions(t, first, ada, tc.button+id, nil, nil))
				if tc.ended {
					b.fake.WaitFor(t, "ada told it is over", 10*time.Second, func(calls []slacktest.FakeCall) bool {
						return len(ephemerals(calls, "UADA")) == 1
					})
				} else {
					rec := b.wait(t, "/v1/questions", id)
					if by := rec.Raw("answered_by"); rec.M["status"] != "answered" || !strings.Contains(by, `"UADA"`) {
						t.Fatalf("%v by %s; want answered by ada, through the copy", rec.M["status"], by)
					}
					if notes := ephemerals(b.fake.Calls(""), "UADA"); len(notes) != 0 {
						t.Errorf("ada was told %q", notes)
					}
				}
				b.fake.WaitFor(t, "both copies edited", 10*time.Second, func([]slacktest.FakeCall) bool {
					return len(liveMessages(b.fake, where.channel)) == 0
				})
				posts, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
				if len(posts) != 2 {
					t.Errorf("recorded posts %v; want both copies", posts)
				}
			})
		}
	}
}

// TestFaultSlackCopyModalSubmittedLate: a modal opened from a copy the
// request does not list, and submitted once the request has ended, is
// told too late, and the copy loses its controls like the others.
func TestFaultSlackCopyModalSubmittedLate(t *testing.T) {
	b := start(t, `
      - slack:
          channel: `+channel)
	b.fake.Scopes = "chat:write"
	b.fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "internal_error", Applied: true})
	id := b.create(t, "/v1/questions", cleanupQuestion())
	if msgs := b.fake.Messages(channel); len(msgs) != 2 {
		t.Fatalf("%d messages; want 2, the first unrecorded", len(msgs))
	}
	first := b.fake.Calls("chat.postMessage")[0]
	b.click(t, slacktest.BlockActions(t, first, ada, "ab:other:"+id, nil, nil))
	opened := b.fake.WaitCalls(t, "views.open", 1)[0]
	answer(t, b, id)
	b.fake.WaitCalls(t, "chat.update", 1)

	body := b.click(t, slacktest.ViewSubmission(opened, ada, map[string]any{"q0o": slacktest.TextValue("after the freeze")}))
	if !strings.Contains(body, `"response_action":"update"`) || !strings.Contains(body, "Too late") {
		t.Errorf("the late submission got %s; want the modal replaced with a Too late notice", body)
	}
	b.fake.WaitFor(t, "both copies edited", 10*time.Second, func([]slacktest.FakeCall) bool {
		return len(liveMessages(b.fake, channel)) == 0
	})
}

// answer answers the cleanup question id through the API.
func answer(t *testing.T, b bridge, id string) {
	t.Helper()
	if status, rec := b.do(t, http.MethodPost, "/v1/questions/"+id+"/answer",
		map[string]any{"answers": []any{map[string]any{"id": "cleanup", "selected": []string{"No, keep them"}}}}); status != http.StatusOK {
		t.Fatalf("answer: %d %v", status, rec.M)
	}
}

// liveMessages returns the ts of the messages in channel that have
// controls.
func liveMessages(fake *slacktest.FakeSlack, channel string) []any {
	var out []any
	for _, m := range fake.Messages(channel) {
		raw, _ := json.Marshal(m["blocks"])
		if strings.Contains(string(raw), `"type":"actions"`) {
			out = append(out, m["ts"])
		}
	}
	return out
}

package discord_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/discord"
)

// TestFaultDiscordBursts: Discord answers a burst of 429s and 5xx to the
// post and to an edit. Every message is posted exactly once and edited
// exactly once, and the waiting agent gets its answer, never an error.
func TestFaultDiscordBursts(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("create",
		discord.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: 0.05},
		discord.FakeFail{Status: http.StatusServiceUnavailable},
		discord.FakeFail{Status: http.StatusBadGateway},
	)

	// The agent creates and waits in one call, through the post's burst.
	body := cleanupQuestion()
	body["tool_call_id"] = "call-burst"
	done := apptest.Go(b.URL(), http.MethodPost, "/v1/questions?wait=30s", body)
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	customID, id := firstPick(t, msg)
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1) // a person clicks long after
	if resp := b.click(t, discord.Click(msg, ada, customID, nil)); respType(resp) != 7 || !noControls(data(resp)) {
		t.Fatalf("the click was answered with %v; want the message updated without controls", resp)
	}
	r := apptest.Await(t, done, 40*time.Second)
	if r.Status != http.StatusCreated || r.Rec.M["status"] != "answered" {
		t.Fatalf("the agent got %d %v; want 201 answered", r.Status, r.Rec.M)
	}
	p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
	if len(p) != 1 {
		t.Errorf("recorded posts %v; want exactly one", p)
	}
	if got := r.Rec.M["posts"]; !reflect.DeepEqual(got, any(p)) {
		t.Errorf("the agent's record lists posts %v; the store, %v", got, p)
	}

	// A click's answer edits its message in the interaction's response. An
	// answer through the API edits through PATCH, here through a burst.
	b.fake.FailNext("edit",
		discord.FakeFail{Status: http.StatusInternalServerError},
		discord.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: 0.05},
	)
	id2 := b.create(t, "/v1/questions", cleanupQuestion())
	msg2 := b.fake.WaitCalls(t, "create", 2)[1]
	answer := map[string]any{"answers": []any{map[string]any{"id": "cleanup", "selected": []any{"No, keep them"}}}}
	if status, rec := b.do(t, http.MethodPost, "/v1/questions/"+id2+"/answer", answer); status != http.StatusOK {
		t.Fatalf("answer through the API: %d %v", status, rec.M)
	}
	edit := b.fake.WaitCalls(t, "edit", 1)[0]
	if edit.MessageID != msg2.MessageID || !noControls(edit.Body) || !strings.Contains(discord.Text(edit.Body), "No, keep them") {
		t.Errorf("the edit %s %v; want message %s without controls, saying the answer", edit.MessageID, edit.Body, msg2.MessageID)
	}
	if all, ok := len(b.fake.AllCalls("create")), len(b.fake.Calls("create")); all != 5 || ok != 2 {
		t.Errorf("posts: %d tries, %d ok; want 5 tries (3 refused), 2 ok", all, ok)
	}
	if rec := b.wait(t, "/v1/questions", id2); rec.M["status"] != "answered" {
		t.Errorf("status %v", rec.M["status"])
	}
	if all, ok := len(b.fake.AllCalls("edit")), len(b.fake.Calls("edit")); all != 3 || ok != 1 {
		t.Errorf("edits: %d tries, %d ok; want 3 tries (2 refused), 1 ok", all, ok)
	}
}

// firstPick is the custom_id of msg's first option button and the id of
// the request it answers.
func firstPick(t *testing.T, msg discord.FakeCall) (customID, id string) {
	t.Helper()
	pick := discord.Find(msg.Body, "ab:pick:")
	if pick == nil {
		t.Fatalf("the message has no option buttons: %v", msg.Body)
	}
	customID = pick["custom_id"].(string)
	return customID, strings.Split(customID, ":")[2]
}

// TestFaultDiscordGlobalRateLimit: Discord's global rate limit answers 429
// with X-RateLimit-Global and Retry-After but none of a bucket's headers
// (no X-RateLimit-Reset-After, which discordgo's own global lock reads).
// The retry policy waits Retry-After itself: the message is posted once,
// on the next try, and the agent gets its answer.
func TestFaultDiscordGlobalRateLimit(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("create", discord.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: 0.05, Global: true})
	body := cleanupQuestion()
	done := apptest.Go(b.URL(), http.MethodPost, "/v1/questions?wait=30s", body)
	msg := b.fake.WaitCalls(t, "create", 1)[0]
	customID, id := firstPick(t, msg)
	apptest.Posted(t, b.URL(), "/v1/questions", id, 1)
	b.click(t, discord.Click(msg, ada, customID, nil))
	if r := apptest.Await(t, done, 40*time.Second); r.Status != http.StatusCreated || r.Rec.M["status"] != "answered" {
		t.Fatalf("the agent got %d %v; want 201 answered", r.Status, r.Rec.M)
	}
	if all, ok := b.fake.AllCalls("create"), b.fake.Calls("create"); len(all) != 2 || all[0].Status != http.StatusTooManyRequests || len(ok) != 1 {
		t.Errorf("creates: %d tries, %d ok; want a global 429, then one post", len(all), len(ok))
	}
}

// TestFaultDiscordLongRateLimit: a create answered 429 with a wait past
// the retry policy's MaxWait, its bucket reset 20 minutes away (Discord's
// docs show such a 429 for a shared resource), is NO_PROVIDER at once,
// and the next request to the channel is posted: it is not held until
// the bucket resets, past its deadline, in discordgo's rate limiter.
func TestFaultDiscordLongRateLimit(t *testing.T) {
	b := start(t, defaultTarget)
	b.fake.FailNext("create", discord.FakeFail{Status: http.StatusTooManyRequests, RetryAfter: 1336.57, Scope: "shared"})
	if r := apptest.Await(t, apptest.Go(b.URL(), http.MethodPost, "/v1/questions", cleanupQuestion()), 30*time.Second); r.Status != http.StatusServiceUnavailable ||
		!strings.Contains(r.Rec.Raw("error"), "NO_PROVIDER") {
		t.Fatalf("the rate-limited create: %d %s; want 503 NO_PROVIDER", r.Status, r.Rec.Raw("error"))
	}
	if r := apptest.Await(t, apptest.Go(b.URL(), http.MethodPost, "/v1/questions", cleanupQuestion()), 30*time.Second); r.Status != http.StatusCreated {
		t.Fatalf("the next create: %d %v; want 201, posted", r.Status, r.Rec.M)
	}
}

// TestFaultDiscordCreateAppliedThenFailed: Discord posts the message but
// the answer is lost, to a 502 (from a proxy in front of it, say) or to a
// connection dropped before it came, and the bridge tries again. The
// retry carries the first try's nonce with enforce_nonce, so Discord
// answers with the message it posted: one message, recorded, and edited
// when the request ends. Without the nonce a second copy went up that was
// never recorded, so never edited: its buttons stayed live after the
// request ended. (Until 2026-12-05 a dropped connection was not tried
// again: the agent got NO_PROVIDER, and the message stayed live.)
func TestFaultDiscordCreateAppliedThenFailed(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail discord.FakeFail
	}{
		{"502", discord.FakeFail{Status: http.StatusBadGateway, Applied: true}},
		{"connection dropped", discord.FakeFail{Drop: true, Applied: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, defaultTarget)
			b.fake.FailNext("create", tc.fail)
			id := b.create(t, "/v1/questions", cleanupQuestion())

			posted := b.fake.Posted()
			if len(posted) != 1 {
				t.Errorf("%d messages posted for one request; want 1", len(posted))
			}
			msg := posted[0]
			tries := b.fake.AllCalls("create")
			if len(tries) != 2 || tries[0].Status != tc.fail.Status || tries[1].MessageID != msg.MessageID {
				var got []string
				for _, c := range tries {
					got = append(got, fmt.Sprintf("%d %s", c.Status, c.MessageID))
				}
				t.Errorf("creates answered %v; want %d and a retry answered with message %s", got, tc.fail.Status, msg.MessageID)
			}
			nonce, _ := tries[0].Body["nonce"].(string)
			if nonce == "" || len(nonce) > 25 || tries[1].Body["nonce"] != nonce || tries[1].Body["enforce_nonce"] != true {
				t.Errorf("nonces %v and %v (enforce_nonce %v); want one nonce of at most 25 characters on both tries, enforced",
					tries[0].Body["nonce"], tries[1].Body["nonce"], tries[1].Body["enforce_nonce"])
			}
			p, _ := b.get(t, "/v1/questions", id).M["posts"].([]any)
			if len(p) != 1 || p[0].(map[string]any)["message_id"] != msg.MessageID {
				t.Errorf("recorded posts %v; want message %s alone", p, msg.MessageID)
			}

			if status, _ := b.do(t, http.MethodDelete, "/v1/questions/"+id, nil); status != http.StatusOK {
				t.Fatalf("cancel: %d", status)
			}
			// The request's recorded messages are edited in one go: once one is,
			// a message not edited by then never will be.
			b.fake.WaitCalls(t, "edit", 1)
			edited := map[string]bool{}
			for _, e := range b.fake.Calls("edit") {
				edited[e.MessageID] = noControls(e.Body)
			}
			for _, m := range posted {
				if !edited[m.MessageID] {
					t.Errorf("message %s keeps its controls after the request was cancelled", m.MessageID)
				}
			}

			// The next request's message is a message of its own.
			b.create(t, "/v1/questions", cleanupQuestion())
			if got := b.fake.Posted(); len(got) != len(posted)+1 || got[len(got)-1].MessageID == msg.MessageID {
				t.Errorf("after the next request %d messages are posted; want one more, a new one", len(got))
			}
		})
	}
}

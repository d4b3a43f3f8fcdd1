package slack_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

var leftRE = regexp.MustCompile(`^_… \d+ more characters are too long to post in Slack\. The whole request is in (.+)\._$`)

// A request too long even for its message's thread ends the thread with
// a line that says so, and where the whole request is: with a public URL
// (base_url), on its page, that the message's Open in browser button
// opens (a link, or a personal link handed to whoever may answer); else
// in the bridge's web inbox. The answer form opened from the message
// names the same place for the questions past the thread, and the thread
// for those it holds.
func TestTooLongForTheThreadSaysWhereItIsWhole(t *testing.T) {
	const base = "base_url: https://bridge.example.com/\n"
	anyone := `
      - slack:
          channel: ` + channel
	for _, tc := range []struct {
		name, yaml, targets string
		open                string // the action id of the message's Open in browser, ID for the request's id
		in, how             string // where the whole request is said to be
	}{
		{"no public URL", "", anyone, "", "the bridge's web inbox", ", at /r/"},
		{"anyone may answer", base, anyone, "askbridge_open", "the browser", " (the message's Open in browser button)"},
		{"responders limited", base, limitedTarget, "ab:link:ID", "the browser", " (the message's Open in browser button)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, botToken)
			redisURL, prefix := apptest.Redis(t)
			b := startConfig(t, fake, tc.yaml+configYAML(fake, tc.targets), redisURL, prefix)
			var qs []any
			for i := range 20 {
				qs = append(qs, map[string]any{"id": fmt.Sprintf("q%d", i), "question": fmt.Sprintf("Which region for part %d?", i),
					"detail":  strings.Repeat(fmt.Sprintf("Part %d runs in one region, and its data stays there. ", i), 90),
					"options": []any{map[string]any{"label": "eu-west"}, map[string]any{"label": "us-east"}}})
			}
			id := b.create(t, "/v1/questions", map[string]any{"questions": qs})
			posts := fake.WaitFor(t, "the message and its 8 replies", 10*time.Second, posted(9))
			msg := posts[0]
			if action := strings.ReplaceAll(tc.open, "ID", id); action != "" {
				if open, _ := msg.Action(action); open == nil {
					t.Fatalf("the message has no Open in browser button (%s)", action)
				}
			}
			replies := threadOf(posts, msg)
			if len(replies) != 8 {
				t.Fatalf("%d replies; the test wants a full thread", len(replies))
			}
			last := replies[7].Blocks()
			note := sentTextOf(last[len(last)-1])
			m := leftRE.FindStringSubmatch(note)
			where := tc.in + tc.how
			if strings.HasSuffix(where, "/r/") {
				where += id
			}
			if m == nil || m[1] != where {
				t.Fatalf("the thread ends %q; want it to say the whole request is in %s", note, where)
			}

			b.click(t, slacktest.BlockActions(t, msg, ada, "ab:answer:"+id, nil, nil))
			opened := fake.WaitCalls(t, "views.open", 1)[0]
			if !opened.OK {
				t.Fatalf("Slack refused the form: %s", opened.Body)
			}
			var details []string // each question's, as the form shows it
			for _, bl := range opened.Blocks() {
				if bl["type"] == "context" {
					details = append(details, sentTextOf(bl))
				}
			}
			if len(details) != len(qs) {
				t.Fatalf("the form shows %d details; want one for each of %d questions", len(details), len(qs))
			}
			if want := "(in full in the message's thread)"; !strings.HasSuffix(details[0], want) {
				t.Errorf("the form shows the first question's detail as %q; want it to end %q", details[0], want)
			}
			if want := "(in full in " + tc.in + ")"; !strings.HasSuffix(details[19], want) {
				t.Errorf("the form shows the last question's detail as %q; want it to end %q, as the thread's last line says", details[19], want)
			}
		})
	}
}

// sentTextOf is the text of a block of one text, or of a context block's
// first element.
func sentTextOf(b map[string]any) string {
	if text, ok := b["text"].(map[string]any); ok {
		s, _ := text["text"].(string)
		return s
	}
	els, _ := b["elements"].([]any)
	if len(els) == 0 {
		return ""
	}
	el, _ := els[0].(map[string]any)
	s, _ := el["text"].(string)
	return s
}

package discord_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/discord"
)

// anyoneTarget lets anyone in its channel answer.
const anyoneTarget = `
      - discord:
          channel: "` + channel + `"`

var (
	leftRE = regexp.MustCompile(`\*… \d+ more characters are too long to post in Discord\. The whole request is in (.+)\.\*$`)
	bareRE = regexp.MustCompile(`\*… \d+ more characters are not shown: Discord shows this message without its embeds, as the bot may not Embed Links here\. The whole request is in (.+)\.\*$`)
)

const inBrowser = "the browser (the message's Open in browser button)"

// wholeCases are the bridges a request's messages say where it is whole
// on: without a public URL, in the web inbox ("" here, for its /r/ID);
// with one, in the browser, through the message's Open in browser button
// (open: a link, or a button that hands a personal link, ID for the
// request's id); with one whose links are too long for a link button
// (Discord takes 512 characters), which leaves the message without one,
// in the web inbox.
var wholeCases = []struct {
	name, base, targets string
	open                string
	where               string
}{
	{"no public URL", "", anyoneTarget, "", ""},
	{"anyone may answer", "https://bridge.example.com/", anyoneTarget, "link", inBrowser},
	{"responders limited", "https://bridge.example.com/", defaultTarget, "ab:link:ID", inBrowser},
	{"link too long for its button", "https://bridge.example.com/" + strings.Repeat("long-path/", 50), anyoneTarget, "", ""},
}

func startWhole(t *testing.T, base, targets string) bridge {
	t.Helper()
	if base == "" {
		return start(t, targets)
	}
	return startLinkedAt(t, base, targets)
}

// wantWhere is where a case's messages say request id is whole.
func wantWhere(where, id string) string {
	if where == "" {
		return "the bridge's web inbox, at /r/" + id
	}
	return where
}

// hasOpen checks that body, a request's message, carries its Open in
// browser button as open says, or none when open is "".
func hasOpen(t *testing.T, body map[string]any, open, id string) {
	t.Helper()
	for _, c := range discord.Components(body) {
		if c["label"] != "Open in browser" {
			continue
		}
		if open == "" {
			t.Fatalf("the message has an Open in browser button: %v", c)
		}
		if cid, _ := c["custom_id"].(string); (open == "link" && c["style"] == float64(5)) || (open != "link" && strings.HasPrefix(cid, strings.ReplaceAll(open, "ID", id))) {
			return
		}
	}
	if open != "" {
		t.Fatalf("the message has no Open in browser button (%s): %v", open, body)
	}
}

// A request too long even for the messages posted after its own ends the
// last of them with a line that says so, and where the whole request is:
// with a public URL (base_url), in the browser, that the message's Open
// in browser button opens (a link, or a personal link handed to whoever
// may answer); else in the bridge's web inbox. A person reading Discord
// on a phone has no idea where that inbox is. (Until 2026-12-06 it named
// the web inbox on every bridge.)
func TestTooLongForItsMessagesSaysWhereItIsWhole(t *testing.T) {
	for _, tc := range wholeCases {
		t.Run(tc.name, func(t *testing.T) {
			b := startWhole(t, tc.base, tc.targets)
			id := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2",
				"arguments": map[string]any{"manifest": strings.Repeat("kind: Deployment\nreplicas: 3\n", 2500)}})
			posts := b.fake.WaitCalls(t, "create", 11) // the message and the 10 after it
			hasOpen(t, posts[0].Body, tc.open, id)
			embeds, _ := posts[10].Body["embeds"].([]any)
			if len(embeds) != 1 {
				t.Fatalf("the last message after the request's has %d embeds", len(embeds))
			}
			desc, _ := embeds[0].(map[string]any)["description"].(string)
			m := leftRE.FindStringSubmatch(desc)
			if where := wantWhere(tc.where, id); m == nil || m[1] != where {
				t.Fatalf("the last message ends %q; want it to say the whole request is in %s", desc[max(0, len(desc)-200):], where)
			}
		})
	}
}

// Where Discord drops the bot's embeds, a request's message shows as much
// of its text as its content holds, and a line says where the whole
// request is: with a public URL, in the browser, through the message's
// Open in browser button; else in the web inbox. Allow once, asking first,
// names the same place. Once the request ends, its message has no button,
// and says the whole request is in the web inbox, where it stays.
func TestBareMessageSaysWhereItIsWhole(t *testing.T) {
	for _, tc := range wholeCases {
		t.Run(tc.name, func(t *testing.T) {
			b := startWhole(t, tc.base, tc.targets)
			b.fake.DenyEmbeds(channel)
			// About 2,200 characters: more than the content holds.
			id := b.create(t, "/v1/approvals", map[string]any{"tool_name": "kubectl_apply", "reason": "Roll out v2",
				"arguments": map[string]any{"manifest": strings.Repeat("kind: Deployment\nreplicas: 3\n", 70)}})
			msg := b.fake.WaitCalls(t, "edit", 1)[0]
			hasOpen(t, msg.Body, tc.open, id)
			where := wantWhere(tc.where, id)
			text, _ := msg.Body["content"].(string)
			if m := bareRE.FindStringSubmatch(text); m == nil || m[1] != where {
				t.Fatalf("the message ends %q; want it to say the whole request is in %s", text[max(0, len(text)-200):], where)
			}

			resp := b.click(t, discord.Click(msg, bob, discord.Find(msg.Body, "ab:allow:"+id+":")["custom_id"].(string), nil))
			if want := "the rest of it is in " + where + ". Read it before you allow it."; !isEphemeral(resp) || !strings.Contains(content(resp), want) {
				t.Fatalf("Allow once got %v; want a note asking to confirm, saying %q", resp, want)
			}

			if status, _ := b.do(t, http.MethodDelete, "/v1/approvals/"+id, nil); status != http.StatusOK {
				t.Fatalf("cancel: %d", status)
			}
			ended := b.fake.WaitCalls(t, "edit", 2)[1]
			if n := len(discord.Components(ended.Body)); n != 0 {
				t.Fatalf("the ended message keeps %d controls", n)
			}
			text, _ = ended.Body["content"].(string)
			if m := bareRE.FindStringSubmatch(text); m == nil || m[1] != wantWhere("", id) {
				t.Errorf("the ended message ends %q; want it to say the whole request is in the web inbox, at /r/%s", text[max(0, len(text)-200):], id)
			}
		})
	}
}

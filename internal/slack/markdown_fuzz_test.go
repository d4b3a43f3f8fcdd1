package slack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// FuzzMrkdwn renders requests of agent-written text (a detail or plan, a
// question, an option's label and description, the caller's name, an
// approval's reason and arguments, and a person's answer) as the bridge
// posts them, through render, and checks:
//
//   - that no agent or person text makes a control sequence: every mrkdwn
//     text of the message and of its thread replies, and the top-level
//     text (which Slack also reads as mrkdwn), holds no "<" or ">" but in
//     the bridge's own date tokens and the configured mention, and "&"
//     only as &amp;, &lt; or &gt;. plain_text objects are not checked:
//     Slack shows them as typed;
//   - that fromMarkdown, on each of the texts, shows the same characters
//     as the agent wrote but for the Markdown marks it converts (*, _, #
//     and the blanks around a heading's marks, a fence's info string),
//     and no more _ or #;
//   - that no text of the message, its thread replies or its top-level
//     text holds a bidi control (surface.NoBidi), but a plain_text of
//     them alone, which Slack would refuse empty;
//   - that a detail or a reason is shown whole: what the message and its
//     thread show of it, unescaped as Slack does, less the fences a cut
//     adds to keep a code block closed, is fromMarkdown's text without
//     its bidi controls.
//     It is checked where those are the message's only mrkdwn sections: a
//     live question without options, a live approval without arguments.
//
// Requests the bridge would refuse (seam's Validate) are not rendered.
func FuzzMrkdwn(f *testing.F) {
	for _, s := range []struct {
		detail, question, label, desc, who string
		shape                              uint8
	}{
		{"## Plan\n\n1. Drop the `users_old` table\n2. Migrate **all** rows\n\n```sql\nDELETE FROM users_old; -- **not** bold\n```\n\n### Risks ###\n- __prod__ is down for ~2 min",
			"Approve the plan?", "Approve", "Run it as written.", "planner", shapePlan},
		{"Ping <!channel> and <!here>, tell <@U0123ABCD> in <#C0123ABCD|ops>, <!subteam^S0123ABC>, see <https://evil.example|docs>.",
			"<!channel> deploy?", "<@U0123ABCD>", "<https://evil.example|click>", "<!here>", 0},
		{"Escapes as typed: &lt;!channel&gt; &amp; &gt; &#60; &", "a &amp; b", "x &lt; y", "&gt;", "R&D", shapeMulti},
		{"# Title\n**bold** __strong__ `**code**` snake_case __init__ a ** b ** 2 ** 10\n* list\n> quote\n~~~\n## fenced with tildes\n~~~",
			"Which **one**?", "**Option**", "__desc__", "**agent**", shapeSeveral},
		{"[docs](https://example.com/a_b) and https://example.com/<x>?a=1&b=2 and <mailto:a@b.c>", "Links?", "A", "", "", shapeApproval},
		{"## **Steps**\n#hashtag\n####### seven\n## \n\t## tabbed\n   ## spaced ##   \nx__a__ __b__y", "Steps?", "Keep planning", "", "", 0},
		{"`unclosed **code\n**a**`b`**c**", "Code?", "A", "B", "C", shapeEnded | shapeApproval},
		{"Migrating **all** rows of `users` (~2 min of __read-only__ time).\n\n## Why\nThe `users_old` table is unused since v4.2.", "", "psql", "", "", shapeApproval},
		{"## Plan\n1. **Stop** the `billing` worker\n2. Run `make migrate`", "Go ahead?", "Yes", "Migrate now", "ops <@U1>", shapeEnded | shapeOptions},
		{strings.Repeat("Step **1** & <!channel>\n", 400), "Long?", "L", "", "", 0},
		{"## Patch\n```go\n" + strings.Repeat("x := *p.next_ptr_ & 1 // **not** bold\n", 300) + "```\ndone", "Apply?", "A", "", "", 0},
		{"Ship \u2066it\u2069? **\u202eall** `\u202ecode`\n" + strings.Repeat("\u202e", 3000) + "\n\u202a", "Deploy? \u202eoN", "\u202e", "d\u202c", "ada\u202e", shapeEnded | shapeOptions},
		{"\u202e", "Which\u2067?", "Yes\u202e", "\u2066", "\u202e", 0},
	} {
		f.Add(s.detail, s.question, s.label, s.desc, s.who, s.shape)
	}
	f.Fuzz(func(t *testing.T, detail, question, label, desc, who string, shape uint8) {
		// What reaches render came through JSON: invalid UTF-8 as U+FFFD.
		for _, s := range []*string{&detail, &question, &label, &desc, &who} {
			*s = strings.ToValidUTF8(*s, "\uFFFD")
		}
		for _, s := range []string{detail, question, label, desc, who} {
			checkMarks(t, s, fromMarkdown(s))
		}
		rec, ok := mrkdwnRecord(detail, question, label, desc, who, shape)
		if !ok {
			return
		}
		live := rec.Status == seam.StatusPending
		m := render(rec, fuzzMention, live)
		checkInert(t, "the top-level text", m.text)
		checkNoBidi(t, "the top-level text", m.text)
		for i, bl := range append(m.blocks, join(m.replies)...) {
			for _, s := range mrkdwnTexts(t, bl) {
				checkInert(t, fmt.Sprintf("block %d", i), s)
			}
			for _, s := range texts(t, bl) {
				checkNoBidi(t, fmt.Sprintf("block %d", i), s)
			}
		}
		text := detail
		if rec.Kind == seam.KindApproval {
			text = rec.Approval.Reason
		}
		if !live || rec.Kind == seam.KindQuestion && (len(rec.Questions.Questions) > 1 || len(rec.Questions.Questions[0].Options) > 0) ||
			rec.Kind == seam.KindApproval && rec.Approval.Arguments != nil || text == "" {
			return
		}
		shown, whole := shownText(m)
		if !whole {
			return // too long even for the thread: the web inbox has it
		}
		want := surface.NoBidi(fromMarkdown(text))
		if strings.Contains(want, "```") {
			// A cut closes a code block on a line of its own: where it
			// cut a line, the shown text has one more line break.
			shown, want = strings.ReplaceAll(shown, "\n", ""), strings.ReplaceAll(want, "\n", "")
		}
		if shown != want {
			t.Fatalf("shown: %q\nwant fromMarkdown's: %q", shown, want)
		}
	})
}

// checkMarks fails when md, converted by fromMarkdown, shows other
// characters than md's but for the Markdown marks it converts, or more
// underscores or hashes than md had.
func checkMarks(t *testing.T, md, shown string) {
	t.Helper()
	mdLines, shownLines := strings.Split(md, "\n"), strings.Split(shown, "\n")
	if len(mdLines) != len(shownLines) {
		t.Fatalf("fromMarkdown(%q) = %q: %d lines, not %d", md, shown, len(shownLines), len(mdLines))
	}
	for i, l := range shownLines {
		// A fence that opens a code block loses its info string
		// ("```go"), which mrkdwn would show as code.
		if strings.TrimLeft(l, " ") == "```" && strings.HasPrefix(strings.TrimLeft(mdLines[i], " "), "```") {
			shownLines[i] = mdLines[i]
		}
	}
	if got, want := unmarked(strings.Join(shownLines, "\n")), unmarked(md); got != want {
		t.Fatalf("fromMarkdown(%q) = %q:\nits characters %q\nthe agent's     %q", md, shown, got, want)
	}
	for _, mark := range "_#" {
		if strings.Count(shown, string(mark)) > strings.Count(md, string(mark)) {
			t.Fatalf("fromMarkdown(%q) = %q: more %c", md, shown, mark)
		}
	}
}

// The shapes of a fuzzed request, as bits.
const (
	shapeApproval = 1 << iota // an approval of a tool, the detail its reason
	shapeSeveral              // two questions
	shapeMulti                // a multi-select
	shapeOptions              // the question has options (label, and a second)
	shapeEnded                // answered (or rejected) by a person
	shapePlan                 // the plan-review intent, approved by the label
)

// fuzzMention is the operator's configured ping of live messages.
const fuzzMention = "<!subteam^S0123ABC>"

// mrkdwnRecord builds a request of the fuzzed text, or reports false when
// the bridge would refuse it.
func mrkdwnRecord(detail, question, label, desc, who string, shape uint8) (*pending.Record, bool) {
	now := time.Unix(1700000000, 0)
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending,
		Caller:    &seam.Caller{Agent: "agent-1", Name: who, Session: who},
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if seam.ValidateCaller(rec.Caller) != nil {
		return nil, false
	}
	if shape&shapeApproval != 0 {
		rec.Kind = seam.KindApproval
		rec.Approval = &seam.Approval{ToolName: label, Reason: detail, DisplayReason: ""}
		if shape&shapeOptions != 0 {
			rec.Approval.Arguments, _ = json.Marshal(map[string]string{"command": desc, "why": question})
		}
		if rec.Approval.Validate() != nil {
			return nil, false
		}
		if shape&shapeEnded != 0 {
			rec.Status, rec.ResolvedAt = seam.StatusAnswered, now.Add(time.Minute)
			rec.ResolvedBy = &pending.Responder{Surface: "web", UserID: "U1", Name: who}
			rec.Decision = &seam.Decision{Outcome: seam.OutcomeRejected, Note: desc}
		}
		return rec, true
	}
	q := seam.Question{ID: "q", Question: question, Header: label, Detail: detail, MultiSelect: shape&shapeMulti != 0}
	if shape&(shapeOptions|shapePlan) != 0 {
		q.Options = []seam.Option{{Label: label, Description: desc}, {Label: "Something else"}}
	}
	if shape&shapePlan != 0 {
		q.Intent = &seam.Intent{Kind: seam.IntentPlanReview, Approve: label}
	}
	rec.Questions = &seam.Questions{Questions: []seam.Question{q}}
	if shape&shapeSeveral != 0 {
		rec.Questions.Questions = append(rec.Questions.Questions, seam.Question{ID: "r", Question: desc, Detail: question})
	}
	if rec.Questions.Validate() != nil {
		return nil, false
	}
	if shape&shapeEnded != 0 {
		rec.Status, rec.ResolvedAt = seam.StatusAnswered, now.Add(time.Minute)
		rec.ResolvedBy = &pending.Responder{Surface: "slack", UserID: "U1", Name: who}
		rec.Answer = &seam.Answer{}
		for _, q := range rec.Questions.Questions {
			it := seam.AnswerItem{ID: q.ID, Custom: desc}
			if len(q.Options) > 0 {
				it.Selected = []string{q.Options[0].Label}
			}
			rec.Answer.Answers = append(rec.Answer.Answers, it)
		}
	}
	return rec, true
}

func join(replies [][]slackapi.Block) []slackapi.Block {
	var out []slackapi.Block
	for _, r := range replies {
		out = append(out, r...)
	}
	return out
}

// checkNoBidi fails when s, a text of a message, holds a bidi control,
// but for a plain_text of them alone.
func checkNoBidi(t *testing.T, where, s string) {
	t.Helper()
	if strings.ContainsFunc(s, surface.IsBidi) && strings.TrimSpace(surface.NoBidi(s)) != "" {
		t.Fatalf("%s: a bidi control in %q", where, s)
	}
}

// texts returns the text of every text object in bl, of either type.
func texts(t *testing.T, bl slackapi.Block) []string {
	t.Helper()
	return textsOf(t, bl, func(string) bool { return true })
}

// mrkdwnTexts returns the text of every mrkdwn text object in bl, found in
// its JSON as Slack receives it.
func mrkdwnTexts(t *testing.T, bl slackapi.Block) []string {
	t.Helper()
	return textsOf(t, bl, func(typ string) bool { return typ == "mrkdwn" })
}

// textsOf returns the text of every text object in bl whose type is one
// of, found in its JSON as Slack receives it.
func textsOf(t *testing.T, bl slackapi.Block, of func(typ string) bool) []string {
	t.Helper()
	raw, err := json.Marshal(bl)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if typ, _ := v["type"].(string); (typ == "mrkdwn" || typ == "plain_text") && of(typ) {
				s, _ := v["text"].(string)
				out = append(out, s)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// bridgeTokens are the control sequences the bridge writes itself: its
// date tokens (slackTime) and the operator's mention.
var bridgeTokens = regexp.MustCompile(`<!date\^\d+\^\{date_short_pretty\} \{time\}\|[0-9: -]+UTC>|` + regexp.QuoteMeta(fuzzMention))

// checkInert fails when s, mrkdwn, holds a control sequence the bridge
// did not write, or an & that is not one of the three escapes.
func checkInert(t *testing.T, where, s string) {
	t.Helper()
	rest := bridgeTokens.ReplaceAllString(s, "")
	if i := strings.IndexAny(rest, "<>"); i >= 0 {
		t.Fatalf("%s: a raw %q in mrkdwn: %q", where, rest[i], s)
	}
	for i := strings.IndexByte(rest, '&'); i >= 0; i = strings.IndexByte(rest, '&') {
		rest = rest[i:]
		if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
			t.Fatalf("%s: an & that is not an escape, at %.20q: %q", where, rest, s)
		}
		rest = rest[1:]
	}
}

// unescape reads mrkdwn's escapes as Slack does.
var unescape = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// continued is the title of the thread's first reply.
var continued = regexp.MustCompile(`^\*[A-Za-z ]+, continued:\*\n`)

// shownText is what the message m and its thread show of its detail (or
// reason), unescaped: its mrkdwn sections, then its replies' without their
// title; whole is false when some of it is in neither.
func shownText(m message) (text string, whole bool) {
	var pieces []string
	sections := func(blocks []slackapi.Block) {
		for _, bl := range blocks {
			if s, ok := bl.(*slackapi.SectionBlock); ok && s.Text != nil && s.Text.Type == slackapi.MarkdownType {
				pieces = append(pieces, unescape.Replace(s.Text.Text))
			}
		}
	}
	sections(m.blocks)
	inMessage := len(pieces)
	for _, r := range m.replies {
		if c, ok := r[len(r)-1].(*slackapi.ContextBlock); ok && strings.Contains(c.ContextElements.Elements[0].(*slackapi.TextBlockObject).Text, "too long to post") {
			return "", false
		}
		sections(r)
	}
	if len(pieces) > inMessage {
		loc := continued.FindStringIndex(pieces[inMessage])
		if loc == nil || loc[0] != 0 {
			return "", false
		}
		pieces[inMessage] = pieces[inMessage][loc[1]:]
	}
	return joinCut(pieces), true
}

// joinCut joins the pieces of a text cut into sections, taking out the
// fences a cut adds to close a code block and open it again: a piece that
// ends in "\n```", a fence it has one too many of without it, and the
// next that starts with "```\n". (The line break before the closing fence
// may be the text's or the cut's: it is taken out either way.)
func joinCut(pieces []string) string {
	var b strings.Builder
	opened := false // the piece before closed a block that this one opens again
	for i, p := range pieces {
		closes := i+1 < len(pieces) && strings.HasSuffix(p, "\n```") && strings.Count(p, "```")%2 == 0 && strings.HasPrefix(pieces[i+1], "```\n")
		if opened {
			p = strings.TrimPrefix(p, "```\n")
		}
		if closes {
			p = strings.TrimSuffix(p, "\n```")
		}
		b.WriteString(p)
		opened = closes
	}
	return b.String()
}

// unmarked is s without the Markdown marks fromMarkdown converts or drops,
// and without blanks, which a heading loses around its marks.
func unmarked(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("*_# \t", r) {
			return -1
		}
		return r
	}, s)
}

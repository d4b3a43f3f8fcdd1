package discord

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// FuzzRender renders requests whose every text is the agent's (and
// whose answerer's name is a Discord user's) and checks what Discord
// would get:
//
//   - the message and its continuations are within Discord's limits
//     (the fake's InvalidMessage: a message beyond them is refused with
//     400 Invalid Form Body, and the request is never posted);
//   - outside code, no text of theirs is live markup: every "@" and "<"
//     is followed by a zero-width space, but for the bridge's own
//     <t:…> timestamps, and no "](" opens a masked link. allowed_mentions
//     (parse [], sent on every message) already stops pings; esc is what
//     keeps <@id>, <@&id>, <#id> and [text](url) from rendering as
//     mentions, channel links and masked links, so it is checked here;
//   - every control's custom_id reads back as a Ref of this request (its
//     id and, live, its tag) that names a question, option or select part
//     the request has;
//   - esc only inserts zero-width spaces and drops bidi controls, and
//     plain's text is one line.
//
// Code is read by codeOf, written apart from cutCode, to the model esc
// documents (CommonMark spans; a fence of three or more closes at any run
// of three or more).
func FuzzRender(f *testing.F) {
	args := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	type seed struct {
		kind                                  uint8
		header, question, detail, label, desc string
		options                               uint8
		multi                                 bool
		caller, session, args                 string
		live                                  bool
	}
	for _, s := range []seed{
		{0, "Deploy", "Ship it to prod?", "", "Yes", "", 2, false, "Ada", "s-1", "", true},
		{0, "Plan", "Approve the plan?", "## Plan\n- step <@123>\n- `@Override` and @everyone\n[Docs](https://evil.example)", "Approve", "", 2, false, "claude", "sess", "", true},
		{0, "", "Which region? <#123> <@&456> @here", "", "eu-west-<@1>", "desc ](x) @x", 30, true, "a*b_c`d", "sess\n# heading", "", false},
		{0, "H", "`unclosed @everyone", "```go\nvar v Vec<String> // @x\n```\n<@123>", "``a`b @c`` then [x](https://e.example)", "", 101, false, "", "", "", true},
		{1, "Q", "first `code <@1>` then <@2>", "\\`@x` ```fence @y```` [a](b)", "opt", "d", 7, true, "n", "s", "", true},
		{1, "Q", strings.Repeat("`@ ", 700), strings.Repeat("x `@@@@ @@@@` ", 400), "o", "", 26, false, "n", "s", "", true},
		{2, "bash", "Run it? [Approve](https://evil.example)", "", "", "", 0, false, "agent", "s", args(map[string]string{"cmd": "echo '````' '``````' [Approve](https://evil.example) <@1>"}), true},
		{2, "kubectl_apply", "reason <@&1>", "", "", "", 0, false, "agent", "s", args(map[string]string{"manifest": strings.Repeat("spec line; ``` <@1> ", 400)}), false},
		{0, "Detail", "long", strings.Repeat("`@ @ @ @ @ @` ", 800), "a", "", 0, false, "", "", "", true},
		{0, "<@1> @here [x](https://evil.example)", "Headed?", strings.Repeat("plan ", 2000), "a", "", 2, false, "", "", "", true},
		{2, "run_<@&2>", "reason", "", "", "", 0, false, "agent", "s", args(map[string]string{"a": strings.Repeat("x", 6000)}), true},
		{0, "H\u202e", "Ship \u2066it\u2069? @\u202ehere", "[x]\u202e(https://evil.example) <\u2066@1>", "Yes\u202a", "\u202c", 3, false, "ada\u202e", "s\u2067", "", false},
	} {
		f.Add(s.kind, s.header, s.question, s.detail, s.label, s.desc, s.options, s.multi, s.caller, s.session, s.args, s.live)
	}

	f.Fuzz(func(t *testing.T, kind uint8, header, question, detail, label, desc string, options uint8, multi bool, caller, session, argText string, live bool) {
		for _, s := range []string{header, question, detail, label, desc, caller, session, argText} {
			checkEsc(t, s)
		}
		rec := fuzzRecord(kind, header, question, detail, label, desc, int(options), multi, caller, session, argText)
		if rec == nil {
			return // not a request the API takes
		}
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		rec.CreatedAt, rec.ExpiresAt = now, now.Add(time.Hour)
		if !live {
			rec.Status, rec.ResolvedAt = seam.StatusDismissed, now.Add(time.Minute)
			rec.ResolvedBy = &pending.Responder{Surface: surfaceName, UserID: "1", Name: surface.Truncate(caller, maxNameLen)}
		}
		m := render(rec, "", live)

		body := map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components, "allowed_mentions": mentions("")}
		if bad := InvalidMessage(asMap(t, body), live); len(bad) > 0 {
			t.Fatalf("Discord would refuse the message: %v", bad)
		}
		for i, e := range m.more {
			more := map[string]any{"content": fmt.Sprintf("Continued (%d of %d)", i+1, len(m.more)), "embeds": []any{e}}
			if bad := InvalidMessage(asMap(t, more), true); len(bad) > 0 {
				t.Fatalf("Discord would refuse continuation %d: %v", i+1, bad)
			}
		}
		if len(m.more) > maxMore {
			t.Fatalf("%d continuation messages, more than %d", len(m.more), maxMore)
		}

		checkInert(t, "content", m.content)
		for i, e := range append(slices.Clone(m.embeds), m.more...) {
			checkInert(t, fmt.Sprintf("embed %d (%q)", i, e.Title), e.Description)
			checkInert(t, fmt.Sprintf("embed %d's title", i), e.Title)
		}
		checkCustomIDs(t, rec, m.components, live)

		// The message as it shows where Discord drops the bot's embeds:
		// all its text in its content, which every text shares.
		bare := m.bare()
		body = map[string]any{"content": bare.content, "embeds": bare.embeds, "components": bare.components, "allowed_mentions": mentions("")}
		if bad := InvalidMessage(asMap(t, body), false); len(bad) > 0 {
			t.Fatalf("Discord would refuse the bare message: %v", bad)
		}
		checkInert(t, "bare content", bare.content)
	})
}

// fuzzRecord builds a request from fuzzed texts as the API would take
// it: cut to the seam's limits, or nil when it would refuse it anyway.
func fuzzRecord(kind uint8, header, question, detail, label, desc string, options int, multi bool, caller, session, argText string) *pending.Record {
	sum := sha256.Sum256([]byte(header + "\x00" + question + "\x00" + label))
	rec := &pending.Record{ID: "abcdefghijklmnop", Hash: hex.EncodeToString(sum[:]),
		Caller: &seam.Caller{Name: cutRunes(caller, seam.MaxCallerFieldLen), Session: cutRunes(session, seam.MaxCallerFieldLen)}}
	if kind%3 == 2 {
		rec.Kind = seam.KindApproval
		a := &seam.Approval{ToolName: noControl(cutRunes(header, seam.MaxToolNameLen)), Reason: cutRunes(question, seam.MaxReasonLen)}
		if argText != "" {
			a.Arguments, _ = json.Marshal(map[string]string{"arg": argText})
		}
		if a.Validate() != nil {
			return nil
		}
		rec.Approval = a
		return rec
	}
	rec.Kind = seam.KindQuestion
	n := 1
	if kind%3 == 1 {
		n = 2 + int(kind/3)%(seam.MaxQuestions-1)
	}
	qs := &seam.Questions{}
	for i := range n {
		q := seam.Question{ID: "q" + strconv.Itoa(i), Header: cutRunes(header, seam.MaxHeaderLen),
			Question: cutRunes(question, seam.MaxQuestionLen), Detail: cutRunes(detail, seam.MaxDetailLen), MultiSelect: multi}
		if strings.TrimSpace(q.Question) == "" {
			q.Question += "?"
		}
		k := options % (seam.MaxOptions + 1)
		if n > 1 {
			k = (options + i*7) % (seam.MaxOptions + 1)
		}
		l := noControl(cutRunes(label, seam.MaxLabelLen-4))
		for o := range k {
			q.Options = append(q.Options, seam.Option{Label: l + " " + strconv.Itoa(o), Description: cutRunes(desc, seam.MaxDescriptionLen)})
		}
		qs.Questions = append(qs.Questions, q)
	}
	if qs.Validate() != nil {
		return nil
	}
	rec.Questions = qs
	return rec
}

func cutRunes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

func noControl(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return m
}

const zwsp = "\u200b"

// checkEsc checks esc and plain on one text of an agent's or a person's.
func checkEsc(t *testing.T, s string) {
	t.Helper()
	out := esc(s)
	if strings.ReplaceAll(out, zwsp, "") != strings.ReplaceAll(surface.NoBidi(s), zwsp, "") {
		t.Fatalf("esc(%q) = %q: more than zero-width spaces and bidi controls changed", s, out)
	}
	if strings.ContainsFunc(out, surface.IsBidi) {
		t.Fatalf("esc(%q) = %q holds a bidi control", s, out)
	}
	checkInert(t, "esc", out)
	p := plain(s)
	if strings.ContainsAny(p, "\n\r") {
		t.Fatalf("plain(%q) = %q: not one line", s, p)
	}
	checkInert(t, "plain", p)
}

// ours is the markup the bridge writes itself: Discord timestamps.
var ours = regexp.MustCompile(`^<t:-?\d+:[fR]>`)

// checkInert fails t when s, outside code, holds an "@" or "<" that is
// not followed by a zero-width space (but for ours), or a "](".
func checkInert(t *testing.T, where, s string) {
	t.Helper()
	for _, text := range textOf(s) {
		for i := 0; i < len(text); i++ {
			switch {
			case text[i] == '@' && !strings.HasPrefix(text[i+1:], zwsp),
				text[i] == '<' && !strings.HasPrefix(text[i+1:], zwsp) && !ours.MatchString(text[i:]),
				strings.HasPrefix(text[i:], "]("):
				from, to := max(0, i-40), min(len(text), i+40)
				t.Fatalf("%s: live markup outside code at %q\nin %q", where, text[from:to], s)
			}
		}
	}
}

// textOf returns the parts of s that are not code, as esc's model reads
// code: a run of n backticks not after an odd number of backslashes opens
// code that the next run of exactly n closes, or, for n >= 3 (a fence),
// the next run of 3 or more. A run that nothing closes, and a backslashed
// backtick, give their first backtick to the text, and the rest of the run
// may open code.
// Written apart from cutCode to check it: runs are listed first.
func textOf(s string) []string {
	type run struct{ at, n int }
	var runs []run
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		runs = append(runs, run{i, j - i})
		i = j
	}
	var out []string
	start := 0 // of the current text
	for k := 0; k < len(runs); k++ {
		r := runs[k]
		if r.at < start {
			continue
		}
		bs := 0
		for p := r.at - 1; p >= start && s[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 1 {
			// The first backtick is text; the rest of the run is a run of
			// its own, which no backslash precedes.
			if r.n > 1 {
				runs[k] = run{r.at + 1, r.n - 1}
				k--
			}
			continue
		}
		closed := -1
		for c := k + 1; c < len(runs); c++ {
			if m := runs[c].n; m == r.n || (r.n >= 3 && m >= 3) {
				closed = c
				break
			}
		}
		if closed < 0 {
			// Unclosed: the first backtick is text, and the rest of the
			// run may open code (Discord's parser backtracks to a
			// shorter opener).
			if r.n > 1 {
				runs[k] = run{r.at + 1, r.n - 1}
				k--
			}
			continue
		}
		out = append(out, s[start:r.at])
		start = runs[closed].at + runs[closed].n
		k = closed
	}
	return append(out, s[start:])
}

// checkCustomIDs checks that every control of comps carries a Ref of rec
// that names something rec has.
func checkCustomIDs(t *testing.T, rec *pending.Record, comps []discordgo.MessageComponent, live bool) {
	t.Helper()
	for _, c := range comps {
		row, ok := c.(discordgo.ActionsRow)
		if !ok {
			t.Fatalf("a top-level component %T is not an action row", c)
		}
		for _, el := range row.Components {
			var id string
			switch el := el.(type) {
			case discordgo.Button:
				if el.Style == discordgo.LinkButton {
					continue
				}
				id = el.CustomID
			case discordgo.SelectMenu:
				id = el.CustomID
			default:
				t.Fatalf("a control %T", el)
			}
			r, err := surface.ParseRef(id)
			switch {
			case err != nil:
				t.Fatalf("custom_id %q does not read back: %v", id, err)
			case r.ID != rec.ID:
				t.Fatalf("custom_id %q reads as request %q, not %q", id, r.ID, rec.ID)
			case live && r.Tag != surface.HashTag(rec.Hash):
				t.Fatalf("custom_id %q has tag %q, want %q", id, r.Tag, surface.HashTag(rec.Hash))
			case r.String() != id:
				t.Fatalf("custom_id %q reads back as %q", id, r.String())
			}
			if rec.Kind == seam.KindQuestion {
				qs := rec.Questions.Questions
				if r.Q >= len(qs) {
					t.Fatalf("custom_id %q names question %d of %d", id, r.Q, len(qs))
				}
				switch q := qs[r.Q]; r.Verb {
				case surface.VerbPick:
					if r.O >= len(q.Options) {
						t.Fatalf("custom_id %q names option %d of %d", id, r.O, len(q.Options))
					}
				case surface.VerbSelect:
					if r.O >= parts(q) {
						t.Fatalf("custom_id %q names select %d of %d", id, r.O, parts(q))
					}
				case surface.VerbOther, surface.VerbAnswer, surface.VerbDismiss, surface.VerbLink:
				default:
					t.Fatalf("custom_id %q: verb %q on a question", id, r.Verb)
				}
			} else if !slices.Contains([]string{surface.VerbAllow, surface.VerbReject, surface.VerbDismiss, surface.VerbLink}, r.Verb) {
				t.Fatalf("custom_id %q: verb %q on an approval", id, r.Verb)
			}
		}
	}
}

package surface

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/askbridge/askbridge/internal/seam"
)

func TestEmptyAnswer(t *testing.T) {
	opts := []seam.Option{{Label: "a"}, {Label: "b"}}
	lone := []seam.Question{{ID: "q", Question: "Which?", Options: opts}}
	two := []seam.Question{lone[0], {ID: "r", Question: "Also?", Options: opts}}
	item := func(selected []string, custom string) seam.Answer {
		return seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: selected, Custom: custom}}}
	}
	for _, tc := range []struct {
		name  string
		qs    []seam.Question
		a     seam.Answer
		empty bool
	}{
		{"nothing chosen", lone, item([]string{}, ""), true},
		{"only spaces written", lone, item(nil, "  "), true},
		{"no item at all", lone, seam.Answer{}, true},
		{"an option", lone, item([]string{"a"}, ""), false},
		{"text instead", lone, item(nil, "c"), false},
		{"no options: TextRequired's", []seam.Question{{ID: "q", Question: "Why?"}}, item(nil, ""), false},
		{"of two questions, one answered", two, item([]string{"b"}, ""), false},
		{"of two questions, only text", two, seam.Answer{Answers: []seam.AnswerItem{{ID: "q"}, {ID: "r", Custom: "later"}}}, false},
		{"of two questions, none answered", two, seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{}}, {ID: "r", Custom: " "}}}, true},
		{"of two free-text questions, none answered", []seam.Question{{ID: "q", Question: "Why?"}, {ID: "r", Question: "How?"}}, item(nil, ""), true},
	} {
		if got := EmptyAnswer(tc.qs, tc.a); got != tc.empty {
			t.Errorf("%s: EmptyAnswer = %v, want %v", tc.name, got, tc.empty)
		}
	}
}

func TestNoFence(t *testing.T) {
	for _, in := range []string{"```", "````", "``````", "a``b", "x ``` y ```` z"} {
		got := NoFence(in)
		if strings.Contains(got, "``") || strings.ReplaceAll(got, "\u200b", "") != in {
			t.Errorf("NoFence(%q) = %q: two backticks side by side, or more than zero-width spaces added", in, got)
		}
	}
	if got := NoFence("`one` and ``"); got != "`one` and `\u200b`" {
		t.Errorf("NoFence = %q", got)
	}
}

// TestAskerOnOneLine: an agent's name can't start a line of its own in the
// context line it opens, nor carry control characters into a message.
func TestAskerOnOneLine(t *testing.T) {
	for _, tc := range []struct {
		c    *seam.Caller
		want string
	}{
		{nil, "An agent"},
		{&seam.Caller{Name: "deploy-bot"}, "deploy-bot"},
		{&seam.Caller{Name: "deploy-bot\n✅ Approved by Ada"}, "deploy-bot ✅ Approved by Ada"},
		{&seam.Caller{Name: " a\t\x00b\r\n\u2028c\x7f "}, "a b c"},
		{&seam.Caller{Name: "\n\x00", Agent: "agent-7"}, "agent-7"},
		{&seam.Caller{Name: " ", Agent: "\t"}, "An agent"},
		{&seam.Caller{Name: "\u202e", Agent: "agent-7"}, "agent-7"},
		{&seam.Caller{Name: "\u2066 \u2069", Agent: "\u202e"}, "An agent"},
		{&seam.Caller{Name: "ada\u202e"}, "ada\u202e"},
	} {
		if got := Asker(tc.c); got != tc.want {
			t.Errorf("Asker(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// NoBidi drops the embeddings, overrides and isolates that would show a
// line in an order other than its own, and keeps the marks, which reorder
// nothing; Label keeps a label of those controls alone, as a blank one is
// refused. (Slack and Discord share them.)
func TestNoBidi(t *testing.T) {
	for _, tc := range []struct{ in, noBidi, label string }{
		{"Deploy to prod? \u202eoN", "Deploy to prod? oN", "Deploy to prod? oN"},
		{"\u202aa\u202bb\u202cc\u202dd\u2066e\u2067f\u2068g\u2069", "abcdefg", "abcdefg"},
		{"\u200eשלום\u200f\u061c ok", "\u200eשלום\u200f\u061c ok", "\u200eשלום\u200f\u061c ok"},
		{"\u202e", "", "\u202e"},
		{" \u2066 ", "  ", " \u2066 "},
		{"", "", ""},
		{" ", " ", " "},
	} {
		if got := NoBidi(tc.in); got != tc.noBidi {
			t.Errorf("NoBidi(%q) = %q, want %q", tc.in, got, tc.noBidi)
		}
		if got := Label(tc.in); got != tc.label {
			t.Errorf("Label(%q) = %q, want %q", tc.in, got, tc.label)
		}
	}
}

func TestCutFenced(t *testing.T) {
	for _, tc := range []struct {
		s          string
		max        int
		head, rest string
	}{
		{"short", 10, "short", ""},
		{"no code here at all, just words", 12, "no code ", "here at all, just words"},
		{"```\nabc\ndef\nghi\n```", 14, "```\nabc\n```", "```\ndef\nghi\n```"},
		{"```\nabcdefghijklmnop\n```", 14, "```\nabcdef\n```", "```\nghijklmnop\n```"},
		{"```\na\n```\nthen more text", 14, "```\na\n```\n", "then more text"},
	} {
		head, rest := CutFenced(tc.s, tc.max, nil, OddFences)
		if head != tc.head || rest != tc.rest {
			t.Errorf("CutFenced(%q, %d) = %q, %q; want %q, %q", tc.s, tc.max, head, rest, tc.head, tc.rest)
		}
		if Len(head) > tc.max {
			t.Errorf("CutFenced(%q, %d): head %d long", tc.s, tc.max, Len(head))
		}
	}
	// Where the surface reads no block, none is closed.
	never := func(string, int) bool { return false }
	if head, rest := CutFenced("```\nabc\ndef\nghi\n```", 14, nil, never); head != "```\nabc\n" || rest != "def\nghi\n```" {
		t.Errorf("CutFenced with no block read = %q, %q", head, rest)
	}
}

// Cut escapes the head it cuts, not the whole text: a long text is cut
// many times, one section after the other, and escaping what is left at
// every cut made that quadratic.
func TestCutEscapesTheHeadNotTheWhole(t *testing.T) {
	s := strings.Repeat("<a & b> ", 1<<17) // 1 MiB, that grows when escaped
	escaped := 0
	esc := func(s string) string {
		escaped += len(s)
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
	}
	const max = 3000
	head, rest := Cut(s, max, esc)
	n := escaped
	if head+rest != s || rest == "" || Len(esc(head)) > max {
		t.Fatalf("Cut = %d, %d bytes, the head %d long escaped", len(head), len(rest), Len(esc(head)))
	}
	if n > 4*len(head) {
		t.Errorf("cutting a head of %d bytes off %d escaped %d bytes", len(head), len(s), n)
	}
}

// A cut, by Truncate or Cut, leaves no character as people see it in
// part: not a flag's one letter, not an emoji sequence ending in a
// joiner, not a letter without its combining mark.
func TestCutsKeepWholeCharacters(t *testing.T) {
	texts := map[string]string{
		"flags":     "Regions: " + strings.Repeat("🇺🇸🇩🇪🇫🇷🇯🇵", 10),
		"zwj":       "Team " + strings.Repeat("👩‍👩‍👧‍👦", 10),
		"skin tone": strings.Repeat("👍🏽", 40),
		"combining": strings.Repeat("e\u0301", 80),
		"thai":      strings.Repeat("ที่นี่", 30),
		"keycap":    strings.Repeat("1\uFE0F\u20E3", 40),
	}
	whole := func(t *testing.T, how, head, rest string) {
		t.Helper()
		last, _ := utf8.DecodeLastRuneInString(head)
		next, _ := utf8.DecodeRuneInString(rest)
		switch {
		case last == '\u200d':
			t.Errorf("%s: cut after a zero-width joiner: %q", how, head[max(0, len(head)-12):])
		case unicode.In(next, unicode.Mn, unicode.Me, unicode.Mc) || next >= 0x1F3FB && next <= 0x1F3FF || next == '\uFE0F':
			t.Errorf("%s: cut before %U, which belongs to the character before it", how, next)
		case next >= 0x1F1E6 && next <= 0x1F1FF && utf8.RuneCountInString(head[strings.LastIndex(head, " ")+1:])%2 == 1: // the flags follow the last space
			t.Errorf("%s: a flag cut in half: ends %q", how, head[max(0, len(head)-8):])
		}
	}
	for name, s := range texts {
		for max := 60; max <= 80; max++ {
			head := strings.TrimSuffix(Truncate(s, max), ellipsis)
			whole(t, fmt.Sprintf("%s: Truncate(%d)", name, max), head, s[len(head):])
			if Len(head)+Len(ellipsis) > max {
				t.Errorf("%s: Truncate(%d) is %d long", name, max, Len(head)+Len(ellipsis))
			}
			head, rest := Cut(s, max, nil)
			whole(t, fmt.Sprintf("%s: Cut(%d)", name, max), head, rest)
			if head+rest != s || Len(head) > max {
				t.Errorf("%s: Cut(%d) = %d long, or not s", name, max, Len(head))
			}
		}
	}
	// One cluster longer than the room: cut where it fits, as before.
	if got := Truncate(strings.Repeat("e\u0301", 2)+strings.Repeat("\u0301", 50), 10); Len(got) > 10 || got == ellipsis {
		t.Errorf("a run of marks: %q", got)
	}
}

// A byte of invalid UTF-8 ranges as U+FFFD, three bytes long when
// encoded, but is one byte of s: a cut counted from the rune's encoding
// ran past it, into the next character or out of s.
func TestCutsOfInvalidUTF8(t *testing.T) {
	for _, s := range []string{"a\xffb", "a\xffbbbb", "\xff\xfe\xfd\xfc", "ab\xff"} {
		for max := 1; max <= len(s)+1; max++ {
			head, rest := Cut(s, max, nil)
			if head+rest != s || Len(head) > max {
				t.Errorf("Cut(%q, %d) = %q, %q", s, max, head, rest)
			}
			got := Truncate(s, max+1)
			if got != s && (!strings.HasPrefix(s, strings.TrimSuffix(got, ellipsis)) || Len(got) > max+1) {
				t.Errorf("Truncate(%q, %d) = %q", s, max+1, got)
			}
		}
	}
}

// Width counts a CJK or fullwidth character as two Latin letters, as a
// phone's button shows it, and anything else as Len does.
func TestWidth(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"Deploy", 6},
		{"デプロイ", 8}, // katakana
		{"部署", 4},   // ideographs
		{"배포", 4},   // Hangul syllables
		{"ＯＫ", 4},   // fullwidth forms
		{"ｶﾞ", 2},   // halfwidth katakana: narrow
		{"Déploiement", 11},
		{"🚀 go", 5}, // outside the BMP: two UTF-16 units, as Len counts it
	} {
		if got := Width(tc.s); got != tc.want {
			t.Errorf("Width(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestPrettyJSONShowsVisibleEscapes(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		// Go's encoding/json and Python's json.dumps, as sent.
		{`{"cmd":"make \u0026\u0026 deploy \u003e log"}`, "{\n  \"cmd\": \"make && deploy > log\"\n}"},
		{`["caf\u00e9","\ud83d\ude00","\u65e5\u672c"]`, "[\n  \"café\",\n  \"😀\",\n  \"日本\"\n]"},
		{`{"\u006bey":1}`, "{\n  \"key\": 1\n}"},
		// What an escape shows stays escaped.
		{`["\u202e","\u200b","\u00a0","\u0000","\u001b[31m"]`, "[\n  \"\\u202e\",\n  \"\\u200b\",\n  \"\\u00a0\",\n  \"\\u0000\",\n  \"\\u001b[31m\"\n]"},
		// Letters, marks and symbols that show as nothing (default
		// ignorable: a Hangul filler, a combining grapheme joiner, a
		// variation selector, which can carry hidden text after a visible
		// character) or as a blank (U+2800) stay escaped too: an approver
		// would read "rm -rf /tmp" where the tool gets more.
		{`["a\u3164b","\u115f","\u034f","\u17b4","\ufe0f","\udb40\udd00","\u180b","\u2800"]`, "[\n  \"a\\u3164b\",\n  \"\\u115f\",\n  \"\\u034f\",\n  \"\\u17b4\",\n  \"\\ufe0f\",\n  \"\\udb40\\udd00\",\n  \"\\u180b\",\n  \"\\u2800\"\n]"},
		{`["\u0022","\u005c","\u005cu0026","\\u0026"]`, "[\n  \"\\u0022\",\n  \"\\u005c\",\n  \"\\u005cu0026\",\n  \"\\\\u0026\"\n]"},
		{`["\ud83d","\ud83d\u0041","\n\t\/"]`, "[\n  \"\\ud83d\",\n  \"\\ud83dA\",\n  \"\\n\\t\\/\"\n]"},
		{`{"a":"plain"}`, "{\n  \"a\": \"plain\"\n}"},
		// Sent as themselves, what shows as nothing is shown escaped; the
		// rest as sent.
		{"[\"rm -rf /tmp\u200b /\",\"\u202edeploy\",\"a\u3164b\",\"x\U000E0100\",\"\u00a0\"]",
			"[\n  \"rm -rf /tmp\\u200b /\",\n  \"\\u202edeploy\",\n  \"a\\u3164b\",\n  \"x\\udb40\\udd00\",\n  \"\\u00a0\"\n]"},
		{`["café","😀","日本 & <b>"]`, "[\n  \"café\",\n  \"😀\",\n  \"日本 & <b>\"\n]"},
		{`not json \u0026`, `not json \u0026`},
		{` `, ""},
	} {
		if got := PrettyJSON(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("PrettyJSON(%s) =\n%s\nwant\n%s", tc.raw, got, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	for _, c := range []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a and b"},
		{[]string{"a", "b", "c"}, "a, b and c"},
	} {
		if got := List(c.items); got != c.want {
			t.Errorf("List(%q) = %q, want %q", c.items, got, c.want)
		}
	}
}

func TestHeader(t *testing.T) {
	for header, want := range map[string]string{"": "", " ": "", "\t \n": "", "\x01 ": "", "Deploy": "Deploy", " Deploy ": " Deploy "} {
		if got := Header(seam.Question{Header: header}); got != want {
			t.Errorf("Header(%q) = %q, want %q", header, got, want)
		}
	}
}

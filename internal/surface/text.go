package surface

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Len is the length of s as platforms count it in their limits: UTF-16
// code units, which is never less than the number of characters, so a
// string within a limit by Len is within it however the platform counts.
func Len(s string) int {
	n := 0
	for _, r := range s { // invalid UTF-8 ranges as U+FFFD, one unit
		n += utf16.RuneLen(r)
	}
	return n
}

// Width is about how wide s shows, in Latin letters, where a client cuts
// text by width (a button on a phone): a CJK ideograph, a Hangul
// syllable, a kana or a fullwidth form takes about two (Unicode's East
// Asian Wide and Fullwidth), so a button that shows about 30 Latin letters
// shows about 15 of them. Other characters count as Len counts them.
func Width(s string) int {
	n := 0
	for _, r := range s {
		if eastAsianWide(r) {
			n += 2
		} else {
			n += utf16.RuneLen(r)
		}
	}
	return n
}

// eastAsianWide reports whether r is in a block of Unicode's East Asian
// Wide or Fullwidth characters (UAX #11), its main ones, without its
// tables.
func eastAsianWide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115F, // Hangul Jamo, leading consonants
		0x2E80 <= r && r <= 0x303E,   // CJK radicals, Kangxi, CJK symbols and punctuation
		0x3041 <= r && r <= 0x33FF,   // kana, Bopomofo, Hangul compatibility Jamo, enclosed CJK
		0x3400 <= r && r <= 0x4DBF,   // CJK extension A
		0x4E00 <= r && r <= 0x9FFF,   // CJK unified ideographs
		0xA000 <= r && r <= 0xA4CF,   // Yi
		0xA960 <= r && r <= 0xA97F,   // Hangul Jamo extended A
		0xAC00 <= r && r <= 0xD7A3,   // Hangul syllables
		0xF900 <= r && r <= 0xFAFF,   // CJK compatibility ideographs
		0xFE10 <= r && r <= 0xFE19,   // vertical forms
		0xFE30 <= r && r <= 0xFE6F,   // CJK compatibility forms, small forms
		0xFF00 <= r && r <= 0xFF60,   // fullwidth forms
		0xFFE0 <= r && r <= 0xFFE6,   // fullwidth signs
		0x20000 <= r && r <= 0x3FFFD: // CJK extensions B and on
		return true
	}
	return false
}

// List names items as a sentence does: "a", "a and b", "a, b and c"; ""
// for none.
func List(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

const ellipsis = "…"

// Truncate returns s if Len(s) <= max, else a prefix that fits with "…"
// appended: its longest, or, where a space lies in that prefix's last
// quarter, the words before it, so that no word is shown cut.
func Truncate(s string, max int) string {
	if Len(s) <= max {
		return s
	}
	n, end, space := 0, 0, -1
	for i, r := range s {
		if n += utf16.RuneLen(r); n > max-Len(ellipsis) {
			break
		}
		if r == ' ' {
			space = i
		}
		_, size := utf8.DecodeRuneInString(s[i:]) // 1 for a byte of invalid UTF-8, which r reads as U+FFFD
		end = i + size
	}
	if space > 0 && Len(s[:space]) >= (max-Len(ellipsis))*3/4 {
		end = len(strings.TrimRight(s[:space], " "))
	}
	return s[:wholeChars(s, end)] + ellipsis
}

// wholeChars moves a cut of s at byte end back out of a character as
// people see it (a grapheme cluster), so that no part is left on either
// side: before a combining mark (the letter would lose its accent, a Thai
// syllable its vowel), an emoji's variation selector, skin tone or tag,
// after a zero-width joiner (a family emoji cut to one person and a
// joiner), or between the two letters of a flag. A cut inside a cluster
// longer than the head stays where it was. It approximates Unicode's
// rules (UAX #29) for the text agents send, without their tables.
func wholeChars(s string, end int) int {
	at := end
	for at > 0 && at < len(s) {
		next, _ := utf8.DecodeRuneInString(s[at:])
		prev, size := utf8.DecodeLastRuneInString(s[:at])
		if !extends(next) && prev != '\u200d' && !(isRegional(next) && regionalRun(s[:at])%2 == 1) {
			return at
		}
		at -= size
	}
	if at == 0 {
		return end
	}
	return at
}

// extends reports whether r joins the character before it.
func extends(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) ||
		r == '\u200d' || // zero-width joiner: extends, and what follows it joins too
		r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF || // variation selectors
		r >= 0x1F3FB && r <= 0x1F3FF || // skin tones
		r >= 0xE0020 && r <= 0xE007F // tags (the flags of England, Scotland, Wales)
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

// regionalRun is how many regional indicators s ends with.
func regionalRun(s string) int {
	n := 0
	for s != "" {
		r, size := utf8.DecodeLastRuneInString(s)
		if !isRegional(r) {
			break
		}
		n++
		s = s[:len(s)-size]
	}
	return n
}

// Cut splits s so that its head, once escaped with esc (nil: as is), is
// at most max long. It prefers to break after a newline, then after a
// space, when one lies in the last quarter of the head. Both parts are
// returned unescaped; head+rest == s.
func Cut(s string, max int, esc func(string) string) (head, rest string) {
	// Most text fits: one escape, not one per rune. Text longer than max
	// is not escaped whole, since no escape shortens text (one that did
	// would still be cut right, rune by rune): a long text is cut many
	// times, and escaping all that is left at each cut was quadratic.
	if Len(s) <= max && (esc == nil || Len(esc(s)) <= max) {
		return s, ""
	}
	n, end := 0, 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if esc != nil {
			w = Len(esc(string(r)))
		}
		if n+w > max {
			break
		}
		n += w
		_, size := utf8.DecodeRuneInString(s[i:]) // 1 for a byte of invalid UTF-8, which r reads as U+FFFD
		end = i + size
	}
	// Rune by rune misses an escape that depends on what follows a rune
	// (Discord's "](" becomes "]\u200b(" but neither rune alone changes):
	// measure the head as a whole and give back runes until it fits.
	for esc != nil && end > 0 {
		over := Len(esc(s[:end])) - max
		if over <= 0 {
			break
		}
		for ; over > 0 && end > 0; over-- { // most runes give back 1 or more; the loop above measures again
			_, size := utf8.DecodeLastRuneInString(s[:end])
			end -= size
		}
	}
	if end == len(s) {
		return s, ""
	}
	end = wholeChars(s, end)
	cut := end
	if nl := strings.LastIndexByte(s[:end], '\n'); nl >= 0 && nl+1 >= end*3/4 {
		cut = nl + 1
	} else if sp := strings.LastIndexByte(s[:end], ' '); sp >= 0 && sp+1 >= end*3/4 {
		cut = sp + 1
	}
	// A shorter prefix may escape longer: cut inside a code span, which
	// Discord's escape leaves alone, it opens the span and what follows
	// is escaped.
	if esc != nil && cut < end && Len(esc(s[:cut])) > max {
		cut = end
	}
	return s[:cut], s[cut:]
}

// fenceEnd closes a code block a cut left open; fenceStart opens it again.
const fenceEnd, fenceStart = "\n```", "```\n"

// CutFenced is Cut for markdown that may hold ``` code blocks, which Slack
// and Discord format block by block (a section, an embed): where a head
// leaves a block open it is closed, still within max, and the rest opens
// it again (CloseFence). inBlock reads s as the surface does.
func CutFenced(s string, max int, esc func(string) string, inBlock InBlock) (head, rest string) {
	if head, rest = Cut(s, max, esc); rest == "" {
		return head, rest
	}
	head, rest = Cut(s, max-len(fenceEnd), esc)
	return CloseFence(head, rest, inBlock)
}

// InBlock reports whether s[:at] ends inside a ``` code block of s, as a
// surface reads code.
type InBlock func(s string, at int) bool

// OddFences is InBlock as Slack's mrkdwn reads it: every three backticks,
// wherever they are, open or close a block.
func OddFences(s string, at int) bool { return strings.Count(s[:at], "```")%2 == 1 }

// CloseFence closes a ``` code block that head, cut from rest, leaves
// open, appending a fence on a line of its own (at most 4 characters),
// and opens it again, "```\n" at the start of rest: a surface formats
// each block of a message on its own, and there a lone fence shows as
// text and the code beside it as markdown. Unlike Cut's, head+rest then
// holds one fence pair more than the text they were cut from.
func CloseFence(head, rest string, inBlock InBlock) (string, string) {
	if rest == "" || !strings.Contains(head, "```") || !inBlock(head+rest, len(head)) {
		return head, rest
	}
	if strings.HasSuffix(head, "\n") {
		return head + fenceEnd[1:], fenceStart + rest
	}
	return head + fenceEnd, fenceStart + rest
}

// Split cuts s into pieces that are each, escaped with esc, at most max
// long; joined they are s. max must leave room for one escaped character.
func Split(s string, max int, esc func(string) string) []string {
	var out []string
	for s != "" {
		head, rest := Cut(s, max, esc)
		if head == "" {
			break // max is too small for even one character
		}
		out = append(out, head)
		s = rest
	}
	return out
}

// PrettyJSON indents raw JSON for people; raw that does not parse is
// returned as it is. A \uXXXX escape of a character people can see is
// shown as that character: Go's encoding/json sends & as \u0026 and
// Python's json.dumps é as \u00e9, and a person approving
// "make \u0026\u0026 deploy" should read "make && deploy". An escape of
// anything else stays as sent, where it shows what is there: a space
// other than U+0020, a control or format character (a bidi override, a
// zero-width space), a character that shows as nothing (see visible), a
// quote or a backslash.
func PrettyJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return shownEscapes(b.Bytes())
}

// shownEscapes is JSON text j, valid, as people are to read it: each
// \uXXXX escape (a pair of them for a surrogate pair) of a visible
// character written as that character, and each character sent as
// itself that is not visible (strings alone hold any past ASCII) written
// as its escape, so that what shows as nothing still shows.
func shownEscapes(j []byte) string {
	if !slices.ContainsFunc(j, func(c byte) bool { return c == '\\' || c >= utf8.RuneSelf }) {
		return string(j)
	}
	out := make([]byte, 0, len(j))
	for i := 0; i < len(j); {
		switch c := j[i]; {
		case c == '\\': // an escape: JSON text holds a backslash in strings alone
			r, n := escapedRune(j[i:])
			if n == 0 || !visible(r) {
				out = append(out, j[i:i+2]...) // as sent: \\ stays whole
				i += 2
				continue
			}
			out = utf8.AppendRune(out, r)
			i += n
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(j[i:])
			if visible(r) {
				out = append(out, j[i:i+n]...)
			} else {
				out = appendEscape(out, r)
			}
			i += n
		}
	}
	return string(out)
}

// appendEscape appends r as JSON escapes it: \uXXXX, or a surrogate
// pair of them.
func appendEscape(out []byte, r rune) []byte {
	if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
		return fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
	}
	return fmt.Appendf(out, `\u%04x`, r)
}

// escapedRune reads the \uXXXX escape, or surrogate pair of them, that e
// starts with: the rune and its length in bytes; 0 for another escape.
func escapedRune(e []byte) (rune, int) {
	hex := func(e []byte) (rune, bool) {
		if len(e) < 6 || e[0] != '\\' || e[1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(e[2:6]), 16, 16)
		return rune(r), err == nil
	}
	r, ok := hex(e)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if low, ok := hex(e[6:]); ok {
		if pair := utf16.DecodeRune(r, low); pair != unicode.ReplacementChar {
			return pair, 12
		}
	}
	return 0, 0 // a lone surrogate: as sent
}

// visible reports whether r shows as itself: a letter, mark, number,
// punctuation or symbol, or U+0020, but not a quote or a backslash, which
// would read as the string's end or an escape. Some letters, marks and
// symbols show as nothing or as a blank: the default ignorable ones (a
// Hangul filler, the combining grapheme joiner, a variation selector,
// which can carry hidden text after a visible character) and the blank
// Braille pattern. They are not visible: an approver would read less than
// the tool gets.
func visible(r rune) bool {
	switch {
	case r == ' ':
		return true
	case r == '"', r == '\\', r == '\u2800',
		unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return false
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// Shorten cuts s so that its head, escaped with esc (nil: as is), and a
// note on the rest fit in max characters together. note is handed the
// rest, unescaped, and says what was left out (where it continues, or how
// much there is); it is "" when s fits whole. head is escaped.
func Shorten(s string, max int, esc func(string) string, note func(rest string) string) (head, noted, rest string) {
	if esc == nil {
		esc = func(s string) string { return s }
	}
	h, r := Cut(s, max, esc)
	if r == "" {
		return esc(h), "", ""
	}
	// The note is measured on the whole text: what the second cut leaves
	// is longer than the first's rest but no longer than s, so any count
	// in it has no more digits.
	h, r = Cut(s, max-Len(note(s)), esc)
	return esc(h), note(r), r
}

// RecommendedSuffix marks the option an agent recommends.
const RecommendedSuffix = "(Recommended)"

// Primary returns the index of the option of q to style as the primary
// choice: the plan-review intent's approve label, else the first option
// whose label ends in "(Recommended)", else -1.
func Primary(q seam.Question) int {
	if q.IsPlanReview() && q.Intent.Approve != "" {
		for i, o := range q.Options {
			if o.Label == q.Intent.Approve {
				return i
			}
		}
	}
	for i, o := range q.Options {
		if strings.HasSuffix(strings.TrimSpace(o.Label), RecommendedSuffix) {
			return i
		}
	}
	return -1
}

// Asker names who asks, for the line above a request: the caller's name,
// else its agent id, else "An agent", on one line (OneLine): it opens a
// context line. A name of bidi controls alone is none: a surface that
// drops them (NoBidi) would show nothing.
func Asker(c *seam.Caller) string {
	if c == nil {
		return "An agent"
	}
	if name := OneLine(c.Name); strings.TrimSpace(NoBidi(name)) != "" {
		return name
	}
	if agent := OneLine(c.Agent); strings.TrimSpace(NoBidi(agent)) != "" {
		return agent
	}
	return "An agent"
}

// OneLine is s with every run of white space made one space and control
// characters dropped: text shown inside a line (an agent's name, a
// question in a label) can't start a line of its own ("deploy-bot\n✅
// Approved by Ada").
func OneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Header is q's header as it is shown (seam.Question.ShownHeader): none
// for a blank one, nothing left by OneLine. Every surface reads it so
// (Slack, Discord, the web inbox, the status lines).
func Header(q seam.Question) string { return q.ShownHeader() }

// NoBidi drops the explicit bidirectional formatting characters from s,
// text of an agent's or a person's: the embeddings and overrides
// (U+202A-U+202E) and the isolates (U+2066-U+2069). An override reorders
// the rest of its line: a name, an answer or an option label holding one
// would show its line ("Answered by X · Y"), or itself, in an order it is
// not written in, even reading as another option. They are dropped rather
// than isolated: text wrapped in an isolate still reorders inside it, and
// would show in an order other than the one the agent gets. Slack's and
// Discord's clients lay out right-to-left scripts without them; the marks
// U+200E and U+200F, which reorder nothing, are kept.
func NoBidi(s string) string {
	if !strings.ContainsFunc(s, IsBidi) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if IsBidi(r) {
			return -1
		}
		return r
	}, s)
}

// IsBidi reports whether r is one of the characters NoBidi drops.
func IsBidi(r rune) bool { return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 }

// Label is s, text of an agent's or a person's, as the plain text of a
// control or a form (a label, a placeholder, a description, a title):
// without bidi controls (NoBidi). Text of bidi controls alone keeps them:
// there is nothing in it for them to reorder, and Slack and Discord refuse
// a blank label.
func Label(s string) string {
	if c := NoBidi(s); strings.TrimSpace(c) != "" || strings.TrimSpace(s) == "" {
		return c
	}
	return s
}

// An optional boolean field's third choice, beside Yes and No: radio
// buttons can't be cleared once tapped (or prefilled), and this one
// leaves the question unanswered, which an optional question may be.
const (
	SkipLabel = "Skip"
	SkipValue = "skip"
)

// InputHint describes what a typed input field takes, for a placeholder.
func InputHint(typ string) string {
	switch typ {
	case seam.InputInteger:
		return "A whole number"
	case seam.InputNumber:
		return "A number"
	case seam.InputBoolean:
		return "true or false"
	}
	return "Your answer"
}

// OtherLabel labels the free-text field beside q's options in a form. On
// a single choice the text replaces the option chosen (the contract), so
// the label says "instead": "Feedback (optional)" beside Approve read as a
// note to the approval, and the plan came back not approved.
func OtherLabel(q seam.Question) string {
	switch {
	case q.MultiSelect:
		return "Something else (optional)"
	case q.IsPlanReview():
		return "Or ask for changes instead (optional)"
	}
	return "Or something else instead (optional)"
}

// TextRequired reports whether the text field of question i of qs must be
// filled in a form: as its input says, and with no input to say, when the
// question has no options and is the request's only one, which left empty
// would answer the request with nothing. Free text beside options is
// optional. Every surface's form follows it; an answer through the API
// may still skip any question that input.required does not hold.
func TextRequired(qs []seam.Question, i int) bool {
	q := qs[i]
	if q.Input != nil {
		return q.Input.Required
	}
	return len(qs) == 1 && len(q.Options) == 0
}

// Skippable reports whether question i of qs, a boolean field, offers
// Skip beside Yes and No: it is optional, and among other questions (a
// form that answers nothing is refused).
func Skippable(qs []seam.Question, i int) bool { return !TextRequired(qs, i) && len(qs) > 1 }

// BooleanChoice is the text that choice v of q's field answers: Skip on a
// boolean answers nothing, which skips the question.
func BooleanChoice(q seam.Question, v string) string {
	if v == SkipValue && q.Input != nil && q.Input.Type == seam.InputBoolean {
		return ""
	}
	return v
}

// NoFence makes s safe inside a markdown code block: no two backticks
// stay side by side, so that no run of three or more in s (a string
// argument holding a fence) can end the block early and have the rest
// read as markdown. A zero-width space goes between each pair.
func NoFence(s string) string {
	if !strings.Contains(s, "``") {
		return s
	}
	// Twice: a pass leaves the second and third of "```" side by side.
	return strings.ReplaceAll(strings.ReplaceAll(s, "``", "`\u200b`"), "``", "`\u200b`")
}

// EmptyAnswer reports whether a, from a person's form, answers the
// request with nothing at all: no option chosen and no text, for any of
// its questions. Through the API that skips them all; from a form it is
// Send tapped too soon, and would end the request for good, so every
// surface's form refuses it. (A lone question without options is
// TextRequired's.)
func EmptyAnswer(qs []seam.Question, a seam.Answer) bool {
	if len(qs) == 0 || len(qs) == 1 && len(qs[0].Options) == 0 {
		return false
	}
	for _, it := range a.Answers {
		if len(it.Selected) > 0 || strings.TrimSpace(it.Custom) != "" {
			return false
		}
	}
	return true
}

// MsgChooseOrWrite is what a form that answers nothing is told.
const MsgChooseOrWrite = "Choose an option or write an answer."

// SessionKey names the thread of rec's caller session in one channel of a
// surface, or "" when rec has no session: the key of pending.Store.Thread.
func SessionKey(surface string, rec *pending.Record, channel string) string {
	if rec.Caller == nil || rec.Caller.Session == "" {
		return ""
	}
	return surface + "\x00" + channel + "\x00" + rec.Client + "\x00" + rec.Caller.Agent + "\x00" + rec.Caller.Session
}

// OptionListing lists every option of q with its description, one a line,
// numbered or bulleted, unescaped: the surface escapes it for its markup.
func OptionListing(q seam.Question, numbered bool) string {
	var s strings.Builder
	for i, o := range q.Options {
		if numbered {
			fmt.Fprintf(&s, "%d. ", i+1)
		} else {
			s.WriteString("• ")
		}
		s.WriteString(o.Label)
		if o.Description != "" {
			s.WriteString(" — " + o.Description)
		}
		s.WriteString("\n")
	}
	return strings.TrimSuffix(s.String(), "\n")
}

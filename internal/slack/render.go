package slack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// Block Kit limits rendering keeps to (PLATFORM.md, "Slack").
const (
	maxMessageBlocks = 50
	maxModalBlocks   = 100
	maxButtonText    = 75
	// maxButtonShown is about how much of a button's text Slack's clients
	// show before cutting it short ("may truncate with ~30 characters",
	// Block Kit's button element): on a phone, two options alike in their
	// first 30 characters would look the same. Measured with surface.Width:
	// CJK text shows half as many characters.
	maxButtonShown   = 30
	maxOptionText    = 75
	maxSelectOptions = 100
	maxChoiceOptions = 10 // checkboxes and radio buttons
	maxSectionText   = 3000
	maxHeaderText    = 150
	maxViewTitle     = 24
	maxInputLabel    = 2000
	maxPlaceholder   = 150
	maxInputLength   = 3000
	maxConfirmTitle  = 100
	maxConfirmText   = 300
	maxActions       = 25   // elements of one actions block
	maxButtonURL     = 3000 // a link button's url
	// maxViewBytes is the most a view may take: Slack refuses one
	// "greater than 250kb" (views.open's view_too_large), read as 250,000
	// bytes of the JSON sent (encodeJSON), escapes and all: the lesser
	// reading.
	maxViewBytes = 250_000

	// messageBudget bounds the text of all blocks of one message. Slack
	// refuses some messages with msg_blocks_too_long from about 11,000 to
	// 13,000 characters of block text on, below every documented limit, as
	// it counts the blocks' structure too; what does not fit goes to the
	// thread. A message refused all the same is posted again shorter
	// (renderShort).
	messageBudget = 11000
	// maxButtons is how many options a single-select question shows as
	// buttons; with more, or with labels too long for a button, it gets a
	// select menu.
	maxButtons = 5
	// replySections and maxReplies shape the thread replies that carry the
	// text a message had no room for: a few sections each, a bounded number
	// of replies, and a last line that says so when even that is not enough.
	replySections = 3
	maxReplies    = 8
	// minPiece is the least room a thread's section is filled with before
	// the next text goes into a section of its own.
	minPiece = 100
	// statusReserve is room kept for the line that says how a request
	// ended: a name and an answer summary, escaped.
	statusReserve = 2000
)

// esc makes agent and person text inert in mrkdwn: with &, < and >
// escaped, "<!channel>", "<@U1>", "<!subteam^S1>" and "<http://x|y>" are
// shown as typed and neither ping nor link. Bidi controls are dropped
// (surface.NoBidi): an override would show the rest of its line, "Answered
// by X · Y" or an option, in an order other than its own.
func esc(s string) string {
	s = surface.NoBidi(s)
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// plain is text shown as written (a header, a button, an option, a
// label), without bidi controls as esc drops them (surface.Label): a text
// of them alone keeps them, as Slack refuses an empty text.
func plain(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.PlainTextType, surface.Label(s), false, false)
}

// mrkdwn is already-escaped mrkdwn text; verbatim so that Slack does not
// turn bare channel names or URLs into links either.
func mrkdwn(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.MarkdownType, s, false, true)
}

// slackTime shows t in each reader's own time zone.
func slackTime(t time.Time) string {
	var b [80]byte // room for one: its only allocation is the string
	return string(appendSlackTime(b[:0], t))
}

// appendSlackTime appends slackTime(t) to b.
func appendSlackTime(b []byte, t time.Time) []byte {
	b = append(b, "<!date^"...)
	b = strconv.AppendInt(b, t.Unix(), 10)
	b = append(b, "^{date_short_pretty} {time}|"...)
	b = t.UTC().AppendFormat(b, "2006-01-02 15:04 UTC")
	return append(b, '>')
}

var statusFormat = surface.Format{Escape: esc, Time: slackTime, Surface: surfaceName}

// message is a rendered request: the blocks, the notification text, and
// the text that did not fit, as thread replies.
type message struct {
	text    string
	blocks  []slackapi.Block
	replies [][]slackapi.Block
	// overflow is the text that did not fit, in the order the replies
	// hold it; the replies hold the first held of it whole, and of the
	// rest, past the replies Slack is sent, at most the start.
	overflow []spilled
	held     int
	short    bool // rendered short (renderShort)
	// left is how many characters of the overflow the replies have no
	// room for; the last reply then ends with a line that says so, and
	// where the whole request is (wholeIn).
	left int
}

// textLen is the length of all text in blocks, as it counts against a
// message's budget: every string under a "text" key of the blocks' JSON.
// Blocks of text objects alone are measured as they are; the rest are
// encoded and scanned.
func textLen(blocks ...slackapi.Block) int {
	n := 0
	var rest []slackapi.Block
	for _, bl := range blocks {
		if m, ok := plainTextLen(bl); ok {
			n += m
		} else {
			rest = append(rest, bl)
		}
	}
	if len(rest) > 0 {
		if raw, err := json.Marshal(rest); err == nil {
			n += jsonTextLen(raw)
		}
	}
	return n
}

// plainTextLen measures a header, a section without an accessory, a
// context of text objects or a row of buttons, without encoding it; ok is
// false for any other block.
func plainTextLen(bl slackapi.Block) (n int, ok bool) {
	obj := func(t *slackapi.TextBlockObject) int {
		if t == nil {
			return 0
		}
		return surface.Len(t.Text)
	}
	switch bl := bl.(type) {
	case *slackapi.HeaderBlock:
		return obj(bl.Text), true
	case *slackapi.SectionBlock:
		if bl.Accessory != nil {
			return 0, false
		}
		n = obj(bl.Text)
		for _, f := range bl.Fields {
			n += obj(f)
		}
		return n, true
	case *slackapi.ContextBlock:
		for _, e := range bl.ContextElements.Elements {
			t, ok := e.(*slackapi.TextBlockObject)
			if !ok {
				return 0, false
			}
			n += obj(t)
		}
		return n, true
	case *slackapi.ActionBlock: // a row of plain buttons, the usual controls
		if bl.Elements == nil {
			return 0, true
		}
		for _, e := range bl.Elements.ElementSet {
			b, ok := e.(*slackapi.ButtonBlockElement)
			if !ok {
				return 0, false
			}
			n += obj(b.Text)
			if c := b.Confirm; c != nil {
				n += obj(c.Title) + obj(c.Text) + obj(c.Confirm) + obj(c.Deny)
			}
		}
		return n, true
	}
	return 0, false
}

// jsonTextLen sums the lengths of the strings under "text" keys in raw,
// compact JSON as encoding/json writes it. It scans the bytes rather than
// decoding them: every message is measured block by block as it is built.
func jsonTextLen(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end := stringEnd(raw, i)
		isText := string(raw[i+1:end]) == "text" && end+2 < len(raw) && raw[end+1] == ':' && raw[end+2] == '"'
		i = end
		if !isText {
			continue
		}
		vend := stringEnd(raw, end+2)
		val := raw[end+3 : vend]
		if bytes.IndexByte(val, '\\') < 0 {
			n += surface.Len(string(val))
		} else {
			var s string
			_ = json.Unmarshal(raw[end+2:vend+1], &s)
			n += surface.Len(s)
		}
		i = vend
	}
	return n
}

// stringEnd returns the index of the quote that closes the JSON string
// whose opening quote is at raw[start].
func stringEnd(raw []byte, start int) int {
	for j := start + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(raw) - 1
}

// builder accumulates a message's blocks within the text budget.
type builder struct {
	short    bool // a message Slack refused as too long: see renderShort
	brief    bool // an edit Slack refused as too long: see renderBrief
	blocks   []slackapi.Block
	used     int       // text in blocks so far
	overflow []spilled // for the thread
}

// spilled is text the message had no room for, posted in its thread under
// title (mrkdwn); text is unescaped.
type spilled struct {
	title, text string
	code        bool // a tool call's arguments: read as code, every piece
	q           int  // a question's text: the question's index
}

// budget is the text all of the message's blocks may hold: half as much
// in a short message.
func (b *builder) budget() int {
	if b.short {
		return messageBudget / 2
	}
	return messageBudget
}

func (b *builder) add(bl slackapi.Block) {
	b.blocks = append(b.blocks, bl)
	b.used += textLen(bl)
}

func (b *builder) context(text string) {
	b.add(slackapi.NewContextBlock("", mrkdwn(text)))
}

func (b *builder) plainSection(text string) {
	text = surface.Truncate(text, maxSectionText)
	b.add(slackapi.NewSectionBlock(plain(text), nil, nil))
}

// sections adds s as escaped mrkdwn sections, using at most limit
// characters and maxBlocks blocks, and returns what did not fit.
func (b *builder) sections(s string, limit, maxBlocks int) (rest string) {
	for s != "" && maxBlocks > 0 {
		room := min(limit, maxSectionText)
		if room < 100 {
			break
		}
		head, tail := surface.CutFenced(s, room, esc, surface.OddFences)
		s = tail
		e := esc(head)
		if e == "" {
			continue // bidi controls alone, dropped: Slack refuses an empty text
		}
		b.add(slackapi.NewSectionBlock(mrkdwn(e), nil, nil))
		limit -= surface.Len(e)
		maxBlocks--
	}
	return s
}

// spill queues text for the thread under a title.
func (b *builder) spill(title, text string) {
	if text != "" {
		b.overflow = append(b.overflow, spilled{title: title, text: text})
	}
}

// moreNote is the line under text that continues in the thread.
func moreNote(rest string) string {
	return fmt.Sprintf("_… %d more characters continue in the thread below._", surface.Len(rest))
}

func (b *builder) message(text string, id string) message {
	m := message{text: text, blocks: b.blocks, overflow: b.overflow, held: len(b.overflow), short: b.short}
	// The thread's sections, filled in turn as the text went before (each
	// spill under its title, the next starting where the last left room):
	// code cut into code blocks, text where it keeps its code blocks
	// closed. Text past the sections the replies hold is counted, not cut
	// into sections no reply posts: a request at the limits spills
	// millions of characters.
	const posted = maxReplies * replySections
	var sections []string
	cur, left := "", 0
	flush := func() {
		if cur != "" {
			sections = append(sections, cur)
		}
		cur = ""
	}
	for k, sp := range b.overflow {
		title, rest := esc(sp.title)+"\n", sp.text
		for rest != "" {
			if len(sections) == posted {
				left += surface.Len(rest)
				m.held = min(m.held, k)
				break
			}
			sep := ""
			if cur != "" {
				sep = "\n\n"
			}
			room := maxSectionText - surface.Len(cur) - len(sep) - surface.Len(title)
			if room < minPiece && cur != "" {
				flush()
				continue
			}
			var head, p string
			if sp.code {
				head, rest = surface.Cut(rest, room-6, codeBlock)
				p = "```" + codeBlock(head) + "```"
			} else {
				head, rest = surface.CutFenced(rest, room, esc, surface.OddFences)
				p = esc(head)
			}
			cur += sep + title + p
			title = ""
			if rest != "" {
				flush()
			}
		}
	}
	flush()
	for len(sections) > 0 {
		var reply []slackapi.Block
		for ; len(sections) > 0 && len(reply) < replySections; sections = sections[1:] {
			reply = append(reply, slackapi.NewSectionBlock(mrkdwn(sections[0]), nil, nil))
		}
		m.replies = append(m.replies, reply)
	}
	if left > 0 {
		m.left = left
		last := &m.replies[len(m.replies)-1]
		*last = append(*last, leftNote(left, inInbox(id)))
	}
	return m
}

// leftNote is the line that ends a thread too short for its request:
// how much it leaves out, and that the whole request is at p.
func leftNote(left int, p place) slackapi.Block {
	return slackapi.NewContextBlock("", mrkdwn(fmt.Sprintf(
		"_… %d more characters are too long to post in Slack. The whole request is in %s%s._", left, p.in, p.how)))
}

// wholeIn has the last reply of a thread too short for the request say
// that the whole request is at p: on a bridge without a public URL its
// web inbox, as rendered; with one, the browser, where the message's
// Open in browser button opens the request's page (Post). An answer form
// opened from the message names the same place for the questions past
// the thread (shown.places).
func (m *message) wholeIn(p place) {
	if m.left > 0 {
		last := m.replies[len(m.replies)-1]
		last[len(last)-1] = leftNote(m.left, p)
	}
}

// render renders rec: with controls while live, else with the line that
// says how it ended. mention, when set, is the operator's configured ping:
// live, it leads the message; ended, it is the one the message was posted
// with, which the edit does not show but cuts the text as the post did
// (see renderWith).
func render(rec *pending.Record, mention string, live bool) message {
	return renderWith(builder{}, rec, mention, live)
}

// renderShort is render for a message Slack refused as too long
// (msg_blocks_too_long): half the text in the message, the rest in its
// thread, and a question's options, text too though outside the budget,
// chosen in the modal instead of a select.
func renderShort(rec *pending.Record, mention string, live bool) message {
	return renderWith(builder{short: true}, rec, mention, live)
}

// renderBrief is render, not live, for an edit Slack refused as too long
// (msg_blocks_too_long): the request's text as posted (short when its
// message was posted short), its status line shorter. The status line
// takes the controls' place, and with the answer's summary escaped may
// hold up to statusReserve: more than the controls of a message Slack
// took, whose thread goes on from where its text was cut.
func renderBrief(rec *pending.Record, mention string, short bool) message {
	return renderWith(builder{brief: true, short: short}, rec, mention, false)
}

// briefSummary is how much of the answer's summary the status line of a
// brief edit shows.
const briefSummary = 40

func renderWith(b builder, rec *pending.Record, mention string, live bool) message {
	if live {
		b.context(intro(rec, mention))
	} else {
		// An ended request's intro is shorter than the one it was posted
		// with (no mention, no expiry), but its text is cut where the
		// post cut it, which its thread goes on from: the room left is
		// counted from the intro as posted. (Counted from its own, the
		// edit showed again what the thread holds, and its note counted
		// less than the thread holds.)
		shown := intro(rec, "")
		b.context(shown)
		posted := *rec
		posted.Status = seam.StatusPending
		b.used += surface.Len(intro(&posted, mention)) - surface.Len(shown)
	}
	var text string
	switch rec.Kind {
	case seam.KindApproval:
		text = renderApproval(&b, rec, live)
	default:
		if len(rec.Questions.Questions) == 1 {
			text = renderQuestion(&b, rec, live)
		} else {
			text = renderQuestions(&b, rec, live)
		}
	}
	if !live {
		format := statusFormat
		if b.brief {
			format.SummaryLen = briefSummary
		}
		if st := surface.StatusLine(rec, format); st != "" {
			// Under the intro, where the eye lands first (as Discord has
			// it), not in small print after a long plan.
			bl := slackapi.NewSectionBlock(mrkdwn(st), nil, nil)
			b.blocks = slices.Insert(b.blocks, 1, slackapi.Block(bl))
			b.used += textLen(bl)
			text = st + " — " + text
		}
	} else if mention != "" {
		text = mention + " " + text
	}
	return b.message(text, rec.ID)
}

// intro is the context line above a request: who asks, in which session,
// when, and, while it is pending, until when.
func intro(rec *pending.Record, mention string) string {
	var b [512]byte // room for most: their only allocation is the string
	s := b[:0]
	if mention != "" {
		s = append(s, mention...)
		s = append(s, ' ')
	}
	s = append(s, '*')
	s = append(s, esc(surface.Truncate(surface.Asker(rec.Caller), 100))...)
	s = append(s, '*')
	if rec.Kind == seam.KindApproval {
		s = append(s, " asks to run a tool"...)
	} else {
		s = append(s, " asks"...)
	}
	if c := rec.Caller; c != nil {
		if session := surface.OneLine(c.Session); session != "" {
			s = append(s, " · session "...)
			s = append(s, esc(surface.Truncate(session, 100))...)
		}
	}
	if !rec.CreatedAt.IsZero() {
		s = append(s, " · "...)
		s = appendSlackTime(s, rec.CreatedAt)
	}
	if !rec.ExpiresAt.IsZero() && rec.Status == seam.StatusPending {
		s = append(s, " · expires "...)
		s = appendSlackTime(s, rec.ExpiresAt)
	}
	return string(s)
}

func fallback(prefix, s string) string {
	return esc(surface.Truncate(prefix+surface.OneLine(s), 300))
}

// renderQuestion renders a request of one question, answered in one tap
// where its shape allows.
func renderQuestion(b *builder, rec *pending.Record, live bool) string {
	q := rec.Questions.Questions[0]
	asker := surface.Asker(rec.Caller)
	if h := surface.Header(q); h != "" {
		b.add(slackapi.NewHeaderBlock(plain(surface.Truncate(h, maxHeaderText))))
	}
	b.plainSection(q.Question)

	sh := shapeOf(q)
	// The controls' text (or the status line that replaces them) is
	// reserved first. An ended request's message, which shows none, needs
	// them only to measure a menu's: buttons and checkboxes always take
	// less room than the status line (TestControlsBesideTheStatusLine).
	var controls []slackapi.Block
	switch {
	case b.short && len(q.Options) > 0:
		controls = []slackapi.Block{slackapi.NewActionBlock("",
			button(surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, "Answer…", slackapi.StylePrimary),
			dismissButton(rec.ID))}
	case live || sh.menu:
		controls = questionControls(rec.ID, q, sh)
	}
	var listing string
	if sh.listing {
		listing = surface.OptionListing(q, sh.numbered)
	}
	// The options' listing gets at most one section, the detail what is
	// left.
	room := b.budget() - b.used - max(textLen(controls...), statusReserve)
	if listing != "" {
		rest := b.sections(listing, min(room/2, maxSectionText), 1)
		room -= surface.Len(esc(listing)) - surface.Len(esc(rest))
		if rest != "" {
			b.context(moreNote(rest))
			b.spill("*Options, continued:*", rest)
		}
	}
	if q.Detail != "" {
		rest := b.sections(fromMarkdown(q.Detail), room, 6)
		if rest != "" {
			b.context(moreNote(rest))
			b.spill("*"+detailTitle(q)+", continued:*", rest)
		}
	}
	if live {
		for _, bl := range controls {
			b.add(bl)
		}
	}
	return fallback(asker+" asks: ", q.Question)
}

func detailTitle(q seam.Question) string {
	if q.IsPlanReview() {
		return "The plan"
	}
	return "Details"
}

// shape is how a question's options are offered.
type shape struct {
	buttons  bool // one button per option
	choice   bool // checkboxes (multi-select with few options)
	menu     bool // a select menu, of one option or of several
	numbered bool // option texts carry their number, since labels are cut
	cut      bool // a label is longer than an option's text holds
	listing  bool // the options are listed in full above the controls
}

func shapeOf(q seam.Question) shape {
	var sh shape
	longLabel, wideLabel, anyDesc, longDesc := false, false, false, false
	for _, o := range q.Options {
		longLabel = longLabel || surface.Len(o.Label) > maxOptionText
		wideLabel = wideLabel || surface.Width(o.Label) > maxButtonShown
		anyDesc = anyDesc || o.Description != ""
		longDesc = longDesc || surface.Len(o.Description) > maxOptionText
	}
	switch {
	case len(q.Options) == 0:
	case q.MultiSelect:
		sh.choice = len(q.Options) <= maxChoiceOptions
		sh.listing = longLabel || (anyDesc && !sh.choice) || longDesc
	default:
		sh.buttons = len(q.Options) <= maxButtons && !longLabel
		// Buttons whose labels a phone may cut carry their numbers, and
		// the options are listed in full above them.
		sh.listing = longLabel || anyDesc || sh.buttons && wideLabel
	}
	sh.menu = len(q.Options) > 0 && !sh.buttons && !sh.choice
	sh.cut = longLabel
	sh.numbered = longLabel || sh.buttons && wideLabel
	return sh
}

// optionText is an option's text in a select or choice: its label, cut
// to fit and numbered when cut.
func optionText(q seam.Question, i int, numbered bool) string {
	l := q.Options[i].Label
	if numbered {
		l = strconv.Itoa(i+1) + ". " + l
	}
	return surface.Truncate(l, maxOptionText)
}

func options(q seam.Question, numbered, descriptions bool) []*slackapi.OptionBlockObject {
	out := make([]*slackapi.OptionBlockObject, 0, min(len(q.Options), maxSelectOptions))
	for i, o := range q.Options[:min(len(q.Options), maxSelectOptions)] {
		var desc *slackapi.TextBlockObject
		if descriptions && o.Description != "" {
			desc = plain(surface.Truncate(o.Description, maxOptionText))
		}
		out = append(out, slackapi.NewOptionBlockObject(strconv.Itoa(i), plain(optionText(q, i, numbered)), desc))
	}
	return out
}

// describedSelect reports whether a select in a message carries its
// options' descriptions: the listing above has them too, but on a phone
// the select's sheet covers it. Past maxDescribed options they would take
// message room the question's text needs.
func describedSelect(q seam.Question) bool { return len(q.Options) <= maxDescribed }

const maxDescribed = 25

func button(r surface.Ref, text string, style slackapi.Style) *slackapi.ButtonBlockElement {
	b := slackapi.NewButtonBlockElement(r.String(), strconv.Itoa(r.O), plain(surface.Truncate(text, maxButtonText)))
	b.Style = style
	return b
}

func dismissButton(id string) *slackapi.ButtonBlockElement {
	b := button(surface.Ref{Verb: surface.VerbDismiss, ID: id}, "Dismiss", "")
	b.Confirm = slackapi.NewConfirmationBlockObject(
		plain("Dismiss this question?"),
		plain("The agent is told that you declined to answer."),
		plain("Dismiss"), plain("Keep it"))
	return b
}

func otherLabel(q seam.Question) string {
	if q.IsPlanReview() {
		return "Send feedback…"
	}
	return "Other…"
}

// questionControls are the controls of a one-question request: buttons,
// or a select or checkboxes in a block of their own above the buttons.
func questionControls(id string, q seam.Question, sh shape) []slackapi.Block {
	var (
		choice  slackapi.BlockElement
		buttons []slackapi.BlockElement
	)
	primary := surface.Primary(q)
	switch {
	case len(q.Options) == 0:
		buttons = append(buttons, button(surface.Ref{Verb: surface.VerbAnswer, ID: id}, "Answer…", slackapi.StylePrimary))
	case sh.buttons:
		for i, o := range q.Options {
			style := slackapi.Style("")
			if i == primary {
				style = slackapi.StylePrimary
			}
			label := o.Label
			if sh.numbered {
				label = strconv.Itoa(i+1) + ". " + label
			}
			buttons = append(buttons, button(surface.Ref{Verb: surface.VerbPick, ID: id, O: i}, label, style))
		}
	case q.MultiSelect && sh.choice:
		choice = slackapi.NewCheckboxGroupsBlockElement(surface.Ref{Verb: surface.VerbMulti, ID: id}.String(), options(q, sh.numbered, true)...)
	case q.MultiSelect:
		choice = slackapi.NewOptionsMultiSelectBlockElement(slackapi.MultiOptTypeStatic, plain("Choose options"), surface.Ref{Verb: surface.VerbMulti, ID: id}.String(), options(q, sh.numbered, describedSelect(q))...)
	default:
		choice = slackapi.NewOptionsSelectBlockElement(slackapi.OptTypeStatic, plain("Choose an option"), surface.Ref{Verb: surface.VerbSelect, ID: id}.String(), options(q, sh.numbered, describedSelect(q))...)
	}
	if q.MultiSelect && len(q.Options) > 0 {
		buttons = append(buttons, button(surface.Ref{Verb: surface.VerbSubmit, ID: id}, "Submit", slackapi.StylePrimary))
	}
	if len(q.Options) > 0 {
		buttons = append(buttons, button(surface.Ref{Verb: surface.VerbOther, ID: id}, otherLabel(q), ""))
	}
	buttons = append(buttons, dismissButton(id))
	var out []slackapi.Block
	if choice != nil {
		out = append(out, slackapi.NewActionBlock("", choice))
	}
	return append(out, slackapi.NewActionBlock("", buttons...))
}

// renderQuestions renders a request of several questions: each listed in
// a section of its own, answered together in one modal.
func renderQuestions(b *builder, rec *pending.Record, live bool) string {
	qs := rec.Questions.Questions
	per := min(maxSectionText, (b.budget()-b.used-statusReserve)/len(qs))
	givesWay := formGivesWay(qs)
	for i, q := range qs {
		full := questionText(i, q, givesWay || shapeOf(q).cut)
		text := esc(full)
		if surface.Len(text) > per {
			// A code block the cut leaves open is closed: Slack shows a
			// lone fence as typed, and the code after it as mrkdwn.
			head, _ := surface.CutFenced(full, per-1, esc, surface.OddFences)
			text = esc(head) + "…"
			b.overflow = append(b.overflow, spilled{title: fmt.Sprintf("*Question %d in full:*", i+1), text: full, q: i})
		}
		b.add(slackapi.NewSectionBlock(mrkdwn(text), nil, nil))
	}
	if len(b.overflow) > 0 {
		b.context("_Some questions are shortened here; the thread below has them in full._")
	}
	if live {
		b.add(slackapi.NewActionBlock("",
			button(surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, "Answer…", slackapi.StylePrimary),
			dismissButton(rec.ID)))
	}
	return fallback(fmt.Sprintf("%s asks %d questions: ", surface.Asker(rec.Caller), len(qs)), qs[0].Question)
}

// questionText is question i in full, unescaped: title, text, detail and
// options, numbered when the answer form may show them by their numbers:
// cut to fit an option (as a question of its own numbers them), or to fit
// a form that gives way (formGivesWay), whose options may be cut to
// their numbers and first words and found here.
func questionText(i int, q seam.Question, numbered bool) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%d. ", i+1)
	if h := surface.Header(q); h != "" {
		s.WriteString(h + ": ")
	}
	s.WriteString(q.Question)
	if q.Detail != "" {
		s.WriteString("\n" + fromMarkdown(q.Detail))
	}
	if len(q.Options) > 0 {
		kind := "one of"
		if q.MultiSelect {
			kind = "any of"
		}
		s.WriteString("\nChoose " + kind + ":\n" + surface.OptionListing(q, numbered))
	}
	return s.String()
}

// renderApproval renders an approval: the tool, why, its arguments, and
// Allow once / Reject.
func renderApproval(b *builder, rec *pending.Record, live bool) string {
	a := rec.Approval
	h := surface.Truncate("Allow "+a.ToolName+"?", maxHeaderText)
	b.add(slackapi.NewHeaderBlock(plain(h)))
	reason := a.DisplayReason
	if reason == "" {
		reason = a.Reason
	}
	if reason != "" {
		if rest := b.sections(fromMarkdown(reason), b.budget()-b.used-maxSectionText-statusReserve, 3); rest != "" {
			b.context(moreNote(rest))
			b.spill("*Reason, continued:*", rest)
		}
	}
	argsCut := false
	if args := surface.PrettyJSON(a.Arguments); args != "" {
		head, rest := surface.Cut(args, maxSectionText-30, codeBlock)
		b.add(slackapi.NewSectionBlock(mrkdwn("*Arguments*\n```"+codeBlock(head)+"```"), nil, nil))
		if rest != "" {
			// What is allowed is read in full: the rest goes to the thread.
			b.context(moreNote(rest))
			b.overflow = append(b.overflow, spilled{title: "*Arguments, continued:*", text: rest, code: true})
			argsCut = true
		}
	}
	if live {
		allow := button(surface.Ref{Verb: surface.VerbAllow, ID: rec.ID}, "Allow once", slackapi.StylePrimary)
		if argsCut {
			allow.Confirm = slackapi.NewConfirmationBlockObject(
				plain(surface.Truncate("Allow "+a.ToolName+"?", maxConfirmTitle)),
				plain("Its arguments are longer than the message: the rest is in the thread below."),
				plain("Allow once"), plain("Go back"))
		}
		b.add(slackapi.NewActionBlock("", allow,
			button(surface.Ref{Verb: surface.VerbReject, ID: rec.ID}, "Reject", slackapi.StyleDanger)))
	}
	return fallback(surface.Asker(rec.Caller)+" asks to run ", a.ToolName)
}

// codeBlock is s escaped to sit inside a mrkdwn code block: a ``` of its
// own (in a string argument) would end the block early (surface.NoFence).
func codeBlock(s string) string {
	return surface.NoFence(esc(s))
}

// openAction is the action id of the "Open in browser" button: a link
// button, whose click Slack also reports, and the interactions handler
// ignores as not ours.
const openAction = "askbridge_open"

// addLink adds an "Open in browser" link button, to url, beside the live
// message's last row of buttons, or in a row of its own when that row is
// full or there is none; it adds nothing when the message has no room or
// url is too long for Slack.
func (m *message) addLink(url string) {
	if url == "" || len(url) > maxButtonURL {
		return
	}
	b := slackapi.NewButtonBlockElement(openAction, "", plain("Open in browser"))
	b.URL = url
	m.addButton(b)
}

// addLinkRequest adds, as addLink places its button, an "Open in browser"
// button that asks for a personal link: for a target that limits its
// responders, whose message can't carry a link anyone may answer through.
func (m *message) addLinkRequest(rec *pending.Record) {
	m.addButton(button(surface.Ref{Verb: surface.VerbLink, ID: rec.ID}, "Open in browser", ""))
}

func (m *message) addButton(b *slackapi.ButtonBlockElement) {
	for i := len(m.blocks) - 1; i >= 0; i-- {
		if a, ok := m.blocks[i].(*slackapi.ActionBlock); ok {
			if a.Elements != nil && len(a.Elements.ElementSet) < maxActions {
				a.Elements.ElementSet = append(a.Elements.ElementSet, b)
				return
			}
			break
		}
	}
	if len(m.blocks) < maxMessageBlocks {
		m.blocks = append(m.blocks, slackapi.NewActionBlock("", b))
	}
}

package discord

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// Discord's limits rendering keeps to (PLATFORM.md, "Discord"), counted
// in UTF-16 units by surface.Len, which is never less than Discord's count
// (code points), for text that is only shown; an editable value is
// counted as Discord counts it (editable).
const (
	maxContent     = 2000
	maxEmbedTitle  = 256
	maxEmbedDesc   = 4096
	maxEmbedTotal  = 6000 // all embeds of one message together
	maxRows        = 5
	maxRowButtons  = 5
	maxButtonLabel = 80
	// maxButtonShown is the longest button label Discord's design
	// guidelines have its clients show whole (38 characters without an
	// emoji); a phone cuts a longer one short. Measured with
	// surface.Width: CJK text shows half as many characters.
	maxButtonShown   = 38
	maxSelectOptions = 25
	maxGroupOptions  = 10  // a form's radio group (2-10) or checkbox group (1-10)
	maxOptionText    = 100 // select option label, value and description
	maxSelectHolder  = 150 // select placeholder
	maxInputHolder   = 100 // text input placeholder
	maxModalTitle    = 45
	maxModalFields   = 5
	maxFieldLabel    = 45 // text input label, and Label component label
	maxLabelDesc     = 100
	maxTextValue     = 4000 // a text input's value and max_length, in code points
	maxTextDisplay   = 4000
	maxCustomID      = 100
	maxButtonURL     = 512

	// maxButtons is how many options a single-select question shows as
	// buttons: four rows, the fifth holds Other… and Dismiss. With more,
	// or with labels too long for a button, it gets selects.
	maxButtons = (maxRows - 1) * maxRowButtons
	// maxSelects is how many 25-option selects a message holds beside its
	// row of buttons: 100 options, as many as a question may have.
	maxSelects = maxRows - 1
	// embedBudget is what a message's embeds may hold in all; the rest of
	// maxEmbedTotal is slack for titles.
	embedBudget = maxEmbedTotal - 300
	// maxMore bounds the messages that carry text a request's message had
	// no room for; beyond them a line says where the rest is.
	maxMore = 10
)

// Embed colours.
const (
	colourLive = 0x5865F2
	colourDone = 0x99AAB5
)

// esc makes agent and person text inert in Discord markdown: a zero-width
// space after "@" and "<" keeps @everyone, @here, <@id>, <@&id>, <#id> and
// <t:...> from rendering as pings, mentions or links, and one inside "]("
// keeps a masked link [text](url) from hiding where it goes. Everything
// else (lists, code, emphasis) renders, since plans are markdown. Code
// (spans and fences) is left as written: nothing renders there, and a
// zero-width space in @Override or Vec<String> would go along with a copy.
// allowed_mentions parse [] is sent as well, on every message. Bidi
// controls are dropped (surface.NoBidi).
func esc(s string) string {
	s = surface.NoBidi(s)
	if !strings.ContainsAny(s, "@<]") {
		return s
	}
	if !strings.Contains(s, "`") {
		return escaper.Replace(s)
	}
	var b strings.Builder
	for s != "" {
		text, code, rest := cutCode(s)
		b.WriteString(escaper.Replace(text))
		b.WriteString(code)
		s = rest
	}
	return b.String()
}

// cutCode splits s at its first code, as CommonMark reads code: a run of
// backticks up to the next run of as many (a span's one or two), a fence
// of three or more up to the next run of three or more (the first that
// Discord may close it at: what follows renders). It returns the text
// before the code, the code with its backticks, and the rest; a run with
// no closing run opens code with fewer backticks, or is text.
func cutCode(s string) (text, code, rest string) {
	for from := 0; ; {
		i := strings.IndexByte(s[from:], '`')
		if i < 0 {
			return s, "", ""
		}
		open := from + i
		n := run(s, open)
		if escaped(s, open) {
			// \` is a backtick, not code (plain's inline markdown is
			// backslashed so); the run's rest may open code.
			from = open + 1
			continue
		}
		for j := open + n; j < len(s); {
			k := strings.IndexByte(s[j:], '`')
			if k < 0 {
				break
			}
			close := j + k
			m := run(s, close)
			if m == n || (n >= 3 && m >= 3) {
				return s[:open], s[open : close+m], s[close+m:]
			}
			j = close + m
		}
		// Unclosed: its first backtick is text, and the rest of the run
		// may open code. Discord's parser backtracks so: in "``a` <@1> `"
		// it reads "``a`" as code and mentions <@1>.
		from = open + 1
	}
}

// inBlock is surface.InBlock as Discord reads code (cutCode): s[:at]
// ends inside a block of three or more backticks that closes later in s;
// three backticks inside a span of one or two are the span's text.
func inBlock(s string, at int) bool {
	for off := 0; off < at; {
		text, code, _ := cutCode(s[off:])
		if code == "" {
			return false
		}
		start := off + len(text)
		off = start + len(code)
		if start < at && at < off {
			return run(code, 0) >= 3
		}
	}
	return false
}

// escaped reports whether s[i] follows an odd number of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for i-n > 0 && s[i-n-1] == '\\' {
		n++
	}
	return n%2 == 1
}

// run is the length of the run of backticks at s[i].
func run(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// sealed backslashes every backtick of s that opens no code (a run that
// nothing closes), so that s, escaped on its own, keeps its code when
// joined with other text: else its unclosed run would pair with a run of
// the text after it, and what esc left as code there (unescaped) would
// render as text.
func sealed(s string) string {
	if !strings.Contains(s, "`") {
		return s
	}
	var b strings.Builder
	for s != "" {
		text, code, rest := cutCode(s)
		for i := 0; i < len(text); i++ {
			if text[i] == '`' && !escaped(text, i) {
				b.WriteByte('\\')
			}
			b.WriteByte(text[i])
		}
		b.WriteString(code)
		s = rest
	}
	return b.String()
}

// clean is s, text of an agent's or a person's, as the plain text of a
// control or a form (surface.Label), cut to max.
func clean(s string, max int) string { return surface.Truncate(surface.Label(s), max) }

var escaper = strings.NewReplacer("@", "@\u200b", "<", "<\u200b", "](", "]\u200b(")

// plain makes agent and person text that belongs on one line of a
// message's content (who asks, the session, how a request ended) show as
// written: on one line, so that no newline in it starts a heading, a list,
// a quote or a subtext line of its own (Discord's markdown renders "# ",
// "- ", "> " and "-# " at the start of a line), with Discord's inline
// markdown (bold, italics, strikethrough, spoilers, code) backslashed,
// and made inert as esc does.
func plain(s string) string {
	return esc(inlineMarkdown.Replace(surface.OneLine(s)))
}

var inlineMarkdown = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`)

// discordTime shows t in each reader's own time zone.
func discordTime(t time.Time) string { return fmt.Sprintf("<t:%d:f>", t.Unix()) }

var statusFormat = surface.Format{Escape: plain, Time: discordTime, Surface: surfaceName}

// message is a rendered request: what the request's message holds and
// the embeds of the messages that carry the text it had no room for.
type message struct {
	content    string
	embeds     []*discordgo.MessageEmbed
	components []discordgo.MessageComponent
	more       []*discordgo.MessageEmbed
	// sections is the request's text as its embeds hold it, whole, for
	// a message that must show it without them (see bare).
	sections []section
	// cut: bare had no room for all of the request's text.
	cut bool
	// id is the request's.
	id string
	// left is how many characters of the request's text the messages
	// after it have no room for; the last of them then ends with a line
	// that says so, and where the whole request is (leftNote).
	left int
	// browser: the message carries an "Open in browser" button (addLink,
	// addLinkRequest), which opens the whole request: the lines that say
	// where it is name that button (whole).
	browser bool
}

// section is a part of a request's text under its title, unescaped; code
// is a tool call's arguments, read as code.
type section struct {
	title, text string
	code        bool
}

func embedLen(e *discordgo.MessageEmbed) int {
	n := surface.Len(e.Title) + surface.Len(e.Description)
	if e.Footer != nil {
		n += surface.Len(e.Footer.Text)
	}
	for _, f := range e.Fields {
		n += surface.Len(f.Name) + surface.Len(f.Value)
	}
	return n
}

// builder accumulates a message's embeds within embedBudget and queues
// what does not fit for the messages after it.
type builder struct {
	embeds   []*discordgo.MessageEmbed
	used     int
	spill    []spilled
	sections []section
}

// spilled is text a message had no room for, posted in the messages that
// follow under title; text is unescaped.
type spilled struct {
	title, text string
	code        bool // a tool call's arguments: read as code, every piece
}

// embed adds an embed holding as much of text (unescaped) as fits in max
// characters escaped, and queues the rest under title. A note in the
// embed says that the text continues.
func (b *builder) embed(title, prefix, text string, max int, colour int) {
	title = surface.Truncate(title, maxEmbedTitle)
	b.sections = append(b.sections, section{title: title, text: prefix + text})
	max = min(max, maxEmbedDesc, embedBudget-b.used-surface.Len(escTitle(title)))
	if max < 200 {
		b.spill = append(b.spill, spilled{title: title, text: text})
		return
	}
	head, note, rest := surface.Shorten(text, max-surface.Len(prefix)-4, esc, moreNote)
	head, rest = surface.CloseFence(head, rest, inBlock)
	if rest != "" {
		b.spill = append(b.spill, spilled{title: title, text: rest})
	}
	e := &discordgo.MessageEmbed{Title: escTitle(title), Description: prefix + head + note, Color: colour}
	b.embeds = append(b.embeds, e)
	b.used += embedLen(e)
}

// escTitle is s, text of an agent's (a question's header, a tool's name),
// as an embed's title, within Discord's 256 characters: a line of plain
// text, shown as written (plain), since Discord renders markdown in titles
// too (emphasis, code; its phone apps render mentions there). Escaped as
// a description is, its markdown would render: an MCP tool's name,
// mcp__server__tool, would lose its underscores to an underline.
func escTitle(s string) string {
	if t := plain(s); surface.Len(t) <= maxEmbedTitle {
		return t
	}
	head, _ := surface.Cut(s, maxEmbedTitle-surface.Len(ellipsis), plain)
	return plain(head) + ellipsis
}

const ellipsis = "…"

func moreNote(rest string) string {
	return fmt.Sprintf("\n\n*… %d more characters continue below.*", surface.Len(rest))
}

// more renders the queued text as embeds of the messages that follow,
// at most maxMore, and returns how many characters even that is not
// enough for (the last one's leftNote says so).
func (b *builder) more() ([]*discordgo.MessageEmbed, int) {
	var out []*discordgo.MessageEmbed
	const room = maxEmbedDesc - 200
	for i, sp := range b.spill {
		rest := sp.text
		for rest != "" {
			if len(out) == maxMore {
				left := surface.Len(rest)
				for _, later := range b.spill[i+1:] {
					left += surface.Len(later.text)
				}
				return out, left
			}
			var head, desc string
			if sp.code {
				head, rest = surface.Cut(rest, room-8, surface.NoFence)
				desc = "```\n" + surface.NoFence(head) + "\n```"
			} else {
				head, rest = surface.CutFenced(rest, room, esc, inBlock)
				desc = esc(head)
			}
			out = append(out, &discordgo.MessageEmbed{Title: escTitle(sp.title + " (continued)"), Description: desc, Color: colourLive})
		}
	}
	return out, 0
}

// whole is where request id is shown whole, past what its messages hold:
// in the browser when its message carries an "Open in browser" button
// (a link, or one that hands a personal link to a responder of a target
// that limits them), else in the bridge's web inbox (surface.WholeIn, as
// Slack says it).
func whole(id string, browser bool) string {
	in, how := surface.WholeIn(id, browser)
	return in + how
}

// leftNote is the line that ends the last message after a request's
// when they have no room for left characters of it, and says where the
// whole request is.
func leftNote(left int, where string) string {
	return fmt.Sprintf("\n\n*… %d more characters are too long to post in Discord. The whole request is in %s.*", left, where)
}

// whole is where m's request is shown whole.
func (m *message) whole() string { return whole(m.id, m.browser) }

// opensInBrowser records that m carries an "Open in browser" button: the
// line that ends its last continuation, rendered before the button was
// added, names it.
func (m *message) opensInBrowser() {
	was := m.whole()
	m.browser = true
	if m.left > 0 {
		last := m.more[len(m.more)-1]
		last.Description = strings.TrimSuffix(last.Description, leftNote(m.left, was)) + leftNote(m.left, m.whole())
	}
}

// render renders rec: with controls while live, else with the line that
// says how it ended. mention, when set, is the target's configured ping.
// Its lines that say where the whole request is name the web inbox until
// an Open in browser button is added (addLink, addLinkRequest).
func render(rec *pending.Record, mention string, live bool) message {
	var b builder
	colour := colourLive
	if !live {
		colour = colourDone
	}
	var comps []discordgo.MessageComponent
	switch {
	case rec.Kind == seam.KindApproval:
		renderApproval(&b, rec, colour)
		comps = approvalControls(rec.ID)
	case len(rec.Questions.Questions) == 1:
		renderQuestion(&b, rec.Questions.Questions[0], colour)
		comps = questionControls(rec.ID, rec.Questions.Questions[0])
	default:
		renderQuestions(&b, rec, colour)
		comps = []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			button(surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, "Answer…", discordgo.PrimaryButton),
			dismissButton(rec.ID),
		}}}
	}
	m := message{embeds: b.embeds, components: []discordgo.MessageComponent{}, sections: b.sections, id: rec.ID}
	m.more, m.left = b.more()
	if m.left > 0 {
		last := m.more[len(m.more)-1]
		last.Description += leftNote(m.left, m.whole())
	}
	in := intro(rec)
	if live {
		m.components = tagged(comps, surface.HashTag(rec.Hash))
		if mention != "" {
			in = mention + " " + in
		}
	} else if st := surface.StatusLine(rec, statusFormat); st != "" {
		in = "**" + st + "**\n" + in
	}
	m.content = surface.Truncate(in, maxContent)
	return m
}

// bare is m for a message whose embeds Discord drops: a bot without
// Embed Links in the channel gets its messages posted and edited without
// them, and people would see its controls under no question. The text the
// embeds held follows the content, in the content, as far as its 2000
// characters hold it; a last line says where the rest is. The components
// stay. Each text is escaped as its embed's description is, and sealed,
// since here they share one markdown text; its title is a line of its own.
func (m message) bare() message {
	out := message{content: m.content, embeds: []*discordgo.MessageEmbed{}, components: m.components, sections: m.sections, id: m.id, browser: m.browser}
	all := 0
	for _, sec := range m.sections {
		all += surface.Len(sec.text)
	}
	text, left := bareText(m.sections, maxContent-surface.Len(m.content))
	if left > 0 {
		// The note is measured on all the text: no count in it is longer.
		text, left = bareText(m.sections, maxContent-surface.Len(m.content)-surface.Len(bareNote(all, m.whole())))
		text += bareNote(left, m.whole())
		out.cut = true
	}
	out.content = surface.Truncate(m.content+text, maxContent)
	return out
}

// bareText is as much of sections as room holds, as bare shows them, and
// how many characters of them it had no room for. Once a text is cut, the
// ones after it are left out.
func bareText(sections []section, room int) (string, int) {
	seal := func(s string) string { return sealed(esc(s)) }
	var b strings.Builder
	left := 0
	for _, sec := range sections {
		if left > 0 {
			left += surface.Len(sec.text)
			continue
		}
		head := "\n\n"
		if sec.title != "" {
			head += "**" + plain(sec.title) + "**\n"
		}
		budget := room - surface.Len(head)
		var body, rest string
		switch {
		case sec.code:
			var code string
			code, rest = surface.Cut(sec.text, budget-8, surface.NoFence)
			if code != "" {
				body = "```\n" + surface.NoFence(code) + "\n```"
			}
		default:
			var text string
			text, rest = surface.CutFenced(sec.text, budget, seal, inBlock)
			body = seal(text)
		}
		if body == "" && sec.text != "" {
			left += surface.Len(sec.text)
			continue
		}
		b.WriteString(head + body)
		room -= surface.Len(head + body)
		left += surface.Len(rest)
	}
	return b.String(), left
}

// bareNote is the line that ends a bare message with no room for left
// characters of its request, and says where the whole request is.
func bareNote(left int, where string) string {
	return fmt.Sprintf("\n\n*… %d more characters are not shown: Discord shows this message without its embeds, as the bot may not Embed Links here. The whole request is in %s.*", left, where)
}

// intro is the line above a request: who asks, in which session, when,
// and, while it is pending, until when.
func intro(rec *pending.Record) string {
	var s strings.Builder
	s.WriteString("**" + plain(surface.Truncate(surface.Asker(rec.Caller), 100)) + "**")
	if rec.Kind == seam.KindApproval {
		s.WriteString(" asks to run a tool")
	} else {
		s.WriteString(" asks")
	}
	if c := rec.Caller; c != nil {
		if session := surface.OneLine(c.Session); session != "" {
			s.WriteString(" · session " + plain(surface.Truncate(session, 100)))
		}
	}
	if !rec.CreatedAt.IsZero() {
		s.WriteString(" · " + discordTime(rec.CreatedAt))
	}
	if !rec.ExpiresAt.IsZero() && rec.Status == seam.StatusPending {
		s.WriteString(fmt.Sprintf(" · expires <t:%d:R>", rec.ExpiresAt.Unix()))
	}
	return s.String()
}

// renderQuestion renders a request of one question: the question and its
// options in one embed, its detail (a plan) in the next.
func renderQuestion(b *builder, q seam.Question, colour int) {
	title := surface.Header(q)
	if title == "" {
		title = "Question"
	}
	text := q.Question
	if listed(q) {
		text += "\n\n" + surface.OptionListing(q, numbered(q))
	}
	b.embed(title, "", text, maxEmbedDesc, colour)
	if q.Detail != "" {
		b.embed(detailTitle(q), "", q.Detail, maxEmbedDesc, colour)
	}
}

func detailTitle(q seam.Question) string {
	if q.IsPlanReview() {
		return "The plan"
	}
	return "Details"
}

// buttons reports whether q's options are offered as buttons.
func buttons(q seam.Question) bool {
	return !q.MultiSelect && len(q.Options) > 0 && len(q.Options) <= maxButtons && !longLabels(q)
}

func longLabels(q seam.Question) bool {
	for _, o := range q.Options {
		if surface.Len(o.Label) > maxButtonLabel {
			return true
		}
	}
	return false
}

// listed reports whether q's options are listed in full in the embed:
// when a control can't show them whole (descriptions beside buttons,
// button labels a phone cuts short, labels cut in a select).
func listed(q seam.Question) bool {
	btns, numbered := buttons(q), longLabels(q)
	if btns && wideLabels(q) {
		return true
	}
	for i, o := range q.Options {
		// A select cuts a label at 100 characters, its number included.
		if o.Description != "" && btns || surface.Len(o.Description) > maxOptionText || !strings.HasSuffix(optionText(q, i, numbered), o.Label) {
			return true
		}
	}
	return false
}

// wideLabels reports whether a label of q is wider than a button shows
// whole on a phone: two options that differ only past that point would
// look alike there.
func wideLabels(q seam.Question) bool {
	for _, o := range q.Options {
		if surface.Width(o.Label) > maxButtonShown {
			return true
		}
	}
	return false
}

// numbered reports whether q's controls and the listing of its options
// carry their numbers, so that a control showing part of a label can be
// matched with the label in full.
func numbered(q seam.Question) bool {
	return longLabels(q) || buttons(q) && wideLabels(q)
}

// tagged gives every control of comps the tag of its request's hash (see
// surface.Ref.Tag), so that its click can be told from one on the
// message of another request under the same id.
func tagged(comps []discordgo.MessageComponent, tag string) []discordgo.MessageComponent {
	if tag == "" {
		return comps
	}
	retag := func(id string) string {
		r, err := surface.ParseRef(id)
		if err != nil {
			return id
		}
		r.Tag = tag
		return r.String()
	}
	for _, c := range comps {
		row, ok := c.(discordgo.ActionsRow)
		if !ok {
			continue
		}
		for i, el := range row.Components {
			switch el := el.(type) {
			case discordgo.Button:
				if el.CustomID != "" { // a link button has none
					el.CustomID = retag(el.CustomID)
				}
				row.Components[i] = el
			case discordgo.SelectMenu:
				el.CustomID = retag(el.CustomID)
				row.Components[i] = el
			}
		}
	}
	return comps
}

func button(r surface.Ref, text string, style discordgo.ButtonStyle) discordgo.Button {
	return discordgo.Button{CustomID: r.String(), Label: clean(text, maxButtonLabel), Style: style}
}

func dismissButton(id string) discordgo.Button {
	return button(surface.Ref{Verb: surface.VerbDismiss, ID: id}, "Dismiss", discordgo.SecondaryButton)
}

func otherLabel(q seam.Question) string {
	if q.IsPlanReview() {
		return "Send feedback…"
	}
	return "Other…"
}

// optionText is an option's text in a select: its label, numbered when
// numbered, cut to fit.
func optionText(q seam.Question, i int, numbered bool) string {
	l := q.Options[i].Label
	if numbered {
		l = strconv.Itoa(i+1) + ". " + l
	}
	return clean(l, maxOptionText)
}

// cutLabels reports whether a label of q is longer than an option shows
// (100 characters): its options are then numbered wherever one is cut,
// and listed in full, so that the two can be matched.
func cutLabels(q seam.Question) bool {
	return slices.ContainsFunc(q.Options, func(o seam.Option) bool { return surface.Len(o.Label) > maxOptionText })
}

// selectOptions are the options of part k of q's selects: 25 each, valued
// by their index in q, numbered when numbered.
func selectOptions(q seam.Question, part int, numbered bool) []discordgo.SelectMenuOption {
	from := part * maxSelectOptions
	to := min(from+maxSelectOptions, len(q.Options))
	out := make([]discordgo.SelectMenuOption, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, discordgo.SelectMenuOption{
			Label:       optionText(q, i, numbered),
			Value:       strconv.Itoa(i),
			Description: clean(q.Options[i].Description, maxOptionText),
		})
	}
	return out
}

func parts(q seam.Question) int { return (len(q.Options) + maxSelectOptions - 1) / maxSelectOptions }

func partHolder(q seam.Question, part int, what string) string {
	if parts(q) == 1 {
		return what
	}
	from := part*maxSelectOptions + 1
	return fmt.Sprintf("%s (%d–%d)", what, from, min(from+maxSelectOptions-1, len(q.Options)))
}

// questionControls are the components of a one-question request.
func questionControls(id string, q seam.Question) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	last := []discordgo.MessageComponent{}
	switch {
	case len(q.Options) == 0:
		last = append(last, button(surface.Ref{Verb: surface.VerbAnswer, ID: id}, "Answer…", discordgo.PrimaryButton))
	case buttons(q):
		primary := surface.Primary(q)
		var row []discordgo.MessageComponent
		for i, o := range q.Options {
			style := discordgo.SecondaryButton
			if i == primary {
				style = discordgo.PrimaryButton
			}
			label := o.Label
			if numbered(q) {
				label = strconv.Itoa(i+1) + ". " + label
			}
			row = append(row, button(surface.Ref{Verb: surface.VerbPick, ID: id, O: i}, label, style))
			if len(row) == maxRowButtons {
				rows = append(rows, discordgo.ActionsRow{Components: row})
				row = nil
			}
		}
		if row != nil {
			rows = append(rows, discordgo.ActionsRow{Components: row})
		}
	case q.MultiSelect:
		// A select in a message answers as soon as it closes: on a phone,
		// closing the sheet to read the question again would send what
		// was ticked so far. The form takes the choice, with text beside
		// it, and sends it with its Submit (and holds more than 25 options,
		// where a click on one of several selects would answer with only
		// its part).
		last = append(last, button(surface.Ref{Verb: surface.VerbAnswer, ID: id}, "Answer…", discordgo.PrimaryButton))
	default:
		for p := range parts(q) {
			one := 1
			rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.SelectMenu{
				MenuType:    discordgo.StringSelectMenu,
				CustomID:    surface.Ref{Verb: surface.VerbSelect, ID: id, O: p}.String(),
				Placeholder: surface.Truncate(partHolder(q, p, "Choose an option"), maxSelectHolder),
				MinValues:   &one,
				MaxValues:   1,
				Options:     selectOptions(q, p, longLabels(q)),
			}}})
		}
	}
	if len(q.Options) > 0 {
		last = append(last, button(surface.Ref{Verb: surface.VerbOther, ID: id}, otherLabel(q), discordgo.SecondaryButton))
	}
	last = append(last, dismissButton(id))
	return append(rows, discordgo.ActionsRow{Components: last})
}

// renderQuestions renders a request of several questions, each in full
// where room allows, answered together in one modal.
func renderQuestions(b *builder, rec *pending.Record, colour int) {
	qs := rec.Questions.Questions
	per := max(200, (embedBudget-100)/len(qs))
	// Each question's text is sealed, and an embed holds whole ones (each
	// is at most per long): a code span cut or paired across two would
	// show what esc left as code as text.
	var descs []string
	for i, q := range qs {
		full := questionText(i, q)
		sec := section{text: full}
		if i == 0 {
			sec.title = fmt.Sprintf("%d questions", len(qs))
		}
		b.sections = append(b.sections, sec)
		text := sealed(esc(full))
		if surface.Len(text) > per {
			head, _ := surface.Cut(full, per-60, func(s string) string { return sealed(esc(s)) })
			text = sealed(esc(head)) + "… *(in full below)*"
			b.spill = append(b.spill, spilled{title: fmt.Sprintf("Question %d", i+1), text: full})
		}
		if n := len(descs); n > 0 && surface.Len(descs[n-1])+2+surface.Len(text) <= maxEmbedDesc {
			descs[n-1] += "\n\n" + text
		} else {
			descs = append(descs, text)
		}
	}
	// Several embeds when one description can't hold them all.
	for _, desc := range descs[:min(len(descs), 10)] {
		title := ""
		if len(b.embeds) == 0 {
			title = fmt.Sprintf("%d questions", len(qs))
		}
		e := &discordgo.MessageEmbed{Title: title, Description: desc, Color: colour}
		b.embeds = append(b.embeds, e)
		b.used += embedLen(e)
	}
}

// questionText is question i in full, unescaped.
func questionText(i int, q seam.Question) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%d. ", i+1)
	if h := surface.Header(q); h != "" {
		s.WriteString(h + ": ")
	}
	s.WriteString(q.Question)
	if q.Detail != "" {
		s.WriteString("\n" + q.Detail)
	}
	if len(q.Options) > 0 {
		kind := "one of"
		if q.MultiSelect {
			kind = "any of"
		}
		// Numbered as a form's choices are.
		s.WriteString("\nChoose " + kind + ":\n" + surface.OptionListing(q, cutLabels(q)))
	}
	return s.String()
}

// renderApproval renders an approval: the tool, why, and its arguments.
func renderApproval(b *builder, rec *pending.Record, colour int) {
	a := rec.Approval
	reason := a.DisplayReason
	if reason == "" {
		reason = a.Reason
	}
	b.embed("Allow "+a.ToolName+"?", "", reason, 3000, colour)
	if args := surface.NoBidi(surface.PrettyJSON(a.Arguments)); args != "" {
		b.sections = append(b.sections, section{title: "Arguments", text: args, code: true})
		room := min(maxEmbedDesc, embedBudget-b.used-20) - 8
		head, note, rest := surface.Shorten(args, room, surface.NoFence, moreNote)
		if rest != "" {
			// What is allowed is read in full: the rest follows.
			b.spill = append(b.spill, spilled{title: "Arguments", text: rest, code: true})
		}
		e := &discordgo.MessageEmbed{Title: "Arguments", Description: "```\n" + head + "\n```" + note, Color: colour}
		b.embeds = append(b.embeds, e)
		b.used += embedLen(e)
	}
}

func approvalControls(id string) []discordgo.MessageComponent {
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		button(surface.Ref{Verb: surface.VerbAllow, ID: id}, "Allow once", discordgo.SuccessButton),
		button(surface.Ref{Verb: surface.VerbReject, ID: id}, "Reject…", discordgo.DangerButton),
	}}}
}

// addLink adds an "Open in browser" link button, to url, to the live
// message's last row of buttons, or in a row of its own when that row is
// full or holds a select; it adds nothing when the message has no room or
// url is too long for Discord. A link button sends no interaction. Once
// it is added, the message names it as where the whole request is.
func (m *message) addLink(url string) {
	if url == "" || len(url) > maxButtonURL {
		return
	}
	if m.addButton(linkButton(url)) {
		m.opensInBrowser()
	}
}

func linkButton(url string) discordgo.Button {
	return discordgo.Button{Label: "Open in browser", Style: discordgo.LinkButton, URL: url}
}

// addLinkRequest adds, as addLink places its button, an "Open in browser"
// button that asks for a personal link: for a target that limits its
// responders, whose message can't carry a link anyone may answer through.
func (m *message) addLinkRequest(rec *pending.Record) {
	if m.addButton(button(surface.Ref{Verb: surface.VerbLink, ID: rec.ID, Tag: surface.HashTag(rec.Hash)}, "Open in browser", discordgo.SecondaryButton)) {
		m.opensInBrowser()
	}
}

// addButton adds b to the message's last row of buttons, or in a row of
// its own, and reports whether it had room.
func (m *message) addButton(b discordgo.Button) bool {
	if n := len(m.components); n > 0 {
		if row, ok := m.components[n-1].(discordgo.ActionsRow); ok && len(row.Components) > 0 && len(row.Components) < maxRowButtons {
			if _, isButton := row.Components[0].(discordgo.Button); isButton {
				row.Components = append(row.Components, b)
				m.components[n-1] = row
				return true
			}
		}
	}
	if len(m.components) < maxRows {
		m.components = append(m.components, discordgo.ActionsRow{Components: []discordgo.MessageComponent{b}})
		return true
	}
	return false
}

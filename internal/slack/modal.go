package slack

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// origin is the message a modal was opened from, kept in the modal's
// private_metadata: the target's responders are found through it, a late
// submit is told so in that channel, and a submit whose request no longer
// exists retires the message with its text kept.
type origin struct {
	Channel string `json:"c"`
	TS      string `json:"ts"`
	Thread  string `json:"th,omitempty"`
	Text    string `json:"t,omitempty"` // the message's text (its notification fallback), as posted
	// Hash is the hash of the request the modal shows: its submission is
	// held to it, not to one created under its id since. Here rather than
	// as a tag on the callback_id, which replicas of the version before it
	// could not read, during a rolling upgrade.
	Hash string `json:"h,omitempty"`
	// Respond is the response_url of the click that opened the modal, for
	// what its submission has to tell the person afterwards.
	Respond string `json:"r,omitempty"`
	// Short says the message was posted short (see shortMark).
	Short bool `json:"s,omitempty"`
}

// maxMetadata is Slack's limit on a view's private_metadata.
const maxMetadata = 3000

// metadata is o as private_metadata. The text, escaped mrkdwn of a few
// hundred characters, fits; one that does not is cut until it does, so
// the modal still opens.
func (o origin) metadata() string {
	for {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // "&lt;" as it is: \u0026lt; would take twice the room
		_ = enc.Encode(o)
		md := strings.TrimSuffix(b.String(), "\n")
		if surface.Len(md) <= maxMetadata || o.Text == "" {
			return md
		}
		if n := surface.Len(o.Text) * 3 / 4; n > 1 {
			o.Text = surface.Truncate(o.Text, n)
		} else {
			o.Text = ""
		}
	}
}

func parseOrigin(s string) origin {
	var o origin
	_ = json.Unmarshal([]byte(s), &o) // a modal of ours always has one; an empty origin finds no target
	return o
}

// modal is a modal of rec's; its origin carries rec's hash (see origin).
func modal(rec *pending.Record, r surface.Ref, title, submit string, o origin, blocks []slackapi.Block) slackapi.ModalViewRequest {
	o.Hash = rec.Hash
	v := slackapi.ModalViewRequest{
		Type:            slackapi.VTModal,
		Title:           plain(surface.Truncate(title, maxViewTitle)),
		Close:           plain("Cancel"),
		Blocks:          slackapi.Blocks{BlockSet: blocks},
		CallbackID:      r.String(),
		PrivateMetadata: o.metadata(),
	}
	if submit != "" {
		v.Submit = plain(surface.Truncate(submit, maxViewTitle))
	}
	return v
}

// noticeModal is a modal that only says something, e.g. that the
// request is over.
func noticeModal(title, text string) slackapi.ModalViewRequest {
	return slackapi.ModalViewRequest{
		Type:   slackapi.VTModal,
		Title:  plain(surface.Truncate(title, maxViewTitle)),
		Close:  plain("Close"),
		Blocks: slackapi.Blocks{BlockSet: []slackapi.Block{slackapi.NewSectionBlock(mrkdwn(truncateMrkdwn(text, maxSectionText)), nil, nil)}},
	}
}

// truncateMrkdwn truncates mrkdwn as surface.Truncate does, never inside
// an escape ("&amp;" cut to "&am") or a link, mention or date ("<url|a"
// shown with its bracket): the cut backs off to before either.
func truncateMrkdwn(s string, max int) string {
	t := surface.Truncate(s, max)
	if t == s {
		return s
	}
	head := strings.TrimSuffix(t, "…")
	if i := strings.LastIndexByte(head, '<'); i >= 0 && strings.IndexByte(head[i:], '>') < 0 {
		head = head[:i]
	}
	if i := strings.LastIndexByte(head, '&'); i >= 0 && strings.IndexByte(head[i:], ';') < 0 {
		head = head[:i]
	}
	return head + "…"
}

// textInput is a text field prefilled with initial, that takes at most
// maxLen characters (its max_length). The prefill goes whole, never cut:
// it is what a person who changes nothing sends, and it must reach the
// agent as the agent gave it. One longer than maxLen as Slack's clients
// may count it (surface.Len, UTF-16: an emoji counts two, so the 3,000
// characters the API takes may count 6,000) would be refused as sent
// unchanged, so its field has no max_length: Slack documents none on
// initial_value, and the API still holds an answer to seam.MaxCustomLen.
func textInput(multiline bool, placeholder, initial string, maxLen int) *slackapi.PlainTextInputBlockElement {
	el := slackapi.NewPlainTextInputBlockElement(plain(surface.Truncate(placeholder, maxPlaceholder)), inputAction)
	el.Multiline = multiline
	el.InitialValue = initial
	if surface.Len(initial) <= maxLen {
		el.MaxLength = maxLen
	}
	return el
}

func input(blockID, label string, el slackapi.BlockElement, optional bool) *slackapi.InputBlock {
	b := slackapi.NewInputBlock(blockID, plain(surface.Truncate(label, maxInputLabel)), nil, el)
	b.Optional = optional
	return b
}

// questionLabel is q as a form's field names it: its header, if any, and
// its text.
func questionLabel(q seam.Question) string {
	if h := surface.Header(q); h != "" {
		return h + ": " + q.Question
	}
	return q.Question
}

// answerModal holds every question of rec: a choice per question with
// options and a free-text field beside it, a text field per question
// without. A text field is required as surface.TextRequired says. A form
// that would pass Slack's size limit (maxViewBytes: many questions, each
// with many long options) gives way as fitForm says. Where the form cuts
// something of a question, whole or given way, it names where the
// question is shown whole (shown.places) by the message it is opened
// from, from: the message, its thread, or past them.
func answerModal(rec *pending.Record, o origin, from shown) slackapi.ModalViewRequest {
	qs := rec.Questions.Questions
	title := "Answer"
	if len(qs) > 1 {
		title = "Answer " + strconv.Itoa(len(qs)) + " questions"
	}
	build := func(blocks []slackapi.Block) slackapi.ModalViewRequest {
		return modal(rec, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, title, "Send", o, blocks)
	}
	// The view's size is added up from its parts' (viewSize), so that a
	// form that has to give way marshals each part once per shape, not
	// the whole view again at each turn: the largest is megabytes. The
	// message is rendered again to find where questions are whole
	// (from.places) only for a form that names a place, or gives way:
	// most forms show every question whole.
	parts, sizes := make([][]slackapi.Block, len(qs)), make([]int, len(qs))
	var places []place
	placesOf := func() []place {
		if places == nil {
			places = from.places(rec)
		}
		return places
	}
	for i := range qs {
		var named bool
		parts[i], named = questionBlocks(qs, i, formFits[0], inMessage)
		if named && placesOf()[i] != inMessage {
			parts[i], _ = questionBlocks(qs, i, formFits[0], places[i])
		}
		sizes[i] = jsonSize(parts[i])
	}
	shell := jsonSize(build([]slackapi.Block{}))
	if size := viewSize(shell, sizes); size > maxViewBytes {
		parts = fitForm(qs, placesOf(), parts, sizes, size)
	}
	return build(slices.Concat(parts...))
}

// viewSize is the size of a view's JSON from shell, that of the view
// with no blocks ("blocks":[]), and sizes, those of its parts' blocks,
// each an array of one block or more: the view holds them in one array,
// the brackets shared, a comma between two parts.
func viewSize(shell int, sizes []int) int {
	n := shell + max(len(sizes)-1, 0)
	for _, s := range sizes {
		n += s - len("[]")
	}
	return n
}

// place is where a question of an answer form is shown whole, as the
// form names it: in says where ("(in full in the message)"), how, on the
// line that says what the form leaves out, how to get there.
type place struct{ in, how string }

var (
	inMessage = place{in: "the message"}
	// inThread is where a question of several is in full when the
	// message shows it cut (renderQuestions).
	inThread = place{in: "the message's thread"}
	// inMessageAndThread is where a request of one question is whole
	// when its message has no room for all of it: the message shows its
	// start, and its thread goes on from there (renderQuestion).
	inMessageAndThread = place{in: "the message and its thread"}
	// inBrowser is the request's page, that the message's "Open in
	// browser" opens, or hands a personal link to (Post).
	inBrowser = elsewhere("", true)
)

// inInbox is where a bridge without a public URL shows request id whole,
// as the message's last reply names it (builder.message).
func inInbox(id string) place { return elsewhere(id, false) }

// elsewhere is where request id is shown whole past what its message's
// thread holds: in the browser when the bridge has a public URL
// (browser), and so the message an Open in browser button, else in its
// web inbox (surface.WholeIn, as Discord says it). The thread's last
// reply and the answer form both name it.
func elsewhere(id string, browser bool) place {
	in, how := surface.WholeIn(id, browser)
	return place{in: in, how: how}
}

// more follows a text cut short: where it is shown whole.
func (p place) more() string { return " (in full in " + p.in + ")" }

// shown is what an answer form knows of the message it is opened from,
// to say where what it leaves out is shown: what the message was
// rendered with.
type shown struct {
	mention string // the target's mention
	short   bool   // the message was posted short (renderShort)
	browser bool   // it has an "Open in browser" button: the bridge has a base_url
}

// places are where each question of rec is shown whole, for a form
// opened from the message from: in the message, in its thread (with the
// message, for a request of one question), or past what the thread's
// replies hold (maxReplies), in the browser, or on a bridge without a
// public URL, in its web inbox.
func (from shown) places(rec *pending.Record) []place {
	m := renderWith(builder{short: from.short}, rec, from.mention, true)
	past := elsewhere(rec.ID, from.browser)
	out := make([]place, len(rec.Questions.Questions))
	for i := range out {
		out[i] = inMessage
	}
	thread := inThread
	if len(out) == 1 {
		thread = inMessageAndThread
	}
	for k, sp := range m.overflow {
		switch {
		case k >= m.held:
			out[sp.q] = past
		case out[sp.q] == inMessage:
			out[sp.q] = thread
		}
	}
	return out
}

// maxViewRest bounds what a view's JSON holds besides its blocks: a
// title, buttons and callback id of a few hundred bytes, and the
// private_metadata, of up to maxMetadata characters (surface.Len) that
// take 3 bytes at most each as sent (JSON within JSON: a quote or
// backslash escaped again takes 2, a character of 3 bytes of UTF-8 counts
// 1), reckoned here at 6, as when <, > and & were sent escaped.
const maxViewRest = 6*maxMetadata + 1000

// formGivesWay reports whether the answer form of qs may pass Slack's
// limit and give way (fitForm): its questions' blocks, whole, with the
// most the rest of a view takes, pass maxViewBytes. It never says no of
// a form that gives way.
func formGivesWay(qs []seam.Question) bool {
	size := maxViewRest
	for i := range qs {
		// A question's blocks alone take at least the bytes they take
		// among the others: each part has its brackets.
		part, _ := questionBlocks(qs, i, formFits[0], inMessage)
		if size += jsonSize(part); size > maxViewBytes {
			return true
		}
	}
	return false
}

// formFit is how a question's part of the answer form is shaped; each of
// formFits shows less than the one before it, of what the message shows
// in full. The form's fields, their block ids and their options' values
// stay the same in every one, and so does the answer a submission gives.
type formFit struct {
	descriptions bool // the options carry their descriptions
	extras       bool // the detail, and the options listed in full where a label is cut
	question     int  // the most characters of the question's label
	// optionBytes is the most bytes of an option's text as it is sent
	// (jsonLen); 0 for Slack's limit alone. Options cut to it are
	// numbered, to be found by their numbers where the question is shown
	// whole (formOptions).
	optionBytes int
}

var formFits = []formFit{
	{descriptions: true, extras: true, question: maxInputLabel}, // the whole form
	{extras: true, question: maxInputLabel},
	{question: maxInputLabel},
	{question: 300},
	{question: 300, optionBytes: 48},
	{question: 150, optionBytes: 32},
	{question: 75, optionBytes: 20},
}

// fitForm returns parts, the blocks of each question of qs in the whole
// form, of sizes bytes each and size bytes of view together, made to fit within maxViewBytes, each
// question naming as shown whole where places says: the
// questions give way one formFits step at a time, each question a step
// before any takes the next, the largest first, so that what a person
// needs to choose right (the question, an option's label, or its number
// and first words) goes last, and a form just over the limit loses the
// least. At the last step a request at the seam's limits fits, options
// and all; a form that still does not (text fields prefilled with that
// much) is sent as it is, for Slack to refuse, and the person is told how
// else to answer.
func fitForm(qs []seam.Question, places []place, parts [][]slackapi.Block, sizes []int, size int) [][]slackapi.Block {
	parts, sizes = slices.Clone(parts), slices.Clone(sizes)
	step := make([]int, len(qs))
	for size > maxViewBytes {
		i := -1
		for j := range qs {
			if step[j] == len(formFits)-1 {
				continue
			}
			if i < 0 || step[j] < step[i] || step[j] == step[i] && sizes[j] > sizes[i] {
				i = j
			}
		}
		if i < 0 {
			break
		}
		step[i]++
		parts[i], _ = questionBlocks(qs, i, formFits[step[i]], places[i])
		n := jsonSize(parts[i])
		size += n - sizes[i] // every part has blocks: its commas and brackets stay
		sizes[i] = n
	}
	return parts
}

// questionBlocks are the blocks of question i of qs in the answer form,
// shaped by f, where at shows the question whole; named says they name
// at, as they do wherever they cut something of the question.
func questionBlocks(qs []seam.Question, i int, f formFit, at place) (blocks []slackapi.Block, named bool) {
	q := qs[i]
	if q.Detail != "" && f.extras {
		d := surface.Truncate(surface.OneLine(q.Detail), 280)
		if surface.Len(d) < surface.Len(q.Detail) {
			d += at.more()
			named = true
		}
		blocks = append(blocks, slackapi.NewContextBlock("", plain(d)))
	}
	var left []string // what at shows and this form does not
	if q.Detail != "" && !f.extras {
		left = append(left, "the details")
	}
	label, cut := cutLabel(questionLabel(q), f.question, at)
	named = named || cut
	if len(q.Options) == 0 {
		if len(left) > 0 {
			blocks = append(blocks, leftOut(at, left))
			named = true
		}
		typ, prefill := seam.InputString, ""
		if q.Input != nil {
			typ, prefill = q.Input.Type, q.Input.Value
		}
		var el slackapi.BlockElement
		if typ == seam.InputBoolean {
			el = yesNo(prefill, surface.Skippable(qs, i))
		} else {
			el = textInput(typ == seam.InputString || typ == "", surface.InputHint(typ), prefill, maxInputLength)
		}
		in := input(choiceBlock(i), label, el, !surface.TextRequired(qs, i))
		if typ == seam.InputInteger || typ == seam.InputNumber {
			// Below the field, where it stays: the placeholder says
			// it too, but a prefill or the first digit typed hides
			// it, and the person learns of the type from a refusal.
			in.Hint = plain(surface.InputHint(typ))
		}
		return append(blocks, in), named
	}
	listed := f.extras && cutInForm(q)
	if listed {
		var cut bool
		blocks, cut = appendCut(blocks, q, at)
		named = named || cut
	}
	opts, cut := formOptions(q, f)
	if !f.descriptions && !listed && slices.ContainsFunc(q.Options, func(o seam.Option) bool { return o.Description != "" }) {
		left = append(left, "the options' descriptions")
	}
	if cut && !listed {
		left = append(left, "the options' whole labels")
	}
	if len(left) > 0 {
		blocks = append(blocks, leftOut(at, left))
		named = true
	}
	return append(blocks,
		input(choiceBlock(i), label, choiceOf(q, opts, nil), true),
		input(otherBlock(i), surface.OtherLabel(q), textInput(true, "Optional", "", maxInputLength), true)), named
}

// cutLabel is label for a field, cut to at most n characters (at most
// Slack's maxInputLabel) and then followed by where it is whole, at; cut
// says it was.
func cutLabel(label string, n int, at place) (_ string, cut bool) {
	n = min(n, maxInputLabel)
	if surface.Len(label) <= n {
		return label, false
	}
	more := at.more()
	return surface.Truncate(label, n-len(more)) + more, true
}

// leftOut is a line that says what of a question the form leaves to at,
// where it is shown whole: on a phone the form covers the message.
func leftOut(at place, what []string) slackapi.Block {
	return slackapi.NewContextBlock("", plain("In "+at.in+at.how+", not shown here: "+strings.Join(what, ", ")+"."))
}

// formOptions are q's options for a form's choice shaped by f, and
// whether a label is cut in them. They are numbered where a label is cut,
// to find it whole by its number in the listing the form shows, or where
// the question is shown whole: the message and its thread list it
// numbered (questionText; a request of one question, whose form never
// gives way, as shapeOf says), and the web page numbers every option (a
// button's width does not limit a form's options). The numbers also tell
// apart options whose first words are alike ("Deploy the release to the
// eu-west-1…" now and tomorrow).
func formOptions(q seam.Question, f formFit) ([]*slackapi.OptionBlockObject, bool) {
	cut := shapeOf(q).cut
	if f.optionBytes > 0 && !cut {
		cut = slices.ContainsFunc(q.Options, func(o seam.Option) bool { return jsonLen(surface.Label(o.Label)) > f.optionBytes })
	}
	opts := options(q, cut, f.descriptions)
	if f.optionBytes > 0 {
		for _, o := range opts {
			o.Text = plain(cutJSON(o.Text.Text, maxOptionText, f.optionBytes))
		}
	}
	return opts, cut
}

// yesNo answers a boolean field in one tap, where a text field asked a
// phone to type "true": Yes and No, answered as "true" and "false", the
// prefill's chosen; an optional one also Skip, which leaves it unanswered
// (radio buttons can't be cleared once tapped).
func yesNo(prefill string, optional bool) *slackapi.RadioButtonsBlockElement {
	opts := []*slackapi.OptionBlockObject{
		slackapi.NewOptionBlockObject("true", plain(surface.BooleanLabel("true")), nil),
		slackapi.NewOptionBlockObject("false", plain(surface.BooleanLabel("false")), nil),
	}
	if optional {
		opts = append(opts, slackapi.NewOptionBlockObject(surface.SkipValue, plain(surface.SkipLabel), nil))
	}
	el := slackapi.NewRadioButtonsBlockElement(inputAction, opts...)
	switch v, _ := seam.ParseInput(seam.InputBoolean, prefill); v {
	case "true":
		el.InitialOption = opts[0]
	case "false":
		el.InitialOption = opts[1]
	}
	return el
}

// appendCut appends to blocks, when a label or description of q's is
// longer than a form's option shows (maxOptionText), q's options in full,
// as the message lists them: on a phone the form covers the message. A
// listing too long for its block says it is shown whole at at, and named
// says so.
func appendCut(blocks []slackapi.Block, q seam.Question, at place) (_ []slackapi.Block, named bool) {
	if !cutInForm(q) {
		return blocks, false
	}
	more := at.more()
	listing := surface.OptionListing(q, shapeOf(q).cut)
	if t := surface.Truncate(listing, maxSectionText-len(more)); t != listing {
		listing, named = t+more, true
	}
	return append(blocks, slackapi.NewContextBlock("", plain(listing))), named
}

// cutInForm reports whether a label or description of q's is longer than
// a form's option shows.
func cutInForm(q seam.Question) bool {
	return slices.ContainsFunc(q.Options, func(o seam.Option) bool {
		return surface.Len(o.Label) > maxOptionText || surface.Len(o.Description) > maxOptionText
	})
}

// choice is the element that chooses among q's options in a modal: radio
// buttons or checkboxes when few, a select when many. The options
// numbered in ticked start chosen.
func choice(q seam.Question, ticked []int) slackapi.BlockElement {
	opts, _ := formOptions(q, formFits[0])
	return choiceOf(q, opts, ticked)
}

// choiceOf is choice with opts, q's options as the form shows them.
func choiceOf(q seam.Question, opts []*slackapi.OptionBlockObject, ticked []int) slackapi.BlockElement {
	few := len(q.Options) <= maxChoiceOptions
	var initial []*slackapi.OptionBlockObject // the same objects: Slack wants initial options to equal options
	for n, opt := range opts {
		if slices.Contains(ticked, n) {
			initial = append(initial, opt)
		}
	}
	switch {
	case q.MultiSelect && few:
		el := slackapi.NewCheckboxGroupsBlockElement(inputAction, opts...)
		el.InitialOptions = initial
		return el
	case q.MultiSelect:
		el := slackapi.NewOptionsMultiSelectBlockElement(slackapi.MultiOptTypeStatic, plain("Choose options"), inputAction, opts...)
		el.InitialOptions = initial
		return el
	case few:
		return slackapi.NewRadioButtonsBlockElement(inputAction, opts...)
	}
	return slackapi.NewOptionsSelectBlockElement(slackapi.OptTypeStatic, plain("Choose an option"), inputAction, opts...)
}

// otherModal takes free text for question i: an answer of its own, or
// feedback on a plan. On a multi-select the text goes with the options
// chosen, so the modal holds the options as well, those the message had
// ticked (ticked) ticked again: on a phone the modal covers the message,
// and this way the person sees, and may change, all that is sent. What
// it cuts of them says where it is whole, as answerModal does, for the
// message it is opened from, from.
func otherModal(rec *pending.Record, i int, o origin, ticked []int, from shown) slackapi.ModalViewRequest {
	q := rec.Questions.Questions[i]
	label, title := "Your answer", "Answer"
	if q.IsPlanReview() {
		label, title = "Your feedback on the plan", "Feedback"
	}
	var blocks []slackapi.Block
	if q.MultiSelect && len(q.Options) > 0 {
		choose := func(at place) ([]slackapi.Block, bool) {
			listing, listed := appendCut(nil, q, at)
			l, cut := cutLabel(questionLabel(q), maxInputLabel, at)
			return append(listing, input(choiceBlock(i), l, choice(q, ticked), true)), listed || cut
		}
		var named bool
		if blocks, named = choose(inMessage); named {
			if at := from.places(rec)[i]; at != inMessage {
				blocks, _ = choose(at)
			}
		}
		label = "Something else"
	} else {
		blocks = append(blocks, slackapi.NewSectionBlock(plain(surface.Truncate(questionLabel(q), maxSectionText)), nil, nil))
	}
	blocks = append(blocks, input(otherBlock(i), label, textInput(true, "Type here", "", maxInputLength), false))
	return modal(rec, surface.Ref{Verb: surface.VerbOther, ID: rec.ID, Q: i}, title, "Send", o, blocks)
}

// rejectModal asks for an optional reason before rejecting an approval.
func rejectModal(rec *pending.Record, o origin) slackapi.ModalViewRequest {
	blocks := []slackapi.Block{
		slackapi.NewSectionBlock(plain(surface.Truncate("Reject "+rec.Approval.ToolName+"?", maxSectionText)), nil, nil),
		input(noteBlock, "Reason (optional)", textInput(true, "Told to the agent", "", seam.MaxNoteLen), true),
	}
	return modal(rec, surface.Ref{Verb: surface.VerbReject, ID: rec.ID}, "Reject", "Reject", o, blocks)
}

// jsonSize is how many bytes v takes as the views.* calls send it
// (encodeJSON).
func jsonSize(v any) int {
	b, err := encodeJSON(v)
	if err != nil {
		return 0 // not sent either: viewCall fails to encode it alike
	}
	return len(b)
}

// jsonLen is how many bytes s takes inside a JSON string as encodeJSON
// writes it: <, > and & as they are, U+2028 and U+2029 escaped, a quote
// or backslash after a backslash, control characters escaped, a byte of
// invalid UTF-8 as \ufffd.
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		case r == '"', r == '\\', r == '\n', r == '\r', r == '\t', r == '\b', r == '\f':
			n += 2
		case r < 0x20:
			n += 6
		default:
			n += size
		}
	}
	return n
}

// cutJSON is s cut as surface.Truncate cuts it, to at most max characters
// and at most maxBytes bytes as sent (jsonLen).
func cutJSON(s string, max, maxBytes int) string {
	t := surface.Truncate(s, max)
	if jsonLen(t) <= maxBytes {
		return t
	}
	keep, room := 0, maxBytes-jsonLen("…")
	for _, r := range t {
		if room -= jsonLen(string(r)); room < 0 {
			break
		}
		keep += utf16.RuneLen(r)
	}
	for ; keep >= 0; keep-- { // Truncate may keep s whole, or a last character of more bytes
		if t = surface.Truncate(s, keep+1); jsonLen(t) <= maxBytes {
			break
		}
	}
	return t
}

type viewValues = map[string]map[string]slackapi.BlockAction

// answerFrom reads the answer to the questions the submitted modal held:
// every question for the answer modal, question r.Q for an other modal
// (its text, and on a multi-select the options chosen beside it). Field
// errors are keyed by the block id Slack shows them beside. Slack refuses
// an empty required field itself, but not one of spaces: that is refused
// here, or it would be recorded as an answer that says nothing.
func answerFrom(qs *seam.Questions, values viewValues, r surface.Ref) (seam.Answer, map[string]string) {
	var a seam.Answer
	errs := map[string]string{}
	for i, q := range qs.Questions {
		if r.Verb == surface.VerbOther && i != r.Q {
			continue
		}
		it := seam.AnswerItem{ID: q.ID, Selected: []string{}}
		v, hasChoice := values[choiceBlock(i)][inputAction]
		switch {
		case len(q.Options) > 0 && hasChoice:
			picked := v.SelectedOptions
			if v.SelectedOption.Value != "" {
				picked = append(picked, v.SelectedOption)
			}
			for _, opt := range picked {
				n, err := strconv.Atoi(opt.Value)
				if err != nil || n < 0 || n >= len(q.Options) {
					errs[choiceBlock(i)] = "That choice is not one of the options; reopen the question and choose again."
					continue
				}
				if l := q.Options[n].Label; !slices.Contains(it.Selected, l) {
					it.Selected = append(it.Selected, l)
				}
			}
		case len(q.Options) == 0 && r.Verb == surface.VerbAnswer:
			value := v.Value
			if v.SelectedOption.Value != "" { // a boolean's Yes, No or Skip
				value = surface.BooleanChoice(q, v.SelectedOption.Value)
			}
			it.Custom = value
			switch {
			case strings.TrimSpace(value) == "":
				if surface.TextRequired(qs.Questions, i) {
					errs[choiceBlock(i)] = msgTypeAnswer
				}
			case q.Input != nil:
				if _, err := seam.ParseInput(q.Input.Type, value); err != nil {
					errs[choiceBlock(i)] = "This must be " + strings.ToLower(surface.InputHint(q.Input.Type)) + ": " + err.Error()
				}
			}
		}
		other := values[otherBlock(i)][inputAction].Value
		switch {
		case strings.TrimSpace(other) != "":
			it.Custom = other
		case r.Verb == surface.VerbOther && q.IsPlanReview():
			errs[otherBlock(i)] = msgTypeFeedback
		case r.Verb == surface.VerbOther:
			errs[otherBlock(i)] = msgTypeAnswer
		}
		a.Answers = append(a.Answers, it)
	}
	if len(errs) > 0 {
		return seam.Answer{}, errs
	}
	return a, nil
}

// fieldErrors maps a validation error of seam to the block of the
// question it names, so the modal shows it beside that field.
func fieldErrors(qs *seam.Questions, values viewValues, err error) map[string]string {
	var se *seam.Error
	if !errors.As(err, &se) {
		return nil
	}
	for i, q := range qs.Questions {
		if q.ID != se.Field {
			continue
		}
		for _, b := range []string{choiceBlock(i), otherBlock(i)} {
			if _, ok := values[b]; ok {
				// Plain text that may name the question by its header:
				// without bidi controls, as the form shows it (plain).
				return map[string]string{b: surface.NoBidi(surface.Truncate(se.Message, 150))}
			}
		}
	}
	return nil
}

package discord

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// modal is a modal of rec's: its Ref carries rec's tag, so that its
// submission is held to the request it showed.
func modal(rec *pending.Record, r surface.Ref, title string, components any) *response {
	r.Tag = surface.HashTag(rec.Hash)
	return &response{Type: respModal, Data: &responseData{
		CustomID: r.String(), Title: clean(title, maxModalTitle), Components: components,
	}}
}

// textRow is a classic modal field: an action row around a text input,
// required set explicitly (discordgo would send false, Discord's default is
// true).
func textRow(id, text, placeholder, value string, paragraph, required bool, maxLen int) discordgo.ActionsRow {
	style := discordgo.TextInputShort
	if paragraph {
		style = discordgo.TextInputParagraph
	}
	return discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{
		CustomID:    id,
		Label:       clean(text, maxFieldLabel),
		Style:       style,
		Placeholder: clean(placeholder, maxInputHolder),
		Value:       editable(value, maxLen),
		Required:    required,
		MaxLength:   maxLen,
	}}}
}

// editable is value as a form's text input of maxLen holds it: whole, as
// a form sent unchanged sends it back, never cut nor marked "…" (that
// would send altered text). Discord counts a text input's value and its
// max_length in code points (its API counts every string so,
// discord-api-docs#1315), not in the UTF-16 units surface.Len counts for
// text only shown: 3000 emoji fill 3000 of a field's 4000. A value that
// does not fit, which neither a prefill (seam.MaxInputValueLen) nor what
// Discord took in a field of maxLen can be, is left out: the field opens
// empty rather than holding part of it.
func editable(value string, maxLen int) string {
	if utf8.RuneCountInString(value) > maxLen {
		return ""
	}
	return value
}

// fieldName is how a question is named to the person: its header, else
// its number, on one line.
func fieldName(i int, q seam.Question) string {
	if h := surface.OneLine(q.Header); h != "" {
		return h
	}
	return fmt.Sprintf("Question %d", i+1)
}

// labelName is how a question is named above its field in a form: its
// header, else its text, on one line (a Label's label is one), never
// blank (Discord refuses a blank label, and trims spaces to one).
func labelName(i int, q seam.Question) string {
	if h := surface.OneLine(q.Header); h != "" {
		return h
	}
	if text := surface.OneLine(q.Question); text != "" {
		return text
	}
	return fmt.Sprintf("Question %d", i+1)
}

// textModal answers a lone question without options: one field, typed
// when the question says so, required as surface.TextRequired says, in a
// Label whose description holds the question (a field's own label is cut
// at 45 characters).
//
// d, when not nil, is what the person sent in it before, refused: the form
// is filled with it, and says beside the question what to change.
func textModal(rec *pending.Record, d *draft) *response {
	q := rec.Questions.Questions[0]
	label := labelName(0, q)
	var comps []any
	desc := clean(surface.OneLine(q.Question), maxLabelDesc)
	if cutShort(q) {
		comps, desc = append(comps, fullText(q.Question)), ""
	}
	if fix := d.fixOf(0); fix != "" {
		desc = clean(surface.OneLine(fix), maxLabelDesc)
	}
	comps = append(comps, labelComponent{Type: componentLabel, Label: clean(label, maxFieldLabel),
		Description: desc, Component: typedField(0, q, surface.TextRequired(rec.Questions.Questions, 0), false, d)})
	return modal(rec, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, "Answer", comps)
}

// cutShort reports whether q's text loses something as a Label's
// description or a field's placeholder: one line of 100 characters.
func cutShort(q seam.Question) bool {
	return surface.Len(q.Question) > maxLabelDesc || strings.ContainsAny(q.Question, "\r\n")
}

// optionsCut reports whether a form's choice (a radio or checkbox group, a
// select) cuts an option of q: its label or its description, at 100
// characters.
func optionsCut(q seam.Question) bool {
	return cutLabels(q) || slices.ContainsFunc(q.Options, func(o seam.Option) bool { return surface.Len(o.Description) > maxOptionText })
}

// fullText shows text, questions, in full at the top of a modal (a Text
// Display, type 10): on a phone the form covers the message, and a Label's
// description or a placeholder holds one line of 100 characters.
func fullText(text string) textDisplay {
	seal := func(s string) string { return sealed(esc(s)) }
	head, note, _ := surface.Shorten(text, maxTextDisplay-100, seal, func(rest string) string {
		return fmt.Sprintf("\n*… %d more characters: see the message.*", surface.Len(rest))
	})
	return textDisplay{Type: componentTextDisplay, Content: head + note}
}

// typedField is the field of question i, which has no options: a text
// input, one line for a number, or, for a boolean, a radio group of Yes
// and No, answered as "true" and "false" (a phone need not type "true"),
// the prefill chosen: the question's, or what the person sent in d. A
// boolean that skip allows to leave unanswered (surface.Skippable) also
// has Skip.
func typedField(i int, q seam.Question, required, skip bool, d *draft) any {
	typ, prefill := seam.InputString, ""
	if q.Input != nil {
		typ, prefill = q.Input.Type, q.Input.Value
	}
	if v, ok := d.text(textField(i)); ok {
		prefill = v
	}
	if typ == seam.InputBoolean {
		v, _ := seam.ParseInput(seam.InputBoolean, prefill)
		opts := []groupOption{
			{Label: surface.BooleanLabel("true"), Value: "true", Default: v == "true"},
			{Label: surface.BooleanLabel("false"), Value: "false", Default: v == "false"},
		}
		if skip {
			// A radio group can't be cleared once tapped: Skip leaves
			// an optional question unanswered.
			opts = append(opts, groupOption{Label: surface.SkipLabel, Value: surface.SkipValue})
		}
		return radioGroup{Type: componentRadioGroup, CustomID: textField(i), Required: required, Options: opts}
	}
	style := 1
	if typ == seam.InputString || typ == "" {
		style = 2
	}
	return modalText{Type: componentText, CustomID: textField(i), Style: style, Placeholder: surface.InputHint(typ),
		Value: editable(prefill, maxTextValue), Required: required, MaxLength: maxTextValue}
}

// otherModal takes free text for question i: an answer of its own, or
// feedback on a plan.
func otherModal(rec *pending.Record, i int) *response {
	q := rec.Questions.Questions[i]
	label, title := "Your answer", "Answer"
	if q.IsPlanReview() {
		label, title = "Your feedback on the plan", "Feedback"
	}
	row := textRow(otherField(i), label, surface.OneLine(q.Question), "", true, true, maxTextValue)
	comps := []any{row}
	if cutShort(q) {
		comps = []any{fullText(q.Question), row}
	}
	return modal(rec, surface.Ref{Verb: surface.VerbOther, ID: rec.ID, Q: i}, title, comps)
}

// rejectModal asks for an optional reason before rejecting an approval.
func rejectModal(rec *pending.Record) *response {
	row := textRow(noteField, "Reason (optional)", "Told to the agent", "", true, false, min(maxTextValue, seam.MaxNoteLen))
	return modal(rec, surface.Ref{Verb: surface.VerbReject, ID: rec.ID}, "Reject "+rec.Approval.ToolName, []discordgo.MessageComponent{row})
}

// sheetFits reports whether every question of qs fits one modal: a select
// per 25 options, a text field per question without, five in all.
func sheetFits(qs []seam.Question) bool {
	n := 0
	for _, q := range qs {
		n += max(1, parts(q))
	}
	return n <= maxModalFields
}

// sheetModal holds every question of rec in one modal, in request order,
// so the answer is one batch: Label components (type 18) around groups
// or selects for options (choices) and text inputs for text, then a free-text field for
// questions with options while room is left. Among several questions, one
// left empty is skipped. Call it only when sheetFits. d, when not nil, is
// what the person sent in it before, refused: the form is filled with it,
// and says beside the question to fix what to change.
func sheetModal(rec *pending.Record, d *draft) *response {
	qs := rec.Questions.Questions
	var comps []any
	used := 0
	for _, q := range qs {
		used += max(1, parts(q))
	}
	for i, q := range qs {
		name := fmt.Sprintf("%d. %s", i+1, labelName(i, q))
		desc := clean(surface.OneLine(q.Question), maxLabelDesc)
		if fix := d.fixOf(i); fix != "" {
			desc = clean(surface.OneLine(fix), maxLabelDesc)
		}
		if len(q.Options) == 0 {
			comps = append(comps, labelComponent{Type: componentLabel, Label: clean(name, maxFieldLabel), Description: desc,
				Component: typedField(i, q, surface.TextRequired(qs, i), surface.Skippable(qs, i), d)})
			continue
		}
		for p := range parts(q) {
			label, desc := name, desc
			if parts(q) > 1 {
				label = partHolder(q, p, fmt.Sprintf("%d. options", i+1))
			}
			if parts(q) > 1 && !q.MultiSelect && p > 0 {
				desc = "Or choose here: one option in all, in one list only."
			}
			comps = append(comps, labelComponent{Type: componentLabel, Label: clean(label, maxFieldLabel), Description: desc,
				Component: choices(i, p, q, d.values(selectField(i, p)))})
		}
	}
	// The questions a Label's description cuts, or whose options the
	// form's choices cut, in full, while room is left: reading them comes
	// before an optional free-text field.
	var full []string
	for i, q := range qs {
		if cutShort(q) || optionsCut(q) {
			full = append(full, questionText(i, q))
		}
	}
	if len(full) > 0 && used < maxModalFields {
		comps = append([]any{fullText(strings.Join(full, "\n\n"))}, comps...)
		used++
	}
	for i, q := range qs {
		if used == maxModalFields {
			break
		}
		if len(q.Options) == 0 {
			continue
		}
		used++
		other, _ := d.text(otherField(i))
		comps = append(comps, labelComponent{Type: componentLabel, Label: surface.Truncate(fmt.Sprintf("%d. %s", i+1, surface.OtherLabel(q)), maxFieldLabel),
			Component: modalText{Type: componentText, CustomID: otherField(i), Style: 2, Value: editable(other, maxTextValue), Required: false, MaxLength: maxTextValue}})
	}
	title := "Answer"
	if len(qs) > 1 {
		title = "Answer " + strconv.Itoa(len(qs)) + " questions"
	}
	return modal(rec, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}, title, comps)
}

// choices is the field of part p of question i's options in a form, none
// of them required (among several questions one may be skipped): a radio
// group for one of 2-10 options, a checkbox group for any of up to 10,
// which on a phone show every option in the form, and a select, a list
// over the form, for more. The options among chosen (values) are chosen.
func choices(i, p int, q seam.Question, chosen []string) any {
	// Numbered only where a label is cut, to find it whole in the
	// listing above: a button's width does not limit a form's options.
	opts := selectOptions(q, p, cutLabels(q))
	// At most one chosen where one option is taken: Discord refuses a
	// radio group or a select with more defaults than it takes.
	picks := 0
	for k := range opts {
		if slices.Contains(chosen, opts[k].Value) && (q.MultiSelect || picks == 0) {
			opts[k].Default = true
			picks++
		}
	}
	group := func() []groupOption {
		out := make([]groupOption, len(opts))
		for k, o := range opts {
			out[k] = groupOption{Label: o.Label, Value: o.Value, Description: o.Description, Default: o.Default}
		}
		return out
	}
	switch n := len(opts); {
	case parts(q) == 1 && !q.MultiSelect && n >= 2 && n <= maxGroupOptions:
		return radioGroup{Type: componentRadioGroup, CustomID: selectField(i, p), Required: false, Options: group()}
	case parts(q) == 1 && q.MultiSelect && n <= maxGroupOptions:
		return checkboxGroup{Type: componentCheckboxGroup, CustomID: selectField(i, p), MinValues: 0, MaxValues: n, Required: false, Options: group()}
	}
	maxV := 1
	if q.MultiSelect {
		maxV = len(opts)
	}
	return modalSelect{Type: componentSelect, CustomID: selectField(i, p), MinValues: 0, MaxValues: maxV, Required: false, Options: opts}
}

// msgTooBig is what someone who wants to answer a request too large for a
// Discord modal is told on a bridge with no public URL, which has no link
// to give: where on the bridge it is answered, for whoever can reach it.
func msgTooBig(id string) string {
	return "This request has more questions or options than one Discord form holds (5 fields), and this bridge has no public URL (base_url) to link to. " +
		"Answer it in the bridge's web inbox (its page /r/" + id + ") or through its API (POST /v1/questions/" + id + "/answer). Nothing was saved."
}

// msgTooBigForLink is what someone who wants to answer a request too large
// for a Discord modal is told, with a personal link, on a bridge that has
// a public URL.
const msgTooBigForLink = "This request has more questions or options than one Discord form holds (5 fields): answer it in your browser."

// refusal is why a submitted modal saves nothing, told to the person:
// say, the whole message; fix, when the form is worth opening again filled
// as it was sent, what to change in it, and hint, the same said short
// beside question q's field in that form. clear: question q's choices are
// left out of that form (they are the mistake).
type refusal struct {
	say, fix, hint string
	q              int
	clear          bool
}

// answerFrom reads the answer to the questions a submitted modal held:
// every question for the answer modal, question r.Q for an other modal.
// A refusal names the field and says how to retry. Discord lets a
// required field through with only spaces in it, and a modal can't show
// field errors: such a field is refused, or it would be recorded as an
// answer that says nothing.
func answerFrom(qs *seam.Questions, fs map[string]field, r surface.Ref) (seam.Answer, *refusal) {
	var a seam.Answer
	for i, q := range qs.Questions {
		if r.Verb == surface.VerbOther && i != r.Q {
			continue
		}
		it := seam.AnswerItem{ID: q.ID, Selected: []string{}}
		for p := range parts(q) {
			for _, v := range fs[selectField(i, p)].values {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n >= len(q.Options) {
					return seam.Answer{}, &refusal{
						say:  fmt.Sprintf("%s: that choice is not one of its options. Nothing was saved; open the form again and choose again.", esc(fieldName(i, q))),
						fix:  fmt.Sprintf("%s: that choice is not one of its options; choose again.", esc(fieldName(i, q))),
						hint: "That choice is not one of its options: choose again.", q: i, clear: true,
					}
				}
				if l := q.Options[n].Label; !slices.Contains(it.Selected, l) {
					it.Selected = append(it.Selected, l)
				}
			}
		}
		if !q.MultiSelect && len(it.Selected) > 1 {
			// Its options in two lists, each took a pick (a form can't
			// tie them together): say so, in the person's words.
			return seam.Answer{}, &refusal{
				say:  fmt.Sprintf("%s takes one option, and %d were chosen (one in each of its lists). Nothing was saved; open the form again and choose in one list only.", esc(fieldName(i, q)), len(it.Selected)),
				fix:  fmt.Sprintf("%s takes one option, and %d were chosen, one in each of its lists (%s): choose one, in one list only.", esc(fieldName(i, q)), len(it.Selected), esc(surface.List(it.Selected))),
				hint: fmt.Sprintf("You chose %s: choose one, in one list only.", surface.List(it.Selected)),
				q:    i, clear: true,
			}
		}
		if len(q.Options) == 0 && r.Verb == surface.VerbAnswer {
			v := fs[textField(i)].value
			if f := fs[textField(i)]; len(f.values) == 1 { // a boolean's Yes, No or Skip
				v = surface.BooleanChoice(q, f.values[0])
			}
			it.Custom = v
			switch {
			case strings.TrimSpace(v) == "":
				if surface.TextRequired(qs.Questions, i) {
					return seam.Answer{}, &refusal{
						say:  fmt.Sprintf("%s was left blank. Nothing was saved; click Answer… and type an answer.", esc(fieldName(i, q))),
						fix:  fmt.Sprintf("%s was left blank: type an answer.", esc(fieldName(i, q))),
						hint: "Left blank: type an answer.", q: i,
					}
				}
			case q.Input != nil:
				if _, err := seam.ParseInput(q.Input.Type, v); err != nil {
					return seam.Answer{}, &refusal{
						say: fmt.Sprintf("%s must be %s: %v. Nothing was saved; click Answer… to try again.",
							esc(fieldName(i, q)), strings.ToLower(surface.InputHint(q.Input.Type)), esc(err.Error())),
						fix:  fmt.Sprintf("%s must be %s: %v.", esc(fieldName(i, q)), strings.ToLower(surface.InputHint(q.Input.Type)), esc(err.Error())),
						hint: fmt.Sprintf("Must be %s: %v.", strings.ToLower(surface.InputHint(q.Input.Type)), err), q: i,
					}
				}
			}
		}
		switch other := fs[otherField(i)].value; {
		case strings.TrimSpace(other) != "":
			it.Custom = other
		case r.Verb == surface.VerbOther:
			what := "Your answer"
			if q.IsPlanReview() {
				what = "Your feedback"
			}
			return seam.Answer{}, &refusal{say: fmt.Sprintf("%s was left blank. Nothing was saved; click %s and type it.", what, otherLabel(q))}
		}
		a.Answers = append(a.Answers, it)
	}
	if r.Verb == surface.VerbAnswer && surface.EmptyAnswer(qs.Questions, a) {
		return seam.Answer{}, &refusal{say: "Nothing was chosen, so nothing was saved: click Answer… and choose an option or write an answer."}
	}
	return a, nil
}

// submission is what a submitted modal means for rec: a resolution, or a
// refusal to tell the person (nothing is stored), or neither when the
// modal does not fit rec.
func submission(rec *pending.Record, fs map[string]field, r surface.Ref) (*pending.Resolution, *refusal) {
	switch {
	case (r.Verb == surface.VerbAnswer || r.Verb == surface.VerbOther) && rec.Kind == seam.KindQuestion:
		if r.Verb == surface.VerbOther && r.Q >= len(rec.Questions.Questions) {
			return nil, nil
		}
		a, no := answerFrom(rec.Questions, fs, r)
		if no != nil {
			return nil, no
		}
		norm, err := rec.Questions.Normalize(a)
		if err != nil {
			var se *seam.Error
			msg := err.Error()
			if errors.As(err, &se) {
				msg = se.Message
			}
			// msg quotes the agent's text
			return nil, &refusal{say: "Nothing was saved: " + esc(msg) + ". Click the button again to retry.", fix: esc(msg) + ".", q: -1}
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Answer: &norm}, nil
	case r.Verb == surface.VerbReject && rec.Kind == seam.KindApproval:
		d, err := seam.Decision{Outcome: seam.OutcomeRejected, Note: fs[noteField].value}.Normalize()
		if err != nil {
			return nil, &refusal{say: "Nothing was saved: " + err.Error()}
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Decision: &d}, nil
	}
	return nil, nil
}

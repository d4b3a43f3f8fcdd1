package web

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// cardView is one request as a page shows it. Text is escaped by
// html/template; the only HTML in it is what Markdown wrote.
//
// Text of agents and people is shown without bidi controls (shown), and
// each piece of it is isolated in the page (an element with dir, or a
// <bdi>), so that what is read is in the order it was written, the order
// the agent gets: an override (U+202E) would reorder the rest of its
// piece, "report<RLO>fdp.exe" read as "reportexe.pdf", or an option as
// another, which isolation alone leaves; and a piece of right-to-left text
// beside others (a Hebrew name before "· 3") reorders the neutral
// characters and numbers around it with no control at all, which dropping
// them alone leaves. Values a form sends (an option's, a prefill) are
// kept as written.
type cardView struct {
	ID        string
	Kind      string
	Asker     string
	Session   string
	CreatedAt time.Time
	ExpiresAt time.Time
	Questions []questionView
	Approval  *approvalView

	Pending  bool
	Status   string        // pending, answered, ...
	Rejected bool          // an approval decided "rejected": answered, but not a yes
	Outcome  template.HTML // "Answered by Ada via slack · Yes · <time>", every part from outside escaped
	Answers  []answerLine  // what was answered, per question
}

type questionView struct {
	Group    string // the name of its radio group, unique in the page
	ID       string
	Header   string
	Question string
	Detail   template.HTML
	Plan     bool
	Options  []optionView
	Multi    bool
	Other    string // the label of the free-text field beside options
	Type     string // typed input: string, integer, number, boolean; "" plain text
	Required bool
	Value    string // prefill
	Hint     string
	Mode     string // the field's inputmode
}

// Signed reports whether v's field is a number's, which gets a button for
// its sign: the numeric keypads of phones (iOS's) have no minus key.
func (v questionView) Signed() bool { return v.Mode == "numeric" || v.Mode == "decimal" }

type optionView struct {
	Number      int    // 1, 2, ... in the question's order, as Slack and Discord number it
	Label       string // as shown: without a "(Recommended)" suffix, which Recommended shows
	Value       string // the label as written, which the answer names
	Description string
	Recommended bool // its label ends in "(Recommended)": it gets a badge
}

// recommended is label as an option shows it, without the suffix that
// marks the option an agent recommends, and whether it had one. A label
// that is the suffix alone stays as it is.
func recommended(label string) (string, bool) {
	l, ok := strings.CutSuffix(strings.TrimSpace(label), surface.RecommendedSuffix)
	if l = strings.TrimSpace(l); !ok || l == "" {
		return label, false
	}
	return l, true
}

type approvalView struct {
	Tool   string
	Reason template.HTML
	Args   string
}

type answerLine struct {
	Question string
	Answer   string
}

// statusFormat writes a status line as HTML: what people and agents wrote
// escaped, shown and isolated, each piece in a <bdi> (see cardView), and
// its time a <time> that the page shows in the reader's own zone, as it
// does every other time. Several answers are listed below it (the
// "outcome" template), not in it as well.
var statusFormat = surface.Format{Surface: surfaceName, Listed: true, Escape: func(s string) string {
	return "<bdi>" + template.HTMLEscapeString(shown(s)) + "</bdi>"
}, Time: func(t time.Time) string {
	return `<time datetime="` + t.UTC().Format(time.RFC3339) + `">` + t.UTC().Format("2006-01-02 15:04 UTC") + `</time>`
}}

// shown is text of an agent's or a person's as a page shows it: without
// bidi controls (see cardView), but for a text of them alone.
func shown(s string) string { return surface.Label(s) }

// declined reports whether rec ended with a person's no: an approval
// rejected, or a plan (a plan-review question) answered with anything but
// the option that approves it, its Reject or a change asked for.
func declined(rec *pending.Record) bool {
	if rec.Decision != nil {
		return rec.Decision.Outcome == seam.OutcomeRejected
	}
	if rec.Answer == nil || rec.Questions == nil {
		return false
	}
	for _, it := range rec.Answer.Answers {
		i := slices.IndexFunc(rec.Questions.Questions, func(q seam.Question) bool { return q.ID == it.ID })
		if i < 0 || !rec.Questions.Questions[i].IsPlanReview() || len(it.Selected) == 0 && it.Custom == "" {
			continue // no plan, or left unanswered: neither yes nor no
		}
		if approve := rec.Questions.Questions[i].Intent.Approve; it.Custom != "" || !slices.Equal(it.Selected, []string{approve}) {
			return true
		}
	}
	return false
}

func (s *Server) card(rec *pending.Record) cardView {
	c := cardView{
		ID: rec.ID, Kind: string(rec.Kind), Asker: shown(surface.Asker(rec.Caller)),
		CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt,
		Pending: rec.Status == seam.StatusPending, Status: string(rec.Status),
		Rejected: declined(rec),
		Outcome:  template.HTML(surface.StatusLine(rec, statusFormat)), // escaped by statusFormat
	}
	if rec.Caller != nil {
		c.Session = shown(rec.Caller.Session)
	}
	switch {
	case rec.Approval != nil:
		a := rec.Approval
		reason := a.DisplayReason
		if reason == "" {
			reason = a.Reason
		}
		c.Approval = &approvalView{Tool: shown(a.ToolName), Reason: Markdown(shown(reason)), Args: shown(surface.PrettyJSON(a.Arguments))}
	case rec.Questions != nil:
		for i := range rec.Questions.Questions {
			c.Questions = append(c.Questions, questionOf(fmt.Sprintf("%s-%d", rec.ID, i), rec.Questions.Questions, i))
		}
		if a := surface.Shown(rec.Questions, rec.Answer); a != nil {
			for i, it := range a.Answers {
				line := answerLine{Question: it.ID, Answer: "skipped"}
				if i < len(c.Questions) {
					line.Question = c.Questions[i].Question
				}
				line.Answer = shown(itemText(it))
				c.Answers = append(c.Answers, line)
			}
		}
	}
	return c
}

func itemText(it seam.AnswerItem) string {
	s := ""
	for i, l := range it.Selected {
		if i > 0 {
			s += ", "
		}
		s += l
	}
	if it.Custom != "" {
		if s != "" {
			s += " + "
		}
		s += "“" + it.Custom + "”"
	}
	if s == "" {
		s = "skipped"
	}
	return s
}

// questionOf is question i of qs as a form shows it; its text field is
// required as surface.TextRequired says, as on Slack and Discord.
func questionOf(group string, qs []seam.Question, i int) questionView {
	q := qs[i]
	v := questionView{
		Group: group, ID: q.ID, Header: shown(surface.Header(q)), Question: shown(q.Question), Detail: Markdown(shown(q.Detail)),
		Plan: q.IsPlanReview(), Multi: q.MultiSelect, Other: surface.OtherLabel(q), Mode: "text",
		Required: surface.TextRequired(qs, i),
	}
	for i, o := range q.Options {
		label, rec := recommended(shown(o.Label))
		v.Options = append(v.Options, optionView{Number: i + 1, Label: label, Value: o.Label, Description: shown(o.Description), Recommended: rec})
	}
	if len(q.Options) == 0 {
		v.Other = "Your answer"
	}
	if in := q.Input; in != nil {
		v.Type, v.Value, v.Hint = in.Type, in.Value, surface.InputHint(in.Type)
		switch in.Type {
		case seam.InputInteger:
			v.Mode = "numeric"
		case seam.InputNumber:
			v.Mode = "decimal"
		case seam.InputBoolean:
			// Yes or No chosen for any spelling the bridge takes ("True",
			// "yes"), as Slack's and Discord's forms choose it: a request
			// is stored with "true" or "false", but one an earlier bridge
			// stored kept the agent's spelling.
			v.Value, _ = seam.ParseInput(seam.InputBoolean, in.Value)
		}
	}
	return v
}

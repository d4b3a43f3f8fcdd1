package surface

import (
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Format is how a surface writes the parts of a status line: Escape makes
// text from agents and people inert in its markup (no pings, no links),
// Time writes a moment, and Surface names the surface writing the line, so
// that an answer given elsewhere says where ("via discord").
type Format struct {
	Escape  func(string) string
	Time    func(time.Time) string
	Surface string
	// SummaryLen, when > 0, cuts the answer summary to that many
	// characters, fewer than MaxSummary: a line that must take little
	// room.
	SummaryLen int
	// Listed says the surface lists a request's answers beside the line,
	// each under its question (the web's page): the line then leaves the
	// summary of several answers out, which would show each twice. One
	// answer, or a decision's note, stays in the line.
	Listed bool
}

func (f Format) esc(s string) string {
	if f.Escape == nil {
		return s
	}
	return f.Escape(s)
}

func (f Format) at(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if f.Time == nil {
		return t.UTC().Format("2006-01-02 15:04 UTC")
	}
	return f.Time(t)
}

// MaxSummary bounds the answer summary of a status line, in characters
// before escaping.
const MaxSummary = 300

// StatusLine says how rec ended: "Answered by <name> · <answer> · <time>",
// "Cancelled by the agent · <time>", "Dismissed by <name> · <time>",
// "Expired unanswered · <time>". It is "" for a pending request.
func StatusLine(rec *pending.Record, f Format) string {
	parts := statusParts(rec, f)
	if at := f.at(rec.ResolvedAt); at != "" && len(parts) > 0 {
		parts = append(parts, at)
	}
	return strings.Join(parts, " · ")
}

// LateReply is what someone who acts on an ended request is told, e.g.
// "Already answered by Ada · Yes".
func LateReply(rec *pending.Record, f Format) string {
	parts := statusParts(rec, f)
	if len(parts) == 0 {
		return ""
	}
	parts[0] = "Already " + strings.ToLower(parts[0][:1]) + parts[0][1:]
	return strings.Join(parts, " · ")
}

func statusParts(rec *pending.Record, f Format) []string {
	switch rec.Status {
	case seam.StatusAnswered:
		lead := "Answered by "
		if d := rec.Decision; d != nil {
			lead = "Allowed once by "
			if d.Outcome == seam.OutcomeRejected {
				lead = "Rejected by " // not "Answered by … · Rejected", which reads as a yes at a glance
			}
		}
		parts := []string{lead + who(rec.ResolvedBy, f)}
		if s := Summary(rec); s != "" && !(f.Listed && rec.Decision == nil && rec.Answer != nil && len(rec.Answer.Answers) > 1) {
			if f.SummaryLen > 0 {
				s = Truncate(s, f.SummaryLen)
			}
			parts = append(parts, f.esc(s))
		}
		return parts
	case seam.StatusCancelled:
		return []string{"Cancelled by the agent"}
	case seam.StatusDismissed:
		return []string{"Dismissed by " + who(rec.ResolvedBy, f)}
	case seam.StatusExpired:
		return []string{"Expired unanswered"}
	}
	return nil
}

func who(r *pending.Responder, f Format) string {
	if r == nil {
		return "someone"
	}
	name := r.Name
	if name == "" {
		name = r.UserID
	}
	if name == "" {
		name = "someone"
	}
	name = f.esc(Truncate(name, 80))
	if r.Surface != "" && f.Surface != "" && r.Surface != f.Surface {
		name += " via " + r.Surface
	}
	return name
}

// Summary is rec's answer in a few words, unescaped, at most MaxSummary
// characters: the labels chosen and any text typed, per question when
// there are several; of a decision, its note (the outcome leads the
// status line).
func Summary(rec *pending.Record) string {
	var s string
	switch {
	case rec.Decision != nil:
		if rec.Decision.Note != "" {
			s = quote(rec.Decision.Note)
		}
	case rec.Answer != nil && rec.Questions != nil:
		s = answerSummary(rec.Questions, Shown(rec.Questions, rec.Answer))
	}
	return Truncate(s, MaxSummary)
}

// BooleanLabel is the label every form (Slack's and Discord's radio
// buttons, the web inbox's) gives the choice of a boolean field that
// answers v: Yes for "true", No for "false"; any other v is itself.
func BooleanLabel(v string) string {
	switch v {
	case "true":
		return "Yes"
	case "false":
		return "No"
	}
	return v
}

// Shown is a as a person is shown it: the answer to a boolean field of
// qs is the label of the choice in the form (BooleanLabel), and that of a
// number field the number, each shown as an option chosen is (not quoted
// as text), not the "true" or "false" the agent gets. a itself is not
// changed; it is returned as it is when it has nothing to relabel.
func Shown(qs *seam.Questions, a *seam.Answer) *seam.Answer {
	if a == nil || qs == nil {
		return a
	}
	typed := map[string]string{} // question id: its field's type, when shown as a choice
	for _, q := range qs.Questions {
		if q.Input != nil && q.Input.Type != seam.InputString {
			typed[q.ID] = q.Input.Type
		}
	}
	if len(typed) == 0 {
		return a
	}
	shown := *a
	shown.Answers = slices.Clone(a.Answers)
	for i, it := range shown.Answers {
		typ, ok := typed[it.ID]
		if !ok || len(it.Selected) > 0 || it.Custom == "" {
			continue
		}
		if v, err := seam.ParseInput(typ, it.Custom); err == nil {
			if typ == seam.InputBoolean {
				v = BooleanLabel(v)
			}
			shown.Answers[i].Selected, shown.Answers[i].Custom = []string{v}, ""
		}
	}
	return &shown
}

func answerSummary(qs *seam.Questions, a *seam.Answer) string {
	if len(a.Answers) == 1 {
		return itemSummary(a.Answers[0])
	}
	// Each answer by its question's header, else its question, shortened:
	// what the person was shown, not the id the agent keys it by.
	names := make(map[string]string, len(qs.Questions))
	for _, q := range qs.Questions {
		names[q.ID] = Truncate(OneLine(q.Question), summaryName)
		if h := Header(q); h != "" {
			names[q.ID] = h
		}
	}
	parts := make([]string, 0, len(a.Answers))
	for _, it := range a.Answers {
		parts = append(parts, names[it.ID]+": "+itemSummary(it))
	}
	return strings.Join(parts, "; ")
}

// summaryName is how much of a question names its answer in a summary.
const summaryName = 40

func itemSummary(it seam.AnswerItem) string {
	s := strings.Join(it.Selected, ", ")
	if it.Custom != "" {
		if s != "" {
			s += " + "
		}
		s += quote(it.Custom)
	}
	if s == "" {
		s = "skipped"
	}
	return s
}

func quote(s string) string { return "“" + OneLine(s) + "”" }

// MsgUnconfirmed tells a person whose answer the bridge tried to record
// that it does not know whether it was: the store did not reply (Redis
// down, or a reply lost after the answer was written). If it was, the
// message is edited to show it once the store is back (the finish index);
// if not, answering again does it, and answering again after all is told
// apart as the same answer.
const MsgUnconfirmed = "The bridge could not confirm your answer was recorded. If this message has not updated within a minute, please try again."

package slack

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// maxButtonValue is Slack's limit on a button's value, in characters.
const maxButtonValue = 2000

// carried is what a button that answers at once carries in its value, so
// that its click can be resolved without reading the request first: one
// Redis round trip instead of two on the path a person waits on (see
// Interactions.quick). The value is a JSON array of strings: when the
// request was created (Unix ms), which route target posted the message,
// and for an option, the question's id and the option's label, which are
// the whole answer.
//
// Slack signs what it sends back, so the value is what the bridge posted;
// the created time makes the resolve fail, rather than answer the wrong
// request, when the request has since ended and another been created under
// its id.
type carried struct {
	created time.Time
	target  string
	qid     string // an option's: its question
	label   string // an option's: its label
}

// carry puts into every button of m that answers at once what its click
// needs (see carried). m was rendered for rec, to be posted by target key.
// A button whose value would be too long for Slack keeps the one it has,
// and its click reads the request.
func (m *message) carry(rec *pending.Record, key string) {
	for _, bl := range m.blocks {
		a, ok := bl.(*slackapi.ActionBlock)
		if !ok || a.Elements == nil {
			continue
		}
		for _, el := range a.Elements.ElementSet {
			b, ok := el.(*slackapi.ButtonBlockElement)
			if !ok || b == nil {
				continue
			}
			r, err := surface.ParseRef(b.ActionID)
			if err != nil || r.ID != rec.ID {
				continue
			}
			fields := []string{strconv.FormatInt(rec.CreatedAt.UnixMilli(), 10), key}
			switch {
			case r.Verb == surface.VerbDismiss:
			case r.Verb == surface.VerbAllow && rec.Kind == seam.KindApproval:
			case r.Verb == surface.VerbPick && oneTap(rec, r.O):
				q := rec.Questions.Questions[0]
				fields = append(fields, q.ID, q.Options[r.O].Label)
			default:
				continue
			}
			v, err := json.Marshal(fields)
			if err == nil && surface.Len(string(v)) <= maxButtonValue {
				b.Value = string(v)
			}
		}
	}
}

// oneTap reports whether option o of rec, picked, is the whole answer to
// rec as it stands: rec asks one single-choice question with no typed
// field, which has option o.
func oneTap(rec *pending.Record, o int) bool {
	if rec.Kind != seam.KindQuestion || rec.Questions == nil || len(rec.Questions.Questions) != 1 {
		return false
	}
	q := rec.Questions.Questions[0]
	return !q.MultiSelect && q.Input == nil && o < len(q.Options)
}

// parseCarried reads what a button of verb carries; false when it carries
// nothing or something else (a message posted by an earlier version).
func parseCarried(verb, value string) (carried, bool) {
	if !strings.HasPrefix(value, "[") {
		return carried{}, false
	}
	var f []string
	if err := json.Unmarshal([]byte(value), &f); err != nil || len(f) < 2 || f[1] == "" {
		return carried{}, false
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || ms <= 0 {
		return carried{}, false
	}
	c := carried{created: time.UnixMilli(ms), target: f[1]}
	switch {
	case verb == surface.VerbPick && len(f) == 4:
		c.qid, c.label = f[2], f[3]
	case (verb == surface.VerbAllow || verb == surface.VerbDismiss) && len(f) == 2:
	default:
		return carried{}, false
	}
	return c, true
}

// resolution is what the click of a button carrying c means.
func (c carried) resolution(verb string) pending.Resolution {
	res := pending.Resolution{Status: seam.StatusAnswered, Created: c.created}
	switch verb {
	case surface.VerbDismiss:
		res.Status = seam.StatusDismissed
	case surface.VerbAllow:
		res.Kind, res.Decision = seam.KindApproval, &seam.Decision{Outcome: seam.OutcomeAllowedOnce}
	case surface.VerbPick:
		res.Kind = seam.KindQuestion
		res.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: c.qid, Selected: []string{c.label}}}}
	}
	return res
}

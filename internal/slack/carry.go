package slack

import (
	"encoding/json"
	"strconv"
	"strings"

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
// Interactions.quick). The value is a JSON array of strings: the request's
// hash (what it asks), which route target posted the message, and for an
// option, the question's id and the option's label, which are the whole
// answer.
//
// Slack's signature proves that Slack sent the click, not that the value is
// what the bridge posted: whether a person can alter a button's value on
// its way is not established. So nothing a value says lets anyone answer
// who could not anyway, nor answer what was not asked: the hash makes the
// resolve refuse a request that asks something else (one replaced under
// its tool_call_id), the resolve refuses an answer that is not one of
// the options of the request's one single-choice question
// (pending.Resolution.Offered) and a request of another route than the
// named target's (pending.Resolution.Route), and in a channel that
// targets with different responders share, the click reads the request
// and checks the target it records (Surface.mixed, Interactions.quick).
type carried struct {
	hash   string
	target string
	qid    string // an option's: its question
	label  string // an option's: its label
}

// carry puts into every button of m that answers at once what its click
// needs (see carried). m was rendered for rec, to be posted by target key.
// A button whose value would be too long for Slack keeps the one it has,
// and its click reads the request.
//
// Every actions block is named for rec's hash too (see hashOfBlock), so a
// click on any control, a select or Submit as much as a button, can be
// told from one on a message of a request since replaced.
func (m *message) carry(rec *pending.Record, key string) {
	if rec.Hash == "" {
		return
	}
	n := 0
	for _, bl := range m.blocks {
		a, ok := bl.(*slackapi.ActionBlock)
		if !ok {
			continue
		}
		a.BlockID = blockPrefix + rec.Hash + ":" + strconv.Itoa(n)
		if m.short {
			a.BlockID += shortMark
		}
		n++
		if a.Elements == nil {
			continue
		}
		for _, el := range a.Elements.ElementSet {
			b, ok := el.(*slackapi.ButtonBlockElement)
			if !ok || b == nil {
				continue
			}
			r, err := surface.ParseRef(b.ActionID)
			if err != nil || r.ID != rec.ID || !answersAtOnce(rec, r) {
				continue
			}
			fields := []string{rec.Hash, key}
			if r.Verb == surface.VerbPick {
				q := rec.Questions.Questions[0]
				fields = append(fields, q.ID, q.Options[r.O].Label)
			}
			v, err := json.Marshal(fields)
			if err == nil && surface.Len(string(v)) <= maxButtonValue {
				b.Value = string(v)
			}
		}
	}
}

// blockPrefix begins the block_id of an actions block the bridge names:
// "ab:", the request's hash, ":" and the block's place among the message's
// actions blocks (a block_id is unique in its message and at most 255
// characters). Slack sends a click's block_id back, signed.
const blockPrefix = "ab:"

// shortMark ends the block_id of an actions block of a message posted
// short (renderShort). A click on a message its request does not list (a
// copy) records it with what it says (Post.Short), so that its end edit
// keeps the shorter text its thread goes on from, as the recorded
// message's does; a message that does not say was posted whole, or by a
// version before it. Replicas of that version read the hash alike
// (hashOfBlock cuts at the first colon).
const shortMark = ":short"

// shortBlock reports whether a clicked actions block's block_id says its
// message was posted short.
func shortBlock(id string) bool {
	return strings.HasPrefix(id, blockPrefix) && strings.HasSuffix(id, shortMark)
}

// hashOfBlock is the request's hash in the block_id of a clicked actions
// block, or "" for a block the bridge did not name (a message posted by
// an earlier version, whose blocks Slack named).
func hashOfBlock(id string) string {
	rest, ok := strings.CutPrefix(id, blockPrefix)
	if !ok {
		return ""
	}
	hash, _, _ := strings.Cut(rest, ":")
	return hash
}

// answersAtOnce reports whether a click on r's button is the whole answer
// to rec, as it stands: Dismiss; Allow once; an option of a request of
// one single-choice question with no typed field.
func answersAtOnce(rec *pending.Record, r surface.Ref) bool {
	switch r.Verb {
	case surface.VerbDismiss:
		return true
	case surface.VerbAllow:
		return rec.Kind == seam.KindApproval
	case surface.VerbPick:
		return oneTap(rec, r.O)
	}
	return false
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
	if err := json.Unmarshal([]byte(value), &f); err != nil || len(f) < 2 || f[0] == "" || f[1] == "" {
		return carried{}, false
	}
	c := carried{hash: f[0], target: f[1]}
	switch {
	case verb == surface.VerbPick && len(f) == 4:
		c.qid, c.label = f[2], f[3]
	case (verb == surface.VerbAllow || verb == surface.VerbDismiss) && len(f) == 2:
	default:
		return carried{}, false
	}
	return c, true
}

// resolution is what the click of a button of verb carrying c means.
func (c carried) resolution(verb string) pending.Resolution {
	res := pending.Resolution{Status: seam.StatusAnswered, Hash: c.hash}
	switch verb {
	case surface.VerbDismiss:
		res.Status = seam.StatusDismissed
	case surface.VerbAllow:
		res.Kind, res.Decision = seam.KindApproval, &seam.Decision{Outcome: seam.OutcomeAllowedOnce}
	case surface.VerbPick:
		res.Kind, res.Offered = seam.KindQuestion, c.label
		res.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: c.qid, Selected: []string{c.label}}}}
	}
	return res
}

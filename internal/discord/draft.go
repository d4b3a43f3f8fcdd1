package discord

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/surface"
)

// draftTTL is how long what a person sent in a refused form is kept for
// them to open it again.
const draftTTL = 30 * time.Minute

// draft is what a person sent in a request's answer form that was
// refused, kept for them (pending.Store.SaveDraft) so that the form opens
// again filled as it was sent: Discord can't answer a submitted form with
// field errors, nor with another form, and without it they would fill the
// whole form again.
type draft struct {
	Hash   string              `json:"hash"`   // of the request the form was for
	Fields map[string][]string `json:"fields"` // by custom_id: a text input's text, a select's or group's values
	Q      int                 `json:"q"`      // the question Fix is said beside
	Fix    string              `json:"fix,omitempty"`
}

// newDraft is what the person sent in rec's answer form, fs, refused for
// no: the fields of rec's questions, without the choices that are the
// mistake when no says to clear them.
func newDraft(rec *pending.Record, fs map[string]field, no *refusal) *draft {
	d := &draft{Hash: rec.Hash, Fields: map[string][]string{}, Q: no.q, Fix: no.hint}
	keep := func(id string) {
		f, ok := fs[id]
		switch {
		case !ok:
		case f.values != nil:
			d.Fields[id] = f.values
		default:
			d.Fields[id] = []string{f.value}
		}
	}
	for i, q := range rec.Questions.Questions {
		keep(textField(i))
		keep(otherField(i))
		if no.clear && i == no.q {
			continue
		}
		for p := range parts(q) {
			keep(selectField(i, p))
		}
	}
	return d
}

// fixOf is what to change in question i's field, or "".
func (d *draft) fixOf(i int) string {
	if d == nil || d.Q != i {
		return ""
	}
	return d.Fix
}

// text is what a text input (or a boolean's radio group) held.
func (d *draft) text(id string) (string, bool) {
	if d == nil || len(d.Fields[id]) != 1 {
		return "", false
	}
	return d.Fields[id][0], true
}

// values are what a select or a group held.
func (d *draft) values(id string) []string {
	if d == nil {
		return nil
	}
	return d.Fields[id]
}

// refuse tells the person why their form saved nothing. An answer form
// worth opening again is kept for them, and a button opens it again
// filled as they sent it; only they see the message, and only they get
// the form filled (the draft is theirs: a button passed on opens another's
// form empty).
func (h *Interactions) refuse(ctx context.Context, rec *pending.Record, in *interaction, r surface.Ref, fs map[string]field, no *refusal) *response {
	u, _ := in.who()
	if no.fix == "" || r.Verb != surface.VerbAnswer || u.ID == "" {
		return ephemeral(no.say)
	}
	raw, err := json.Marshal(newDraft(rec, fs, no))
	if err == nil {
		err = h.s.store.SaveDraft(ctx, rec.ID, u.ID, string(raw), draftTTL)
	}
	if err != nil {
		h.log.Warn("keeping what a person sent in a refused form failed", "request_id", rec.ID, "err", err)
		return ephemeral(no.say)
	}
	resp := ephemeral(no.fix + " Nothing was saved yet: **" + fixLabel + "** opens the form again, filled as you sent it.")
	resp.Data.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		button(surface.Ref{Verb: surface.VerbDraft, ID: rec.ID, Tag: surface.HashTag(rec.Hash)}, fixLabel, discordgo.PrimaryButton),
	}}}
	if onNote(in) {
		// Sent from the form an earlier note's button opened: this note
		// takes its place rather than piling up below it.
		return replaced(resp)
	}
	return resp
}

const fixLabel = "Fix my answers…"

// draftOf is the draft the person who clicked has of rec, or nil: none,
// or it expired, or it was for a request since replaced under rec's id.
func (h *Interactions) draftOf(ctx context.Context, rec *pending.Record, in *interaction) *draft {
	u, _ := in.who()
	raw, err := h.s.store.Draft(ctx, rec.ID, u.ID)
	if err != nil {
		h.log.Warn("reading what a person sent in a refused form failed; opening it empty", "request_id", rec.ID, "err", err)
		return nil
	}
	var d draft
	if raw == "" || json.Unmarshal([]byte(raw), &d) != nil || d.Hash != rec.Hash {
		return nil
	}
	return &d
}

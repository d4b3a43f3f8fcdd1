package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

const (
	// maxPayload bounds an interaction's body.
	maxPayload = 1 << 20
	// maxClockSkew is how far an interaction's timestamp may be from now.
	maxClockSkew = 5 * time.Minute
)

// What people are told, ephemerally.
const (
	msgNoCommands = "askbridge has no commands; answer its questions with their buttons."
)

// publicKey decodes the application's hex Ed25519 public key.
func publicKey(h string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("discord.public_key must be 64 hex characters (the application's Ed25519 public key)")
	}
	return ed25519.PublicKey(b), nil
}

// Interactions takes Discord's interactions over the Interactions
// Endpoint URL (ServeHTTP) or the gateway (Run). Every interaction acts
// through the store's first-wins resolution, so duplicates change nothing.
type Interactions struct {
	s       *Surface
	resolve surface.Resolver
	log     *slog.Logger
	key     ed25519.PublicKey // nil in gateway-only setups: ServeHTTP refuses all

	work    *surface.Work     // what runs after the platform has its answer
	refused *surface.Refusals // logs refused signatures, sampled
}

// Interactions returns the handler of the surface's interactions.
func (s *Surface) Interactions(r surface.Resolver) *Interactions {
	key, _ := publicKey(s.cfg.PublicKey) // checked by New
	return &Interactions{s: s, resolve: r, log: s.log, key: key, work: surface.NewWork(), refused: &surface.Refusals{Log: s.log}}
}

// ServeHTTP serves POST /discord/interactions. The signature and the
// timestamp's age are checked before anything else is read from the body.
func (h *Interactions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := surface.ReadBody(w, r, maxPayload)
	if err != nil {
		api.WriteError(w, api.BodyError(err))
		return
	}
	if err := h.verify(r.Header, body); err != nil {
		h.refused.Refused(r.Context(), "refused an interaction", "err", err, "remote", r.RemoteAddr)
		api.WriteError(w, &api.Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Message: "invalid request signature"})
		return
	}
	var in interaction
	if err := json.Unmarshal(body, &in); err != nil {
		api.WriteError(w, &api.Error{Status: http.StatusBadRequest, Code: string(seam.CodeInvalidRequest), Message: "the body is not an interaction"})
		return
	}
	resp := h.handle(r.Context(), &in)
	w.Header().Set("Content-Type", "application/json")
	err = json.NewEncoder(w).Encode(resp)
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	resp.delivered(err)
}

// verify checks X-Signature-Ed25519 over X-Signature-Timestamp + body
// and that the timestamp is recent.
func (h *Interactions) verify(hdr http.Header, body []byte) error {
	if h.key == nil {
		return errors.New("no discord.public_key is configured")
	}
	sig, err := hex.DecodeString(hdr.Get("X-Signature-Ed25519"))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("missing or malformed X-Signature-Ed25519")
	}
	ts := hdr.Get("X-Signature-Timestamp")
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("missing or malformed X-Signature-Timestamp")
	}
	msg := make([]byte, 0, len(ts)+len(body))
	msg = append(append(msg, ts...), body...)
	// Discord sends some bad signatures on purpose (when the endpoint URL
	// is saved), and anyone may: the fix is for Discord's own refused.
	if !ed25519.Verify(h.key, msg, sig) {
		return errors.New("bad signature: if Discord's own interactions are refused, discord.public_key is not the application's Public Key (Developer Portal → General Information)")
	}
	now := h.s.now()
	if at := time.Unix(secs, 0); now.Sub(at) > maxClockSkew || now.Sub(at) < -maxClockSkew {
		return surface.StaleTimestamp("Discord's own interactions", at, now, maxClockSkew)
	}
	return nil
}

// Run receives interactions over the gateway when discord.gateway is set,
// until ctx ends; either way it then waits for the work still running.
func (h *Interactions) Run(ctx context.Context) error {
	var err error
	if h.s.cfg.Gateway {
		err = h.gateway(ctx)
	} else {
		<-ctx.Done()
	}
	h.work.Drain()
	return err
}

// handle answers one interaction; the response is what Discord gets,
// within the ack budget.
func (h *Interactions) handle(ctx context.Context, in *interaction) *response {
	ctx, cancel := context.WithTimeout(ctx, surface.AckBudget)
	defer cancel()
	resp := h.answer(ctx, in)
	if in.Message == nil && (resp.Type == respUpdate || resp.Type == respDeferredUpdate) {
		// Discord takes either only for an interaction on a message (400
		// Invalid Form Body otherwise), and shows "This interaction
		// failed". Every form askbridge opens is opened by a button, so
		// carries its message: this is another form (one a command of the
		// application opened, say).
		r := ephemeral(msgNoCommands)
		r.sent = resp.sent
		return r
	}
	return resp
}

// answer is handle's response to in.
func (h *Interactions) answer(ctx context.Context, in *interaction) *response {
	switch in.Type {
	case typePing:
		return pong()
	case typeComponent:
		var d componentData
		if json.Unmarshal(in.Data, &d) != nil {
			return ephemeral(surface.MsgTrouble)
		}
		r, err := surface.ParseRef(d.CustomID)
		if err != nil {
			return deferredUpdate() // not ours: change nothing
		}
		return h.component(ctx, in, r, d.Values)
	case typeModalSubmit:
		var d modalData
		if json.Unmarshal(in.Data, &d) != nil {
			return ephemeral(surface.MsgTrouble)
		}
		r, err := surface.ParseRef(d.CustomID)
		if err != nil {
			return deferredUpdate()
		}
		return h.modalSubmit(ctx, in, r, fields(d.Components))
	}
	return ephemeral(msgNoCommands)
}

// load reads the request a control names and checks that the person may
// answer it; a response is what to answer instead when not.
func (h *Interactions) load(ctx context.Context, in *interaction, r surface.Ref) (*pending.Record, *response) {
	rec, err := h.s.store.Get(ctx, r.ID)
	switch {
	case errors.Is(err, pending.ErrNotFound):
		return nil, gone(in)
	case err != nil:
		h.log.Warn("reading a request failed", "request_id", r.ID, "err", err)
		return nil, ephemeral(surface.MsgTrouble)
	case !r.Fits(rec.Hash):
		// The control was made for a request since discarded (its post's
		// reply lost) and created again under its tool_call_id, asking
		// something else: the one it was made for no longer exists.
		return nil, gone(in)
	}
	msgID := ""
	if in.Message != nil {
		msgID = in.Message.ID
	}
	u, roles := in.who()
	if !allowed(h.s.target(rec, in.where(), in.parent(), msgID), u.ID, roles) {
		return nil, ephemeral(surface.MsgCantAnswer)
	}
	return rec, nil
}

// allowed reports whether a person with roles may answer on t: anyone
// when t names nobody, else its users and the holders of its roles.
func allowed(t *config.DiscordTarget, userID string, roles []string) bool {
	if t == nil || userID == "" {
		return false
	}
	rs := t.Responders
	if len(rs.Users) == 0 && len(rs.Roles) == 0 {
		return true
	}
	if slices.Contains(rs.Users, userID) {
		return true
	}
	for _, r := range roles {
		if slices.Contains(rs.Roles, r) {
			return true
		}
	}
	return false
}

// component answers a click or a select in a message.
func (h *Interactions) component(ctx context.Context, in *interaction, r surface.Ref, values []string) *response {
	rec, refusal := h.load(ctx, in, r)
	if refusal != nil {
		return refusal
	}
	res, problem := resolutionOf(rec, r, values)
	if rec.Status != seam.StatusPending {
		return h.late(rec, res, in)
	}
	if opensForm(r.Verb) && surface.Overdue(rec, h.s.store.Now()) {
		// Past its expiry, not yet swept: a form filled in now would be
		// refused on submit.
		return ephemeral(surface.MsgOverdue)
	}
	switch r.Verb {
	case surface.VerbAnswer, surface.VerbDraft:
		if rec.Kind != seam.KindQuestion {
			return deferredUpdate()
		}
		var d *draft
		if r.Verb == surface.VerbDraft {
			d = h.draftOf(ctx, rec, in)
		}
		qs := rec.Questions.Questions
		switch {
		case len(qs) == 1 && len(qs[0].Options) == 0:
			return textModal(rec, d)
		case sheetFits(qs):
			return sheetModal(rec, d)
		case h.s.opt.Links != nil:
			return h.personalLink(rec, in, msgTooBigForLink)
		}
		return ephemeral(msgTooBig(rec.ID))
	case surface.VerbOther:
		if rec.Kind != seam.KindQuestion || r.Q >= len(rec.Questions.Questions) {
			return deferredUpdate()
		}
		return otherModal(rec, r.Q)
	case surface.VerbReject:
		if rec.Kind != seam.KindApproval {
			return deferredUpdate()
		}
		return rejectModal(rec)
	case surface.VerbLink:
		if h.s.opt.Links == nil { // the bridge lost its public URL since it posted
			return ephemeral(surface.MsgNoPublicURL)
		}
		return h.personalLink(rec, in, "")
	case surface.VerbDismiss:
		if r.O != confirmed {
			return confirm(rec, surface.VerbDismiss, msgConfirmDismiss, "Dismiss the question", discordgo.DangerButton)
		}
	case surface.VerbAllow:
		if r.O != confirmed && rec.Kind == seam.KindApproval {
			if text := msgConfirmAllow(rec, h.posted(rec, in), shownBare(in)); text != "" {
				return confirm(rec, surface.VerbAllow, text, "Allow once", discordgo.SuccessButton)
			}
		}
	}
	switch {
	case problem != "":
		return ephemeral(problem)
	case res == nil:
		return deferredUpdate() // a control that does not fit its request
	}
	return h.settle(ctx, rec, *res, in)
}

// opensForm reports whether a control of verb opens a form (a modal).
func opensForm(verb string) bool {
	switch verb {
	case surface.VerbAnswer, surface.VerbDraft, surface.VerbOther, surface.VerbReject:
		return true
	}
	return false
}

// confirmed is the O of a control that does what another asked to
// confirm (see confirm).
const confirmed = 1

// confirm asks the person who tapped a control that ends a request in a
// way a slip of the thumb should not (Dismiss; Allow once on a request
// whose text goes on past its message) to confirm it, in a note only they
// see: Discord's buttons have no confirmation of their own (Slack's do,
// and the Slack surface asks there). The note's button, verb's control
// with O confirmed, does it; the note's own "Dismiss message" leaves the
// request as it was.
func confirm(rec *pending.Record, verb, text, label string, style discordgo.ButtonStyle) *response {
	r := ephemeral(text)
	r.Data.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		button(surface.Ref{Verb: verb, ID: rec.ID, O: confirmed, Tag: surface.HashTag(rec.Hash)}, label, style),
	}}}
	return r
}

const msgConfirmDismiss = "Dismiss this question? The agent is told that you declined to answer."

// msgConfirmAllow asks to confirm Allow once on rec, an approval, when
// its message m, as posted, has no room for all of its text, and says
// where the rest is: in the messages posted after it, or, for a bare
// message (its embeds dropped), which has none after it, where the whole
// request is (the browser, through its Open in browser button, or the
// web inbox). It is "" when the message holds it all.
func msgConfirmAllow(rec *pending.Record, m message, bare bool) string {
	rest := "follows in the messages below. Read them"
	switch {
	case bare && m.bare().cut:
		rest = "is in " + m.whole() + ". Read it"
	case bare || len(m.more) == 0:
		return ""
	}
	return "The request to run **" + plain(surface.Truncate(rec.Approval.ToolName, 100)) + "** is longer than its message: the rest of it " +
		rest + " before you allow it. Allow it once?"
}

// posted is rec's live message as Post rendered it for the target whose
// message in came from: its content begins with the target's mention,
// which leaves a bare message that much less room for the request's
// text, and it has the target's Open in browser button, if any.
func (h *Interactions) posted(rec *pending.Record, in *interaction) message {
	if in.Message != nil {
		if t := h.s.target(rec, in.where(), in.parent(), in.Message.ID); t != nil {
			return h.s.render(rec, t)
		}
	}
	return render(rec, "", true)
}

// personalLink answers with a link of rec's for the person who clicked,
// whom load has checked may answer it, seen by them alone; why, when not
// empty, says first why they get it.
func (h *Interactions) personalLink(rec *pending.Record, in *interaction, why string) *response {
	if surface.Overdue(rec, h.s.store.Now()) {
		return ephemeral(surface.MsgOverdue)
	}
	url, until := h.s.opt.Links.ForPerson(rec, *responder(in), h.s.store.Now())
	text := surface.PersonalLinkText(discordTime(until))
	if why != "" {
		text = why + " " + text
	}
	if len(url) > maxButtonURL {
		// Too long for a link button (a long base_url): the link goes in
		// the text, which Discord makes clickable, with no preview fetched.
		r := ephemeral(text + "\n" + url)
		r.Data.Flags |= flagSuppressEmbeds
		return r
	}
	r := ephemeral(text)
	r.Data.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{linkButton(url)}}}
	return r
}

// modalSubmit answers a submitted modal.
func (h *Interactions) modalSubmit(ctx context.Context, in *interaction, r surface.Ref, fs map[string]field) *response {
	rec, refusal := h.load(ctx, in, r)
	if refusal != nil {
		return refusal
	}
	res, no := submission(rec, fs, r)
	switch {
	case rec.Status != seam.StatusPending:
		return h.late(rec, res, in)
	case no != nil:
		return h.refuse(ctx, rec, in, r, fs, no)
	case res == nil:
		return ephemeral(surface.MsgTrouble)
	}
	return h.settle(ctx, rec, *res, in)
}

// resolutionOf is what a click means for rec, or a problem to tell the
// person, or neither when the control does not fit rec.
func resolutionOf(rec *pending.Record, r surface.Ref, values []string) (*pending.Resolution, string) {
	switch r.Verb {
	case surface.VerbDismiss:
		return &pending.Resolution{Status: seam.StatusDismissed}, ""
	case surface.VerbAllow:
		if rec.Kind != seam.KindApproval {
			return nil, ""
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Decision: &seam.Decision{Outcome: seam.OutcomeAllowedOnce}}, ""
	}
	if rec.Kind != seam.KindQuestion || r.Q >= len(rec.Questions.Questions) {
		return nil, ""
	}
	q := rec.Questions.Questions[r.Q]
	var picked []int
	switch r.Verb {
	case surface.VerbPick:
		picked = []int{r.O}
	case surface.VerbSelect:
		for _, v := range values {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, ""
			}
			picked = append(picked, n)
		}
		if len(picked) == 0 {
			return nil, "Choose at least one option, or use Other… to type an answer."
		}
	default:
		return nil, ""
	}
	it := seam.AnswerItem{ID: q.ID, Selected: []string{}}
	for _, n := range picked {
		if n < 0 || n >= len(q.Options) {
			return nil, ""
		}
		it.Selected = append(it.Selected, q.Options[n].Label)
	}
	norm, err := rec.Questions.Normalize(seam.Answer{Answers: []seam.AnswerItem{it}})
	if err != nil {
		return nil, esc(err.Error()) // it quotes the agent's text
	}
	return &pending.Resolution{Status: seam.StatusAnswered, Answer: &norm}, ""
}

// maxNameLen bounds the name recorded for who answered.
const maxNameLen = 200

func responder(in *interaction) *pending.Responder {
	u, _ := in.who()
	name := u.GlobalName
	if name == "" {
		name = u.Username
	}
	return &pending.Responder{Surface: surfaceName, UserID: u.ID, Name: surface.Truncate(name, maxNameLen)}
}

// late answers an action on an ended request: the same action delivered
// again shows the outcome; anything else tells the person it is over.
func (h *Interactions) late(rec *pending.Record, res *pending.Resolution, in *interaction) *response {
	if inPlaceable(in) {
		if _, listed := rec.PostOf(surfaceName, "", in.Message.ID); !listed {
			// Ending rec edited the messages it lists, not this one (its
			// recording failed, or its post's reply was lost while another
			// target took the request): the outcome in its place says
			// what the person needs to know and takes its controls off.
			return update(render(rec, "", false))
		}
	}
	if res != nil {
		mine := *res
		mine.By = responder(in)
		if same(rec, mine) {
			switch {
			case inPlaceable(in):
				return update(render(rec, "", false))
			case onNote(in):
				return replaced(ephemeral(surface.StatusLine(rec, statusFormat)))
			case in.Message == nil:
				return ephemeral(surface.StatusLine(rec, statusFormat))
			}
			return deferredUpdate()
		}
	}
	if onNote(in) {
		// A note's button outlived its request: the note says so in its
		// place, and loses the button.
		return replaced(ephemeral(surface.LateReply(rec, statusFormat)))
	}
	return ephemeral(surface.LateReply(rec, statusFormat))
}

// same reports whether rec ended exactly as res would have ended it.
func same(rec *pending.Record, res pending.Resolution) bool {
	by := rec.ResolvedBy
	return rec.Status == res.Status && by != nil && res.By != nil &&
		by.Surface == res.By.Surface && by.UserID == res.By.UserID &&
		reflect.DeepEqual(rec.Answer, res.Answer) && reflect.DeepEqual(rec.Decision, res.Decision)
}

// shownBare reports whether the interaction's message is a request's message
// that Discord shows without embeds (see message.bare): every request's
// message has some until Discord drops them, where the bot lacks Embed
// Links. A response to an interaction keeps its embeds there (an app may
// always Embed Links in its responses: discord-api-docs#5316), so the
// outcome shown in place of a click shows the request in them again.
func shownBare(in *interaction) bool {
	return inPlaceable(in) && len(in.Message.Embeds) == 0
}

// inPlaceable reports whether the interaction's message is a request's
// message (not an ephemeral one) that UPDATE_MESSAGE can show the outcome in.
func inPlaceable(in *interaction) bool {
	return in.Message != nil && in.Message.ID != "" && in.Message.Flags&flagEphemeral == 0
}

// onNote reports whether the interaction came from a note only its person
// sees (an ephemeral message, as a refused form's, whose "Fix my answers…"
// opened the form just submitted). UPDATE_MESSAGE replaces such a note in
// place, as it edits any message a component is on; left, it would go on
// saying that nothing was saved, its button live, after the answer was.
func onNote(in *interaction) bool {
	return in.Message != nil && in.Message.ID != "" && in.Message.Flags&flagEphemeral != 0
}

// replaced is r, an ephemeral message, as the update of the note the
// interaction came from: its text, and its components or none (an update
// keeps whatever it leaves out).
func replaced(r *response) *response {
	d := *r.Data
	d.Flags &^= flagEphemeral // an update does not change a message's flags
	if d.Components == nil {
		d.Components = []discordgo.MessageComponent{}
	}
	return &response{Type: respUpdate, Data: &d, sent: r.sent}
}

type resolved struct {
	rec *pending.Record
	err error
}

// settle resolves rec as the person said and answers with the outcome in
// the clicked message itself (UPDATE_MESSAGE). The resolution and the
// edits of the request's other messages run in the background; the
// response goes as soon as the outcome is known, or, past the ack budget,
// as a deferred update, and the message is then edited through the API.
func (h *Interactions) settle(ctx context.Context, rec *pending.Record, res pending.Resolution, in *interaction) *response {
	res.By = responder(in)
	// Hash: refused if the request was replaced since it was read.
	res.Kind, res.From, res.Hash = rec.Kind, rec, rec.Hash
	var sl *slot
	if inPlaceable(in) {
		sl = h.s.inPlace.register(in.Message.ID)
	}
	done := make(chan resolved, 1)
	h.work.Go(func(ctx context.Context) {
		got, err := h.resolve.Resolve(ctx, rec.ID, res)
		done <- resolved{got, err}
	})
	select {
	case d := <-sl.delivered():
		return d.update()
	case r := <-done:
		return h.settled(rec, res, in, sl, r)
	case <-ctx.Done():
		if !h.s.inPlace.cancel(sl) {
			return (<-sl.ch).update()
		}
		// Finish edits the message through the API. Should the resolve not
		// end the request as the person said, they are told in a follow-up.
		resp := deferredUpdate()
		if in.Message == nil {
			// A form sent without the message it was opened from takes
			// no update (handle would turn one into "no commands"): a
			// message only the person sees, "thinking" until followUp
			// puts the outcome in it.
			resp = &response{Type: respDeferredMsg, Data: &responseData{Flags: flagEphemeral}}
		}
		sent := make(chan error, 1)
		resp.sent = func(err error) { sent <- err }
		h.work.Go(func(ctx context.Context) { h.followUp(ctx, rec, res, in, done, sent) })
		return resp
	}
}

// followUp waits for a resolve that outlasted the ack budget and, once
// the deferred response reached Discord, shows the person what the
// response could not. Where an answer in time would have updated the
// message they acted on (the note a refused form left, whose button
// opened the form; a message nothing else will edit), that message is
// edited: after DEFERRED_UPDATE_MESSAGE, Edit Original Interaction
// Response edits the message the component was on. Else they are told
// in a follow-up only they see. A form sent without its message got a
// deferred message only they see: that message is edited to say how it
// ended. A request's listed messages are Finish's.
func (h *Interactions) followUp(ctx context.Context, rec *pending.Record, res pending.Resolution, in *interaction, done <-chan resolved, sent <-chan error) {
	var r resolved
	select {
	case r = <-done:
	case <-ctx.Done():
		return
	}
	if r.err == nil && !onNote(in) && in.Message != nil {
		return // Finish edits the request's messages
	}
	resp := h.settled(rec, res, in, nil, r)
	if resp.Type != respUpdate && resp.Type != respMessage {
		return
	}
	if in.Message == nil {
		// The deferred response is the person's own message, waiting:
		// it says how their form ended (an edit keeps its flags).
		d := *resp.Data
		d.Flags &^= flagEphemeral
		resp = &response{Type: respUpdate, Data: &d}
	}
	select {
	case err := <-sent:
		if err != nil {
			return // Discord has no response to follow
		}
	case <-ctx.Done():
		return
	}
	if resp.Type == respUpdate {
		if err := h.s.editOriginal(ctx, in, resp.Data); err != nil {
			h.log.Warn("showing a person how their click ended failed", "request_id", rec.ID, "err", err)
		}
		return
	}
	if err := h.s.followUp(ctx, in, resp.Data); err != nil {
		h.log.Warn("telling a person how their click ended failed", "request_id", rec.ID, "err", err)
	}
}

// settled is settle's answer once the resolve r is back, and no outcome
// came through sl before it (nil: none was waited for).
func (h *Interactions) settled(rec *pending.Record, res pending.Resolution, in *interaction, sl *slot, r resolved) *response {
	switch {
	case !h.s.inPlace.cancel(sl):
		// An ending on this replica handed its outcome to this message,
		// and its Finish waits to hear that it was shown: this click's
		// own, or, whatever this click's resolve answered, another's.
		return (<-sl.ch).update()
	case r.err == nil && inPlaceable(in):
		return update(render(r.rec, "", false))
	case r.err == nil && onNote(in):
		// The request's messages are edited by Finish; the note the form
		// came from says the answer is in.
		return replaced(ephemeral(surface.StatusLine(r.rec, statusFormat)))
	case r.err == nil && in.Message == nil:
		return ephemeral(surface.StatusLine(r.rec, statusFormat))
	case r.err == nil:
		return deferredUpdate()
	case errors.Is(r.err, pending.ErrAlreadyResolved) && r.rec != nil:
		return h.late(r.rec, &res, in)
	case errors.Is(r.err, pending.ErrNotFound):
		return gone(in)
	}
	h.log.Warn("resolving a request failed", "request_id", rec.ID, "err", r.err)
	return ephemeral(surface.MsgUnconfirmed)
}

// inPlace hands the outcome of a request to the interaction whose click
// ended it, so that its message is edited in the interaction response
// rather than by a second call: Finish delivers to a registered slot.
type inPlace struct {
	mu    sync.Mutex
	slots map[string]*slot // by message id
}

// inPlaceWait bounds how long Finish waits to hear whether a click's
// response, carrying the outcome, reached Discord: the response goes
// within surface.AckBudget of the click, a gateway callback within a
// second after.
const inPlaceWait = 5 * time.Second

type slot struct {
	msgID string
	ch    chan delivery
}

// delivery is an outcome handed to a waiting interaction: the record as
// it ended, and where to say whether the response carrying it reached
// Discord.
type delivery struct {
	rec  *pending.Record
	sent chan error // buffered: the sender never waits
}

// update is the response that shows d's outcome in the clicked message;
// Finish learns through it whether the response reached Discord.
func (d delivery) update() *response {
	r := update(render(d.rec, "", false))
	r.sent = func(err error) { d.sent <- err }
	return r
}

func newInPlace() *inPlace { return &inPlace{slots: map[string]*slot{}} }

// register waits for the outcome of msgID's request; nil when another
// interaction waits for it already.
func (p *inPlace) register(msgID string) *slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, taken := p.slots[msgID]; taken {
		return nil
	}
	s := &slot{msgID: msgID, ch: make(chan delivery, 1)}
	p.slots[msgID] = s
	return s
}

// delivered is the slot's channel; a nil slot's never delivers.
func (s *slot) delivered() <-chan delivery {
	if s == nil {
		return nil
	}
	return s.ch
}

// cancel stops waiting. It reports false when the outcome was delivered
// already: it is then in the slot's channel.
func (p *inPlace) cancel(s *slot) bool {
	if s == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots[s.msgID] != s {
		return false
	}
	delete(p.slots, s.msgID)
	return true
}

// deliver hands rec to the interaction waiting on msgID, if any, and
// returns where that interaction will say whether its response reached
// Discord; nil when none waits.
func (p *inPlace) deliver(msgID string, rec *pending.Record) <-chan error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.slots[msgID]
	if !ok {
		return nil
	}
	delete(p.slots, msgID)
	sent := make(chan error, 1)
	s.ch <- delivery{rec: rec, sent: sent}
	return sent
}

package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

const (
	// maxPayload bounds an interaction's body; Slack's are a few kB, a
	// view_submission with long answers some tens.
	maxPayload = 1 << 20
)

// What people are told, ephemerally or in a modal.
const (
	msgCantCheck    = "The bridge could not check whether you may answer this; try again in a moment."
	msgChooseFirst  = "Choose at least one option first, or use Other… to type an answer."
	msgTypeAnswer   = "Type an answer."
	msgTypeFeedback = "Type your feedback."
	msgNotOffered   = "That answer is not one of the options; nothing was saved."
	// msgClickAgain follows a form Slack did not open for want of time:
	// the click's trigger_id ran out (it lives 3 s), or Slack was slow or
	// busy. The next click brings a trigger_id of its own.
	msgClickAgain = "Slack did not open the form in time; please click again."
	// msgFormRefused follows a form Slack refused to show (formRefused),
	// before what the person can do instead.
	msgFormRefused = "Slack refused to show this form, so clicking again won't open it (the bridge's log says why)."
)

// Interactions takes Slack's interaction payloads (block_actions and
// view_submission) over the Request URL (ServeHTTP) or Socket Mode (Run).
// Every payload acts through the store's first-wins resolution, so
// retried and duplicated deliveries change nothing.
type Interactions struct {
	s       *Surface
	resolve surface.Resolver
	log     *slog.Logger

	work    *surface.Work     // what runs after the platform has its answer
	refused *surface.Refusals // logs refused signatures, sampled
}

// Interactions returns the handler of the surface's interactions.
func (s *Surface) Interactions(r surface.Resolver) *Interactions {
	return &Interactions{s: s, resolve: r, log: s.log, work: surface.NewWork(), refused: &surface.Refusals{Log: s.log}}
}

// ServeHTTP serves POST /slack/interactions: the signature is verified
// before anything else is read from the body.
func (h *Interactions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := surface.ReadBody(w, r, maxPayload)
	if err != nil {
		api.WriteError(w, api.BodyError(err))
		return
	}
	if err := h.verify(r.Header, body); err != nil {
		h.refused.Refused(r.Context(), "refused an interaction with a bad or stale signature", "err", err, "remote", r.RemoteAddr)
		api.WriteError(w, &api.Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Message: "invalid signature"})
		return
	}
	cb, err := parseCallback(body)
	if err != nil {
		api.WriteError(w, &api.Error{Status: http.StatusBadRequest, Code: string(seam.CodeInvalidRequest), Message: "the payload is not an interaction"})
		return
	}
	resp := h.handle(r.Context(), &cb)
	if resp == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// verify checks X-Slack-Signature over the timestamp and body, and that
// the timestamp is recent (slack-go). A refusal says what to look at when
// Slack's own requests are refused (anyone may send a bad one): the clock,
// and by how much it is off, for a stale timestamp; slack.signing_secret
// for a signature that does not match. slack-go checks the timestamp
// first: a stale one says nothing of the signature.
func (h *Interactions) verify(hdr http.Header, body []byte) error {
	sv, err := slackapi.NewSecretsVerifier(hdr, h.s.cfg.SigningSecret.Reveal())
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	switch {
	case errors.Is(err, slackapi.ErrExpiredTimestamp):
		// slack-go, which decided, reads time.Now, not the surface's clock.
		secs, _ := strconv.ParseInt(hdr.Get("X-Slack-Request-Timestamp"), 10, 64)
		return surface.StaleTimestamp("Slack's own requests", time.Unix(secs, 0), time.Now(), 5*time.Minute)
	case errors.Is(err, slackapi.ErrInvalidSignature):
		return errors.New("bad signature: if Slack's own requests are refused, slack.signing_secret is not the app's Signing Secret (Basic Information → App Credentials)")
	}
	return err
}

// clickPayload is the part of a block_actions payload the bridge reads.
type clickPayload struct {
	Type      slackapi.InteractionType `json:"type"`
	User      clicker                  `json:"user"`
	Container slackapi.Container       `json:"container"`
	Channel   struct {
		ID string `json:"id"`
	} `json:"channel"`
	Message struct {
		Timestamp string `json:"ts"`
		Text      string `json:"text"`
	} `json:"message"`
	TriggerID   string                      `json:"trigger_id"`
	ResponseURL string                      `json:"response_url"`
	Actions     []*slackapi.BlockAction     `json:"actions"`
	State       *slackapi.BlockActionStates `json:"state"`
}

// parseCallback is slackapi.InteractionCallbackParse, except that a
// block_actions payload (every click) is decoded into only the fields the
// bridge reads: slack-go decodes the whole message the click came from,
// block by block, which was a fifth of a replica's CPU under bridge bench.
// Other payloads are decoded by slack-go. body is the form Slack posts,
// payload=<JSON>, as read once for its signature.
func parseCallback(body []byte) (slackapi.InteractionCallback, error) {
	payload, err := formValue(body, "payload")
	if err != nil {
		return slackapi.InteractionCallback{}, err
	}
	if len(payload) == 0 {
		return slackapi.InteractionCallback{}, errors.New("payload is empty")
	}
	var p clickPayload
	scratch := scratchBufs.Get().(*[]byte)
	trimmed := trimMessage((*scratch)[:0], payload)
	err = json.Unmarshal(trimmed, &p) // which copies what it keeps
	putScratch(scratch, trimmed)
	if err != nil {
		return slackapi.InteractionCallback{}, err
	}
	if p.Type != slackapi.InteractionTypeBlockActions {
		var cb slackapi.InteractionCallback
		err := json.Unmarshal(payload, &cb)
		return cb, err
	}
	cb := slackapi.InteractionCallback{Type: p.Type, Container: p.Container, TriggerID: p.TriggerID, ResponseURL: p.ResponseURL, BlockActionState: p.State}
	cb.User.ID, cb.User.TeamID, cb.User.Name, cb.User.Username = p.User.ID, p.User.TeamID, p.User.Name, p.User.Username
	cb.Channel.ID = p.Channel.ID
	cb.Message.Timestamp, cb.Message.Text = p.Message.Timestamp, p.Message.Text
	for _, a := range p.Actions {
		if a != nil && a.BlockID != "" { // as slack-go tells block actions from attachment actions
			cb.ActionCallback.BlockActions = append(cb.ActionCallback.BlockActions, a)
		}
	}
	return cb, nil
}

// Run receives interactions over Socket Mode when slack.app_token is set,
// until ctx ends; either way it then waits for the work still running.
func (h *Interactions) Run(ctx context.Context) error {
	var err error
	if h.s.cfg.AppToken.Reveal() != "" {
		err = h.socketMode(ctx)
	} else {
		<-ctx.Done()
	}
	h.work.Drain()
	return err
}

// socketMode receives interactions over Socket Mode until ctx ends or
// Slack refuses the app token for good. The client reconnects by itself,
// after a disconnect and after a failure that may pass.
func (h *Interactions) socketMode(ctx context.Context) error {
	client := socketmode.New(h.s.api)
	// The connection outlives ctx until the envelopes already received
	// have been answered on it: Slack takes an ack only within 3 s, and
	// only on the connection it sent the envelope on.
	conn, closeConn := context.WithCancel(context.WithoutCancel(ctx))
	errc := make(chan error, 1)
	go func() { errc <- client.RunContext(conn) }()
	var inflight sync.WaitGroup
	defer func() {
		inflight.Wait()
		closeConn()
		<-errc
	}()
	var busy atomic.Int64             // envelopes being handled
	settled := make(chan struct{}, 1) // busy fell to 0
	stopping := ctx.Done()            // nil once stopping
	var lastCall <-chan time.Time     // while stopping: when to stop taking envelopes
	for {
		select {
		case <-stopping:
			if busy.Load() == 0 {
				return nil
			}
			// The connection stays open until the envelopes in flight
			// are answered, and Slack may hand it more meanwhile: they
			// are handled too, for an ack budget at most.
			stopping, lastCall = nil, time.After(surface.AckBudget)
		case <-settled:
			if stopping == nil && busy.Load() == 0 {
				return nil
			}
		case <-lastCall:
			return nil
		case err := <-errc:
			errc <- err // for the deferred wait
			if ctx.Err() != nil {
				return nil
			}
			if reason, ok := appTokenRefused(err); ok {
				return errors.New("slack socket mode: " + appTokenProblem(reason))
			}
			return fmt.Errorf("slack socket mode: %w", err)
		case ev := <-client.Events:
			switch ev.Type {
			case socketmode.EventTypeConnecting:
				// slack-go opens a connection at the start and after one
				// dropped (Slack's disconnect, a missed ping, a read
				// that failed): until it is connected, no click arrives.
				h.s.conn.Down()
			case socketmode.EventTypeConnected:
				h.s.conn.Up()
				h.log.Info("slack socket mode connected")
			case socketmode.EventTypeInvalidAuth:
				return errors.New("slack socket mode: " + appTokenProblem("invalid_auth"))
			case socketmode.EventTypeConnectionError:
				// slack-go tries again, for ever, after any refusal but
				// invalid_auth, not_authed, account_inactive and
				// token_revoked: a bot token in app_token, or one without
				// connections:write, would leave the bridge deaf to clicks.
				ce, _ := ev.Data.(*slackapi.ConnectionErrorEvent)
				if ce == nil {
					continue
				}
				if reason, ok := appTokenRefused(ce.ErrorObj); ok {
					return errors.New("slack socket mode: " + appTokenProblem(reason))
				}
				h.log.Warn("slack socket mode could not connect; trying again", "attempt", ce.Attempt, "backoff", ce.Backoff, "err", checkReason(ce.ErrorObj))
			case socketmode.EventTypeInteractive:
				cb, ok := ev.Data.(slackapi.InteractionCallback)
				if !ok || ev.Request == nil {
					continue
				}
				req := *ev.Request
				busy.Add(1)
				inflight.Go(func() {
					defer func() {
						if busy.Add(-1) == 0 {
							select {
							case settled <- struct{}{}:
							default:
							}
						}
					}()
					// Not cut short by the bridge stopping: the person
					// clicked, and is answered (see the deferred wait).
					ackCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), surface.AckBudget)
					defer cancel()
					var payload any // an empty ack, unless a view_submission answers
					if resp := h.handle(ackCtx, &cb); resp != nil {
						payload = resp
					}
					// slack-go queues 20 acks while it has no connection;
					// past that, waiting longer helps no one (Slack wants
					// the ack within 3 s) and would keep the bridge from
					// stopping.
					queueCtx, cancelQueue := context.WithTimeout(conn, surface.AckBudget)
					defer cancelQueue()
					if err := client.AckCtx(queueCtx, req.EnvelopeID, payload); err != nil {
						h.log.Warn("acking a socket mode envelope failed", "err", err)
					}
				})
			case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand:
				if ev.Request != nil {
					_ = client.Ack(*ev.Request)
				}
			}
		}
	}
}

// appTokenRefused reports whether err is apps.connections.open refusing
// the app token in a way that trying again won't change, and Slack's
// reason.
func appTokenRefused(err error) (string, bool) {
	var se slackapi.SlackErrorResponse
	if !errors.As(err, &se) {
		return "", false
	}
	switch se.Err {
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
		"not_allowed_token_type", "missing_scope", "no_permission", "access_denied":
		return se.Err, true
	}
	return "", false
}

// appTokenProblem says what Slack refusing slack.app_token with reason
// means, and what to do.
func appTokenProblem(reason string) string {
	what := "generate a new one (Basic Information → App-Level Tokens, scope connections:write)"
	switch reason {
	case "not_allowed_token_type":
		what = "it must be an app-level token (xapp-…), not the bot token (xoxb-…)"
	case "missing_scope":
		what = "the app-level token needs the connections:write scope"
	}
	return fmt.Sprintf("Slack refused slack.app_token (%s): %s", reason, what)
}

// click is one block action, with where it came from.
type click struct {
	ref     surface.Ref
	user    clicker
	channel string
	ts      string // the message's
	text    string // the message's text (its notification fallback), as posted
	short   bool   // the message says it was posted short (shortBlock)
	thread  string // the thread it is in, if any
	respond string // the click's response_url, if any (see Surface.tell)
	trigger string
	action  *slackapi.BlockAction
	state   *slackapi.BlockActionStates
}

// handle acts on one payload and returns what Slack is to get in the
// answer: nil for an empty 200, or a view_submission response.
func (h *Interactions) handle(ctx context.Context, cb *slackapi.InteractionCallback) *slackapi.ViewSubmissionResponse {
	switch cb.Type {
	case slackapi.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			r, err := surface.ParseRef(a.ActionID)
			if err != nil {
				continue
			}
			c := click{ref: r, user: clickerOf(cb.User), channel: cb.Container.ChannelID, ts: cb.Container.MessageTs, text: cb.Message.Text,
				short: shortBlock(a.BlockID), thread: cb.Container.ThreadTs, respond: cb.ResponseURL, trigger: cb.TriggerID, action: a, state: cb.BlockActionState}
			if c.channel == "" {
				c.channel = cb.Channel.ID
			}
			if c.ts == "" {
				c.ts = cb.Message.Timestamp
			}
			if c.thread == c.ts {
				c.thread = ""
			}
			switch r.Verb {
			case surface.VerbMulti: // a box ticked: read on submit
			case surface.VerbAnswer, surface.VerbOther, surface.VerbReject:
				h.openModal(ctx, c)
			default:
				h.work.Go(func(ctx context.Context) { h.act(ctx, c) })
			}
			return nil // one action per payload
		}
	case slackapi.InteractionTypeViewSubmission:
		return h.submit(ctx, cb)
	}
	return nil
}

func (h *Interactions) tell(ctx context.Context, c click, text string) {
	if err := h.s.tell(ctx, c.respond, c.channel, c.thread, c.user.ID, text); err != nil {
		h.log.Warn("telling a user failed", "request_id", c.ref.ID, "err", err)
	}
}

func (h *Interactions) tellLater(c click, text string) {
	h.work.Go(func(ctx context.Context) { h.tell(ctx, c, text) })
}

// openModal opens the modal of an answer, other or reject button. Slack
// work that could be slow (a user group not yet cached) comes after
// views.open, and the modal is replaced if the user may not answer.
func (h *Interactions) openModal(ctx context.Context, c click) {
	ctx, cancel := context.WithTimeout(ctx, surface.AckBudget)
	defer cancel()
	log := h.log.With("request_id", c.ref.ID)
	rec, err := h.s.store.Get(ctx, c.ref.ID)
	if err != nil {
		if !errors.Is(err, pending.ErrNotFound) {
			log.Warn("reading a request for its modal failed", "err", err)
			h.tellLater(c, surface.MsgTrouble)
		} else {
			h.work.Go(func(ctx context.Context) { h.gone(ctx, c) })
		}
		return
	}
	if replaced(rec, c) {
		h.work.Go(func(ctx context.Context) { h.gone(ctx, c) })
		return
	}
	_, t := h.s.target(rec, c.channel, c.ts, c.user.ID)
	ok, known := false, true
	if t != nil {
		ok, known = h.s.who.cached(t, c.user.ID)
	}
	if known && !ok {
		h.tellLater(c, surface.MsgCantAnswer)
		return
	}
	if rec.Status != seam.StatusPending {
		// As a late click that answers: told, and its message edited
		// should rec not list it (a copy), which would keep its buttons.
		h.work.Go(func(ctx context.Context) { h.late(ctx, rec, nil, c) })
		return
	}
	if surface.Overdue(rec, h.s.store.Now()) {
		// Past its expiry, not yet swept: a form filled in now would be
		// refused on submit. Told as a click that answers is.
		h.tellLater(c, surface.MsgOverdue)
		return
	}
	o := origin{Channel: c.channel, TS: c.ts, Thread: c.thread, Text: c.text, Respond: c.respond, Short: c.short}
	// What a form cuts, it says is whole where the message it was
	// opened from shows it: as that message was rendered.
	from := shown{short: c.short, browser: h.s.links != nil}
	if t != nil {
		from.mention = t.Mention
	}
	if p, ok := rec.PostOf(surfaceName, c.channel, c.ts); ok {
		from.short = from.short || p.Short // posted before messages said so
	}
	var view slackapi.ModalViewRequest
	switch {
	case c.ref.Verb == surface.VerbReject && rec.Kind == seam.KindApproval:
		view = rejectModal(rec, o)
	case c.ref.Verb == surface.VerbAnswer && rec.Kind == seam.KindQuestion:
		view = answerModal(rec, o, from)
	case c.ref.Verb == surface.VerbOther && rec.Kind == seam.KindQuestion && c.ref.Q < len(rec.Questions.Questions):
		view = otherModal(rec, c.ref.Q, o, ticked(rec.ID, c), from)
	default:
		return // a control that does not fit its request: not ours to act on
	}
	var opened string // the view's id
	err = h.s.call(ctx, "views.open", func(ctx context.Context) (err error) {
		opened, err = h.s.openView(ctx, c.trigger, view)
		return err
	})
	switch {
	case refusedWith(err, "exchanged_trigger_id"):
		// The click delivered again (Slack's retry, a Socket Mode
		// redelivery): its first delivery opened the modal with this
		// trigger_id, which opens one view. The modal is open.
		log.Info("a click's trigger_id already opened its modal; a repeated delivery", "err", err)
		return
	case formRefused(err):
		// Another click would send the same form, refused the same way.
		log.Error("Slack refused to open a form; the person is told how else to answer", "err", err, "slack_messages", slackMessages(err))
		h.work.Go(func(ctx context.Context) { h.answerElsewhere(ctx, rec, t, c) })
		return
	case err != nil:
		log.Warn("opening a modal failed", "err", err)
		h.tellLater(c, msgClickAgain)
		return
	}
	if known {
		return
	}
	h.work.Go(func(ctx context.Context) {
		ok, err := h.s.who.allowed(ctx, t, c.user.ID)
		switch {
		case ok:
			return
		case err != nil:
			// Undecided: the form stays, with whatever the person has
			// typed in it meanwhile. Its submission is checked again,
			// and kept open should the check fail then too.
			log.Warn("checking a responder failed; the form stays open, its submission is checked", "err", err)
			return
		}
		notice := noticeModal("Answer", surface.MsgCantAnswer)
		if err := h.s.call(ctx, "views.update", func(ctx context.Context) error {
			return h.s.updateView(ctx, opened, notice)
		}); err != nil {
			log.Warn("replacing a refused modal failed", "err", err)
		}
	})
}

// act handles a click that answers at once: an option, a select, the
// multi-select's Submit, Allow once, Dismiss.
func (h *Interactions) act(ctx context.Context, c click) {
	if h.quick(ctx, c) {
		return
	}
	rec, err := h.s.store.Get(ctx, c.ref.ID)
	if err != nil {
		if errors.Is(err, pending.ErrNotFound) {
			h.gone(ctx, c)
			return
		}
		h.log.Warn("reading a clicked request failed", "request_id", c.ref.ID, "err", err)
		h.tell(ctx, c, surface.MsgTrouble)
		return
	}
	if replaced(rec, c) {
		h.gone(ctx, c)
		return
	}
	key, t := h.s.target(rec, c.channel, c.ts, c.user.ID)
	if !h.mayAnswer(ctx, t, c) {
		return
	}
	if c.ref.Verb == surface.VerbLink {
		h.handLink(ctx, rec, c)
		return
	}
	res, problem := resolutionOf(rec, c)
	switch {
	case rec.Status != seam.StatusPending:
		h.late(ctx, rec, res, c)
	case problem != "":
		h.tell(ctx, c, problem)
	case res != nil: // nil: a control that does not fit its request
		// The request read, and no other created under its id since.
		res.Kind, res.From, res.Hash = rec.Kind, rec, rec.Hash
		// Recorded before the resolve, the message is among those the
		// resolve's end edits.
		h.adopt(ctx, rec, key, c)
		h.finish(ctx, *res, c)
	}
}

// handLink tells the person who tapped "Open in browser" on a target that
// limits its responders, and may answer, a link of their own to rec.
func (h *Interactions) handLink(ctx context.Context, rec *pending.Record, c click) {
	switch {
	case rec.Status != seam.StatusPending:
		h.late(ctx, rec, nil, c)
	case surface.Overdue(rec, h.s.store.Now()):
		h.tell(ctx, c, surface.MsgOverdue)
	case h.s.links == nil: // the bridge lost its public URL since it posted
		h.tell(ctx, c, surface.MsgNoPublicURL)
	default:
		h.tell(ctx, c, h.personalLink(rec, c))
	}
}

// personalLink is a link to rec of the person who clicked c, whom the
// caller has checked may answer, with what comes with it.
func (h *Interactions) personalLink(rec *pending.Record, c click) string {
	url, until := h.s.links.ForPerson(rec, *responder(c.user), h.s.store.Now())
	return surface.PersonalLinkText(slackTime(until)) + " <" + url + "|Open in browser>"
}

// answerElsewhere tells the person whose form Slack refused to show how
// else rec can be answered: in the browser, through the link the
// message's "Open in browser" carries or hands out, or, on a bridge with
// no public URL, by whoever runs it (its web inbox, or the CLI).
func (h *Interactions) answerElsewhere(ctx context.Context, rec *pending.Record, t *config.SlackTarget, c click) {
	var instead string
	switch {
	case h.s.links == nil:
		instead = "Whoever runs the bridge can answer it in the bridge's web inbox, or with `bridge answer " + rec.ID + "`."
	case linkable(t):
		instead = "Answer it in the browser instead: <" + h.s.links.For(rec) + "|Open in browser>"
	case !h.mayAnswer(ctx, t, c): // told why not
		return
	default:
		instead = "Answer it in the browser instead. " + h.personalLink(rec, c)
	}
	h.tell(ctx, c, msgFormRefused+" "+instead)
}

// quick resolves a click from what its button carries (see carried),
// without reading the request first. It reports false, having done
// nothing, when the button carries nothing it can use: no value (a
// message posted by an earlier version), or a target the configuration
// no longer has for the click's channel. The caller then reads the
// request.
func (h *Interactions) quick(ctx context.Context, c click) bool {
	cv, ok := parseCarried(c.ref.Verb, c.action.Value)
	if !ok {
		return false
	}
	t, ok := h.s.targets[cv.target]
	if !ok || t.Channel != c.channel {
		// Routes edited since the message was posted: the target's key
		// may now name another target, or none.
		h.log.Debug("a click names a target not configured for its channel; reading its request", "request_id", c.ref.ID, "target", cv.target)
		return false
	}
	if h.s.mixed[c.channel] {
		// Targets with different responders post to this channel: who
		// may answer is decided by the target the request's record says
		// posted the message, not by a key the click carries, which
		// would let a value that names the channel's open target pass
		// for a click on a restricted one.
		return false
	}
	if !h.mayAnswer(ctx, t, c) {
		return true
	}
	// The target decided who may answer only for requests of its own
	// route: a value naming an open target of one route must not answer
	// a request of another, whose targets limit their responders (its
	// id and hash are in its message, for whoever sees it).
	res := cv.resolution(c.ref.Verb)
	res.Route = dispatch.RouteOfKey(cv.target)
	h.finish(ctx, res, c)
	return true
}

// replaced reports whether c's message was posted for another request
// than rec under its id: one discarded (its post's reply lost) and
// created again under its tool_call_id, asking something else. Its
// controls' places mean nothing for rec.
func replaced(rec *pending.Record, c click) bool {
	h := hashOfBlock(c.action.BlockID)
	return h != "" && h != rec.Hash
}

// gone tells the person that the request they clicked no longer exists
// and retires its message.
func (h *Interactions) gone(ctx context.Context, c click) {
	h.tell(ctx, c, surface.MsgGone)
	h.retire(ctx, c)
}

// retire takes the controls off the message c came from, whose request
// the store no longer has: nothing can answer it, and nothing else would
// edit it. Such a message was posted for a request whose every post
// seemed to fail (its reply lost) and which was discarded, or replaced
// since under its tool_call_id. What it asked is gone with the request;
// its text, as posted, stays.
func (h *Interactions) retire(ctx context.Context, c click) {
	if c.channel == "" || c.ts == "" {
		return
	}
	line := "_" + surface.MsgGone + "_"
	m := chatMessage{text: surface.MsgGone, blocks: []slackapi.Block{slackapi.NewContextBlock("", mrkdwn(line))}}
	if c.text != "" {
		m.text = surface.MsgGone + " — " + c.text
		m.blocks = append([]slackapi.Block{slackapi.NewSectionBlock(mrkdwn(truncateMrkdwn(c.text, maxSectionText)), nil, nil)}, m.blocks...)
	}
	if err := h.s.call(ctx, "chat.update", func(ctx context.Context) error {
		return h.s.updateMessage(ctx, c.channel, c.ts, m)
	}); err != nil {
		h.log.Warn("retiring the message of a request that no longer exists failed", "request_id", c.ref.ID, "err", err)
	}
}

// late tells the person that rec is over, unless res is how it ended:
// the same action delivered again.
func (h *Interactions) late(ctx context.Context, rec *pending.Record, res *pending.Resolution, c click) {
	h.finishUnrecorded(ctx, rec, c)
	if res != nil {
		mine := *res
		mine.By = responder(c.user)
		if same(rec, mine) {
			return
		}
	}
	h.tell(ctx, c, surface.LateReply(rec, statusFormat))
}

// adopt records c's message on rec, pending, when rec does not list it
// (see Store.AdoptPost), just before c's answer resolves rec: a click
// that beat the recording of its message, or a copy its posting never
// recorded. (Not on a click that answers nothing: a request with a post
// recorded is no longer one whose posting failed, to be discarded.) Slack may answer a post with an
// error after making it, and the post made again is a second copy: when
// the bridge could not look for the first (no history scope), a click is
// how it learns of it, and the request's end then edits every copy.
func (h *Interactions) adopt(ctx context.Context, rec *pending.Record, key string, c click) {
	if c.channel == "" || c.ts == "" {
		return
	}
	if _, listed := rec.PostOf(surfaceName, c.channel, c.ts); listed {
		return
	}
	p := pending.Post{Surface: surfaceName, Target: key, Channel: c.channel, MessageID: c.ts, Thread: c.thread, Short: c.short, To: h.s.channelOf(key)}
	ended, added, err := h.s.store.AdoptPost(ctx, rec.ID, p)
	switch {
	case err != nil:
		h.log.Warn("recording a clicked message its request does not list failed", "request_id", rec.ID, "ts", c.ts, "err", err)
	case added && ended != nil:
		// It ended meanwhile; its end edited those it listed then.
		h.endCopy(ctx, ended, p)
	}
}

// finishUnrecorded edits c's message to how rec ended when rec does not
// list it among its posts: its recording failed (Redis refused it), its
// post's reply was lost while another target took the request, or Slack
// answered its post with an error after making it, and the post made
// again is the one recorded. Ending rec edited only the messages it
// lists. The message is recorded on it (Store.AdoptPost), which puts the
// request in the finish index: should this edit fail, a finisher edits
// every message again, this one too, FinishGrace later.
func (h *Interactions) finishUnrecorded(ctx context.Context, rec *pending.Record, c click) {
	if rec == nil || rec.Status == seam.StatusPending || c.channel == "" || c.ts == "" {
		return
	}
	if _, listed := rec.PostOf(surfaceName, c.channel, c.ts); listed {
		return
	}
	key, _ := h.s.target(rec, c.channel, c.ts, c.user.ID)
	p := pending.Post{Surface: surfaceName, Target: key, Channel: c.channel, MessageID: c.ts, Thread: c.thread, Short: c.short, To: h.s.channelOf(key)}
	ended, added, err := h.s.store.AdoptPost(ctx, rec.ID, p)
	switch {
	case err != nil:
		h.log.Warn("recording a clicked message its request does not list failed", "request_id", rec.ID, "ts", c.ts, "err", err)
	case !added:
		return // recorded since, by whoever edits it
	case ended != nil:
		rec = ended
	}
	h.endCopy(ctx, rec, p)
}

// endCopy edits p, a message of rec, which has ended, that a click showed
// and rec did not list as it ended.
//
// Not while rec's create may still be under way (it is bounded by the
// posting lease) and rec lists no other message in p's conversation: a
// click is far likelier then to have beaten the recording of its
// message, and the replica recording it learns of the end and edits it
// (under bridge bench's instant clicks, editing it here too had a third
// of the messages edited twice, and chat.update is rate-limited per
// channel); recorded here first, a finisher edits it should that replica
// not. Another message of rec in the conversation is the one its create
// recorded there: p is a copy nothing else would edit soon.
func (h *Interactions) endCopy(ctx context.Context, rec *pending.Record, p pending.Post) {
	sibling := slices.ContainsFunc(rec.Posts, func(q pending.Post) bool {
		return q.Surface == surfaceName && q.Channel == p.Channel && q.MessageID != p.MessageID
	})
	if !sibling && h.s.now().Sub(rec.CreatedAt) < pending.PostingLease {
		return
	}
	if err := h.s.Finish(ctx, rec, p); err != nil {
		h.log.Warn("editing a clicked message its request did not list failed", "request_id", rec.ID, "ts", p.MessageID, "err", err)
	}
}

// mayAnswer reports whether the person who clicked may answer through
// target t, having told them when they may not.
func (h *Interactions) mayAnswer(ctx context.Context, t *config.SlackTarget, c click) bool {
	ok, err := h.s.who.allowed(ctx, t, c.user.ID)
	switch {
	case ok:
		return true
	case err != nil && !errors.Is(err, errNoTarget):
		h.log.Warn("checking a responder failed", "request_id", c.ref.ID, "err", err)
		h.tell(ctx, c, msgCantCheck)
	default:
		h.tell(ctx, c, surface.MsgCantAnswer)
	}
	return false
}

// resolutionOf is what a click means for rec, or a problem to tell the
// person (in mrkdwn), or neither when the control does not fit rec.
func resolutionOf(rec *pending.Record, c click) (*pending.Resolution, string) {
	answered := func(a seam.Answer) (*pending.Resolution, string) {
		norm, err := rec.Questions.Normalize(a)
		if err != nil {
			return nil, esc(err.Error()) // it quotes the agent's text
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Answer: &norm}, ""
	}
	switch c.ref.Verb {
	case surface.VerbDismiss:
		return &pending.Resolution{Status: seam.StatusDismissed}, ""
	case surface.VerbAllow:
		if rec.Kind != seam.KindApproval {
			return nil, ""
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Decision: &seam.Decision{Outcome: seam.OutcomeAllowedOnce}}, ""
	}
	if rec.Kind != seam.KindQuestion || c.ref.Q >= len(rec.Questions.Questions) {
		return nil, ""
	}
	q := rec.Questions.Questions[c.ref.Q]
	var picked []int
	switch c.ref.Verb {
	case surface.VerbPick:
		picked = []int{c.ref.O}
	case surface.VerbSelect:
		n, err := strconv.Atoi(c.action.SelectedOption.Value)
		if err != nil {
			return nil, ""
		}
		picked = []int{n}
	case surface.VerbSubmit:
		picked = ticked(rec.ID, c)
		if len(picked) == 0 {
			return nil, msgChooseFirst
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
	return answered(seam.Answer{Answers: []seam.AnswerItem{it}})
}

// ticked returns the options of question c.ref.Q of request id chosen in
// the message's multi-select when c was clicked, as the click's state
// says: Slack keeps them in the message, and sends them with every click.
func ticked(id string, c click) []int {
	if c.state == nil {
		return nil
	}
	want := surface.Ref{Verb: surface.VerbMulti, ID: id, Q: c.ref.Q}.String()
	var picked []int
	for _, block := range c.state.Values {
		if v, ok := block[want]; ok {
			for _, o := range v.SelectedOptions {
				if n, err := strconv.Atoi(o.Value); err == nil {
					picked = append(picked, n)
				}
			}
		}
	}
	return picked
}

// maxNameLen bounds the name recorded for who answered.
const maxNameLen = 200

// clicker is who clicked or submitted, as a payload's user names them: the
// part of slack-go's User (most of a kilobyte) that a click's payload
// holds, and a click carries with it.
type clicker struct {
	ID       string `json:"id"`
	TeamID   string `json:"team_id"`
	Name     string `json:"name"`
	Username string `json:"username"`
}

func clickerOf(u slackapi.User) clicker {
	return clicker{ID: u.ID, TeamID: u.TeamID, Name: u.Name, Username: u.Username}
}

func responder(u clicker) *pending.Responder {
	name := u.Name
	if name == "" {
		name = u.Username
	}
	return &pending.Responder{Surface: surfaceName, UserID: u.ID, Name: surface.Truncate(name, maxNameLen)}
}

// finish resolves the clicked request as the person said. When another
// answer won, they are told so, unless theirs was that answer, delivered
// twice. A request the store does not have (gone, or, for res.Hash,
// replaced under its tool_call_id by one that asks something else) is
// over for the person either way.
func (h *Interactions) finish(ctx context.Context, res pending.Resolution, c click) {
	res.By = responder(c.user)
	got, err := h.resolve.Resolve(ctx, c.ref.ID, res)
	switch {
	case err == nil:
		h.log.Info("request resolved", "request_id", c.ref.ID, "status", res.Status, "user", c.user.ID)
		h.finishUnrecorded(ctx, got, c)
	case errors.Is(err, pending.ErrNotFound):
		h.gone(ctx, c)
	case errors.Is(err, pending.ErrAlreadyResolved) && got != nil:
		h.late(ctx, got, &res, c)
	case errors.Is(err, pending.ErrOtherRoute):
		// A button's value altered on its way, naming a target of
		// another route than its request's: nothing was recorded.
		h.log.Warn("a click named a target of another route than its request's; nothing was recorded", "request_id", c.ref.ID, "user", c.user.ID)
		h.tell(ctx, c, surface.MsgCantAnswer)
	case errors.Is(err, pending.ErrNotOffered):
		// A button's value altered on its way: nothing was recorded.
		h.log.Warn("a click carried an option the request does not offer; nothing was recorded", "request_id", c.ref.ID, "user", c.user.ID)
		h.tell(ctx, c, msgNotOffered)
	default:
		h.log.Warn("resolving a request failed", "request_id", c.ref.ID, "err", err)
		h.tell(ctx, c, surface.MsgUnconfirmed)
	}
}

// same reports whether rec ended exactly as res would have ended it: a
// delivery of the same action again.
func same(rec *pending.Record, res pending.Resolution) bool {
	by := rec.ResolvedBy
	return rec.Status == res.Status && by != nil && res.By != nil &&
		by.Surface == res.By.Surface && by.UserID == res.By.UserID &&
		reflect.DeepEqual(rec.Answer, res.Answer) && reflect.DeepEqual(rec.Decision, res.Decision)
}

// submit handles a modal's submission. What is wrong with a field, or a
// failure that may pass, is answered in the modal (response_action
// errors), which keeps what was typed; a request that ended
// meanwhile replaces the modal with a notice; otherwise the modal closes
// and the answer is recorded after the answer to Slack.
func (h *Interactions) submit(ctx context.Context, cb *slackapi.InteractionCallback) *slackapi.ViewSubmissionResponse {
	r, err := surface.ParseRef(cb.View.CallbackID)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, surface.AckBudget)
	defer cancel()
	o := parseOrigin(cb.View.PrivateMetadata)
	c := click{ref: r, user: clickerOf(cb.User), channel: o.Channel, ts: o.TS, thread: o.Thread, text: o.Text, short: o.Short, respond: o.Respond}
	rec, err := h.s.store.Get(ctx, r.ID)
	switch {
	case errors.Is(err, pending.ErrNotFound) || err == nil && o.Hash != "" && o.Hash != rec.Hash:
		// Gone, or replaced since the modal opened (discarded and created
		// again under its tool_call_id, asking something else).
		h.work.Go(func(ctx context.Context) { h.retire(ctx, c) })
		return slackapi.NewUpdateViewSubmissionResponse(ptr(noticeModal("Answer", surface.MsgGone)))
	case err != nil:
		h.log.Warn("reading a submitted request failed", "request_id", r.ID, "err", err)
		return tryAgain(cb.View, "The bridge could not record that just now.")
	}
	key, t := h.s.target(rec, o.Channel, o.TS, cb.User.ID)
	if ok, err := h.s.who.allowed(ctx, t, cb.User.ID); !ok {
		if err != nil && !errors.Is(err, errNoTarget) {
			return tryAgain(cb.View, "The bridge could not check whether you may answer this.")
		}
		return slackapi.NewUpdateViewSubmissionResponse(ptr(noticeModal("Answer", surface.MsgCantAnswer)))
	}
	values := viewValues{}
	if cb.View.State != nil {
		values = cb.View.State.Values
	}
	res, refusal := submission(rec, values, r)
	if rec.Status != seam.StatusPending {
		if res != nil {
			mine := *res
			mine.By = responder(clickerOf(cb.User))
			if same(rec, mine) {
				return nil // the same submission delivered again: close the modal
			}
		}
		// The message the modal was opened from keeps its controls if
		// rec does not list it (a copy): edited as a late click's is.
		h.work.Go(func(ctx context.Context) { h.finishUnrecorded(ctx, rec, c) })
		return slackapi.NewUpdateViewSubmissionResponse(ptr(noticeModal("Too late", surface.LateReply(rec, statusFormat))))
	}
	if surface.Overdue(rec, h.s.store.Now()) {
		// Past its expiry, not yet swept: the resolve would refuse it
		// once the modal had closed as if it were taken. Said here, in
		// the modal, instead.
		return slackapi.NewUpdateViewSubmissionResponse(ptr(noticeModal("Too late", surface.MsgOverdue)))
	}
	if res == nil {
		return refusal
	}
	res.Kind, res.From, res.Hash = rec.Kind, rec, rec.Hash
	h.work.Go(func(ctx context.Context) {
		h.adopt(ctx, rec, key, c)
		h.finish(ctx, *res, c)
	})
	return nil
}

// tryAgain answers a submission that failed for a moment (Redis, or
// Slack's list of a user group), saying what failed, as the error of the
// view's first field: the modal stays open with what the person typed,
// which a notice in its place would throw away, and its submit button
// tries again. The error names that button as it reads (Send, Reject).
func tryAgain(v slackapi.View, failed string) *slackapi.ViewSubmissionResponse {
	submit := "Send"
	if v.Submit != nil && v.Submit.Text != "" {
		submit = v.Submit.Text
	}
	for _, b := range v.Blocks.BlockSet {
		if in, ok := b.(*slackapi.InputBlock); ok && in.BlockID != "" {
			return slackapi.NewErrorsViewSubmissionResponse(map[string]string{in.BlockID: failed + " What you wrote is kept: tap " + submit + " again in a moment."})
		}
	}
	return slackapi.NewUpdateViewSubmissionResponse(ptr(noticeModal("Answer", failed+" Please try again in a moment.")))
}

// submission is what a modal's values mean for rec: a resolution, or the
// response that refuses them (field errors), or neither when the modal
// does not fit rec.
func submission(rec *pending.Record, values viewValues, r surface.Ref) (*pending.Resolution, *slackapi.ViewSubmissionResponse) {
	switch {
	case (r.Verb == surface.VerbAnswer || r.Verb == surface.VerbOther) && rec.Kind == seam.KindQuestion:
		a, errs := answerFrom(rec.Questions, values, r)
		if errs != nil {
			return nil, slackapi.NewErrorsViewSubmissionResponse(errs)
		}
		// The short message's Answer… form leaves its fields optional:
		// sent blank, it answers nothing.
		if r.Verb == surface.VerbAnswer && surface.EmptyAnswer(rec.Questions.Questions, a) {
			return nil, slackapi.NewErrorsViewSubmissionResponse(map[string]string{choiceBlock(0): surface.MsgChooseOrWrite})
		}
		norm, err := rec.Questions.Normalize(a)
		if err != nil {
			if fe := fieldErrors(rec.Questions, values, err); fe != nil {
				return nil, slackapi.NewErrorsViewSubmissionResponse(fe)
			}
			return nil, slackapi.NewUpdateViewSubmissionResponse(ptr(noticeModal("Answer", esc(err.Error()))))
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Answer: &norm}, nil
	case r.Verb == surface.VerbReject && rec.Kind == seam.KindApproval:
		d, err := seam.Decision{Outcome: seam.OutcomeRejected, Note: values[noteBlock][inputAction].Value}.Normalize()
		if err != nil {
			return nil, slackapi.NewErrorsViewSubmissionResponse(map[string]string{noteBlock: err.Error()})
		}
		return &pending.Resolution{Status: seam.StatusAnswered, Decision: &d}, nil
	}
	return nil, nil
}

func ptr[T any](v T) *T { return &v }

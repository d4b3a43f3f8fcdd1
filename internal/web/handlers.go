package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// signInData is what the sign-in page shows.
type signInData struct {
	Open  bool   // no API tokens: sign in with the link from the log
	Once  string // that link's path, opened: its Sign in button posts to it
	Error string // why the last attempt failed
}

func (s *Server) showSignIn(w http.ResponseWriter, status int, msg string) error {
	s.render(w, status, "signin", signInData{Open: s.tokens.open(), Error: msg})
	return nil
}

// inbox is the page at /: every pending request, newest first, or the
// sign-in page.
func (s *Server) inbox(w http.ResponseWriter, r *http.Request) error {
	ss, cookie, err := s.sessionOf(r)
	switch {
	case errors.Is(err, errSignedOut):
		return s.showSignIn(w, http.StatusOK, "")
	case err != nil:
		return err
	}
	recs, err := s.pendingAll(r.Context())
	if err != nil {
		return err
	}
	cards := make([]cardView, 0, len(recs))
	for _, rec := range recs {
		cards = append(cards, s.card(rec))
	}
	s.render(w, http.StatusOK, "inbox", map[string]any{"Name": ss.Name, "CSRF": s.csrfToken(cookie), "Cards": cards})
	return nil
}

// signedIn checks that a call the inbox page makes (its list, an outcome)
// comes from a current session: a page whose session ended gets 401 and
// reloads into the sign-in page.
func (s *Server) signedIn(r *http.Request) error {
	switch _, _, err := s.sessionOf(r); {
	case errors.Is(err, errNoSession):
		return &pageErr{http.StatusUnauthorized, "Not signed in", "Sign in first: " + s.signInHow() + "."}
	case errors.Is(err, errSignedOut):
		return &pageErr{http.StatusUnauthorized, "Signed out", "Your session has ended; reload the page to sign in again."}
	default:
		return err
	}
}

// signInFirst is the 401 of a JSON call that needs a session and has
// none, err from sessionOf: "has ended" only when a session cookie came
// and is no longer good; a call that brought none is told how to sign in.
func (s *Server) signInFirst(err error) *webError {
	msg := "sign in first: your session has ended"
	if errors.Is(err, errNoSession) {
		msg = "sign in first: " + s.signInHow()
	}
	return &webError{http.StatusUnauthorized, api.CodeUnauthorized, msg, ""}
}

// signInHow says how to sign in to this bridge's inbox.
func (s *Server) signInHow() string {
	if s.tokens.open() {
		return "open the one-time sign-in link from the bridge's log, or run bridge signin-link on its machine for another"
	}
	return "sign in at " + s.root + "/ with an API token that has the answer scope"
}

// cards is the inbox's list alone, which the page fetches when the
// pending requests change.
func (s *Server) cards(w http.ResponseWriter, r *http.Request) error {
	if err := s.signedIn(r); err != nil {
		return err
	}
	recs, err := s.pendingAll(r.Context())
	if err != nil {
		return err
	}
	cards := make([]cardView, 0, len(recs))
	for _, rec := range recs {
		cards = append(cards, s.card(rec))
	}
	s.render(w, http.StatusOK, "cards", cards)
	return nil
}

// outcome is how an ended request ended, as its card shows it once
// answered: for the inbox, whose card of a request that someone else ended
// while the person was filling it in says why it goes.
func (s *Server) outcome(w http.ResponseWriter, r *http.Request) error {
	if err := s.signedIn(r); err != nil {
		return err
	}
	rec, err := s.store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if rec.Status == seam.StatusPending {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	s.render(w, http.StatusOK, "done", s.card(rec))
	return nil
}

// request is the page of one request: opened by a signed link, or by a
// signed-in answerer. A browser that is both gets the session's CSRF token
// with the link: once the link expires, the page's answers go by the
// session (responderOf), as its stream does (events), and the page of
// the expired link is the session's.
func (s *Server) request(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	data := map[string]any{}
	var rec *pending.Record
	var expired error // the page of the link, expired: unless signed in
	if e, person, sig, ok := linkQuery(q); ok {
		// The link is checked against the request as it is now (see
		// Links.Path).
		var err error
		if rec, err = s.store.Get(r.Context(), id); err != nil {
			return err
		}
		grant, err := s.grant(rec, e, person, sig)
		switch {
		case errors.Is(err, errBadLink):
			return &pageErr{http.StatusForbidden, "This link is not valid", "The link is incomplete or was not signed by this bridge for this request. Copy it again from the message, whole."}
		case err != nil && grant.who != nil:
			expired = &pageErr{http.StatusGone, "This link has expired", "The request is still waiting: tap Open in browser on the message again for a new link."}
		case err != nil && rec.ExpiresAt.IsZero():
			// The request never expires; its links last web.link_ttl.
			expired = &pageErr{http.StatusGone, "This link has expired", "The request is still waiting, but links to it last " + config.Duration(s.links.ttl).String() + " (web.link_ttl): answer it on the message in chat, or sign in to the inbox."}
		case err != nil:
			expired = &pageErr{http.StatusGone, "This link has expired", "The link expired with its request."}
		default:
			data["Link"] = dotted(e, person, sig)
			if grant.who != nil {
				data["Person"] = cmp.Or(grant.who.Name, grant.who.UserID)
			}
		}
	}
	_, cookie, err := s.sessionOf(r)
	switch {
	case err == nil:
		data["CSRF"] = s.csrfToken(cookie)
	case data["Link"] != nil:
		// The link will do, whatever became of a session.
	case errors.Is(err, errSignedOut) && expired != nil:
		return expired
	case errors.Is(err, errSignedOut):
		return s.showSignIn(w, http.StatusUnauthorized, "Sign in to see this request.")
	default:
		return err
	}
	if rec == nil {
		if rec, err = s.store.Get(r.Context(), id); err != nil {
			return err
		}
	}
	data["Card"] = s.card(rec)
	s.render(w, http.StatusOK, "request", data)
	return nil
}

// signIn takes an answer-scoped API token from the sign-in form and
// starts a session. The cookie holds the session, signed, not the token.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if s.tokens.open() {
		return s.showSignIn(w, http.StatusBadRequest, "This bridge has no API tokens: open the sign-in link from its log, or run bridge signin-link on its machine for another.")
	}
	tok, ok := s.tokens.match(r.PostFormValue("token"))
	switch {
	case !ok:
		s.log.Info("web sign-in refused: unknown token", "remote", r.RemoteAddr)
		return s.showSignIn(w, http.StatusUnauthorized, "That token is not valid.")
	case !tok.answer:
		return s.showSignIn(w, http.StatusForbidden, fmt.Sprintf("The token %q lacks the answer scope.", tok.name))
	}
	s.setSession(w, r, tok.name)
	http.Redirect(w, r, s.root+"/", http.StatusSeeOther)
	return nil
}

// signInOnce serves a one-time sign-in link of a bridge with no tokens:
// GET (and HEAD) show a button, whose POST uses the link. Opening the link
// does not use it, so that a chat's or a mail scanner's look at it (a link
// preview) leaves it for the person.
//
// A link that is used or expired sends a browser that holds a session to
// the inbox: it is the one the link signed in, come back to it (Back, the
// button tapped twice, the link opened again from the log), or one signed
// in some other way. It signs no browser in; one without a session is
// refused.
func (s *Server) signInOnce(w http.ResponseWriter, r *http.Request) error {
	once := r.PathValue("once")
	used := func() error {
		if _, _, err := s.sessionOf(r); err == nil {
			http.Redirect(w, r, s.root+"/", http.StatusSeeOther)
			return nil
		}
		return s.showSignIn(w, http.StatusForbidden, "That sign-in link was already used or has expired. Run bridge signin-link on the bridge's machine for a new one.")
	}
	if !s.tokens.open() {
		return used()
	}
	if r.Method != http.MethodPost {
		if !s.once.valid(once, s.now()) {
			return used()
		}
		s.render(w, http.StatusOK, "signin", signInData{Open: true, Once: s.root + "/web/signin/" + once})
		return nil
	}
	if !s.once.use(once, s.now()) {
		return used()
	}
	s.setSession(w, r, anonymous)
	http.Redirect(w, r, s.root+"/", http.StatusSeeOther)
	return nil
}

// signOut ends the browser's session: on every replica, so that a copy of
// its cookie is refused too, and in the browser.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) error {
	ss, cookie, err := s.sessionOf(r)
	if errors.Is(err, errSignedOut) { // nothing to end but the cookie
		s.clearSession(w, r)
		http.Redirect(w, r, s.root+"/", http.StatusSeeOther)
		return nil
	}
	token, terr := sentCSRF(w, r) // a script's, or the form's
	switch {
	case terr != nil:
		return &pageErr{http.StatusRequestEntityTooLarge, "Not signed out", "The form was larger than a sign-out form can be."}
	case !s.checkCSRF(token, cookie):
		return &pageErr{http.StatusForbidden, "Not signed out", "The form was stale; reload the page and try again."}
	case err == nil:
		err = s.signOutSession(r.Context(), ss, cookie)
	}
	if err != nil && !errors.Is(err, errSignedOut) {
		// Redis could not be read or written: this browser at least is
		// signed out.
		s.clearSession(w, r)
		return err
	}
	s.clearSession(w, r)
	http.Redirect(w, r, s.root+"/", http.StatusSeeOther)
	return nil
}

// linkHeader carries a signed link's "e.s" on the calls of its page, and
// a personal link's "e.s.p".
const linkHeader = "X-Askbridge-Link"

// responderOf authenticates a state-changing call on request id: by a
// signed link for exactly that request, as read now, or by a session with
// its CSRF token. It returns who answers, and the request when it read it.
// A link that grants nothing (one that expired while its page was open)
// gives way to the browser's session, if it has one, as the page's stream
// does (events): a signed-in answerer may answer any request.
func (s *Server) responderOf(w http.ResponseWriter, r *http.Request, id string) (*pending.Responder, *pending.Record, error) {
	if l := r.Header.Get(linkHeader); l != "" {
		rec, err := s.store.Get(r.Context(), id)
		if err != nil {
			return nil, nil, err
		}
		e, rest, _ := strings.Cut(l, ".")
		sig, person, _ := strings.Cut(rest, ".")
		grant, err := s.grant(rec, e, person, sig)
		switch {
		case err == nil && grant.who != nil:
			return grant.who, rec, nil
		case err == nil:
			return &pending.Responder{Surface: surfaceName, UserID: "link", Name: "someone with the link"}, rec, nil
		}
		switch by, serr := s.sessionResponder(w, r); {
		case errors.Is(serr, errSignedOut):
			return nil, nil, err // the link's refusal
		case serr != nil:
			return nil, nil, serr
		default:
			return by, rec, nil
		}
	}
	by, err := s.sessionResponder(w, r)
	if errors.Is(err, errSignedOut) {
		return nil, nil, s.signInFirst(err)
	}
	return by, nil, err
}

// sessionResponder authenticates a call by the browser's session and the
// session's CSRF token, or returns errSignedOut without a current session.
func (s *Server) sessionResponder(w http.ResponseWriter, r *http.Request) (*pending.Responder, error) {
	ss, cookie, err := s.sessionOf(r)
	if err != nil {
		return nil, err
	}
	token, err := sentCSRF(w, r)
	if err != nil {
		return nil, err
	}
	if !s.checkCSRF(token, cookie) {
		return nil, &webError{http.StatusForbidden, api.CodeForbidden, "the CSRF token is missing or wrong; reload the page", ""}
	}
	return &pending.Responder{Surface: surfaceName, UserID: ss.Name, Name: ss.Name}, nil
}

// A link that grants nothing, as grant says.
var (
	errBadLink     = &webError{http.StatusForbidden, api.CodeForbidden, "this link does not grant answering this request", ""}
	errLinkExpired = &webError{http.StatusForbidden, api.CodeForbidden, "this link has expired", ""}
)

// grant checks a link's e, person (of a personal link, or empty) and sig
// against rec, as read now: what the link grants, or errBadLink; or what
// it granted and errLinkExpired, for a link expired while rec is pending.
// The link of an ended request grants for good: its page shows how it
// ended, and an answer sent through it gets that (resolve writes it).
func (s *Server) grant(rec *pending.Record, e, person, sig string) (linkGrant, error) {
	g, ok := s.links.check(rec, e, person, sig)
	switch {
	case !ok:
		return linkGrant{}, errBadLink
	case rec.Status == seam.StatusPending && !s.now().Before(g.exp):
		return g, errLinkExpired
	}
	return g, nil
}

// sentCSRF returns the CSRF token a call carries: in X-CSRF-Token, as the
// page's script sends it, or else in the csrf field of a form (urlencoded
// or multipart), as a plain HTML form posts it. Only then is the body read
// here, as a form and within the API's limit: a call with the header
// keeps its body for the handler, which reads it as JSON whatever its
// Content-Type says.
func sentCSRF(w http.ResponseWriter, r *http.Request) (string, error) {
	if token := r.Header.Get("X-CSRF-Token"); token != "" {
		return token, nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, seam.MaxBodyBytes)
	err := r.ParseForm() // ParseMultipartForm would drop its error
	if err == nil {
		err = r.ParseMultipartForm(seam.MaxBodyBytes)
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return "", err
	}
	return r.PostForm.Get("csrf"), nil // a body that is no form has none
}

// resolve answers, decides or dismisses a request through the dispatcher,
// so every message posted for it on Slack or Discord is edited. The reply
// carries the request's outcome as HTML for the page to show, also when
// someone else was first (409).
func (s *Server) resolve(action string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		by, rec, err := s.responderOf(w, r, id)
		if err != nil {
			return err
		}
		if rec == nil {
			if rec, err = s.store.Get(r.Context(), id); err != nil {
				return err
			}
		}
		// Hash: the answer is checked against rec, and holds only for it,
		// not for a request created under its id since it was read.
		res := pending.Resolution{Status: seam.StatusAnswered, By: by, Kind: rec.Kind, From: rec, Hash: rec.Hash}
		if kind, ok := resolveKind[action]; ok && rec.Kind != kind {
			return s.otherKind(rec, kind)
		}
		if rec.Status != seam.StatusPending {
			// Its outcome, before the body is read: a form sent after
			// someone else answered is not the person's to mend.
			return s.alreadyEnded(w, rec)
		}
		switch action {
		case "answer":
			a, err := api.DecodeAnswer(w, r)
			if err != nil {
				return err
			}
			norm, err := rec.Questions.Normalize(a)
			if err != nil {
				return err
			}
			if surface.EmptyAnswer(rec.Questions.Questions, norm) {
				return &seam.Error{Code: seam.CodeInvalidRequest, Field: rec.Questions.Questions[0].ID, Message: surface.MsgChooseOrWrite}
			}
			if err := blankRequired(rec.Questions.Questions, norm); err != nil {
				return err
			}
			res.Answer = &norm
		case "decision":
			var d seam.Decision
			if err := api.Decode(w, r, &d); err != nil {
				return err
			}
			if d, err = d.Normalize(); err != nil {
				return err
			}
			res.Decision = &d
		case "dismiss":
			res.Status = seam.StatusDismissed
		}
		got, err := s.dispatch.Resolve(r.Context(), id, res)
		if errors.Is(err, pending.ErrAlreadyResolved) && got != nil {
			return s.alreadyEnded(w, got)
		}
		if err != nil {
			return err
		}
		s.log.Info("request resolved on the web", "request_id", id, "status", got.Status, "by", by.UserID)
		writeJSON(w, http.StatusOK, map[string]any{"status": got.Status, "html": s.outcomeHTML(got)})
		return nil
	}
}

// resolveKind is the kind of request each action but dismiss is for (the
// reverse of seam.Kind.Resolve).
var resolveKind = map[string]seam.Kind{seam.KindQuestion.Resolve(): seam.KindQuestion, seam.KindApproval.Resolve(): seam.KindApproval}

// otherKind is the 404 of an answer to an approval, or a decision on a
// question: as the API's, one the caller can act on, naming the request's
// kind and the path that serves the call, rather than read as a request
// that is gone.
func (s *Server) otherKind(rec *pending.Record, want seam.Kind) *webError {
	return &webError{http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("%s is %s, not %s: use %s/web/requests/%s/%s",
		rec.ID, rec.Kind.Article(), want.Article(), s.root, rec.ID, rec.Kind.Resolve()), ""}
}

// blankRequired refuses a, normalised, when it leaves blank a text field
// that the form requires (surface.TextRequired), as Slack's and Discord's
// forms do and in the API's words for a required input: the lone question
// without options, which blank would answer the request with nothing. The
// API lets an answerer skip it; a form that sends it blank was sent too
// soon. Normalize has checked input.required already.
func blankRequired(qs []seam.Question, a seam.Answer) error {
	for i, q := range qs {
		if surface.TextRequired(qs, i) && a.Answers[i].Custom == "" {
			return &seam.Error{Code: seam.CodeInvalidRequest, Field: q.ID, Message: q.FieldName() + " is required"}
		}
	}
	return nil
}

func (s *Server) alreadyEnded(w http.ResponseWriter, rec *pending.Record) error {
	writeJSON(w, http.StatusConflict, map[string]any{
		"error":  map[string]string{"code": api.CodeAlreadyResolved, "message": "the request already ended: " + string(rec.Status)},
		"status": rec.Status, "html": s.outcomeHTML(rec),
	})
	return nil
}

func (s *Server) outcomeHTML(rec *pending.Record) string {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, "done", s.card(rec)); err != nil {
		s.log.Error("rendering an outcome failed", "err", err)
	}
	return b.String()
}

// events streams server-sent events to a live page: "change" with a
// fingerprint of what the page shows (the inbox's pending ids, or one
// request's status) whenever it changes. The page then fetches what
// changed. A comment after 15 s of silence keeps proxies from closing the
// stream.
//
// The inbox reads the pending ids every poll interval, from the open
// indexes alone (no record is read). A request's page waits for the
// request to end, as a long-poll does: woken by the replica that ends it,
// it reads the record only on the store's periodic recheck.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	// next returns the fingerprint once it may have changed from last (the
	// first time, at once).
	var next func(ctx context.Context, first bool, last string) (string, error)
	bySession := true // not by a link: the stream ends with its session
	// until is when the credential that opened the stream expires: the
	// stream ends then, not at its next read. Zero: it does not expire.
	var until time.Time
	var key string // what the stream is counted by (streamLimits)
	// by is whom a link's page answers as once its link grants nothing
	// and the session took over: the page shows it (app.js).
	var by string
	q := r.URL.Query()
	if id := q.Get("id"); id != "" {
		e, person, sig, byLink := linkQuery(q)
		if exp, ok := s.linked(r.Context(), id, e, person, sig); ok {
			bySession, until = false, exp
			key = strings.Join([]string{"link", id, e, person, sig, clientNet(r.RemoteAddr)}, "\x00")
		} else {
			switch ss, cookie, err := s.sessionOf(r); {
			case errors.Is(err, errSignedOut):
				writeError(w, &webError{http.StatusForbidden, api.CodeForbidden, "following this request takes a link that grants it, or a session", ""})
				return
			case err != nil:
				refuseStream(w, err)
				return
			default:
				until, key = time.Unix(ss.Exp, 0), "session\x00"+sessionDigest(cookie)
				if byLink {
					by = ss.Name
				}
			}
		}
		release, over, ok := s.streams.take(key, !bySession)
		if !ok {
			s.tooManyStreams(w, r, over)
			return
		}
		defer release()
		// One watch for the stream's life: a wait cut short for a
		// keep-alive picks up from the record already read.
		watch := s.store.Watch(id)
		defer watch.Stop()
		var read *pending.Record // read after the watch began
		next = func(ctx context.Context, first bool, last string) (string, error) {
			var rec *pending.Record
			var err error
			switch {
			case read == nil:
				rec, err = s.store.Get(ctx, id)
			case read.Status == seam.StatusPending:
				rec, err = watch.Wait(ctx, read)
			default: // it ended: nothing more will change
				<-ctx.Done()
				return last, ctx.Err()
			}
			if err != nil {
				return "", err
			}
			read = rec
			return string(rec.Status), nil
		}
	} else {
		switch ss, cookie, err := s.sessionOf(r); {
		case errors.Is(err, errSignedOut):
			writeError(w, s.signInFirst(err))
			return
		case err != nil:
			refuseStream(w, err)
			return
		default:
			until, key = time.Unix(ss.Exp, 0), "session\x00"+sessionDigest(cookie)
		}
		release, over, ok := s.streams.take(key, false)
		if !ok {
			s.tooManyStreams(w, r, over)
			return
		}
		defer release()
		// The reads keep their own schedule: a step cut short for a
		// keep-alive waits out only what is left of the interval.
		var due time.Time
		next = func(ctx context.Context, first bool, last string) (string, error) {
			if wait := time.Until(due); !first && wait > 0 {
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(wait):
				}
			}
			due = time.Now().Add(s.poll)
			return s.pendingFingerprint(ctx)
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.stop, cancel)
	defer stop()
	if !until.IsZero() {
		// One timer, not a check at every step: a request's page may wait
		// far longer than that between reads.
		expired := time.AfterFunc(until.Sub(s.now()), cancel)
		defer expired.Stop()
	}

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 3000\n\n")
	if by != "" {
		fmt.Fprint(w, "event: by\ndata: "+strings.NewReplacer("\n", "", "\r", "").Replace(by)+"\n\n")
	}
	rc.Flush()

	var last string
	lastWrite := time.Now()
	for first := true; ; {
		// A session signed out (or expired) since the stream began ends
		// it; one that can't be checked now is checked at the next step.
		if bySession && !first {
			if _, _, err := s.sessionOf(r); errors.Is(err, errSignedOut) {
				return
			}
		}
		// Each step ends when a keep-alive is due, at the latest.
		step, cancelStep := context.WithDeadline(ctx, lastWrite.Add(s.keepAlive))
		fp, err := next(step, first, last)
		timedOut := step.Err() != nil
		cancelStep()
		var out string
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !timedOut:
			s.log.Debug("live update failed", "err", err)
			select { // not a busy loop while Redis is away
			case <-ctx.Done():
				return
			case <-time.After(s.poll):
			}
			continue
		case err == nil && (first || fp != last):
			first, last = false, fp
			out = "event: change\ndata: " + strings.ReplaceAll(fp, "\n", "") + "\n\n"
		case timedOut:
			out = ": ping\n\n"
		default:
			continue
		}
		if _, err := io.WriteString(w, out); err != nil {
			return
		}
		rc.Flush()
		lastWrite = time.Now()
	}
}

// linked reports whether e, p and s are a link that grants following
// request id as it is now (grant), and until when: while the request is
// pending, until the link expires; once it has ended, for good (zero), as
// its page shows its outcome for good.
func (s *Server) linked(ctx context.Context, id, e, person, sig string) (until time.Time, ok bool) {
	if sig == "" {
		return time.Time{}, false
	}
	rec, err := s.store.Get(ctx, id)
	if err != nil {
		return time.Time{}, false
	}
	grant, err := s.grant(rec, e, person, sig)
	switch {
	case err != nil:
		return time.Time{}, false
	case rec.Status != seam.StatusPending:
		return time.Time{}, true
	}
	return grant.exp, true
}

// tooManyStreams refuses a stream over a cap of streamLimits: 429 with
// the web's JSON error, which EventSource does not read (it gives up, and
// the page opens a new stream after a pause that grows to 30 s), for
// whoever looks at the response. Each refusal is counted, by its cap.
// A full replica is a warning (once a minute), one session's or link's
// many streams a debug line.
func (s *Server) tooManyStreams(w http.ResponseWriter, r *http.Request, over streamCap) {
	s.refused.WithLabelValues(string(over)).Inc()
	all, links := s.streams.open()
	switch {
	case over != capReplica:
		s.log.Debug("a live stream refused: too many open for its link or session", "remote", r.RemoteAddr, "streams", all)
	case s.streams.warnFull(s.now()):
		s.log.Warn("live streams opened by links refused: this replica holds as many as it takes; pages opened by links are not updated live until some close",
			"link_streams", links, "streams", all, "remote", r.RemoteAddr)
	}
	w.Header().Set("Retry-After", "30")
	writeError(w, errTooManyStreams)
}

// refuseStream refuses a stream whose session could not be checked: the
// store, which knows the sessions signed out, can't be read.
func refuseStream(w http.ResponseWriter, err error) {
	writeError(w, toError(err))
}

// pendingFingerprint is the ids of the pending questions, then of the
// pending approvals, each newest first.
func (s *Server) pendingFingerprint(ctx context.Context) (string, error) {
	var all []string
	for _, kind := range []seam.Kind{seam.KindQuestion, seam.KindApproval} {
		ids, err := s.store.PendingIDs(ctx, kind, inboxLimit)
		if err != nil {
			return "", err
		}
		all = append(all, ids...)
	}
	return strings.Join(all, ","), nil
}

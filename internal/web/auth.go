package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/pending"
)

// Signer signs and checks what the web app hands out: session cookies,
// CSRF tokens and answer links. Each use has its own label in the MAC, so
// a value signed for one can't be replayed as another.
type Signer struct{ key []byte }

// NewSigner returns a Signer keyed by secret, or by 32 random bytes when
// secret is empty: then sessions and links last as long as the process,
// and replicas can't check each other's.
func NewSigner(secret string) *Signer {
	key := []byte(secret)
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	return &Signer{key: key}
}

func (s *Signer) mac(label string, parts ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(label))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// Links makes the signed answer links of requests.
type Links struct {
	signer *Signer
	base   string        // public base URL, no trailing slash
	ttl    time.Duration // for requests that never expire
}

// NewLinks makes links to base (the bridge's public URL).
func NewLinks(s *Signer, base string, ttl time.Duration) *Links {
	if ttl <= 0 {
		ttl = 168 * time.Hour
	}
	return &Links{signer: s, base: strings.TrimRight(base, "/"), ttl: ttl}
}

// expiry is when a link to rec stops granting an answer: when rec expires,
// or ttl after it was created when it never does.
func (l *Links) expiry(rec *pending.Record) time.Time {
	if !rec.ExpiresAt.IsZero() {
		return rec.ExpiresAt
	}
	return rec.CreatedAt.Add(l.ttl)
}

// Path returns the signed path and query of the single-request page of rec.
// The signature covers rec's hash (what it asks, on which route) as well as
// its id: a request discarded and created again under its tool_call_id has
// the same id, and the first one's link must not open the second.
func (l *Links) Path(rec *pending.Record) string {
	exp := strconv.FormatInt(l.expiry(rec).Unix(), 10)
	sig := b64.EncodeToString(l.signer.mac("link", rec.ID, rec.Hash, exp))
	return "/r/" + url.PathEscape(rec.ID) + "?l=" + exp + "." + sig
}

// For returns the absolute signed link of rec: what the "Open in browser"
// buttons of Slack and Discord carry.
func (l *Links) For(rec *pending.Record) string { return l.base + l.Path(rec) }

// PersonalTTL is how long a personal link lasts at most: one person asked
// for it with a tap, and asks again as easily.
const PersonalTTL = time.Hour

// ForPerson returns the absolute signed link of rec for one person, whom
// a chat surface has checked may answer it: an answer sent through it is
// theirs. It is what a target that limits its responders hands the person
// who taps "Open in browser", privately; a link in the message itself
// would let anyone who sees it answer. It expires PersonalTTL after now,
// or with rec.
func (l *Links) ForPerson(rec *pending.Record, who pending.Responder, now time.Time) (link string, until time.Time) {
	exp := now.Add(PersonalTTL)
	if l.expiry(rec).Before(exp) {
		exp = l.expiry(rec)
	}
	e := strconv.FormatInt(exp.Unix(), 10)
	p, _ := json.Marshal(who)
	person := b64.EncodeToString(p)
	sig := b64.EncodeToString(l.signer.mac("person-link", rec.ID, rec.Hash, e, person))
	return l.base + "/r/" + url.PathEscape(rec.ID) + "?l=" + e + "." + sig + "." + person, time.Unix(exp.Unix(), 0)
}

// A link's query is one parameter, l=E.S for a shared link and l=E.S.P
// for a personal one: the expiry, the signature and the person, each
// free of dots (digits, base64url). A link is written as mrkdwn in Slack
// (<url|text>), where & must be sent as &amp;, and Slack's iOS app opens
// such a link with the &amp; left in it (slackapi/bolt-js#2103): a link
// of one parameter has no & to escape. Links from before (e=E&s=S&p=P)
// still open their page.
func linkQuery(q url.Values) (e, person, sig string, ok bool) {
	if l := q.Get("l"); l != "" {
		e, rest, _ := strings.Cut(l, ".")
		sig, person, _ := strings.Cut(rest, ".")
		return e, person, sig, true
	}
	if q.Has("s") {
		return q.Get("e"), q.Get("p"), q.Get("s"), true
	}
	return "", "", "", false
}

// dotted is a link's e, person and sig as its page's calls carry them
// (linkHeader): "e.s", or "e.s.p" for a personal link.
func dotted(e, person, sig string) string {
	if person == "" {
		return e + "." + sig
	}
	return e + "." + sig + "." + person
}

// linkGrant is what a checked link grants: answering request id until exp,
// as who when the link is personal.
type linkGrant struct {
	id  string
	exp time.Time
	who *pending.Responder
}

// check verifies a link's e, p (the person of a personal link, or empty)
// and s for rec, as read now, in constant time. An expired link still
// verifies (a finished request's page shows its outcome); whoever acts on
// it checks exp.
func (l *Links) check(rec *pending.Record, e, person, sig string) (linkGrant, bool) {
	got, err := b64.DecodeString(sig)
	if err != nil || rec == nil || rec.ID == "" || e == "" {
		return linkGrant{}, false
	}
	want := l.signer.mac("link", rec.ID, rec.Hash, e)
	if person != "" {
		want = l.signer.mac("person-link", rec.ID, rec.Hash, e, person)
	}
	if !hmac.Equal(got, want) {
		return linkGrant{}, false
	}
	sec, err := strconv.ParseInt(e, 10, 64)
	if err != nil {
		return linkGrant{}, false
	}
	g := linkGrant{id: rec.ID, exp: time.Unix(sec, 0)}
	if person != "" {
		raw, err := b64.DecodeString(person)
		if err != nil || json.Unmarshal(raw, &g.who) != nil || g.who == nil || g.who.Surface == "" || g.who.UserID == "" {
			return linkGrant{}, false // signed by us, so never: unless the key leaked
		}
	}
	return g, true
}

// session is a signed-in browser: the answer-scoped token it signed in
// with, by name, and when the session ends. Nonce tells apart two sessions
// started in the same second with the same token, so that signing one out
// leaves the other.
type session struct {
	Name  string `json:"n"`
	Exp   int64  `json:"e"`
	Nonce string `json:"r,omitempty"`
}

// errSignedOut is sessionOf's error for a request without a current
// session: no cookie, or a forged, expired or signed-out one. Without a
// cookie it is errNoSession, which is errSignedOut too: no session has
// ended, there was none.
var (
	errSignedOut = errors.New("not signed in")
	errNoSession = fmt.Errorf("%w: no session cookie", errSignedOut)
)

// sessionDigest names a session in the store, for sign-out: a digest of
// its cookie, which the store never sees.
func sessionDigest(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:16])
}

// The session cookie's names: __Host- when served over https, which the
// browser only accepts from a secure origin, for path /, with no domain.
const (
	cookieName       = "askbridge_session"
	secureCookieName = "__Host-askbridge_session"
)

// anonymous is the answerer of a bridge with no API tokens, as in the API.
const anonymous = "anonymous"

// tokens checks answer-scoped API tokens the way the API does: SHA-256
// digests compared in constant time, all of them every time.
type tokens struct {
	list []tokenDigest
}

type tokenDigest struct {
	name   string
	sum    [sha256.Size]byte
	answer bool
}

func newTokens(ts []api.Token) tokens {
	var t tokens
	for _, tok := range ts {
		t.list = append(t.list, tokenDigest{tok.Name, sha256.Sum256([]byte(tok.Token)), slices.Contains(tok.Scopes, api.ScopeAnswer)})
	}
	return t
}

func (t tokens) open() bool { return len(t.list) == 0 }

// match returns the token that value is.
func (t tokens) match(value string) (tokenDigest, bool) {
	sum := sha256.Sum256([]byte(strings.TrimSpace(value)))
	var found tokenDigest
	match := 0
	for _, d := range t.list {
		eq := subtle.ConstantTimeCompare(sum[:], d.sum[:])
		if eq == 1 {
			found = d
		}
		match |= eq
	}
	return found, match == 1
}

// byName returns the token named name.
func (t tokens) byName(name string) (tokenDigest, bool) {
	for _, d := range t.list {
		if d.name == name {
			return d, true
		}
	}
	return tokenDigest{}, false
}

// binding is what a session's MAC covers beyond the session itself: the
// digest of the token it signed in with, so that replacing or removing a
// token in the config ends its sessions.
func (t tokens) binding(name string) (string, bool) {
	if t.open() {
		return anonymous, name == anonymous
	}
	d, ok := t.byName(name)
	if !ok || !d.answer {
		return "", false
	}
	return b64.EncodeToString(d.sum[:]), true
}

// sessionValue encodes and signs a session for the cookie. The raw token
// never goes in it.
func (s *Server) sessionValue(ss session) string {
	bind, _ := s.tokens.binding(ss.Name)
	payload, _ := json.Marshal(ss)
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(s.signer.mac("session", p, bind))
}

// sessionOf returns the session of r's cookie and the cookie, if it is
// valid and current; errSignedOut if it is not; another error, with the
// cookie, when the store, which knows the sessions signed out, can't be
// read (sign-out still ends the session in the browser).
func (s *Server) sessionOf(r *http.Request) (session, string, error) {
	// Over https only the __Host- cookie counts: a plain one may have been
	// set by a sibling subdomain or over plain http (cookie tossing), to
	// sign the browser in as someone else.
	names := []string{secureCookieName, cookieName}
	if s.secure(r) {
		names = names[:1]
	}
	var raw string
	for _, name := range names {
		if c, err := r.Cookie(name); err == nil {
			raw = c.Value
			break
		}
	}
	if raw == "" {
		return session{}, "", errNoSession
	}
	p, sig, ok := strings.Cut(raw, ".")
	if !ok {
		return session{}, "", errSignedOut
	}
	payload, err1 := b64.DecodeString(p)
	mac, err2 := b64.DecodeString(sig)
	var ss session
	if err1 != nil || err2 != nil || json.Unmarshal(payload, &ss) != nil {
		return session{}, "", errSignedOut
	}
	bind, ok := s.tokens.binding(ss.Name)
	if !ok || !hmac.Equal(mac, s.signer.mac("session", p, bind)) {
		return session{}, "", errSignedOut
	}
	if s.now().Unix() >= ss.Exp {
		return session{}, "", errSignedOut
	}
	switch out, err := s.store.SignedOut(r.Context(), sessionDigest(raw)); {
	case err != nil:
		return session{}, raw, err
	case out:
		return session{}, "", errSignedOut
	}
	return ss, raw, nil
}

// signOutSession ends the session of cookie on every replica: a copy of the
// cookie is refused from now on, not only the browser's, which
// clearSession empties.
func (s *Server) signOutSession(ctx context.Context, ss session, cookie string) error {
	return s.store.SignOut(ctx, sessionDigest(cookie), time.Unix(ss.Exp, 0).Sub(s.now()))
}

// csrfToken is the CSRF token of a session: derived from its cookie value,
// so it needs no storage and changes with every sign-in.
func (s *Server) csrfToken(cookie string) string {
	return b64.EncodeToString(s.signer.mac("csrf", cookie))
}

// checkCSRF checks a CSRF token sent with a call, in constant time.
func (s *Server) checkCSRF(token, cookie string) bool {
	got, err := b64.DecodeString(token)
	if err != nil || len(got) == 0 {
		return false
	}
	return hmac.Equal(got, s.signer.mac("csrf", cookie))
}

// secure reports whether r reached the bridge over https: directly, behind
// a proxy that says so, or by a base_url that does.
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") || s.https
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, name string) {
	ttl := s.sessionTTL
	nonce := make([]byte, 12)
	rand.Read(nonce)
	value := s.sessionValue(session{Name: name, Exp: s.now().Add(ttl).Unix(), Nonce: b64.EncodeToString(nonce)})
	c := &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if s.secure(r) {
		c.Name, c.Secure = secureCookieName, true
	}
	http.SetCookie(w, c)
}

func (s *Server) clearSession(w http.ResponseWriter, r *http.Request) {
	for _, name := range []string{cookieName, secureCookieName} {
		c := &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode}
		if name == secureCookieName {
			if !s.secure(r) {
				continue
			}
			c.Secure = true
		}
		http.SetCookie(w, c)
	}
}

// onceLinks are the one-time sign-in links of a bridge with no API tokens,
// printed in its log at start (and by bridge signin-link): each signs in
// one browser, once.
type onceLinks struct {
	mu    sync.Mutex
	nonce map[string]time.Time // nonce -> until when it is valid
}

// maxOnceLinks is how many unused sign-in links are good at once. Each
// is asked for by hand; past this many, issuing one retires the oldest,
// so a loop asking for links can't grow the set (or each check's scan).
const maxOnceLinks = 16

func (o *onceLinks) issue(now time.Time, ttl time.Duration) string {
	buf := make([]byte, 24)
	rand.Read(buf)
	n := b64.EncodeToString(buf)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.nonce == nil {
		o.nonce = map[string]time.Time{}
	}
	var oldest string
	for k, until := range o.nonce {
		switch {
		case now.After(until):
			delete(o.nonce, k)
		case oldest == "" || until.Before(o.nonce[oldest]):
			oldest = k
		}
	}
	if len(o.nonce) >= maxOnceLinks {
		delete(o.nonce, oldest)
	}
	o.nonce[n] = now.Add(ttl)
	return n
}

// use consumes nonce: true the first time, within its validity.
func (o *onceLinks) use(nonce string, now time.Time) bool {
	return o.check(nonce, now, true)
}

// valid reports whether nonce would sign in now, without using it.
func (o *onceLinks) valid(nonce string, now time.Time) bool {
	return o.check(nonce, now, false)
}

func (o *onceLinks) check(nonce string, now time.Time, use bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, until := range o.nonce {
		if subtle.ConstantTimeCompare([]byte(k), []byte(nonce)) == 1 {
			if use || now.After(until) {
				delete(o.nonce, k)
			}
			return !now.After(until)
		}
	}
	return false
}

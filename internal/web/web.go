// Package web serves the bridge's web app from the same binary: the inbox
// at / where a signed-in answerer sees and answers every pending request,
// and the single-request pages that the signed "Open in browser" links of
// Slack and Discord messages open. Its assets are embedded; it needs no
// build step.
//
// Sign-in is an answer-scoped API token pasted once (the cookie holds an
// HMAC-signed session bound to that token, never the token), or, on a
// bridge with no API tokens, a one-time link printed in the log at start.
// Signing out records the session in the store as ended, for every replica.
// Every state-changing call checks the session's CSRF token and the
// request's origin. A signed link grants answering exactly its request
// until it expires.
package web

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

//go:embed assets templates
var embedded embed.FS

// Options configure a Server.
type Options struct {
	Store      *pending.Store
	Dispatcher *dispatch.Dispatcher
	Tokens     []api.Token // the API's; only answer-scoped ones sign in. None: one-time links
	Signer     *Signer     // signs sessions and links
	Links      *Links      // the signed answer links
	BaseURL    string      // the bridge's public URL; https makes the cookie Secure
	SessionTTL time.Duration
	Poll       time.Duration // how often the live inbox looks for changes; default 2 s
	KeepAlive  time.Duration // how long a live stream stays silent before a comment; default 15 s
	// The caps on live streams: per session, or per link and client
	// address (DefaultStreamsPerKey), and of those opened by links, on
	// this replica (DefaultLinkStreams).
	StreamsPerKey int
	LinkStreams   int
	Registry      prometheus.Registerer // where the web app's metrics go; nil: nowhere
	Now           func() time.Time
	Logger        *slog.Logger
}

// Server is the web app.
type Server struct {
	store      *pending.Store
	dispatch   *dispatch.Dispatcher
	tokens     tokens
	signer     *Signer
	links      *Links
	root       string // the path base_url puts the app under, without a trailing slash: "" at the root
	https      bool   // base_url's scheme, which url.Parse writes in lower case: https makes the cookie Secure
	sessionTTL time.Duration
	poll       time.Duration
	keepAlive  time.Duration
	streams    streamLimits
	refused    *prometheus.CounterVec // streams refused over a cap, by cap
	now        func() time.Time
	log        *slog.Logger
	once       onceLinks
	tmpl       *template.Template
	static     fs.FS // the assets
	assets     http.Handler
	cop        *http.CrossOriginProtection
	stop       context.Context // ends live streams when the server shuts down
	cancel     context.CancelFunc
}

// New builds the web app.
func New(o Options) (*Server, error) {
	if o.Signer == nil {
		o.Signer = NewSigner("")
	}
	if o.Links == nil {
		o.Links = NewLinks(o.Signer, o.BaseURL, 0)
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.StreamsPerKey <= 0 {
		o.StreamsPerKey = DefaultStreamsPerKey
	}
	if o.LinkStreams <= 0 {
		o.LinkStreams = DefaultLinkStreams
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// A base_url with a path (https://tools.example.com/askbridge) is a
	// proxy that hands the bridge what is under it, the path cut off: the
	// pages' own paths start with it, and only its origin is trusted.
	origin, root, err := splitBase(o.BaseURL)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"utc":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"root":    func() string { return root },
		// A boolean field's choices, labelled as Slack's and Discord's forms
		// and every status line label them.
		"boolLabel": surface.BooleanLabel,
	}).ParseFS(embedded, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web templates: %w", err)
	}
	static, err := fs.Sub(embedded, "assets")
	if err != nil {
		return nil, err
	}
	cop := http.NewCrossOriginProtection()
	if origin != "" {
		if err := cop.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("web: base_url as an origin: %w", err)
		}
	}
	s := &Server{
		store: o.Store, dispatch: o.Dispatcher, tokens: newTokens(o.Tokens),
		signer: o.Signer, links: o.Links, https: strings.HasPrefix(origin, "https://"), root: root,
		sessionTTL: o.SessionTTL, poll: o.Poll, keepAlive: o.KeepAlive, now: o.Now,
		streams: streamLimits{perKey: o.StreamsPerKey, links: o.LinkStreams}, refused: newRefusedStreams(o.Registry), log: o.Logger.With("surface", surfaceName),
		tmpl: tmpl, static: static, assets: http.StripPrefix("/assets/", http.FileServerFS(static)), cop: cop,
	}
	cop.SetDenyHandler(http.HandlerFunc(s.crossOrigin))
	s.stop, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// surfaceName is the web app's name in responders and status lines.
const surfaceName = "web"

// Mounter is where the web app's routes go: the API server, which
// measures them like its own.
type Mounter interface {
	Mount(pattern string, h http.Handler)
}

// Mount adds the web app's routes to m.
func (s *Server) Mount(m Mounter) {
	m.Mount("GET /{$}", s.page(s.inbox))
	m.Mount("GET /r/{id}", s.page(s.request))
	m.Mount("GET /assets/", s.assetsHandler())
	m.Mount("GET /web/signin/{once}", s.page(s.signInOnce))
	m.Mount("POST /web/signin/{once}", s.cop.Handler(s.page(s.signInOnce)))
	m.Mount("POST /web/signin", s.cop.Handler(s.page(s.signIn)))
	m.Mount("POST /web/signout", s.cop.Handler(s.page(s.signOut)))
	m.Mount("GET /web/cards", s.page(s.cards))
	m.Mount("GET /web/requests/{id}/outcome", s.page(s.outcome))
	m.Mount("GET /web/events", http.HandlerFunc(s.events))
	for _, action := range []string{"answer", "decision", "dismiss"} {
		m.Mount("POST /web/requests/{id}/"+action, s.cop.Handler(s.api(s.resolve(action))))
	}
}

// Shutdown ends the live streams, so that the HTTP server's shutdown does
// not wait for them. Register it with http.Server.RegisterOnShutdown.
func (s *Server) Shutdown() { s.cancel() }

// SignInLink returns a new one-time sign-in link for a bridge with no API
// tokens, valid for an hour, or "" when the bridge has tokens (their
// holders sign in by pasting one). base is the URL the bridge is reached at.
func (s *Server) SignInLink(base string) string {
	if !s.tokens.open() {
		return ""
	}
	return strings.TrimRight(base, "/") + "/web/signin/" + s.once.issue(s.now(), time.Hour)
}

// Links returns the server's link maker.
func (s *Server) Links() *Links { return s.links }

// securityHeaders are sent with every page: no script but the app's own, no
// framing, no referrer (links in plans go to other sites).
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// assetsHandler serves the embedded assets: files only, never a listing
// of a directory, and a missing one as the web's JSON 404.
func (s *Server) assetsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		name := strings.TrimPrefix(r.URL.Path, "/assets/")
		if fi, err := fs.Stat(s.static, name); err != nil || !fi.Mode().IsRegular() {
			writeError(w, &webError{http.StatusNotFound, api.CodeNotFound, "no such asset: " + r.URL.Path, ""})
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		s.assets.ServeHTTP(w, r)
	})
}

// crossOrigin answers a state-changing call that the cross-origin
// protection refused: as JSON for the inbox's calls, as the rest of the
// web's errors are, and as a page for a form.
func (s *Server) crossOrigin(w http.ResponseWriter, r *http.Request) {
	const msg = "Refused: the request came from another site, or from a browser too old to say where it came from."
	if strings.Contains(r.URL.Path, "/web/requests/") {
		s.api(func(http.ResponseWriter, *http.Request) error {
			return &webError{http.StatusForbidden, api.CodeForbidden, msg, ""}
		}).ServeHTTP(w, r)
		return
	}
	s.page(func(http.ResponseWriter, *http.Request) error {
		return &pageErr{http.StatusForbidden, "Refused", msg}
	}).ServeHTTP(w, r)
}

// pageErr is an error shown as a page, with its status.
type pageErr struct {
	status int
	title  string
	msg    string
}

func (e *pageErr) Error() string { return e.msg }

// page adapts a handler that renders HTML: its error is shown as a page.
func (s *Server) page(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-store")
		if err := h(w, r); err != nil {
			var pe *pageErr
			if !errors.As(err, &pe) {
				if r.Context().Err() != nil {
					return
				}
				e := toError(err)
				pe = &pageErr{e.status, "Something went wrong", e.msg}
				if e.status >= 500 {
					s.log.Log(r.Context(), s.store.LogLevel(err), "web page failed", "path", r.URL.Path, "err", err)
				}
			}
			s.render(w, pe.status, "message", map[string]any{"Title": pe.title, "Message": pe.msg})
		}
	})
}

func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("rendering a web page failed", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprint(w, b.String())
}

// webError is an error of the JSON endpoints, written as the API writes
// its errors, plus the field (a question id) it is about, if any.
type webError struct {
	status int
	code   string
	msg    string
	field  string
}

func (e *webError) Error() string { return e.msg }

// toError maps an error to what the browser is told. Causes that are not
// its business stay in the log.
func toError(err error) *webError {
	var we *webError
	if errors.As(err, &we) {
		return we
	}
	var se *seam.Error
	if errors.As(err, &se) {
		return &webError{http.StatusBadRequest, string(se.Code), se.Message, se.Field}
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &webError{http.StatusRequestEntityTooLarge, api.CodeTooLarge, "the request body is larger than 1 MiB", ""}
	case errors.Is(err, pending.ErrNotFound):
		return &webError{http.StatusNotFound, api.CodeNotFound, "no such request: it may have been removed after its retention", ""}
	case errors.Is(err, pending.ErrAlreadyResolved):
		return &webError{http.StatusConflict, api.CodeAlreadyResolved, "the request is already resolved", ""}
	case errors.Is(err, pending.ErrUnavailable):
		return &webError{http.StatusServiceUnavailable, api.CodeUnavailable, "the bridge can't reach its Redis; try again shortly", ""}
	}
	return &webError{http.StatusInternalServerError, api.CodeInternal, "internal error", ""}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError writes e as the API writes its errors:
// {"error":{"code","message","field"}}.
func writeError(w http.ResponseWriter, e *webError) {
	body := map[string]string{"code": e.code, "message": e.msg}
	if e.field != "" {
		body["field"] = e.field
	}
	writeJSON(w, e.status, map[string]any{"error": body})
}

// api adapts a JSON handler: its error is written as
// {"error":{"code","message","field"}}.
func (s *Server) api(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			if r.Context().Err() != nil {
				return
			}
			e := toError(err)
			if e.status >= 500 {
				s.log.Log(r.Context(), s.store.LogLevel(err), "web call failed", "path", r.URL.Path, "status", e.status, "err", err)
			}
			writeError(w, e)
		}
	})
}

// inboxLimit is how many pending requests of each kind the inbox shows.
const inboxLimit = 200

// pendingAll returns the pending questions and approvals, newest first.
func (s *Server) pendingAll(ctx context.Context) ([]*pending.Record, error) {
	qs, err := s.store.List(ctx, seam.KindQuestion, inboxLimit)
	if err != nil {
		return nil, err
	}
	as, err := s.store.List(ctx, seam.KindApproval, inboxLimit)
	if err != nil {
		return nil, err
	}
	all := append(qs, as...)
	slices.SortStableFunc(all, func(a, b *pending.Record) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return all, nil
}

// splitBase splits a public base URL into its origin and its path, without
// a trailing slash; both are empty for an empty base.
func splitBase(base string) (origin, root string, err error) {
	if base == "" {
		return "", "", nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", "", fmt.Errorf("web: base_url %q is not an absolute URL", base)
	}
	return u.Scheme + "://" + u.Host, strings.TrimRight(u.EscapedPath(), "/"), nil
}

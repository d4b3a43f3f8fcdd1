// Package api serves the bridge's HTTP API (CONTRACT §2): creating, reading,
// waiting for, cancelling and answering requests, plus health and metrics.
package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// Options configure a Server.
type Options struct {
	Store      *pending.Store
	Dispatcher *dispatch.Dispatcher
	Tokens     []Token       // none: the API is open, to programs on this machine
	BaseURL    string        // the bridge's public URL: an open API also answers calls addressed to its host
	MaxWait    time.Duration // longest ?wait= honoured (store.max_wait); 0: calls are never held
	// InMemory says the store is the embedded in-memory Redis: a request
	// made before this process started is gone, and NOT_FOUND says so.
	InMemory bool
	// SignInLink issues a one-time sign-in link to the web inbox, or
	// returns "" when the bridge has tokens (their holders sign in with
	// one). POST /v1/signin-link serves it.
	SignInLink func() string
	Registry   *prometheus.Registry
	Logger     *slog.Logger
}

// Server is the HTTP API.
type Server struct {
	store    *pending.Store
	dispatch *dispatch.Dispatcher
	auth     authenticator
	maxWait  time.Duration
	inMemory bool // see Options.InMemory
	signIn   func() string
	log      *slog.Logger
	mux      *http.ServeMux
	latency  *prometheus.HistogramVec
	stopping context.Context // done once the server shuts down: held calls end
	stop     context.CancelFunc
}

// New builds the API and registers its metrics on o.Registry.
func New(o Options) *Server {
	s := &Server{
		store:    o.Store,
		dispatch: o.Dispatcher,
		auth:     newAuthenticator(o.Tokens, o.BaseURL),
		maxWait:  o.MaxWait,
		inMemory: o.InMemory,
		signIn:   o.SignInLink,
		log:      o.Logger,
		mux:      http.NewServeMux(),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "askbridge_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and status code; long-polls included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "code"}),
	}
	s.stopping, s.stop = context.WithCancel(context.Background())
	o.Registry.MustRegister(s.latency, waitingCollector{o.Store}, pendingCollector{o.Store})

	for _, k := range []struct {
		kind             seam.Kind
		path, resolveSeg string
		create, resolve  func(http.ResponseWriter, *http.Request, Client) error
	}{
		{seam.KindQuestion, "/v1/questions", seam.KindQuestion.Resolve(), s.createQuestions, s.answer},
		{seam.KindApproval, "/v1/approvals", seam.KindApproval.Resolve(), s.createApproval, s.decide},
	} {
		s.handle("POST "+k.path, s.require(takes(k.create, "wait"), ScopeAsk))
		s.handle("GET "+k.path, s.require(takes(s.list(k.kind), "status", "limit", "tool_call_id", "wait"), ScopeAsk, ScopeAnswer))
		s.handle("DELETE "+k.path, s.require(takes(s.cancelByToolCall(k.kind), "tool_call_id"), ScopeAsk))
		s.handle("GET "+k.path+"/{id}", s.require(takes(s.get(k.kind), "wait"), ScopeAsk, ScopeAnswer))
		s.handle("DELETE "+k.path+"/{id}", s.require(takes(s.cancel(k.kind)), ScopeAsk))
		s.handle("POST "+k.path+"/{id}/"+k.resolveSeg, s.require(takes(k.resolve), ScopeAnswer))
		s.handle("POST "+k.path+"/{id}/dismiss", s.require(takes(s.dismiss(k.kind)), ScopeAnswer))
	}
	s.handle("POST /v1/signin-link", s.require(takes(s.signInLink), ScopeAnswer))
	s.handle("GET /healthz", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.handle("GET /readyz", func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.store.Ready(ctx); err != nil {
			if !errors.Is(err, pending.ErrUnavailable) {
				err = fmt.Errorf("%w: %w", pending.ErrUnavailable, err)
			}
			// Not ready until an outage is over, not merely until
			// Redis answers a PING (Store.Ready). A probe every few
			// seconds: during an outage the replica logs it as it
			// begins and ends (app's redisHealth), and writeError logs
			// each 503 at debug.
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}))
	s.handle("/", func(w http.ResponseWriter, r *http.Request) error {
		if allow := s.allowed(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return apiErr(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.URL.Path+" takes "+strings.Join(allow, ", ")+", not "+r.Method)
		}
		return apiErr(http.StatusNotFound, CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s
}

// allowed returns the methods that r's path is served for, when r's own
// is not. The catch-all "/" that writes errors as JSON also catches what
// ServeMux would answer with 405 on its own.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// Shutdown ends every held call (?wait=) at once, as if its wait had
// ended: it answers with the request still pending, and its agent waits
// again on another replica, instead of being cut off when the HTTP
// server's shutdown gives up on it. Register it with
// http.Server.RegisterOnShutdown.
func (s *Server) Shutdown() { s.stop() }

// Handler returns the server's handler.
func (s *Server) Handler() http.Handler { return WithBodyDeadline(s.cleanOnly(s.mux)) }

// cleanOnly answers a call to an API path that is not clean (an empty
// segment, as an empty id leaves in /v1/questions//answer, or a "." or
// "..") with NOT_FOUND, as it does an unknown path. h, a ServeMux, would
// redirect it to the clean path with a body that is no JSON, and a POST
// that follows it would reach another endpoint. Other paths (the web
// inbox's pages, for a browser) are left to h.
func (s *Server) cleanOnly(h http.Handler) http.Handler {
	notFound := s.measure("/", s.serve(func(w http.ResponseWriter, r *http.Request) error {
		p := r.URL.EscapedPath()
		why := `has a "." or ".." segment`
		switch {
		case strings.HasPrefix(p, "//"):
			why = "starts with // (a bridge URL that ends in /?)"
		case strings.Contains(p, "//"):
			why = "has an empty segment (an empty id?)"
		}
		return apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no such endpoint: %s %s %s; paths are taken as sent, not cleaned to %s", r.Method, p, why, cleanPath(p)))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
			h.ServeHTTP(w, r) // clean, as nearly every path is
			return
		}
		if clean := cleanPath(p); clean != p && (strings.HasPrefix(p, "/v1/") || strings.HasPrefix(clean, "/v1/")) {
			notFound.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// cleanPath is p as ServeMux cleans it: without empty, "." and ".."
// segments, and with its final slash, if any.
func cleanPath(p string) string {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

// BodyTimeout bounds the reading of a request's body. The server sets no
// read timeout of its own: one would cut off the long-polls, whose
// connections sit unread for minutes by design.
var BodyTimeout = 10 * time.Second

// WithBodyDeadline has reads of every request body h serves (the API's,
// the Slack and Discord callbacks', the web inbox's forms) fail after
// BodyTimeout. A request without a body gets none: net/http is already
// reading its connection, to notice a client that goes away, and a
// deadline would end a held call. For one with a body, net/http lifts the
// deadline itself once the body has ended, so a held call waits on; a
// body that stops coming fails its read, and net/http, which reads what
// is left of a body before it answers, gives up at once and closes the
// connection.
func WithBodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(BodyTimeout))
		}
		h.ServeHTTP(w, r)
	})
}

// Mount adds a handler of another part of the bridge (a surface's callback
// endpoint), measured like the API's own.
func (s *Server) Mount(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.measure(pattern, h))
}

func (s *Server) handle(pattern string, h handlerFunc) { s.Mount(pattern, s.serve(h)) }

// measure records the latency of h under pattern.
func (s *Server) measure(pattern string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.latency.WithLabelValues(pattern, strconv.Itoa(sw.status)).Observe(time.Since(start).Seconds())
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// decode reads a JSON body, an object, of at most seam.MaxBodyBytes into
// v. Agents' requests may carry fields the bridge does not know (newer
// harnesses add some); a person's answer or decision may not, nor name a
// field twice, since a misspelt or repeated "selected" would otherwise
// record a skip that can't be undone.
func decode(w http.ResponseWriter, r *http.Request, v any, strict bool) error {
	body, err := surface.ReadBody(w, r, seam.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return err
		case errors.Is(err, os.ErrDeadlineExceeded):
			return invalid(fmt.Sprintf("the request body did not arrive within %v", BodyTimeout))
		}
		return invalid("the request body could not be read: " + err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
		// As for a misspelt key: a key given twice keeps the last, which
		// may be a skip.
		if msg := seam.DuplicateKeyMessage(body); msg != "" {
			return invalid(msg)
		}
	}
	if err := dec.Decode(v); err != nil {
		var se *seam.Error
		if errors.As(err, &se) {
			return err
		}
		var (
			te *json.UnmarshalTypeError
			sy *json.SyntaxError
		)
		switch {
		case errors.Is(err, io.EOF):
			return invalid("the request body is empty; send a JSON object")
		case errors.As(err, &te):
			// No offset: one read by a field's own UnmarshalJSON (a
			// question's, an input's) counts from that field.
			return invalid(seam.TypeErrorMessage(body, te, ""))
		case errors.As(err, &sy), errors.Is(err, io.ErrUnexpectedEOF):
			return invalid("the request body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: "))
		case strict:
			// Where the misspelt key is: encoding/json names the key
			// alone.
			if msg := seam.UnknownFieldMessage(body, v); msg != "" {
				return invalid(msg)
			}
		}
		return invalid("the request body is not valid: " + strings.TrimPrefix(err.Error(), "json: "))
	}
	// encoding/json reads null into a struct as nothing: a create would
	// be EMPTY_QUESTIONS, an answer a missing "answers". It is not an
	// object, as [] is not.
	if bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("null")) {
		return invalid("the request body must be an object, not JSON null")
	}
	// Not dec.More(): it is false for a stray "}" or "]" after the value,
	// and {"answers":[]}] would record a skip.
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		if rest[0] == '}' || rest[0] == ']' {
			return invalid(fmt.Sprintf("the request body is not valid JSON: a stray %q after its value", rest[0]))
		}
		return invalid("the request body holds more than one JSON value")
	}
	return nil
}

func invalid(msg string) error {
	return &seam.Error{Code: seam.CodeInvalidRequest, Message: msg}
}

// Duration is a span in a request: a Go duration string ("90s", "10m") or
// a number of seconds, as a JSON number or in a string.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	// encoding/json hands every JSON value to UnmarshalJSON: one of another
	// type is refused as another field's is (seam.TypeErrorMessage), not
	// read as text that is "not a duration".
	if kind := otherJSON(b); kind != "" {
		return invalid("expires_in must be a string or a number (30s, 10m or a number of seconds), not a JSON " + kind)
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return invalid("expires_in: " + err.Error())
		}
	}
	v, err := parseDuration(s)
	if err != nil {
		return invalid("expires_in: " + err.Error())
	}
	*d = Duration(v)
	return nil
}

// otherJSON names the type of b, a JSON value, when it is no string,
// number or null: "boolean", "object" or "array"; otherwise "".
func otherJSON(b []byte) string {
	switch {
	case len(b) == 0:
		return ""
	case b[0] == 't' || b[0] == 'f':
		return "boolean"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	}
	return ""
}

// seconds is a number of seconds as JSON writes a number, without the
// sign: strconv.ParseFloat alone also takes NaN, Inf, 1_000 and 0x1p4.
var seconds = regexp.MustCompile(`^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// goDuration is what time.ParseDuration reads, so that one it fails on
// for its size alone (over 290 years) is told from one that is no duration.
var goDuration = regexp.MustCompile(`^\+?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// MaxDuration is the longest expires_in or wait, written either way: a
// number of seconds or a duration ("277777h"). About 31 years.
const MaxDuration = 1e9 * time.Second

func parseDuration(s string) (time.Duration, error) {
	if s == "" || s == "null" {
		return 0, nil
	}
	if strings.HasPrefix(s, "-") {
		// Else "-5" and "-5m" were "not a duration", which they are.
		return 0, fmt.Errorf("%q is negative; write 0 or more: 30s, 10m or a number of seconds", s)
	}
	if seconds.MatchString(s) {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || secs > MaxDuration.Seconds() {
			return 0, outOfRange(s)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && goDuration.MatchString(s), d > MaxDuration:
		return 0, outOfRange(s)
	case err != nil || d < 0:
		return 0, fmt.Errorf("%q is not a duration; write 30s, 10m or a number of seconds", s)
	}
	return d, nil
}

func outOfRange(s string) error {
	return fmt.Errorf("duration %q is out of range; the most is 1e9 seconds (about 31 years)", s)
}

// takes has h refuse a call with a query parameter it does not read: a
// misspelt ?wiat=30s would otherwise be ignored, and the call answered at
// once instead of held.
func takes(h func(http.ResponseWriter, *http.Request, Client) error, params ...string) func(http.ResponseWriter, *http.Request, Client) error {
	return func(w http.ResponseWriter, r *http.Request, c Client) error {
		if err := onlyParams(r, "this endpoint", params...); err != nil {
			return err
		}
		return h(w, r, c)
	}
}

// onlyParams is INVALID_REQUEST for r when its query holds a parameter
// other than params, which what (an endpoint) takes, holds one twice
// (the endpoint would read the first and ignore the other), or can't be
// read whole (a bad escape, a ";"), which would leave a parameter out.
func onlyParams(r *http.Request, what string, params ...string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return invalid("the query can't be read: " + err.Error())
	}
	ok := true
	for name, values := range q {
		ok = ok && slices.Contains(params, name) && len(values) == 1
	}
	if ok {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(q)) { // the first by name is named
		if slices.Contains(params, name) {
			if len(q[name]) > 1 {
				return invalid(fmt.Sprintf("query parameter %q is given %d times; give it once", name, len(q[name])))
			}
			continue
		}
		known := cmp.Or(surface.List(params), "no query parameters")
		return invalid(fmt.Sprintf("unknown query parameter %q; %s takes %s", name, what, known))
	}
	return nil
}

// wait returns the ?wait= of r, capped at the server's maximum.
func (s *Server) wait(r *http.Request) (time.Duration, error) {
	q := r.URL.Query()
	if err := notEmpty(q, "wait", "a duration (30s, 10m) or a number of seconds"); err != nil {
		return 0, err
	}
	d, err := parseDuration(q.Get("wait"))
	if err != nil {
		return 0, invalid("wait: " + err.Error())
	}
	return min(d, s.maxWait), nil
}

// notEmpty is INVALID_REQUEST when q gives name with no value (?wait=,
// ?wait): as a value it does not take, not as if name were left out,
// which a client that means one (a template's lost variable) would
// otherwise never learn. takes says what a value would be.
func notEmpty(q url.Values, name, takes string) error {
	if q.Has(name) && q.Get(name) == "" {
		return invalid(fmt.Sprintf("%s has no value; give %s, or leave %s out", name, takes, name))
	}
	return nil
}

// waitFor holds the call until rec leaves pending or the wait ends. When the
// client goes away it returns its context's error and nothing is written.
// The wait starts from rec: watch, on rec's id, must have started before
// rec was created.
func (s *Server) waitFor(r *http.Request, rec *pending.Record, d time.Duration, watch *pending.Watch) (*pending.Record, error) {
	if d <= 0 || rec.Status != seam.StatusPending {
		return rec, nil
	}
	ctx, cancel := s.holdContext(r, d)
	defer cancel()
	got, err := watch.Wait(ctx, rec)
	switch {
	case err == nil:
		return got, nil
	case ctx.Err() != nil && r.Context().Err() == nil:
		if got == nil {
			got = rec
		}
		return got, nil // the wait ended: answer with the pending record
	}
	return nil, discarded(err, rec.Client)
}

// discarded is err, from reading or waiting on a request, or when the
// request was discarded because no target took it (a caller re-attached
// while its create was posting it), and owner is "" or its client, the
// NO_PROVIDER its create returned. Only reads and waits say so: a cancel
// or an answer of the id finds nothing to act on (404), and a lookup by
// tool_call_id finds no request (404).
func discarded(err error, owner string) error {
	var d *pending.DiscardedError
	if errors.As(err, &d) && (owner == "" || owner == d.Client) {
		return &seam.Error{Code: seam.CodeNoProvider, Message: d.Why}
	}
	return err
}

// holdContext is the context of a call held for d: it ends when the wait
// does, when the client goes away, or when the server shuts down.
func (s *Server) holdContext(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	unhook := context.AfterFunc(s.stopping, cancel)
	return ctx, func() { unhook(); cancel() }
}

// create stores and posts a request, then waits if asked to.
func (s *Server) create(w http.ResponseWriter, r *http.Request, nr pending.NewRequest, c Client) error {
	wait, err := s.wait(r)
	if err != nil {
		return err
	}
	if err := seam.ValidatePlacement(nr.ToolCallID, nr.Route, nr.Caller); err != nil {
		return err
	}
	nr.Client = c.Name
	var watch *pending.Watch
	if wait > 0 {
		// Watched from before it exists, the request needs no read to be
		// waited on: any ending after the create wakes this call.
		nr.ID = pending.NewID(nr)
		watch = s.store.Watch(nr.ID)
		defer watch.Stop()
	}
	rec, created, err := s.dispatch.Create(r.Context(), nr)
	if err != nil {
		return err
	}
	if rec, err = s.waitFor(r, rec, wait, watch); err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		// Relative to the create's own URL ("questions/ID" from
		// /v1/questions): behind a proxy that serves the bridge under
		// base_url's path and strips it, an absolute path would leave
		// that path out.
		w.Header().Set("Location", path.Base(r.URL.Path)+"/"+url.PathEscape(rec.ID))
	}
	return writeJSON(w, status, recordOf(rec))
}

type createQuestionsBody struct {
	seam.Questions
	ToolCallID string       `json:"tool_call_id"`
	Caller     *seam.Caller `json:"caller"`
	Route      string       `json:"route"`
	ExpiresIn  Duration     `json:"expires_in"`
}

func (s *Server) createQuestions(w http.ResponseWriter, r *http.Request, c Client) error {
	var b createQuestionsBody
	if err := decode(w, r, &b, false); err != nil {
		return err
	}
	// In the seam's order (dsh-user-questions' ask()): no questions, then
	// a delegated caller, then what is wrong with the questions.
	if len(b.Questions.Questions) > 0 {
		if err := seam.ValidateCaller(b.Caller); err != nil {
			return err
		}
	}
	if err := b.Questions.Validate(); err != nil {
		return err
	}
	return s.create(w, r, pending.NewRequest{
		Kind: seam.KindQuestion, ToolCallID: b.ToolCallID, Route: b.Route, Caller: b.Caller,
		Questions: &b.Questions, ExpiresIn: time.Duration(b.ExpiresIn),
	}, c)
}

type createApprovalBody struct {
	seam.Approval
	ToolCallID string       `json:"tool_call_id"`
	Caller     *seam.Caller `json:"caller"`
	Route      string       `json:"route"`
	ExpiresIn  Duration     `json:"expires_in"`
}

func (s *Server) createApproval(w http.ResponseWriter, r *http.Request, c Client) error {
	var b createApprovalBody
	if err := decode(w, r, &b, false); err != nil {
		return err
	}
	if err := seam.ValidateCaller(b.Caller); err != nil {
		return err
	}
	if err := b.Approval.Validate(); err != nil {
		return err
	}
	if b.Approval.CallID == "" {
		b.Approval.CallID = b.ToolCallID
	}
	return s.create(w, r, pending.NewRequest{
		Kind: seam.KindApproval, ToolCallID: b.ToolCallID, Route: b.Route, Caller: b.Caller,
		Approval: &b.Approval, ExpiresIn: time.Duration(b.ExpiresIn),
	}, c)
}

// owner is the client whose requests c may see: all of them with the
// answer scope, its own otherwise.
func owner(c Client) string {
	if c.Can(ScopeAnswer) {
		return ""
	}
	return c.Name
}

// lookup reads a request of one kind that c may see.
func (s *Server) lookup(r *http.Request, kind seam.Kind, c Client) (*pending.Record, error) {
	rec, err := s.store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if owner(c) != "" && rec.Client != owner(c) {
		return nil, pending.ErrNotFound
	}
	if rec.Kind != kind {
		// Still 404, but one the caller can act on: a question's id sent to
		// /v1/approvals/ (or the reverse) would otherwise read as a request
		// that is gone, and on the in-memory bridge as one lost in a restart.
		return nil, apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("%s is %s, not %s: use /v1/%ss/%s%s",
			rec.ID, rec.Kind.Article(), kind.Article(), rec.Kind, rec.ID, sameCall(r.Pattern, rec.Kind)))
	}
	return rec, nil
}

// sameCall is what follows the id in pattern, the route r was served by,
// for a request of kind: an answer to an approval is its decision, and the
// reverse, so that the path the 404 names serves the call.
func sameCall(pattern string, kind seam.Kind) string {
	_, rest, _ := strings.Cut(pattern, "{id}")
	if rest == "/answer" || rest == "/decision" {
		return "/" + kind.Resolve()
	}
	return rest
}

// get answers GET /v1/questions/{id}: the request, held with ?wait=. A
// request discarded because no target took it is the NO_PROVIDER its
// create returned (see discarded).
func (s *Server) get(kind seam.Kind) func(http.ResponseWriter, *http.Request, Client) error {
	return func(w http.ResponseWriter, r *http.Request, c Client) error {
		rec, err := s.read(r, kind, c)
		if err != nil {
			return discarded(err, owner(c))
		}
		return writeJSON(w, http.StatusOK, recordOf(rec))
	}
}

// read reads the request r names, held as its ?wait= says.
func (s *Server) read(r *http.Request, kind seam.Kind, c Client) (*pending.Record, error) {
	wait, err := s.wait(r)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		return s.await(r, kind, c, wait)
	}
	return s.lookup(r, kind, c)
}

// await holds a GET ?wait= until the request leaves pending or the wait
// ends, reading the record once on the way (Wait's read after it
// registers, which checks the kind and owner) rather than looking it up
// first. When the client goes away it returns its context's error.
func (s *Server) await(r *http.Request, kind seam.Kind, c Client, d time.Duration) (*pending.Record, error) {
	ctx, cancel := s.holdContext(r, d)
	defer cancel()
	got, err := s.store.WaitKind(ctx, r.PathValue("id"), owner(c), kind)
	switch {
	case err == nil:
		return got, nil
	case ctx.Err() != nil && r.Context().Err() == nil:
		if got == nil { // the wait ended before its first read did
			return s.lookup(r, kind, c)
		}
		return got, nil // the wait ended: answer with the pending record
	case errors.Is(err, pending.ErrNotFound):
		if _, lerr := s.lookup(r, kind, c); lerr != nil {
			return nil, lerr // the other kind's id is named as such
		}
	}
	return nil, err
}

// list answers GET /v1/questions: with ?tool_call_id=, the caller's own
// request created under it (ask scope); otherwise the pending requests an
// answerer can work on (answer scope).
func (s *Server) list(kind seam.Kind) func(http.ResponseWriter, *http.Request, Client) error {
	return func(w http.ResponseWriter, r *http.Request, c Client) error {
		q := r.URL.Query()
		if q.Has("tool_call_id") {
			if err := onlyParams(r, "a lookup by tool_call_id", "tool_call_id", "wait"); err != nil {
				return err
			}
			tc, err := toolCallID(r)
			if err != nil {
				return err
			}
			// Not NO_PROVIDER for one discarded: an asker looks up its
			// tool_call_id to learn whether to create, and it should.
			r.SetPathValue("id", pending.IDFor(c.Name, kind, tc))
			rec, err := s.read(r, kind, c)
			if errors.Is(err, pending.ErrNotFound) {
				other, oerr := s.otherKind(r, kind, c.Name, owner(c), tc)
				if oerr != nil {
					return oerr
				}
				if other != nil {
					return wrongKind(r, kind, other, "")
				}
			}
			if err != nil {
				return err
			}
			return writeJSON(w, http.StatusOK, recordOf(rec))
		}
		if !c.Can(ScopeAnswer) {
			return apiErr(http.StatusForbidden, CodeForbidden, "listing requests needs the answer scope; an asker reads its own with ?tool_call_id=")
		}
		if err := onlyParams(r, "a listing (no tool_call_id)", "status", "limit"); err != nil {
			return err
		}
		if err := notEmpty(q, "status", "pending"); err != nil {
			return err
		}
		if st := q.Get("status"); st != "" && st != string(seam.StatusPending) {
			return invalid("status: only status=pending can be listed")
		}
		limit := 100
		if q.Has("limit") { // an empty one included
			n, err := strconv.Atoi(q.Get("limit"))
			if err != nil || n < 1 || n > 500 {
				return invalid("limit must be a number from 1 to 500")
			}
			limit = n
		}
		recs, err := s.store.List(r.Context(), kind, limit)
		if err != nil {
			return err
		}
		out := make([]Record, 0, len(recs))
		for _, rec := range recs {
			out = append(out, recordOf(rec))
		}
		key := "questions"
		if kind == seam.KindApproval {
			key = "approvals"
		}
		return writeJSON(w, http.StatusOK, map[string]any{key: out})
	}
}

// cancel withdraws a request for the agent that created it. Cancelling a
// request that already ended answers with the record as it ended.
func (s *Server) cancel(kind seam.Kind) func(http.ResponseWriter, *http.Request, Client) error {
	return func(w http.ResponseWriter, r *http.Request, c Client) error {
		rec, err := s.dispatch.Resolve(r.Context(), r.PathValue("id"), pending.Resolution{
			Status: seam.StatusCancelled, Kind: kind, Owner: c.Name,
		})
		if errors.Is(err, pending.ErrNotFound) {
			if _, lerr := s.lookup(r, kind, c); lerr != nil {
				return lerr // the other kind's id is named as such
			}
		}
		if err != nil && !errors.Is(err, pending.ErrAlreadyResolved) {
			return err
		}
		return writeJSON(w, http.StatusOK, recordOf(rec))
	}
}

// toolCallID is r's ?tool_call_id=, which names a request as its create
// did: not empty, and no longer than a create takes.
func toolCallID(r *http.Request) (string, error) {
	tc := r.URL.Query().Get("tool_call_id")
	if tc == "" {
		return "", invalid(r.Method + " " + r.URL.Path + " needs ?tool_call_id= with a value, or the id in the path")
	}
	if len(tc) > seam.MaxToolCallIDLen {
		return "", invalid(fmt.Sprintf("tool_call_id is longer than %d bytes", seam.MaxToolCallIDLen))
	}
	return tc, nil
}

// otherKind is the request of the kind other than kind that client
// created under tc, when whose (its owner, or "" for any; see owner) may
// see it, or nil when there is none. Ids are per kind (pending.IDFor),
// and one tool call is one kind: a call by tool_call_id that finds
// nothing of kind but this one means it. A request withdrawn before it
// was created is none: nobody was asked, and the create of kind that a
// cancel withdraws may be on the way.
func (s *Server) otherKind(r *http.Request, kind seam.Kind, client, whose, tc string) (*pending.Record, error) {
	other := seam.KindApproval
	if kind == seam.KindApproval {
		other = seam.KindQuestion
	}
	rec, err := s.store.Get(r.Context(), pending.IDFor(client, other, tc))
	switch {
	case errors.Is(err, pending.ErrNotFound): // a discarded one included
		return nil, nil
	case err != nil:
		return nil, err
	case rec.Kind != other || rec.Withdrawn || (whose != "" && rec.Client != whose):
		return nil, nil
	}
	return rec, nil
}

// wrongKind is NOT_FOUND for a call by tool_call_id to kind's path, r,
// that means rec, of the other kind: it names rec's kind and the call
// that serves it, as lookup does for an id.
func wrongKind(r *http.Request, kind seam.Kind, rec *pending.Record, more string) error {
	return apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("%s names %s, not %s: use %s /v1/%ss?tool_call_id=%s%s",
		rec.ToolCallID, rec.Kind.Article(), kind.Article(), r.Method, rec.Kind, url.QueryEscape(rec.ToolCallID), more))
}

// cancelByToolCall cancels the caller's request created under
// ?tool_call_id=, for an agent whose turn ended before the create's reply
// told it the id.
func (s *Server) cancelByToolCall(kind seam.Kind) func(http.ResponseWriter, *http.Request, Client) error {
	return func(w http.ResponseWriter, r *http.Request, c Client) error {
		tc, err := toolCallID(r)
		if err != nil {
			return err
		}
		for range 2 {
			rec, err := s.dispatch.Resolve(r.Context(), pending.IDFor(c.Name, kind, tc), pending.Resolution{
				Status: seam.StatusCancelled, Kind: kind, Owner: c.Name,
			})
			if errors.Is(err, pending.ErrNotFound) {
				// Nothing under it yet: its create may still be on the way
				// (the agent's turn ended before the create's reply).
				// Withdrawn now, the create finds it cancelled when it
				// lands, and posts nothing.
				rec, err = s.store.Withdraw(r.Context(), c.Name, kind, tc)
				if errors.Is(err, pending.ErrExists) {
					continue // created in between: cancel it as any other
				}
			}
			if err != nil && !errors.Is(err, pending.ErrAlreadyResolved) {
				return err
			}
			// Withdrawn before anything was asked under it, beside a request
			// of the other kind that is pending: that one is likely what the
			// caller meant, and a 200 would read as if it were cancelled.
			if rec.Withdrawn {
				if other, _ := s.otherKind(r, kind, c.Name, c.Name, tc); other != nil && other.Status == seam.StatusPending {
					return wrongKind(r, kind, other, fmt.Sprintf("; it is still pending, and no %s will be asked under %s", kind, tc))
				}
			}
			return writeJSON(w, http.StatusOK, recordOf(rec))
		}
		return pending.ErrExists // created and deleted in between, twice: not seen in practice
	}
}

// responder is who answers through the API: the token's name.
func responder(c Client) *pending.Responder {
	return &pending.Responder{Surface: "api", UserID: c.Name, Name: c.Name}
}

// resolvePending ends a pending request of kind for c. check, when not nil,
// validates the resolution against the record first.
func (s *Server) resolvePending(w http.ResponseWriter, r *http.Request, kind seam.Kind, res pending.Resolution, check func(*pending.Record, *pending.Resolution) error) error {
	rec, err := s.lookup(r, kind, Client{Scopes: []string{ScopeAnswer}})
	if err != nil {
		return err
	}
	if rec.Status != seam.StatusPending {
		return ended(rec)
	}
	if check != nil {
		if err := check(rec, &res); err != nil {
			return err
		}
	}
	// Hash: check validated the resolution against rec; it holds only for
	// rec, not for a request created under its id since it was read.
	res.Kind, res.From, res.Hash = kind, rec, rec.Hash
	got, err := s.dispatch.Resolve(r.Context(), rec.ID, res)
	if errors.Is(err, pending.ErrAlreadyResolved) && got != nil {
		return ended(got) // another was first, or the request expired meanwhile
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, recordOf(got))
}

// ended is ALREADY_RESOLVED for rec, which has ended: it says how.
func ended(rec *pending.Record) error {
	return apiErr(http.StatusConflict, CodeAlreadyResolved, "the request already ended: "+string(rec.Status))
}

// answerBody is the body of POST /v1/questions/{id}/answer. Its answers
// are required: a body without them ({}, a wrong variable sent; null is
// not an object, see decode) would otherwise record every question as
// skipped, for good. [] skips them all.
type answerBody struct {
	Answers *[]seam.AnswerItem `json:"answers"`
}

// DecodeAnswer reads an answer body as POST /v1/questions/{id}/answer
// takes it, for every handler that takes one (the web inbox's too).
func DecodeAnswer(w http.ResponseWriter, r *http.Request) (seam.Answer, error) {
	var b answerBody
	if err := decode(w, r, &b, true); err != nil {
		return seam.Answer{}, err
	}
	if b.Answers == nil {
		return seam.Answer{}, invalid(`the answer has no "answers": send {"answers":[{"id","selected","custom"}...]}, or "answers":[] to skip every question`)
	}
	return seam.Answer{Answers: *b.Answers}, nil
}

// Decode reads a JSON body strictly (unknown fields refused) as the API
// reads answers and decisions, with its errors: for other handlers that
// take the API's bodies (the web inbox).
func Decode(w http.ResponseWriter, r *http.Request, v any) error { return decode(w, r, v, true) }

func (s *Server) answer(w http.ResponseWriter, r *http.Request, c Client) error {
	a, err := DecodeAnswer(w, r)
	if err != nil {
		return err
	}
	return s.resolvePending(w, r, seam.KindQuestion, pending.Resolution{Status: seam.StatusAnswered, By: responder(c)},
		func(rec *pending.Record, res *pending.Resolution) error {
			norm, err := rec.Questions.Normalize(a)
			res.Answer = &norm
			return err
		})
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request, c Client) error {
	var d seam.Decision
	if err := decode(w, r, &d, true); err != nil {
		return err
	}
	d, err := d.Normalize()
	if err != nil {
		return err
	}
	return s.resolvePending(w, r, seam.KindApproval, pending.Resolution{Status: seam.StatusAnswered, Decision: &d, By: responder(c)}, nil)
}

func (s *Server) dismiss(kind seam.Kind) func(http.ResponseWriter, *http.Request, Client) error {
	return func(w http.ResponseWriter, r *http.Request, c Client) error {
		return s.resolvePending(w, r, kind, pending.Resolution{Status: seam.StatusDismissed, By: responder(c)}, nil)
	}
}

// signInLink issues a one-time sign-in link to the web inbox of a bridge
// without tokens: the one printed at start is used once and lasts an hour,
// and restarting the bridge for another would lose an embedded Redis's
// requests. The open API answers only programs on this machine, which
// may answer through it anyway.
func (s *Server) signInLink(w http.ResponseWriter, r *http.Request, _ Client) error {
	var link string
	if s.signIn != nil {
		link = s.signIn()
	}
	if link == "" {
		return apiErr(http.StatusNotFound, CodeNotFound, "this bridge has API tokens: sign in to the web inbox with an answer-scoped token")
	}
	return writeJSON(w, http.StatusCreated, map[string]string{"url": link})
}

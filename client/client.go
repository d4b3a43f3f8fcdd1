// Package client is the Go client of askbridge's HTTP API: an agent asks a
// person a question (or for approval of a tool call) and waits for the
// answer, and an answerer (a web inbox, the bridge CLI, a test) lists and
// answers what is pending.
//
// Ask and Approve are the whole life cycle in one call: they create the
// request idempotently (under a tool_call_id, so a retried create re-attaches
// to the request it already made), wait for it with bounded long-polls that
// ride out a restarting bridge, withdraw it when the caller's context ends,
// and turn a request that ended without an answer into an *Error carrying
// the seam's code:
//
//	ans, _, err := c.Ask(ctx, client.QuestionRequest{Questions: qs})
//	switch {
//	case errors.Is(err, client.ErrTimedOut):   // nobody answered in time
//	case errors.Is(err, client.ErrCancelled):  // a person declined
//	case errors.Is(err, client.ErrNoProvider): // no answerer: try the next one
//	}
//
// Create, Wait, Get, Cancel, Answer, Decide, Dismiss and Pending are the
// single API calls underneath.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
)

// DefaultPollWait is how long one long-poll asks the bridge to hold the
// call; the bridge caps it at its store.max_wait (60 s by default).
const DefaultPollWait = 25 * time.Second

// WithdrawTimeout bounds the withdrawal (DELETE, retried while the bridge
// fails as it may not for long) that Create, Wait, Ask and Approve make
// after the caller's context ended.
const WithdrawTimeout = 10 * time.Second

// Client talks to one bridge. It is safe for concurrent use.
type Client struct {
	base     string // scheme://host[:port][/prefix], no trailing slash
	shown    string // base as errors show it: a password in it hidden
	token    string
	hc       *http.Client
	pollWait time.Duration

	// Retry policy of the wait loop and of a create that reached the bridge:
	// backoff doubling from backoff to maxBackoff, until failures have
	// lasted retryFor.
	backoff, maxBackoff, retryFor time.Duration
	grace                         time.Duration // beyond a call's wait before the client stops waiting for its response
	withdrawTimeout               time.Duration // for the DELETE sent after the caller's context ended

	// now and wait, when set (tests set them), stand in for time.Now and
	// sleep as the clock the retries keep their window by and wait on.
	now  func() time.Time
	wait func(context.Context, time.Duration) error

	// answered is set once a call got an HTTP response: something that
	// speaks HTTP is at the URL, and a connection closed without a
	// response is a bridge stopping (see transportError).
	answered atomic.Bool
}

// ClientOption configures a Client. (Option is the seam's question option.)
type ClientOption func(*Client)

// WithToken sets the bearer token sent as Authorization: Bearer <token>.
// Asking needs a token with the ask scope, answering and listing one with
// the answer scope. A bridge with no tokens configured needs none.
func WithToken(token string) ClientOption { return func(c *Client) { c.token = token } }

// WithHTTPClient sets the HTTP client; default a client of its own with no
// overall timeout (each call gets a deadline from its wait). A Timeout on
// hc must exceed the poll wait, or every long-poll fails. Unless hc has a
// CheckRedirect of its own, the client does not follow redirects (see New).
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// WithPollWait sets how long each long-poll asks the bridge to hold the
// call (default DefaultPollWait). Shorter polls cost more requests; they
// suit proxies that cut idle connections early.
func WithPollWait(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.pollWait = d
		}
	}
}

// WithRetryFor sets how long a wait, or a create that may have reached the
// bridge, keeps trying while the bridge can't be reached or answers 502,
// 503 or 429 (default 2 minutes): the last try is made as it ends, and a
// call still failing then fails, and the request it waited on is left
// pending, for the caller to wait on again or cancel.
func WithRetryFor(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.retryFor = d
		}
	}
}

// New returns a client of the bridge at baseURL, e.g. http://127.0.0.1:8080.
// baseURL may have a path (a proxy's prefix), but no query or fragment:
// the client adds /v1/... to it. The error for one shows no part of
// baseURL: a query may hold a secret, and where it starts in a URL that
// is malformed is a guess.
//
// A redirect is not followed: it fails the call with an *Error naming where
// it leads (and the URL to use instead). Followed, a 301 or 302 turns a
// create into a GET of the request list, and one to another host drops
// the token.
func New(baseURL string, opts ...ClientOption) (*Client, error) {
	if strings.ContainsAny(baseURL, "?#") {
		// As the dsh plugin refuses them. Kept, the query would come before
		// /v1/... in every call's URL.
		return nil, errors.New("the bridge URL has a query or fragment (not shown: it may hold a secret); write the bridge's base URL alone, as http://host:port or https://host, to which the client adds /v1/...")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bridge URL %q: write it as http://host:port or https://host", redactURL(baseURL))
	}
	c := &Client{
		base:            strings.TrimSuffix(baseURL, "/"),
		shown:           strings.TrimSuffix(u.Redacted(), "/"),
		hc:              &http.Client{},
		pollWait:        DefaultPollWait,
		backoff:         250 * time.Millisecond,
		maxBackoff:      5 * time.Second,
		retryFor:        2 * time.Minute,
		grace:           30 * time.Second,
		withdrawTimeout: WithdrawTimeout,
	}
	for _, o := range opts {
		o(c)
	}
	if c.hc.CheckRedirect == nil {
		hc := *c.hc // the caller's, if given, is left as it is
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		c.hc = &hc
	}
	if c.token != strings.TrimSpace(c.token) || strings.ContainsFunc(c.token, unicode.IsControl) {
		// No bridge accepts such a token (its config refuses it), and
		// net/http would refuse to send it: every call would fail as if the
		// bridge were unreachable. The token itself is never shown.
		return nil, errors.New("API token: starts or ends with white space, or holds a control character (a final newline read from a file?)")
	}
	return c, nil
}

// URL returns the bridge's base URL as logs and messages may show it: a
// password in it (a proxy's basic auth) is hidden.
func (c *Client) URL() string { return c.shown }

// redactURL is raw, which New could not use as a URL, without what may be a
// password: anything before an @.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		return "..." + raw[i:]
	}
	return raw
}

// NewToolCallID returns a random tool_call_id. Ask and Create make one up
// when the request has none; make your own and keep it to re-attach to the
// same request after a restart.
func NewToolCallID() string {
	var b [16]byte
	rand.Read(b[:])
	return "askbridge-" + hex.EncodeToString(b[:])
}

// Ask asks the questions of req and waits until a person answers. It
// returns the canonical answer (one item per question, in request order)
// and the final record.
//
// A request that ends without an answer is an *Error with the seam's code:
// ErrCancelled (a person declined), ErrTimedOut (expires_in passed),
// ErrAborted (withdrawn). When ctx ends first, Ask withdraws the question
// (DELETE) and returns an error wrapping ctx's error and, once withdrawn,
// ErrAborted; the error says why in the words of ctx's cause, where it has
// one (context.WithCancelCause), and wraps that too. No answerer taking the request is ErrNoProvider; a bridge that
// can't be reached is ErrUnreachable.
func (c *Client) Ask(ctx context.Context, req QuestionRequest) (Answer, *Record, error) {
	rec, err := c.askWait(ctx, req)
	if err != nil {
		return Answer{}, rec, err
	}
	if rec.Answer == nil {
		return Answer{}, rec, fmt.Errorf("question %s: %w: answered without an answer", rec.ID, errBadResponse)
	}
	return *rec.Answer, rec, nil
}

// Approve asks a person to allow or reject the tool call of req and waits
// for the decision; otherwise as Ask. A rejection is a decision, not an
// error: check Decision.Outcome.
func (c *Client) Approve(ctx context.Context, req ApprovalRequest) (Decision, *Record, error) {
	rec, err := c.askWait(ctx, req)
	if err != nil {
		return Decision{}, rec, err
	}
	if rec.Decision == nil {
		return Decision{}, rec, fmt.Errorf("approval %s: %w: decided without a decision", rec.ID, errBadResponse)
	}
	return *rec.Decision, rec, nil
}

// askWait creates req, waits for it to end and returns its record when it
// was answered, or its error.
func (c *Client) askWait(ctx context.Context, req Request) (*Record, error) {
	rec, err := c.Create(ctx, req, c.pollWait)
	if err != nil {
		return rec, err
	}
	if rec, err = c.Wait(ctx, rec); err != nil {
		return rec, err
	}
	if err := rec.Err(); err != nil {
		return rec, fmt.Errorf("%s %s: %w", rec.Kind, rec.ID, err)
	}
	return rec, nil
}

// Create creates the request and returns its record; with wait > 0 the
// bridge holds the call until the request ends or wait passes (the record
// is then still pending). req gets a random tool_call_id when it has none.
//
// A create that reached the bridge and failed on the way back (a network
// error, 503 UNAVAILABLE) is sent again under the same tool_call_id, which
// re-attaches to the request instead of making a second. A bridge that
// can't be reached at all is ErrUnreachable, at once, and so is a URL
// where something other than the bridge answers (ErrWrongURL), a
// database included: one that closes the connection without a response
// is told from a bridge stopping by a GET of /healthz, sent when nothing
// at the URL has answered in HTTP yet. When ctx ends before
// the bridge answered, the request (if it was made) is withdrawn, since
// the caller never learned its id: Create then returns the withdrawn record
// and an error wrapping ctx's. A request given up on after a create that
// may have reached the bridge is looked up by its tool_call_id and, when
// it was made and is pending, withdrawn, so that nobody answers it for
// nothing; when it was answered meanwhile, Create returns it.
func (c *Client) Create(ctx context.Context, req Request, wait time.Duration) (*Record, error) {
	ownID := req.toolCallID() == "" // made up here: nobody will create under it again
	req = req.withToolCallID()
	kind := req.kind()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", kind, err)
	}
	var wrote atomic.Bool
	mayExist := false // an attempt failed after it may have reached the bridge
	r := retrier{c: c}
	for {
		var rec Record
		err := c.do(ctx, call{method: http.MethodPost, path: collection(kind), query: waitQuery(wait), body: body, wait: wait, wrote: &wrote}, &rec)
		switch {
		case err == nil:
			return &rec, nil
		case ctx.Err() != nil:
			return c.abandon(ctx, kind, req.toolCallID(), body, wrote.Load())
		case !mayExist && errors.Is(err, ErrWrongURL):
			// err names the URL and what is wrong with it; what answered
			// there is no bridge, so nothing was asked.
			return nil, &worded{fmt.Sprintf("create %s: %v", kind, err), []error{ErrUnreachable, err}}
		case !wrote.Load():
			return nil, fmt.Errorf("create %s: %w at %s: %w", kind, ErrUnreachable, c.shown, err)
		case errors.Is(err, ErrConflict):
			// The tool_call_id names another request: nothing of this one's.
			return nil, fmt.Errorf("create %s: %w", kind, err)
		case !transient(err):
			return c.giveUp(ctx, kind, req.toolCallID(), body, ownID, mayExist, fmt.Errorf("create %s: %w", kind, err))
		}
		mayExist = true
		if err := r.pause(ctx, err); err != nil {
			if ctx.Err() != nil {
				return c.abandon(ctx, kind, req.toolCallID(), body, true)
			}
			return c.giveUp(ctx, kind, req.toolCallID(), body, ownID, true, fmt.Errorf("create %s: %w", kind, err))
		}
	}
}

// giveUp ends a create that failed with err when an earlier attempt may
// have made the request. Under a tool_call_id made up by Create, it is
// withdrawn by it, which also stops a create still on its way. Under the
// caller's, it is looked up instead (a withdrawal by tool_call_id is
// recorded even where nothing was made, and the caller's next create
// under it would find that) and, pending, withdrawn; answered meanwhile,
// it is returned as the create's outcome.
func (c *Client) giveUp(ctx context.Context, kind Kind, toolCallID string, body []byte, ownID, mayExist bool, err error) (*Record, error) {
	if !mayExist {
		return nil, err
	}
	if ownID {
		return outcome(c.abandonFor(ctx, kind, toolCallID, body, err))
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.withdrawTimeout)
	defer cancel()
	var rec Record
	q := url.Values{"tool_call_id": {toolCallID}}
	lerr := c.retried(wctx, func() error {
		return c.do(wctx, call{method: http.MethodGet, path: collection(kind), query: q}, &rec)
	})
	switch {
	case errors.Is(lerr, ErrNotFound):
		return nil, err // never made
	case lerr != nil:
		return nil, fmt.Errorf("%w; it may have been made, and looking it up failed: %w", err, lerr)
	case rec.ID == "" || rec.ToolCallID != toolCallID:
		// Not this request's record (a bridge from before the lookup by
		// tool_call_id answers with a list).
		return nil, fmt.Errorf("%w; it may have been made, and this bridge can't look it up", err)
	case rec.Status != StatusPending:
		return &rec, nil // it ended (answered, say) while the create failed
	}
	return outcome(c.withdrawFor(ctx, &rec, err))
}

// outcome is a give-up's withdrawal as Create returns it: a request that
// ended otherwise before it was withdrawn (answered, say) is the create's
// outcome, with no error.
func outcome(rec *Record, err error) (*Record, error) {
	if rec != nil && rec.Status != StatusPending && rec.Status != StatusCancelled {
		return rec, nil
	}
	return rec, err
}

// abandon withdraws a request whose create may have landed, or may still
// be on its way, but whose answer never arrived because ctx ended: it is
// cancelled by its tool_call_id, which also keeps a create still on its
// way from asking anyone (the bridge records it withdrawn).
func (c *Client) abandon(ctx context.Context, kind Kind, toolCallID string, body []byte, sent bool) (*Record, error) {
	if !sent {
		return nil, fmt.Errorf("create %s: %w", kind, ended(ctx))
	}
	return c.abandonFor(ctx, kind, toolCallID, body, ended(ctx))
}

// abandonFor withdraws by tool_call_id a request whose create may have
// landed, or may still be on its way, because of cause.
func (c *Client) abandonFor(ctx context.Context, kind Kind, toolCallID string, body []byte, cause error) (*Record, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.withdrawTimeout)
	defer cancel()
	var rec Record
	q := url.Values{"tool_call_id": {toolCallID}}
	err := c.retried(wctx, func() error {
		return c.do(wctx, call{method: http.MethodDelete, path: collection(kind), query: q}, &rec)
	})
	if errors.Is(err, ErrNotFound) {
		// A bridge from before 2026-12-03 withdraws only what exists: make
		// sure it does (the same tool_call_id re-attaches), then cancel it.
		err = c.do(wctx, call{method: http.MethodPost, path: collection(kind), body: body}, &rec)
		if err == nil {
			return c.withdrawFor(ctx, &rec, cause)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w; %w: %w", kind, cause, ErrNotWithdrawn, err)
	}
	return withdrawn(cause, &rec)
}

// Wait long-polls the request of rec until it is no longer pending and
// returns its final record. An end without an answer is not an error of
// Wait: see Record.Err.
//
// Network errors and 503 UNAVAILABLE (the bridge restarting, its Redis
// failing over) are retried with backoff for up to two minutes of
// failures (WithRetryFor), each retry no sooner than a Retry-After asks
// (up to the longest backoff, 5 s) but for the last, made as those two
// minutes end. When ctx ends first, Wait withdraws the request (DELETE) and
// returns the record as it ended with an error wrapping ctx's error and,
// once withdrawn, ErrAborted.
func (c *Client) Wait(ctx context.Context, rec *Record) (*Record, error) {
	path := collection(rec.Kind) + "/" + url.PathEscape(rec.ID)
	floor := min(c.pollWait, time.Second) // no tighter loop than this, whatever the bridge's max_wait
	r := retrier{c: c}
	for rec.Status == StatusPending {
		start := time.Now()
		var got Record
		err := c.do(ctx, call{method: http.MethodGet, path: path, query: waitQuery(c.pollWait), wait: c.pollWait}, &got)
		switch {
		case err == nil:
			rec = &got
			r.reset()
			if got.Status == StatusPending {
				err = sleep(ctx, floor-time.Since(start))
			}
		case ctx.Err() != nil:
		case !transient(err):
			return rec, fmt.Errorf("%s %s: %w", rec.Kind, rec.ID, err)
		default:
			err = r.pause(ctx, err)
		}
		if ctx.Err() != nil {
			return c.withdraw(ctx, rec)
		}
		if err != nil {
			return rec, fmt.Errorf("%s %s: %w", rec.Kind, rec.ID, err)
		}
	}
	return rec, nil
}

// withdraw cancels rec's request after ctx ended, under a context of its
// own, and returns the record as it ended with an error wrapping ctx's.
func (c *Client) withdraw(ctx context.Context, rec *Record) (*Record, error) {
	return c.withdrawFor(ctx, rec, ended(ctx))
}

// ended is why ctx ended, for the error of a call it ended: its cause
// (context.Cause) where one was given, which says it in its own words
// (bridge ask's is the signal: "interrupted by Ctrl-C (SIGINT)"), else
// ctx's error. errors.Is finds both.
func ended(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return &worded{cause.Error(), []error{cause, err}}
}

// withdrawFor cancels rec's request because of cause, under a context of
// its own, and returns the record as it ended with an error wrapping cause.
func (c *Client) withdrawFor(ctx context.Context, rec *Record, cause error) (*Record, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.withdrawTimeout)
	defer cancel()
	var got *Record
	err := c.retried(wctx, func() (err error) {
		got, err = c.cancelKind(wctx, rec.Kind, rec.ID)
		return err
	})
	if err != nil {
		return rec, fmt.Errorf("%s %s: %w; %w: %w", rec.Kind, rec.ID, cause, ErrNotWithdrawn, err)
	}
	return withdrawn(cause, got)
}

// withdrawn is the outcome of withdrawing got's request because of cause:
// got as the cancel left it, with an error that says how it ended.
func withdrawn(cause error, got *Record) (*Record, error) {
	switch {
	case got.Status == StatusCancelled:
		return got, fmt.Errorf("%s %s withdrawn: %w: %w", got.Kind, got.ID, cause, got.Err())
	case got.Err() != nil:
		return got, fmt.Errorf("%s %s: %w; it had ended already: %w", got.Kind, got.ID, cause, got.Err())
	}
	return got, fmt.Errorf("%s %s: %w; it was %s already", got.Kind, got.ID, cause, got.Status)
}

// Get returns the request id, question or approval. With wait > 0 the
// bridge holds the call until the request ends or wait passes.
func (c *Client) Get(ctx context.Context, id string, wait time.Duration) (*Record, error) {
	return eitherKind(id, func(kind Kind) (*Record, error) {
		var rec Record
		err := c.do(ctx, call{method: http.MethodGet, path: collection(kind) + "/" + url.PathEscape(id), query: waitQuery(wait), wait: wait}, &rec)
		return &rec, err
	})
}

// Cancel withdraws the request id (status cancelled, seam code
// ASK_ABORTED). Cancelling a request that ended returns it as it ended.
// Only the client that created a request may cancel it.
func (c *Client) Cancel(ctx context.Context, id string) (*Record, error) {
	return eitherKind(id, func(kind Kind) (*Record, error) { return c.cancelKind(ctx, kind, id) })
}

func (c *Client) cancelKind(ctx context.Context, kind Kind, id string) (*Record, error) {
	var rec Record
	err := c.do(ctx, call{method: http.MethodDelete, path: collection(kind) + "/" + url.PathEscape(id)}, &rec)
	return &rec, err
}

// Answer answers the question request id and returns the answered record.
// The bridge checks the answer against the questions and stores it in
// canonical form; a question a leaves out is skipped (an empty Answer
// skips them all). A request that ended already is ErrAlreadyResolved.
func (c *Client) Answer(ctx context.Context, id string, a Answer) (*Record, error) {
	if a.Answers == nil {
		a.Answers = []AnswerItem{} // every question skipped; the bridge refuses "answers": null
	}
	return c.resolve(ctx, KindQuestion, id, "answer", a)
}

// Decide decides the approval request id.
func (c *Client) Decide(ctx context.Context, id string, d Decision) (*Record, error) {
	return c.resolve(ctx, KindApproval, id, "decision", d)
}

// Dismiss declines to answer the request id, question or approval: the
// asking agent gets ErrCancelled.
func (c *Client) Dismiss(ctx context.Context, id string) (*Record, error) {
	return eitherKind(id, func(kind Kind) (*Record, error) {
		var rec Record
		err := c.do(ctx, call{method: http.MethodPost, path: collection(kind) + "/" + url.PathEscape(id) + "/dismiss"}, &rec)
		return &rec, err
	})
}

func (c *Client) resolve(ctx context.Context, kind Kind, id, verb string, v any) (*Record, error) {
	if id == "" {
		return nil, fmt.Errorf("%s: %w", kind, errNoID)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	var rec Record
	if err := c.do(ctx, call{method: http.MethodPost, path: collection(kind) + "/" + url.PathEscape(id) + "/" + verb, body: body}, &rec); err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	return &rec, nil
}

// SignInLink issues a one-time link that signs a browser in to the web
// inbox of a bridge without API tokens; such a bridge answers only
// programs on its machine. A bridge with tokens has none (ErrNotFound):
// sign in there with an answer-scoped token.
func (c *Client) SignInLink(ctx context.Context) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	if err := c.do(ctx, call{method: http.MethodPost, path: "/v1/signin-link"}, &out); err != nil {
		return "", fmt.Errorf("sign-in link: %w", err)
	}
	return out.URL, nil
}

// PendingLimit is the most requests of each kind the API lists, and
// Pending returns.
const PendingLimit = 500

// Pending lists the pending questions and approvals (the newest
// PendingLimit of each), newest first.
func (c *Client) Pending(ctx context.Context) (*PendingList, error) {
	q := url.Values{"status": {string(StatusPending)}, "limit": {strconv.Itoa(PendingLimit)}}
	var out PendingList
	if err := c.do(ctx, call{method: http.MethodGet, path: collection(KindQuestion), query: q}, &out); err != nil {
		return nil, fmt.Errorf("list pending questions: %w", err)
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: collection(KindApproval), query: q}, &out); err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	return &out, nil
}

func (r QuestionRequest) kind() Kind { return KindQuestion }
func (r ApprovalRequest) kind() Kind { return KindApproval }

func collection(kind Kind) string {
	if kind == KindApproval {
		return "/v1/approvals"
	}
	return "/v1/questions"
}

// errNoID is the error of a call given an empty request id. Sent, its path
// would hold an empty segment ("/v1/questions//answer"), which the bridge
// answers as no such endpoint (an older one redirects it to its clean
// form, another endpoint), and the error would blame the bridge's URL.
var errNoID = errors.New("the request id is empty: give the id of a question or approval")

// eitherKind runs f for a question and, when there is no such question,
// for an approval: ids of both kinds share one space. A NOT_FOUND that
// says the URL is wrong (no such endpoint under its path) is no unknown
// question: the error names the call that met it, not the approval's.
func eitherKind(id string, f func(Kind) (*Record, error)) (*Record, error) {
	if id == "" {
		return nil, errNoID
	}
	rec, err := f(KindQuestion)
	if errors.Is(err, ErrNotFound) && !errors.Is(err, ErrWrongURL) {
		rec, err = f(KindApproval)
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", id, err)
	}
	return rec, nil
}

func waitQuery(d time.Duration) url.Values {
	if d <= 0 {
		return nil
	}
	return url.Values{"wait": {d.String()}}
}

// errBadResponse marks a response that is not what the API sends: not
// worth retrying.
var errBadResponse = errors.New("unexpected response from the bridge")

// maxResponse bounds a response body: a record holds at most a 1 MiB
// request plus its answer and posts.
const maxResponse = 8 << 20

// call is one HTTP call.
type call struct {
	method, path string
	query        url.Values
	body         []byte        // nil: none
	wait         time.Duration // how long the bridge may hold the call
	wrote        *atomic.Bool  // when not nil, set once the request went out whole
}

// do makes one call and decodes its 2xx JSON into out. An API error is an
// *Error; a network error is returned as the HTTP client reports it.
func (c *Client) do(parent context.Context, cl call, out any) error {
	ctx, cancel := context.WithTimeout(parent, cl.wait+c.grace)
	defer cancel()
	if cl.wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					cl.wrote.Store(true)
				}
			},
		})
	}
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "askbridge-client")
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if parent.Err() != nil {
			// The caller's context ended: in its cause's words, not
			// net/http's "context canceled".
			return fmt.Errorf("%s %s: %w", cl.method, cl.path, ended(parent))
		}
		return c.transportError(ctx, cl, err)
	}
	c.answered.Store(true)
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s %s: reading the response: %w", cl.method, cl.path, err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		return redirected(resp, cl)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := apiError(resp.StatusCode, data)
		e.retryAfter = retryAfter(resp.Header)
		return c.statusError(cl, e)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			// A web server, not the API: it answers every path.
			return fmt.Errorf("%s %s: %w: %s answered with %s, not the bridge's JSON: %w", cl.method, cl.path, ErrWrongURL, c.shown, cmp.Or(ct, "no Content-Type"), errBadResponse)
		}
		return fmt.Errorf("%s %s: %w: %w", cl.method, cl.path, errBadResponse, err)
	}
	return nil
}

// ErrWrongURL is in the error of a call that met, at the URL given to New,
// something other than the bridge's API: a server that does not speak
// HTTP, HTTP where the URL says https:// or TLS where it says http://, a
// web server, or the bridge with a path before its /v1/. The error says
// which, names the URL (without a password) and, where it can tell,
// the URL to use instead.
var ErrWrongURL = errors.New("wrong bridge URL")

// transportError words err, the HTTP client's for a call that got no
// response, where it says the URL may be wrong; where it says so for
// sure, asking again changes nothing (errBadResponse). Else it is err as
// it is.
//
// A connection closed without a response is what a bridge that stops
// mid-call does, and also what a database does with HTTP (Postgres,
// Redis). Before anything at the URL has answered in HTTP, the client
// asks once more, for the bridge's /healthz: a bridge that stopped is
// gone (the connection is refused) or back (it answers); a database
// closes that connection too, and then the URL is wrong.
func (c *Client) transportError(ctx context.Context, cl call, err error) error {
	var rh tls.RecordHeaderError
	switch {
	case errors.Is(err, http.ErrSchemeMismatch):
		return &worded{fmt.Sprintf("%s %s: %v: %s answers in plain HTTP, not HTTPS: use %s", cl.method, cl.path, ErrWrongURL, c.shown, c.withScheme("http")),
			[]error{ErrWrongURL, errBadResponse, err}}
	case errors.As(err, &rh):
		return &worded{fmt.Sprintf("%s %s: %v: what answers at %s does not speak TLS (HTTPS): no bridge, nor a proxy in front of one", cl.method, cl.path, ErrWrongURL, c.shown),
			[]error{ErrWrongURL, errBadResponse, err}}
	case malformedHTTP(err):
		// Something that does not speak HTTP answers at the bridge's
		// address (a mistyped port): asking again changes nothing.
		return &worded{fmt.Sprintf("%s %s: %v: what answers at %s does not speak HTTP: no bridge (a database, say)", cl.method, cl.path, ErrWrongURL, c.shown),
			[]error{ErrWrongURL, errBadResponse, err}}
	case closedWithoutResponse(err) && !c.answered.Load() && c.closesAgain(ctx):
		return &worded{fmt.Sprintf("%s %s: %v: %s closed the connection without an HTTP response, and so it did to a GET /healthz sent to check: no bridge, nor a proxy in front of one (a database, say)", cl.method, cl.path, ErrWrongURL, c.shown),
			[]error{ErrWrongURL, errBadResponse, err}}
	case closedWithoutResponse(err):
		// Left transient: a bridge that stops mid-call does the same.
		return &worded{fmt.Sprintf("%s %s: %s closed the connection without an HTTP response: a bridge that was stopping, or a server that is no bridge (a database, say)", cl.method, cl.path, c.shown),
			[]error{err}}
	}
	return err
}

// probeTimeout bounds closesAgain's call.
const probeTimeout = 5 * time.Second

// closesAgain reports whether what is at the URL, which closed a call's
// connection without a response, closes a GET of /healthz (the bridge's
// liveness, which needs no token) without one too, or answers it in
// something other than HTTP. A response of any kind, a refused
// connection or no answer in time is not that: a bridge, or a proxy,
// stopping or starting.
func (c *Client) closesAgain(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "askbridge-client")
	req.Close = true // one call, on a connection of its own
	resp, err := c.hc.Do(req)
	if err != nil {
		return ctx.Err() == nil && (closedWithoutResponse(err) || malformedHTTP(err))
	}
	resp.Body.Close()
	c.answered.Store(true)
	return false
}

// closedWithoutResponse reports whether err, the HTTP client's, says the
// connection was closed before a response came.
func closedWithoutResponse(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// malformedHTTP reports whether err, the HTTP client's, says what
// answered is not HTTP. net/http's error for it has no type to test for.
func malformedHTTP(err error) bool { return strings.Contains(err.Error(), "malformed HTTP") }

// statusError is e, the error status of a call, said to be ErrWrongURL
// where it shows that the call reached no bridge's API: the bridge's own
// "no such endpoint" under a URL with a path (the bridge serves its API
// at /v1/), a 404, 405 or 501 with no API error (a web server), a 400
// with none that asks for HTTPS (a TLS server).
func (c *Client) statusError(cl call, e *Error) error {
	u, _ := url.Parse(c.shown)
	switch {
	case u == nil:
	case e.Code == CodeNotFound && e.Status == http.StatusNotFound && strings.HasPrefix(e.Message, "no such endpoint") && u.Path != "":
		// In Message: a harness reads it (bridge mcp's tool error).
		e.Message += fmt.Sprintf("; the bridge serves its API at /v1/, not under %s: use %s as its URL, or have the proxy in front of it strip %s", u.Path, c.withPath(""), u.Path)
		return &worded{fmt.Sprintf("%v: %v", ErrWrongURL, e), []error{ErrWrongURL, e}}
	case e.Code != "":
	case e.Status == http.StatusNotFound, e.Status == http.StatusMethodNotAllowed, e.Status == http.StatusNotImplemented:
		return &worded{fmt.Sprintf("%s %s: %v: %s has no bridge API (HTTP %d %s)", cl.method, cl.path, ErrWrongURL, c.shown, e.Status, http.StatusText(e.Status)),
			[]error{ErrWrongURL, e}}
	case e.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(e.Message), "https") && u.Scheme == "http":
		return &worded{fmt.Sprintf("%s %s: %v: %s takes HTTPS: use %s (%s)", cl.method, cl.path, ErrWrongURL, c.shown, c.withScheme("https"), e.Message),
			[]error{ErrWrongURL, e}}
	}
	return e
}

// withScheme is the client's URL, as errors show it, with scheme.
func (c *Client) withScheme(scheme string) string {
	u, err := url.Parse(c.shown)
	if err != nil {
		return c.shown
	}
	u.Scheme = scheme
	return u.String()
}

// withPath is the client's URL, as errors show it, with path.
func (c *Client) withPath(path string) string {
	u, err := url.Parse(c.shown)
	if err != nil {
		return c.shown
	}
	u.Path, u.RawPath = path, ""
	return u.String()
}

// worded is an error that says msg and wraps errs: a cause worded for
// whoever reads it, with what errors.Is and errors.As find kept.
type worded struct {
	msg  string
	errs []error
}

func (e *worded) Error() string   { return e.msg }
func (e *worded) Unwrap() []error { return e.errs }

// redirected is the error of a redirect, which the client does not follow:
// it names where the call was sent and, when that ends in the call's path,
// the bridge URL to use instead.
func redirected(resp *http.Response, cl call) *Error {
	msg := fmt.Sprintf("%s %s: the bridge's URL redirects it (HTTP %d)", cl.method, cl.path, resp.StatusCode)
	to, err := resp.Location()
	if err != nil {
		return &Error{Status: resp.StatusCode, Message: msg + "; use the URL the bridge answers at itself"}
	}
	to.User, to.RawQuery, to.ForceQuery, to.Fragment, to.RawFragment = nil, "", false, "", ""
	msg += " to " + to.String()
	if base, ok := strings.CutSuffix(to.Path, cl.path); ok {
		to.Path, to.RawPath = base, ""
		return &Error{Status: resp.StatusCode, Message: msg + "; use " + to.String() + " as the bridge's URL"}
	}
	return &Error{Status: resp.StatusCode, Message: msg + "; use the URL the bridge answers at itself"}
}

// apiError reads {"error":{"code","message"}}; a body that is not one (a
// proxy's error page) becomes an *Error without a code.
func apiError(status int, data []byte) *Error {
	var body struct {
		Error *ErrorBody `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil && body.Error.Code != "" {
		return &Error{Status: status, Code: body.Error.Code, Message: body.Error.Message}
	}
	text := strings.Join(strings.Fields(string(data)), " ") // a page's lines and indents
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	msg := fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	if text != "" {
		msg += ": " + text
	}
	return &Error{Status: status, Message: msg}
}

// retryAfter is a response's Retry-After in seconds (the bridge's 503
// UNAVAILABLE sends 1, and so may a proxy's 429 or 503), or 0 without
// one. The HTTP-date form is not read: a wait that long is past the
// retries' own.
func retryAfter(h http.Header) time.Duration {
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || secs <= 0 {
		return 0
	}
	return time.Duration(min(secs, 3600)) * time.Second
}

// Transient reports whether a call that failed with err may succeed if
// made again: a network error, a gateway error, 429, or 503 other than
// NO_PROVIDER. A Wait that gives up after the client's retries
// (WithRetryFor) fails with such an error.
func Transient(err error) bool { return transient(err) }

// transient reports whether a failed call may succeed if made again: a
// network error, a gateway error, 429, or 503 other than NO_PROVIDER.
func transient(err error) bool {
	if errors.Is(err, errBadResponse) {
		return false
	}
	var e *Error
	if !errors.As(err, &e) {
		return true // the network, not the bridge
	}
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	case http.StatusServiceUnavailable:
		return e.Code != CodeNoProvider
	}
	return false
}

// retried runs f until it succeeds or fails for good, or ctx ends, and
// returns its last error: for a withdrawal, which is safe to repeat, and
// which one refusal (the bridge restarting) must not leave undone.
func (c *Client) retried(ctx context.Context, f func() error) error {
	r := retrier{c: c}
	for {
		err := f()
		if err == nil || !transient(err) || r.pause(ctx, err) != nil {
			return err
		}
	}
}

// retrier paces retries: jittered backoff, doubling, until failures have
// lasted the client's retryFor.
type retrier struct {
	c     *Client
	since time.Time // first failure of the current run
	next  time.Duration
}

func (r *retrier) reset() { r.since = time.Time{} }

// pause waits before the next attempt after err, or returns err when
// failures have lasted the client's retryFor, or ctx's error. No wait
// outlasts the window: the last attempt is made as it closes, and a call
// still failing then fails, not a whole backoff (up to 5 s) later.
func (r *retrier) pause(ctx context.Context, err error) error {
	now := r.now()
	if r.since.IsZero() {
		r.since, r.next = now, r.c.backoff
	}
	lasted := now.Sub(r.since)
	if lasted >= r.c.retryFor {
		return fmt.Errorf("still failing after %s: %w", spent(lasted), err)
	}
	d := min(r.delay(err), r.c.retryFor-lasted)
	if r.c.wait != nil {
		return r.c.wait(ctx, d)
	}
	return sleep(ctx, d)
}

func (r *retrier) now() time.Time {
	if r.c.now != nil {
		return r.c.now()
	}
	return time.Now()
}

// spent is d as an error says how long something lasted: to the
// millisecond under a second, the tenth of a second under a minute, else
// the second.
func spent(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// delay is the wait before the next attempt after err: the backoff,
// jittered, or the Retry-After that err came with where that is longer,
// up to the longest backoff. Sooner than the bridge (or a proxy) asked
// would be answered alike; later than the longest backoff would outwait
// the retries' own pace.
func (r *retrier) delay(err error) time.Duration {
	d := r.next/2 + mathrand.N(r.next/2+1)
	r.next = min(2*r.next, r.c.maxBackoff)
	if e := (*Error)(nil); errors.As(err, &e) && e.retryAfter > d {
		d = min(e.retryAfter, r.c.maxBackoff)
	}
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

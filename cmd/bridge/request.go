package main

// What bridge ask and bridge approve share: the flags that place and name
// a request beside those that make what it asks, its creation and the wait
// for it, which Ctrl-C withdraws, and what they say of a request that did
// not end answered. Each speaks of its request in its own words
// (requestWords); what they say is otherwise the same.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/seam"
)

// Exit statuses of bridge ask and bridge approve for a request that ended
// unanswered, one per seam code, beside exitOK (answered), exitError and
// exitUsage.
const (
	exitCancelled = 3 // withdrawn by the asker (Ctrl-C): ASK_ABORTED
	exitDismissed = 4 // a person declined to answer: ASK_CANCELLED
	exitExpired   = 5 // nobody answered before it expired: ASK_TIMED_OUT
)

// requestWords are how a command speaks of the request it makes.
type requestWords struct {
	cmd     string // the command: "ask", in "bridge: ask: ..."
	noun    string // its kind, as the client's errors and the asked: and found: lines name it before its id: "question" in "question ID"
	unnamed string // the request before it has an id: "the question"
	awaited string // what the command waits for: "an answer"
	// flagTerms words the bridge's refusal of a request made of the
	// command's flags (not --json-request's) in terms of those flags.
	flagTerms func(msg string) string
}

var (
	questionWords = requestWords{cmd: "ask", noun: "question", unnamed: "the question", awaited: "an answer", flagTerms: askFlagTerms}
	approvalWords = requestWords{cmd: "approve", noun: "approval", unnamed: "the approval request", awaited: "a decision", flagTerms: approveFlagTerms}
)

// requestFlags are the flags of ask and approve that place and name the
// request: --expires, --route, --tool-call-id and --caller, which also
// apply to a --json-request's, and --json-request and --server.
type requestFlags struct {
	fs                                             *flag.FlagSet
	expires                                        *time.Duration
	route, toolCallID, caller, jsonRequest, server *string
	set                                            map[string]bool // the flags given, once parsed
}

// addRequestFlags adds the request flags to fs, with the help of those
// whose words differ by command.
func addRequestFlags(fs *flag.FlagSet, expiresHelp, toolCallIDHelp, callerHelp string) *requestFlags {
	return &requestFlags{
		fs:          fs,
		expires:     durationFlag(fs, "expires", 0, expiresHelp),
		route:       fs.String("route", "", "route to post it to (default: the bridge's \"default\" route)"),
		toolCallID:  fs.String("tool-call-id", "", toolCallIDHelp),
		caller:      fs.String("caller", "", callerHelp),
		jsonRequest: fs.String("json-request", "", "read the whole request body from `FILE` (- for stdin)"),
		server:      serverFlag(fs),
	}
}

// parse parses args as parseFlags does and refuses, as usage errors, what
// the request flags can't mean: an argument, a negative --expires, a flag
// given empty (which would read as left out), beside --json-request any
// of made, the command's flags that make what is asked, which the request
// holds then, a value longer than the bridge takes, and a --server (or
// BRIDGE_SERVER) that is no bridge URL. It returns false with the exit status when it
// refused, or -h was asked for.
func (f *requestFlags) parse(args []string, usage string, made []string, stdout, stderr io.Writer) (int, bool) {
	if code, ok := parseFlags(f.fs, args, usage, stdout, stderr); !ok {
		return code, false
	}
	cmd := f.fs.Name()
	if f.fs.NArg() > 0 {
		return usageErr(stderr, cmd, "unexpected argument %q", f.fs.Arg(0)), false
	}
	if *f.expires < 0 {
		return usageErr(stderr, cmd, "--expires must not be negative"), false
	}
	f.set = visited(f.fs)
	if msg := emptyGiven(f.fs, f.set, map[string]string{
		"route":        "the request's route, or the bridge's default one",
		"tool-call-id": "a random one",
		"caller":       "no caller",
	}); msg != "" {
		return usageErr(stderr, cmd, "%s", msg), false
	}
	if *f.jsonRequest != "" {
		for _, name := range made {
			if f.set[name] {
				return usageErr(stderr, cmd, "--%s can't be combined with --json-request; put it in the request", name), false
			}
		}
	}
	// As the bridge refuses them, a --json-request's too.
	if msg := tooLong(*f.route, *f.toolCallID, *f.caller); msg != "" {
		return usageErr(stderr, cmd, "%s", msg), false
	}
	if msg := serverProblem(f.fs); msg != "" {
		return usageErr(stderr, cmd, "%s", msg), false
	}
	return 0, true
}

// tooLong says which of --route, --tool-call-id and --caller (each ""
// when not given) is longer than the bridge takes in a request, by its
// own check (seam.ValidatePlacement), in the flags' terms, for the
// commands that place requests with them (ask, approve, mcp); "" when
// none is.
func tooLong(route, toolCallID, caller string) string {
	if err := seam.ValidatePlacement(toolCallID, route, &seam.Caller{Name: caller}); err != nil {
		return requestFlagTerms(err.Error())
	}
	return ""
}

// refusal is why the bridge would refuse what the command's flags made
// (not a --json-request's): validate applies the seam's rules, the
// bridge's own, to a copy of it. Found before anything is sent, it is a
// usage error, in the flags' terms; "" when there is none.
func (w requestWords) refusal(validate func() error) string {
	if err := validate(); err != nil {
		return w.flagTerms(err.Error())
	}
	return ""
}

// place sets on a request's fields what the request flags given say: its
// route, expiry and tool_call_id, and its caller's name. The rest of a
// --json-request's caller stays: its agent and session, and delegated,
// which the bridge refuses.
func (f *requestFlags) place(route *string, expiresIn *time.Duration, toolCallID *string, caller **client.Caller) {
	if f.set["route"] {
		*route = *f.route
	}
	if f.set["expires"] {
		*expiresIn = *f.expires
	}
	if f.set["tool-call-id"] {
		*toolCallID = *f.toolCallID
	}
	if f.set["caller"] {
		who := client.Caller{}
		if *caller != nil {
			who = **caller
		}
		who.Name = *f.caller
		*caller = &who
	}
}

// send creates req on the bridge of --server and waits for it to end. It
// says on stderr that it asked (or, under a --tool-call-id whose request
// ended already, that it found that one) and, once ctx ends (Ctrl-C), that
// it is withdrawing the request, which Create and Wait then do. The
// bridge's refusal of a request made of the flags is worded in their
// terms. found says the request had ended before this run: the
// tool_call_id named one asked before.
func (f *requestFlags) send(ctx context.Context, w requestWords, req client.Request, stderr io.Writer) (rec *client.Record, found bool, err error) {
	c, err := newClient(*f.server)
	if err != nil {
		return nil, false, err
	}
	// Once ctx ends (Ctrl-C), Create and Wait withdraw the request, which
	// takes up to the client's WithdrawTimeout while the bridge is slow or
	// down. The person is told at once, or they see nothing happen and
	// press Ctrl-C again, in vain.
	stderr = &lockedWriter{w: stderr} // written from sayWhenDone's goroutine too
	ctx, stop := sayWhenDone(ctx, stderr, fmt.Sprintf("bridge: %s: withdrawing %s (up to %s)…", w.cmd, w.unnamed, client.WithdrawTimeout))
	rec, err = c.Create(ctx, req, 0)
	switch {
	case err == nil && rec.Status == client.StatusPending:
		fmt.Fprintf(stderr, "asked: %s id %s (tool_call_id %s), waiting for %s; Ctrl-C withdraws it\n", w.noun, rec.ID, rec.ToolCallID, w.awaited)
		rec, err = c.Wait(ctx, rec)
	case err == nil:
		// The tool_call_id names a request that ended already (a run
		// interrupted before this one): its outcome, not a second ask.
		fmt.Fprintf(stderr, "found: %s id %s (tool_call_id %s) ended already, %s; give another --tool-call-id to ask again\n", w.noun, rec.ID, rec.ToolCallID, endedAs(rec))
		found = true
	}
	stop()
	if *f.jsonRequest == "" {
		err = inCLITerms(err, w.flagTerms)
	}
	return rec, found, w.noProvider(err)
}

// Where the bridge's NO_PROVIDER says why no answerer took a request
// (internal/dispatch words them).
var (
	noRouteNamed = regexp.MustCompile(`no route named ("[^"]*") is configured`)
	noTargetOf   = regexp.MustCompile(`no target of route ("[^"]*") took the request`)
)

// noProvider words the bridge's NO_PROVIDER in err, whose sentence is
// the harness's ("no user-questions answerer accepted the request"), for
// the command's request, and adds what to set for it to be taken: a
// route the bridge has, or that route's targets.
func (w requestWords) noProvider(err error) error {
	if !errors.Is(err, client.ErrNoProvider) {
		return err
	}
	err = inCLITerms(err, strings.NewReplacer(seam.Messages[seam.CodeNoProvider], "no answerer accepted "+w.unnamed).Replace)
	var e *client.Error
	errors.As(err, &e)
	if m := noRouteNamed.FindStringSubmatch(e.Message); m != nil {
		if m[1] == `"`+dispatch.DefaultRoute+`"` {
			return fmt.Errorf("%w; the bridge has no route named %s: give --route one of its routes (routes: in its config), or add one named %[2]s", err, dispatch.DefaultRoute)
		}
		return fmt.Errorf("%w; give --route a route of the bridge's config (routes:), or leave --route out for its default one", err)
	}
	if m := noTargetOf.FindStringSubmatch(e.Message); m != nil {
		// The first target's error, in the bridge's words, is in
		// parentheses: its cause as often lies on the platform's side (a
		// revoked token, a permission, the platform unreachable) as in
		// the route's config.
		return fmt.Errorf("%w; the first parentheses hold its first target's error: what it names may need fixing on Slack's or Discord's side (a token, a permission, the channel) or in route %s's targets in the bridge's config; bridge config check --connect --post tries each target", err, m[1])
	}
	return err
}

// requestFlagTerms words the bridge's refusal of what the request flags
// set (--caller, --tool-call-id, --route) in their terms, for both
// commands.
var requestFlagTerms = strings.NewReplacer(
	"caller.name is longer", "--caller is longer",
	"tool_call_id is longer", "--tool-call-id is longer",
	"route is longer", "--route is longer",
).Replace

// endedAs says how a request ended: its outcome once decided, else its
// status.
func endedAs(rec *client.Record) string {
	if rec.Decision != nil {
		return rec.Decision.Outcome
	}
	return string(rec.Status)
}

// unfinished prints what became of a request that did not end (rec nil,
// or pending): err, and what is left of the request, and returns
// exitError.
func (w requestWords) unfinished(rec *client.Record, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "bridge: %s: %v\n", w.cmd, hint(err))
	gone := errors.Is(err, client.ErrNoProvider) || errors.Is(err, client.ErrNotFound)
	switch {
	case errors.Is(err, client.ErrNotWithdrawn):
		// To be withdrawn (Ctrl-C, or a create given up on), and the
		// bridge did not take the withdrawal.
		what := w.unnamed
		if rec != nil && rec.ID != "" {
			what = w.noun + " " + rec.ID
		}
		fmt.Fprintf(stderr, "bridge: %s: %s could not be withdrawn: its message may keep live buttons until it expires\n", w.cmd, what)
	case rec != nil && rec.ID != "" && rec.ToolCallID != "" && !gone:
		// The wait failed (the bridge down for longer than the client's
		// retries, say), not the request: a person may still answer it,
		// and the caller can still get that answer. Not so when the bridge
		// said it has the request no more: discarded (NO_PROVIDER: no
		// target took it) or gone (NOT_FOUND).
		fmt.Fprintf(stderr, "bridge: %s: %s %s is still pending on the bridge: run it again with --tool-call-id %s to wait for it\n", w.cmd, w.noun, rec.ID, rec.ToolCallID)
	}
	return exitError
}

// unanswered prints how a request ended without an answer, rec being
// final, and returns the exit status that tells it.
func (w requestWords) unanswered(rec *client.Record, err error, stderr io.Writer) int {
	if err == nil {
		err = fmt.Errorf("%s %s %s: %w", w.noun, rec.ID, rec.Status, rec.Err())
	}
	fmt.Fprintf(stderr, "bridge: %s: %v\n", w.cmd, err)
	switch rec.Status {
	case client.StatusCancelled:
		return exitCancelled
	case client.StatusDismissed:
		return exitDismissed
	case client.StatusExpired:
		return exitExpired
	}
	return exitError
}

// sayWhenDone returns a context that ends when ctx does, with its cause,
// once line has been written to w: what is done because it ended comes
// after the line. Once stop returns, the line has been written or never
// will be.
func sayWhenDone(ctx context.Context, w io.Writer, line string) (context.Context, func()) {
	said, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	written := make(chan struct{})
	unwatch := context.AfterFunc(ctx, func() {
		defer close(written)
		fmt.Fprintln(w, line)
		cancel(context.Cause(ctx))
	})
	return said, func() {
		if !unwatch() {
			<-written
		}
		cancel(nil)
	}
}

// lockedWriter makes w safe for writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// readRequest reads a request body from path, or stdin for "-", as R,
// which what names ("a question request"). A top-level key other than
// keys is refused, where the bridge ignores unknown keys: a misspelt one
// (expire_in) would silently not apply.
func readRequest[R any](ctx context.Context, path string, stdin io.Reader, what string, keys ...string) (R, error) {
	var req R
	data, err := readBody(ctx, path, stdin)
	if err != nil {
		return req, err
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fmt.Errorf("%s: not %s: %w", path, what, err)
	}
	var got map[string]json.RawMessage
	json.Unmarshal(data, &got)
	for k := range got {
		if !slices.Contains(keys, k) {
			last := len(keys) - 1
			return req, fmt.Errorf("%s: unknown key %q; %s has %s and %s", path, k, what, strings.Join(keys[:last], ", "), keys[last])
		}
	}
	return req, nil
}

// readBody reads a request body from path, or stdin for "-".
// It gives up when ctx ends (Ctrl-C) before the body is read: a stdin that
// nothing writes to would otherwise swallow the first Ctrl-C.
func readBody(ctx context.Context, path string, stdin io.Reader) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	got := make(chan read, 1)
	go func() {
		var r read
		if path == "-" {
			r.data, r.err = io.ReadAll(stdin)
		} else {
			r.data, r.err = os.ReadFile(path)
		}
		got <- r
	}()
	select {
	case r := <-got:
		return r.data, r.err
	case <-ctx.Done():
		from := path
		if path == "-" {
			from = "stdin"
		}
		return nil, fmt.Errorf("interrupted while reading the request from %s; nothing was asked", from)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/seam"
)

// exitRejected is bridge approve's exit status for a tool call a person
// rejected. Its other statuses are ask's: exitOK (allowed), exitError,
// exitUsage, and exitCancelled, exitDismissed and exitExpired for a
// request that ended undecided.
const exitRejected = 6

const approveUsage = `usage: bridge approve --tool NAME [--args JSON] [--arg KEY=VALUE]... [--reason TEXT] [flags]
       bridge approve --json-request FILE|- [flags]

Asks a person through the bridge to allow or reject a tool call, waits
until they decide, and prints the decision on stdout, with the note they
gave after a colon:

  allowed-once
  rejected: not on a Friday

The exit status tells them apart, so that a script can gate a step on a
person's approval:

  bridge approve --tool deploy --arg env=prod --reason "ship 1.4" && ./deploy.sh

--json prints the approval's record instead, as GET /v1/approvals/{id}
returns it: its decision, who decided, or the error of one that ended
undecided. The request's id is printed on stderr as soon as it is created,
and who decided once they have. Ctrl-C (SIGINT, SIGTERM, or SIGHUP as its
terminal closes) withdraws the request before exiting, as bridge ask
withdraws its question (see bridge ask -h). A wait that fails (the bridge
unreachable for two minutes) leaves the request asked, and says so: run
the same command again with the --tool-call-id it names to wait for it (a
different tool call under that id is the bridge's CONFLICT).

The tool call's arguments: --args takes them as a JSON object, and each
--arg adds one, its VALUE a string (give numbers, booleans and nested
values in --args). The reason is shown to the person, as markdown;
--display-reason, when given, is shown in its place. For a call_id other
than the tool_call_id, pass the whole request body (as POST /v1/approvals
takes it) with --json-request; --route, --expires, --tool-call-id and
--caller still apply to it (--caller sets the caller's name only). As
bridge ask's, it is read more strictly than the API reads it: a top-level
key other than tool_name, call_id, reason, display_reason, arguments,
tool_call_id, caller, route and expires_in is refused.

exit status:
  0  allowed (allowed-once)
  1  error: the bridge is unreachable, no answerer took the request
     (NO_PROVIDER), the request is invalid (INVALID_REQUEST), ...
  2  usage
  3  cancelled (ASK_ABORTED): the request was withdrawn (Ctrl-C, SIGTERM, SIGHUP)
  4  dismissed (ASK_CANCELLED): a person declined to decide
  5  expired (ASK_TIMED_OUT): nobody decided before it expired (--expires)
  6  rejected: a person rejected the tool call

environment:
  BRIDGE_SERVER  default of --server
  BRIDGE_TOKEN   API token (needs the ask scope; none for an open bridge)

flags:
`

func approve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	var argList stringList
	tool := fs.String("tool", "", "the `NAME` of the tool to call (required unless --json-request)")
	argsJSON := fs.String("args", "", "the tool call's arguments, a JSON `OBJECT`")
	fs.Var(&argList, "arg", "an argument `KEY=VALUE`, its value a string; repeat for each")
	reason := fs.String("reason", "", "why the tool is called, `TEXT` shown to the person (markdown)")
	displayReason := fs.String("display-reason", "", "`TEXT` shown to the person in place of --reason")
	expires := durationFlag(fs, "expires", 0, "expire the request undecided after this `duration` (30m, 2h); 0: the route's or bridge's default")
	route := fs.String("route", "", "route to post it to (default: the bridge's \"default\" route)")
	toolCallID := fs.String("tool-call-id", "", "the tool call's id, and the idempotency key: the same request again under it re-attaches to the pending one (default: random)")
	caller := fs.String("caller", "", "who asks, `NAME` shown to the people who decide")
	jsonReq := fs.String("json-request", "", "read the whole request body from `FILE` (- for stdin)")
	asJSON := fs.Bool("json", false, "print the approval's record as JSON, not the decision")
	server := serverFlag(fs)
	if code, ok := parseFlags(fs, args, approveUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "approve", "unexpected argument %q", fs.Arg(0))
	}
	if *expires < 0 {
		return usageErr(stderr, "approve", "--expires must not be negative")
	}
	set := visited(fs)
	if msg := emptyGiven(fs, set, map[string]string{
		"route":        "the request's route, or the bridge's default one",
		"tool-call-id": "a random one",
		"caller":       "no caller",
	}); msg != "" {
		return usageErr(stderr, "approve", "%s", msg)
	}

	var req client.ApprovalRequest
	if *jsonReq != "" {
		for _, f := range []string{"tool", "args", "arg", "reason", "display-reason"} {
			if set[f] {
				return usageErr(stderr, "approve", "--%s can't be combined with --json-request; put it in the request", f)
			}
		}
		var err error
		if req, err = readApprovalRequest(ctx, *jsonReq, stdin); err != nil {
			fmt.Fprintln(stderr, "bridge: approve:", err)
			return exitError
		}
	} else {
		if strings.TrimSpace(*tool) == "" {
			return usageErr(stderr, "approve", "--tool is required: the name of the tool to call")
		}
		arguments, msg := toolArguments(*argsJSON, argList)
		if msg != "" {
			return usageErr(stderr, "approve", "%s", msg)
		}
		req.Approval = client.Approval{ToolName: *tool, Reason: *reason, DisplayReason: *displayReason, Arguments: arguments}
	}
	if set["route"] {
		req.Route = *route
	}
	if set["expires"] {
		req.ExpiresIn = *expires
	}
	if set["tool-call-id"] {
		req.ToolCallID = *toolCallID
	}
	if set["caller"] {
		req.Caller = namedCaller(req.Caller, *caller)
	}

	c, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: approve:", err)
		return exitError
	}
	// As ask's: the person who pressed Ctrl-C is told at once that the
	// request is being withdrawn.
	stderr = &lockedWriter{w: stderr} // written from sayWhenDone's goroutine too
	ctx, stop := sayWhenDone(ctx, stderr, fmt.Sprintf("bridge: approve: withdrawing the approval request (up to %s)…", client.WithdrawTimeout))
	rec, err := c.Create(ctx, req, 0)
	switch {
	case err == nil && rec.Status == client.StatusPending:
		fmt.Fprintf(stderr, "asked: approval id %s (tool_call_id %s), waiting for a decision; Ctrl-C withdraws it\n", rec.ID, rec.ToolCallID)
		rec, err = c.Wait(ctx, rec)
	case err == nil:
		// The tool_call_id names a request that ended already (a run
		// interrupted before this one): its outcome, not a second ask.
		fmt.Fprintf(stderr, "found: approval id %s (tool_call_id %s) ended already, %s; give another --tool-call-id to ask again\n", rec.ID, rec.ToolCallID, endedAs(rec))
	}
	stop()
	return approveOutcome(rec, err, *asJSON, stdout, stderr)
}

// namedCaller returns c named name: the rest of a --json-request's caller
// stays, its agent and session, and delegated, which the bridge refuses.
func namedCaller(c *client.Caller, name string) *client.Caller {
	who := client.Caller{}
	if c != nil {
		who = *c
	}
	who.Name = name
	return &who
}

// toolArguments makes the tool call's arguments of --args and the --arg
// flags, or returns why it can't. --args alone is sent as it is: the
// bridge says what it takes (a JSON object).
func toolArguments(argsJSON string, argList []string) (json.RawMessage, string) {
	if argsJSON == "" && len(argList) == 0 {
		return nil, ""
	}
	if argsJSON != "" {
		// Not JSON, it can't be sent at all.
		var v any
		if err := json.Unmarshal([]byte(argsJSON), &v); err != nil {
			return nil, "--args is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
		}
		if len(argList) == 0 {
			return json.RawMessage(argsJSON), ""
		}
	}
	args := map[string]json.RawMessage{}
	if argsJSON != "" {
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return nil, `--arg adds to the JSON object of --args, and --args is not one: give the arguments as {"KEY": VALUE, ...}`
		}
		if args == nil {
			args = map[string]json.RawMessage{} // null: none
		}
	}
	fromFlag := map[string]bool{}
	for _, kv := range argList {
		key, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || key == "":
			return nil, fmt.Sprintf("--arg %q is not KEY=VALUE", kv)
		case fromFlag[key]:
			return nil, fmt.Sprintf("--arg %s is given twice; give each argument once", key)
		case args[key] != nil:
			return nil, fmt.Sprintf("--arg %s is in --args too; give each argument once", key)
		}
		fromFlag[key] = true
		args[key], _ = json.Marshal(value) // a string can't fail
	}
	raw, err := json.Marshal(args)
	if err != nil {
		// Raw values read as JSON above can't fail either.
		return nil, "--args: " + err.Error()
	}
	return raw, ""
}

// readApprovalRequest reads an approval request body from path, or stdin
// for "-", as readRequest reads a question request: unknown keys refused.
func readApprovalRequest(ctx context.Context, path string, stdin io.Reader) (client.ApprovalRequest, error) {
	data, err := readBody(ctx, path, stdin)
	if err != nil {
		return client.ApprovalRequest{}, err
	}
	var req client.ApprovalRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return client.ApprovalRequest{}, fmt.Errorf("%s: not an approval request: %w", path, err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(data, &keys)
	for k := range keys {
		switch k {
		case "tool_name", "call_id", "reason", "display_reason", "arguments", "tool_call_id", "caller", "route", "expires_in":
		default:
			return client.ApprovalRequest{}, fmt.Errorf("%s: unknown key %q; an approval request has tool_name, call_id, reason, display_reason, arguments, tool_call_id, caller, route and expires_in", path, k)
		}
	}
	return req, nil
}

// approveOutcome prints how an approval request ended and returns the exit
// status.
func approveOutcome(rec *client.Record, err error, asJSON bool, stdout, stderr io.Writer) int {
	if rec == nil || !rec.Status.Final() {
		fmt.Fprintln(stderr, "bridge: approve:", hint(err))
		gone := errors.Is(err, client.ErrNoProvider) || errors.Is(err, client.ErrNotFound)
		switch {
		case errors.Is(err, client.ErrNotWithdrawn):
			what := "the approval request"
			if rec != nil && rec.ID != "" {
				what = "approval " + rec.ID
			}
			fmt.Fprintf(stderr, "bridge: approve: %s could not be withdrawn: its message may keep live buttons until it expires\n", what)
		case rec != nil && rec.ID != "" && rec.ToolCallID != "" && !gone:
			// As ask's: the wait failed, not the request.
			fmt.Fprintf(stderr, "bridge: approve: approval %s is still pending on the bridge: run it again with --tool-call-id %s to wait for it\n", rec.ID, rec.ToolCallID)
		}
		return exitError
	}
	if asJSON {
		if err := writeJSON(stdout, rec, true); err != nil {
			fmt.Fprintln(stderr, "bridge: approve:", err)
			return exitError
		}
	}
	if rec.Status == client.StatusAnswered {
		// Decided, even if Ctrl-C came a moment later: the decision won.
		d := rec.Decision
		code := exitError
		switch {
		case d == nil:
			fmt.Fprintf(stderr, "bridge: approve: approval %s is decided, and the bridge sent no decision\n", rec.ID)
			return exitError
		case d.Outcome == client.OutcomeAllowedOnce:
			code = exitOK
		case d.Outcome == client.OutcomeRejected:
			code = exitRejected
		}
		fmt.Fprintf(stderr, "decided: approval %s %s%s\n", rec.ID, d.Outcome, decidedBy(rec.AnsweredBy))
		if code == exitError {
			// An outcome newer than this command: not an allowance it knows.
			fmt.Fprintf(stderr, "bridge: approve: approval %s: unknown outcome %q, taken as not allowed\n", rec.ID, d.Outcome)
		}
		if !asJSON {
			line := d.Outcome
			if d.Note != "" {
				// One line, as a script reads it; --json has it as it is.
				line += ": " + cell(d.Note, seam.MaxNoteLen)
			}
			fmt.Fprintln(stdout, line)
		}
		return code
	}
	if err == nil {
		err = fmt.Errorf("approval %s %s: %w", rec.ID, rec.Status, rec.Err())
	}
	fmt.Fprintln(stderr, "bridge: approve:", err)
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

// endedAs says how a request ended: its outcome once decided, else its
// status.
func endedAs(rec *client.Record) string {
	if rec.Decision != nil {
		return rec.Decision.Outcome
	}
	return string(rec.Status)
}

// decidedBy is " by NAME (SURFACE)", as far as by tells.
func decidedBy(by *client.AnsweredBy) string {
	if by == nil {
		return ""
	}
	who := cell(by.Name, 100)
	if who == "" {
		who = cell(by.UserID, 100)
	}
	if who == "" {
		return " (" + by.Surface + ")"
	}
	return " by " + who + " (" + by.Surface + ")"
}

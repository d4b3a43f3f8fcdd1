package main

import (
	"context"
	"encoding/json"
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

// exitAllowedBefore is bridge approve's exit status for a --tool-call-id
// whose approval was allowed once before this run: that allowance may
// have been used.
const exitAllowedBefore = 7

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
different tool call under that id is the bridge's CONFLICT). A re-run that
finds the request allowed already exits 7, not 0: the allowance was for
one run, and one before may have used it.

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
     (NO_PROVIDER), it refused the --json-request (INVALID_REQUEST), ...
  2  usage, found before anything is sent: what the bridge would refuse
     of the flags (by its rules: --args that is no JSON object, a --tool
     too long) included, and a --server or BRIDGE_SERVER that is no URL
     or has a query or fragment (a base URL alone: http://host:port)
  3  cancelled (ASK_ABORTED): the request was withdrawn (Ctrl-C, SIGTERM, SIGHUP)
  4  dismissed (ASK_CANCELLED): a person declined to decide
  5  expired (ASK_TIMED_OUT): nobody decided before it expired (--expires)
  6  rejected: a person rejected the tool call
  7  allowed before this run: the --tool-call-id names an approval allowed
     once already, which an earlier run may have used

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
	asJSON := fs.Bool("json", false, "print the approval's record as JSON, not the decision")
	rf := addRequestFlags(fs,
		"expire the request undecided after this `duration` (30m, 2h); 0: the route's or bridge's default",
		"the tool call's id, and the idempotency key: the same request again under it re-attaches to the pending one (default: random)",
		"who asks, `NAME` shown to the people who decide")
	if code, ok := rf.parse(args, approveUsage, []string{"tool", "args", "arg", "reason", "display-reason"}, stdout, stderr); !ok {
		return code
	}

	var req client.ApprovalRequest
	if *rf.jsonRequest != "" {
		var err error
		req, err = readRequest[client.ApprovalRequest](ctx, *rf.jsonRequest, stdin, "an approval request",
			"tool_name", "call_id", "reason", "display_reason", "arguments", "tool_call_id", "caller", "route", "expires_in")
		if err != nil {
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
		a := req.Approval // Validate normalises in place
		if msg := approvalWords.refusal(a.Validate); msg != "" {
			return usageErr(stderr, "approve", "%s", msg)
		}
	}
	rf.place(&req.Route, &req.ExpiresIn, &req.ToolCallID, &req.Caller)
	rec, found, err := rf.send(ctx, approvalWords, req, stderr)
	return approveOutcome(rec, found, err, *asJSON, stdout, stderr)
}

// approveFlagTerms words the bridge's refusal of an approval that bridge
// approve made of its flags (not --json-request's) in terms of those
// flags.
func approveFlagTerms(msg string) string {
	return requestFlagTerms(strings.NewReplacer(
		"tool_name must be", "--tool must be",
		"display_reason is longer", "--display-reason is longer",
		"reason is longer", "--reason is longer",
		"note is longer", "--note is longer",
		"arguments are larger", "the arguments of --args and --arg are larger",
		// Only --args can make arguments that are no object.
		"arguments must be a JSON object", "--args must be a JSON object",
	).Replace(msg))
}

// toolArguments makes the tool call's arguments of --args and the --arg
// flags, or returns why it can't. --args alone is kept as it is: the
// seam's rules say what the bridge takes (a JSON object, or null).
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

// approveOutcome prints how an approval request ended and returns the exit
// status. found says it had ended before this run.
func approveOutcome(rec *client.Record, found bool, err error, asJSON bool, stdout, stderr io.Writer) int {
	if rec == nil || !rec.Status.Final() {
		return approvalWords.unfinished(rec, err, stderr)
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
		case d.Outcome == client.OutcomeAllowedOnce && found:
			// Allowed once, for a run before this one, which may have
			// made the call: a script that asks under a fixed
			// --tool-call-id would otherwise run its step on every run
			// on one allowance.
			code = exitAllowedBefore
		case d.Outcome == client.OutcomeAllowedOnce:
			code = exitOK
		case d.Outcome == client.OutcomeRejected:
			code = exitRejected
		}
		fmt.Fprintf(stderr, "decided: approval %s %s%s\n", rec.ID, d.Outcome, decidedBy(rec.AnsweredBy))
		if code == exitAllowedBefore {
			fmt.Fprintf(stderr, "bridge: approve: approval %s was allowed once, before this run: not an allowance for this one; ask again under another --tool-call-id (to resume a run cut short after it was allowed, take exit status %d as allowed)\n", rec.ID, exitAllowedBefore)
		}
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
	return approvalWords.unanswered(rec, err, stderr)
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

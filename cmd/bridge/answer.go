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

const answerUsage = `usage: bridge answer ID [--select LABEL]... [--custom TEXT] [--question-id QID]
       bridge answer ID --json '{"answers":[...]}'
       bridge answer ID --allow | --reject [--note TEXT]
       bridge answer ID --dismiss

Answers the pending question or approval ID (see "bridge pending") and
prints the resulting record as JSON. Whether ID is a question or an
approval is looked up.

A question: --select picks an option by its label, verbatim (repeat it for
a multi-select question); --custom answers in free text. On a
multi-select question --custom adds to the options selected; on a
single-select question it answers in place of an option, so --select and
--custom together are refused there (the API would drop the option). In a
request of several questions --question-id names the one answered and the others are
skipped; --json gives the answers to all of them at once. An answer with
no option and no text (--custom "") is refused, and so is an empty --json:
skip questions with --json.
An approval: --allow allows the tool call once, --reject rejects it; --note
is passed to the agent.
Either: --dismiss declines to answer; the agent gets ASK_CANCELLED.

exit status: 0 answered, 1 error (ALREADY_RESOLVED, NOT_FOUND, ...), 2 usage:
found before anything is answered, and as the bridge would find it.
Before ID is looked up, so whether the bridge is reached, or knows ID, or
ID ended does not matter: flags that don't go together or give no answer
(no --select, and --custom empty, blank or left out), a --note too long, a --json
that is no answer body (empty, not JSON, an unknown or repeated field, a
value of the wrong type, no "answers"), and a --server or BRIDGE_SERVER
that is no URL or has a query or fragment (a base URL alone:
http://host:port). Once ID is read: question flags for an approval, or
approval flags for a question, and, of a pending question only, an answer
of --select, --custom and --question-id the bridge would refuse (an
option the question does not have). Past those, a request that ended is
ALREADY_RESOLVED, whatever --select, --custom and --question-id say and
whatever questions a --json answer body names; whether a --json answer
fits the questions is the bridge's to say (INVALID_REQUEST, exit 1).

environment:
  BRIDGE_SERVER  default of --server
  BRIDGE_TOKEN   API token (needs the answer scope; none for an open bridge)

flags:
`

func answer(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("answer", flag.ContinueOnError)
	var selects stringList
	fs.Var(&selects, "select", "select the option `LABEL`, verbatim; repeat for a multi-select question")
	custom := fs.String("custom", "", "answer in free `TEXT`")
	questionID := fs.String("question-id", "", "the question of the request to answer (default: its only one)")
	jsonAnswer := fs.String("json", "", "the whole `ANSWER` of a request of several questions: {\"answers\":[...]}")
	dismiss := fs.Bool("dismiss", false, "decline to answer")
	allow := fs.Bool("allow", false, "allow the approval's tool call, once")
	reject := fs.Bool("reject", false, "reject the approval's tool call")
	note := fs.String("note", "", "with --allow or --reject: a note for the agent")
	server := serverFlag(fs)
	args, code, ok := parseInterleaved(fs, args, answerUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(args) != 1 {
		return usageErr(stderr, "answer", "name exactly one request ID")
	}
	id := args[0]
	set := visited(fs)
	questionFlags := set["select"] || set["custom"] || set["question-id"] || set["json"]
	approvalFlags := set["allow"] || set["reject"] || set["note"]
	switch {
	case *allow && *reject:
		return usageErr(stderr, "answer", "--allow or --reject, not both")
	case set["note"] && !*allow && !*reject:
		return usageErr(stderr, "answer", "--note goes with --allow or --reject")
	case set["json"] && (set["select"] || set["custom"] || set["question-id"]):
		return usageErr(stderr, "answer", "--json holds the whole answer; drop --select, --custom and --question-id")
	case *dismiss && (questionFlags || approvalFlags):
		return usageErr(stderr, "answer", "--dismiss declines to answer; it takes no answer flags")
	case questionFlags && approvalFlags:
		return usageErr(stderr, "answer", "question flags (--select, --custom, --json) and approval flags (--allow, --reject) don't mix")
	case questionFlags && !set["json"] && len(selects) == 0 && strings.TrimSpace(*custom) == "":
		// Sent, it would answer the question as skipped, for good: an
		// empty --custom "$TEXT", or --question-id with the answer left
		// out.
		return usageErr(stderr, "answer", "no answer given: --select an option or --custom TEXT (--custom is empty or blank); to skip questions, give --json, or decline with --dismiss")
	case !*dismiss && !questionFlags && !*allow && !*reject:
		return usageErr(stderr, "answer", "say how to answer: --select, --custom, --json, --allow, --reject or --dismiss")
	}
	d := client.Decision{Outcome: client.OutcomeAllowedOnce, Note: *note}
	if *reject {
		d.Outcome = client.OutcomeRejected
	}
	// The bridge checks a decision (a --note too long) before it looks at
	// the approval, so that one already decided, or gone, is told the
	// same: a usage error before anything is read.
	if _, err := d.Normalize(); approvalFlags && err != nil {
		return usageErr(stderr, "answer", "%s", approveFlagTerms(err.Error()))
	}
	// The bridge refuses an answer body that is no answer before it looks
	// at the question too: an empty --json (an unset "$ANSWER") is a
	// usage error whether or not the bridge is up, knows ID, or ID ended.
	var jsonA client.Answer
	if set["json"] {
		var msg string
		if jsonA, msg = decodeAnswer(*jsonAnswer); msg != "" {
			return usageErr(stderr, "answer", "%s", msg)
		}
	}
	if msg := serverProblem(fs); msg != "" {
		return usageErr(stderr, "answer", "%s", msg)
	}

	c, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: answer:", err)
		return exitError
	}
	var rec *client.Record
	if *dismiss {
		rec, err = c.Dismiss(ctx, id)
	} else {
		if rec, err = c.Get(ctx, id, 0); err != nil {
			fmt.Fprintln(stderr, "bridge: answer:", hint(err))
			return exitError
		}
		switch rec.Kind {
		case client.KindQuestion:
			if approvalFlags {
				return usageErr(stderr, "answer", "%s is a question: answer it with --select, --custom or --json", id)
			}
			a := jsonA
			if !set["json"] {
				var msg string
				if a, msg = buildAnswer(rec, selects, *custom, *questionID); msg != "" {
					return usageErr(stderr, "answer", "%s", msg)
				}
			}
			rec, err = c.Answer(ctx, id, a)
			if !set["json"] {
				err = inCLITerms(err, answerFlagTerms)
			}
		case client.KindApproval:
			if questionFlags {
				return usageErr(stderr, "answer", "%s is an approval: decide it with --allow or --reject", id)
			}
			rec, err = c.Decide(ctx, id, d)
		default:
			err = fmt.Errorf("request %s is of an unknown kind %q", id, rec.Kind)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "bridge: answer:", hint(err))
		return exitError
	}
	if err := writeJSON(stdout, rec, true); err != nil {
		fmt.Fprintln(stderr, "bridge: answer:", err)
		return exitError
	}
	return exitOK
}

// decodeAnswer reads the answer --json gives, or returns why it can't:
// what the bridge refuses of the body before it looks at the request
// (internal/api's DecodeAnswer). Whether the answer fits the questions is
// the bridge's to say, as a --json-request's content is, in the API's
// terms: a bridge of another version may take more (a longer custom).
func decodeAnswer(jsonAnswer string) (client.Answer, string) {
	// Strictly: a misspelt "selected" would answer the question as
	// skipped, for good, and so would a field given twice, decoded here
	// keeping the last and sent on without the other: refused as the API
	// refuses such a body.
	var a client.Answer
	if strings.TrimSpace(jsonAnswer) == "" {
		// An unset "$ANSWER": not a skip of every question.
		return a, `--json is empty: give the answer {"answers":[...]}, or "answers":[] to skip every question`
	}
	if msg := seam.DuplicateKeyMessage([]byte(jsonAnswer)); msg != "" {
		return a, "--json: " + msg
	}
	// In the answer's terms, as the API words them.
	if msg := seam.UnknownFieldMessage([]byte(jsonAnswer), &a); msg != "" {
		return a, "--json: " + msg
	}
	dec := json.NewDecoder(strings.NewReader(jsonAnswer))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		var (
			te *json.UnmarshalTypeError
			sy *json.SyntaxError
		)
		switch {
		case errors.As(err, &te):
			return a, "--json: " + seam.TypeErrorMessage([]byte(jsonAnswer), te, "")
		case errors.As(err, &sy), errors.Is(err, io.ErrUnexpectedEOF):
			return a, "--json is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
		}
		return a, fmt.Sprintf("--json is not an answer {\"answers\":[{\"id\",\"selected\",\"custom\"}]}: %v", err)
	}
	if a.Answers == nil {
		// As the bridge refuses it: sent, it would skip every question.
		return a, `--json has no "answers": give them, or "answers":[] to skip every question`
	}
	return a, ""
}

// buildAnswer makes the answer --select, --custom and --question-id
// describe to the questions of rec, or returns why the bridge would
// refuse it, in the flags' terms: found before it is sent. Only while rec
// is pending: the bridge refuses an answer to an ended request as ended
// (ALREADY_RESOLVED) before it looks at the answer, and a request
// withdrawn before its create landed has no questions to check it against.
func buildAnswer(rec *client.Record, selects []string, custom, questionID string) (client.Answer, string) {
	item := client.AnswerItem{ID: questionID, Selected: append([]string{}, selects...), Custom: custom}
	if rec.Status != client.StatusPending {
		return client.Answer{Answers: []client.AnswerItem{item}}, ""
	}
	if questionID == "" {
		if len(rec.Questions) != 1 {
			ids := make([]string, 0, len(rec.Questions))
			for _, q := range rec.Questions {
				ids = append(ids, q.ID)
			}
			return client.Answer{}, fmt.Sprintf("%s has %d questions (%s): name one with --question-id, or answer all with --json",
				rec.ID, len(rec.Questions), strings.Join(ids, ", "))
		}
		questionID = rec.Questions[0].ID
	}
	for _, q := range rec.Questions {
		// The API lets free text override a single choice (a form may
		// send both); typed as two flags, one of them would be dropped
		// unsaid.
		if q.ID == questionID && !q.MultiSelect && len(selects) > 0 && strings.TrimSpace(custom) != "" {
			return client.Answer{}, fmt.Sprintf("question %s takes one answer: --select picks an option, --custom answers in its place; give one of them", q.ID)
		}
	}
	item.ID = questionID
	a := client.Answer{Answers: []client.AnswerItem{item}}
	// The bridge checks the answer against the question by the seam's
	// rules, which the record read holds all it needs for.
	if _, err := (seam.Questions{Questions: rec.Questions}).Normalize(a); err != nil {
		return a, answerFlagTerms(err.Error())
	}
	return a, ""
}

// parseInterleaved parses flags that may come before and after the
// positional arguments (bridge answer ID --select X), which flag.Parse
// alone stops at, and returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) ([]string, int, bool) {
	var pos []string
	for {
		if code, ok := parseFlags(fs, args, usage, stdout, stderr); !ok {
			return nil, code, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/seam"
)

// optionSep splits an --option into its label and description.
const optionSep = " :: "

const askUsage = `usage: bridge ask --question TEXT [--option LABEL]... [flags]
       bridge ask --json-request FILE|- [flags]

Asks a question through the bridge, waits until a person answers it, and
prints the answer on stdout as the seam's JSON, one line:

  {"answers":[{"id":"q1","selected":["Yes"]}]}

selected holds the chosen option labels verbatim; a free-text answer is in
"custom". The request's id is printed on stderr as soon as it is created.
Ctrl-C (SIGINT, SIGTERM, or SIGHUP as its terminal closes) withdraws the
question before exiting; signals that come meanwhile (timeout(1) sends
two) don't cut that short, which takes at most 10 s. It says on stderr
that it is withdrawing the question, and, if the bridge did not take the
withdrawal, that the question's message may keep live buttons until it
expires (exit 1). A wait that fails (the bridge unreachable for two
minutes) leaves the question asked, and says so: run the command again
with the --tool-call-id it names to wait for it.

To give up after a while, run it under timeout(1) with --preserve-status:
timeout --preserve-status -s INT 60 bridge ask ... withdraws the question
after 60 s and exits 3; without --preserve-status timeout exits 124, its
own status, whatever bridge ask's was. (--expires 60s instead lets the
question expire on the bridge, for the people asked too: exit 5.)

--option takes the label verbatim, or "LABEL :: DESCRIPTION" (split at the
first " :: ") to show a description under it. A question without options
is answered with free text. For several questions, typed input fields or a
plan-review intent, pass the whole request body (as POST /v1/questions
takes it) with --json-request; --route, --expires, --tool-call-id and
--caller still apply to it (--caller sets the caller's name only). It is
read more strictly than the API reads it: a top-level key other than
questions, tool_call_id, caller, route and expires_in is refused, where
the API ignores unknown keys (newer harnesses add some), so that a
misspelt one (expire_in) is an error, not a setting that silently does
not apply.

exit status:
  0  answered
  1  error: the bridge is unreachable, no answerer took the question
     (NO_PROVIDER), it refused the --json-request (INVALID_REQUEST), ...
  2  usage, found before anything is sent: what the bridge would refuse
     of the flags (by its rules: an --option given twice, a --question
     too long) included, and a --server or BRIDGE_SERVER that is no URL
     or has a query or fragment (a base URL alone: http://host:port)
  3  cancelled (ASK_ABORTED): the question was withdrawn (Ctrl-C, SIGTERM, SIGHUP)
  4  dismissed (ASK_CANCELLED): a person declined to answer
  5  expired (ASK_TIMED_OUT): nobody answered before it expired (--expires)

environment:
  BRIDGE_SERVER  default of --server
  BRIDGE_TOKEN   API token (needs the ask scope; none for an open bridge)

flags:
`

func ask(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	var options stringList
	question := fs.String("question", "", "the question `TEXT` (required unless --json-request)")
	fs.Var(&options, "option", "an option: `LABEL`, or \"LABEL :: DESCRIPTION\"; repeat for each")
	multi := fs.Bool("multi-select", false, "let the person select several options (the question's multiSelect; --multi is another name for it)")
	aliasFlag(fs, "multi", "multi-select") // its first name, which scripts use
	header := fs.String("header", "", "short heading shown above the question")
	detail := fs.String("detail", "", "markdown shown with the question")
	id := fs.String("id", "q1", "question id, echoed in the answer")
	rf := addRequestFlags(fs,
		"expire the question unanswered after this `duration` (30m, 2h); 0: the route's or bridge's default",
		"idempotency key: asking the same question again under it re-attaches to the pending one (default: random)",
		"who asks, `NAME` shown to the people who answer")
	if code, ok := rf.parse(args, askUsage, []string{"question", "option", "multi-select", "multi", "header", "detail", "id"}, stdout, stderr); !ok {
		return code
	}

	var req client.QuestionRequest
	if *rf.jsonRequest != "" {
		var err error
		req, err = readRequest[client.QuestionRequest](ctx, *rf.jsonRequest, stdin, "a question request", "questions", "tool_call_id", "caller", "route", "expires_in")
		if err != nil {
			fmt.Fprintln(stderr, "bridge: ask:", err)
			return exitError
		}
	} else {
		if strings.TrimSpace(*question) == "" {
			return usageErr(stderr, "ask", "--question is required")
		}
		if *multi && len(options) == 0 {
			// The bridge would ask for free text, multi dropped.
			given := "--multi-select"
			if rf.set["multi"] {
				given = "--multi"
			}
			return usageErr(stderr, "ask", "%s lets the person select several options: give them with --option", given)
		}
		q := client.Question{ID: *id, Question: *question, Header: *header, Detail: *detail, MultiSelect: *multi}
		for _, o := range options {
			label, desc, _ := strings.Cut(o, optionSep)
			q.Options = append(q.Options, client.Option{Label: label, Description: desc})
		}
		req.Questions = []client.Question{q}
		qs := seam.Questions{Questions: slices.Clone(req.Questions)} // Validate normalises in place
		if msg := questionWords.refusal(qs.Validate); msg != "" {
			return usageErr(stderr, "ask", "%s", msg)
		}
	}
	rf.place(&req.Route, &req.ExpiresIn, &req.ToolCallID, &req.Caller)
	rec, _, err := rf.send(ctx, questionWords, req, stderr)
	return askOutcome(rec, err, stdout, stderr)
}

// askOutcome prints how a question ended and returns the exit status.
func askOutcome(rec *client.Record, err error, stdout, stderr io.Writer) int {
	if rec == nil || !rec.Status.Final() {
		return questionWords.unfinished(rec, err, stderr)
	}
	if rec.Status == client.StatusAnswered && rec.Answer != nil {
		// Answered, even if Ctrl-C came a moment later: the answer won.
		if err := writeJSON(stdout, rec.Answer, false); err != nil {
			fmt.Fprintln(stderr, "bridge: ask:", err)
			return exitError
		}
		return exitOK
	}
	return questionWords.unanswered(rec, err, stderr)
}

// What ask, approve, answer and pending share: the bridge's address and token, and
// flag handling.

const defaultServer = "http://127.0.0.1:8080"

// serverFlag adds --server, defaulting to $BRIDGE_SERVER.
func serverFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("BRIDGE_SERVER")
	if def == "" {
		def = defaultServer
	}
	return fs.String("server", def, "the bridge's `URL` ($BRIDGE_SERVER)")
}

// serverProblem says what is wrong with the bridge URL the commands of fs
// would call, --server's or, left out, BRIDGE_SERVER's, or "": a usage
// error, found before anything is sent. (BRIDGE_TOKEN's problems are
// newClient's: the token is a credential, not how the command was run.)
func serverProblem(fs *flag.FlagSet) string {
	if _, err := client.New(fs.Lookup("server").Value.String()); err != nil {
		if visited(fs)["server"] {
			return "--server: " + err.Error()
		}
		return "BRIDGE_SERVER (the default of --server): " + err.Error()
	}
	return ""
}

// newClient returns a client of server with the token in $BRIDGE_TOKEN.
func newClient(server string) (*client.Client, error) {
	return client.New(server, client.WithToken(os.Getenv("BRIDGE_TOKEN")))
}

// hint adds what to do to the errors a person at a terminal can fix: a
// token the bridge refuses, or no bridge where --server points (a create
// says so itself: ErrUnreachable). A token's scope is spoken of as
// BRIDGE_TOKEN's, which is where the commands take it from.
func hint(err error) error {
	var op *net.OpError
	if errors.Is(err, client.ErrForbidden) {
		err = inCLITerms(err, strings.NewReplacer(
			// Listing (bridge pending): the API's advice, for a program.
			"; an asker reads its own with ?tool_call_id=", "; BRIDGE_TOKEN holds a token without it (an asker's, which sees only the requests it made)",
			"this token lacks", "BRIDGE_TOKEN holds a token that lacks",
		).Replace)
	}
	switch {
	case errors.Is(err, client.ErrUnauthorized):
		if os.Getenv("BRIDGE_TOKEN") == "" {
			return fmt.Errorf("%w; set BRIDGE_TOKEN to one of the bridge's API tokens (api.tokens)", err)
		}
		return fmt.Errorf("%w; BRIDGE_TOKEN is not one of the bridge's API tokens (api.tokens)", err)
	case errors.Is(err, client.ErrWrongURL), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		// The client says what answered there, and names the URL.
		return fmt.Errorf("%w; check --server (or BRIDGE_SERVER): it says where the bridge is", err)
	case errors.Is(err, client.ErrUnreachable): // the client names the bridge's address
		return fmt.Errorf("%w; is it running there? --server or BRIDGE_SERVER says where it is", err)
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("can't reach the bridge: %w; is it running there? --server or BRIDGE_SERVER says where it is", err)
	}
	return err
}

// inCLITerms rewords the message of the bridge's error in err with
// reword, where the message speaks of the API (a request's fields, a
// query parameter, the token) and a flag or variable of the command
// corresponds: "--option 1" for options[0]. The code stays, and errors.Is
// and errors.As see err as it was.
func inCLITerms(err error, reword func(msg string) string) error {
	var e *client.Error
	if !errors.As(err, &e) || e.Message == "" {
		return err
	}
	msg := reword(e.Message)
	if msg == e.Message {
		return err
	}
	return &reworded{text: strings.Replace(err.Error(), e.Message, msg, 1), err: err}
}

// reworded is err with its text in the command's terms.
type reworded struct {
	text string
	err  error
}

func (r *reworded) Error() string { return r.text }
func (r *reworded) Unwrap() error { return r.err }

// optionIndex is how the bridge names an option of the question asked:
// options[N], which is bridge ask's --option N+1.
var optionIndex = regexp.MustCompile(`\boptions\[(\d+)\]`)

// askFlagTerms words the bridge's refusal of a question that bridge ask
// made of its flags (not --json-request's) in terms of those flags.
func askFlagTerms(msg string) string {
	msg = optionIndex.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(optionIndex.FindStringSubmatch(m)[1])
		return "--option " + strconv.Itoa(n+1)
	})
	return requestFlagTerms(strings.NewReplacer(
		"option label ", "--option ",
		": question text is longer", ": --question is longer",
		": header is longer", ": --header is longer",
		": detail is longer", ": --detail is longer",
		"questions[0] has no id", "--id is empty",
		"questions[0]: id ", "--id ",
	).Replace(msg))
}

// answerSelects is how the bridge refuses more --select than a
// single-select question takes.
var answerSelects = regexp.MustCompile(`the answer selects (\d+)$`)

// answerFlagTerms words the bridge's refusal of an answer that bridge
// answer made of --select and --custom (not --json's) in their terms.
func answerFlagTerms(msg string) string {
	msg = answerSelects.ReplaceAllString(msg, "--select is given $1 times")
	return strings.NewReplacer(
		"answer it in free text, with custom", "answer it in free text, with --custom TEXT",
		"; select each option once", "; give --select once for each",
		"the answer names question ", "--question-id names question ",
	).Replace(msg)
}

// parseFlags parses args; when it fails it returns the exit status: 0 for
// -h, whose help goes to stdout (bridge serve -h | less), exitUsage
// otherwise, with the error and a pointer to -h on stderr, as every other
// usage error: the whole help after it would scroll it out of sight.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard) // the error is told below, with the command's name
	fs.Usage = func() {}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		printDefaults(fs, stdout)
		return exitOK, false
	case err != nil:
		return usageErr(stderr, fs.Name(), "%v", err), false
	}
	return 0, true
}

// printDefaults lists fs's flags on w as fs.PrintDefaults does, but for
// their other names (aliasFlag), which their flag's help names: listed
// too, each flag would read as two.
func printDefaults(fs *flag.FlagSet, w io.Writer) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(*alias); ok {
			return
		}
		shown.Var(f.Value, f.Name, f.Usage)
		shown.Lookup(f.Name).DefValue = f.DefValue // f.Value may hold a value parsed before -h
	})
	shown.PrintDefaults()
}

// aliasFlag adds name as another name of fs's flag of, which sets the
// same value: --multi of bridge ask's --multi-select. -h lists of alone.
func aliasFlag(fs *flag.FlagSet, name, of string) {
	fs.Var(&alias{fs.Lookup(of).Value}, name, "another name of --"+of)
}

// alias is the value of another name of a flag: the flag's own.
type alias struct{ flag.Value }

// IsBoolFlag lets a bool flag's alias, as the flag, go without a value.
func (a *alias) IsBoolFlag() bool {
	b, ok := a.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func usageErr(stderr io.Writer, cmd, format string, args ...any) int {
	fmt.Fprintf(stderr, "bridge %s: %s\nRun \"bridge %s -h\" for its flags.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// visited returns the names of the flags set on the command line.
func visited(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// emptyGiven says which of the flags in without (name -> what leaving
// it out does) was given an empty value, or returns "". Empty, a flag
// reads as left out: --route "$ROUTE" with ROUTE unset would post to the
// default route, --tool-call-id "$RUN" ask anew under a random id.
func emptyGiven(fs *flag.FlagSet, set map[string]bool, without map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(without)) {
		if set[name] && fs.Lookup(name).Value.String() == "" {
			return fmt.Sprintf("--%s is empty; leave it out for %s", name, without[name])
		}
	}
	return ""
}

// durationFlag is fs.Duration, whose error for a number without a unit
// ("5") says to write one rather than "parse error". Its usage names the
// value `duration`, as fs.Duration's does.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := duration(value)
	fs.Var(&d, name, usage)
	return (*time.Duration)(&d)
}

type duration time.Duration

func (d *duration) String() string { return time.Duration(*d).String() }

func (d *duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("a duration needs a unit: write %ss, %sm or %sh", s, s, s)
		}
		return errors.New("not a duration such as 90s, 30m or 2h")
	}
	if v > api.MaxDuration {
		// The bridge would refuse every request that carries it.
		return errors.New("out of range; the most is 1e9 seconds (about 31 years)")
	}
	*d = duration(v)
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ", ") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// writeJSON writes v as one line, or indented, without HTML escaping.
func writeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

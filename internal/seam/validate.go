package seam

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits the bridge enforces on what agents and people send. docs/api.md
// lists them; the surfaces render anything within them without losing text.
const (
	MaxBodyBytes      = 1 << 20 // one HTTP request body
	MaxQuestions      = 20      // questions per request
	MaxOptions        = 100     // options per question
	MaxIDLen          = 64      // question id, bytes
	MaxLabelLen       = 200     // option label, characters
	MaxDescriptionLen = 500     // option description, characters
	MaxQuestionLen    = 2000    // question text, characters
	MaxHeaderLen      = 100     // header, characters
	MaxDetailLen      = 50000   // detail or plan, characters
	MaxCustomLen      = 10000   // free-text answer, characters
	MaxInputValueLen  = 3000    // typed input prefill, characters
	MaxToolNameLen    = 200     // approval tool name, characters
	MaxReasonLen      = 4000    // approval reason and display_reason, characters
	MaxArgumentsBytes = 256 << 10
	MaxNoteLen        = 2000 // decision note, characters
	MaxCallerFieldLen = 200  // caller agent, name, session, characters
	MaxToolCallIDLen  = 200  // tool_call_id, bytes
	MaxApprovalCallID = 200  // approval call_id, bytes
	MaxRouteLen       = 100  // route name a request is posted to, bytes
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func tooLong(s string, max int) bool { return utf8.RuneCountInString(s) > max }

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) })
}

// ValidatePlacement checks what places a request beside its questions or
// tool call: its tool_call_id and route, in bytes, and its caller
// (ValidateCaller). The API checks a create with it, and the CLI its
// --tool-call-id, --route and --caller before anything is sent.
func ValidatePlacement(toolCallID, route string, c *Caller) error {
	if len(toolCallID) > MaxToolCallIDLen {
		return invalid("tool_call_id", "tool_call_id is longer than %d bytes", MaxToolCallIDLen)
	}
	if len(route) > MaxRouteLen {
		return invalid("route", "route is longer than %d bytes", MaxRouteLen)
	}
	return ValidateCaller(c)
}

// ValidateCaller refuses a delegated caller: a child agent owned by another
// live agent can't interact with a person.
func ValidateCaller(c *Caller) error {
	if c == nil {
		return nil
	}
	if c.Delegated {
		return codeErr(CodeDelegatedCaller)
	}
	for name, v := range map[string]string{"agent": c.Agent, "name": c.Name, "session": c.Session} {
		if tooLong(v, MaxCallerFieldLen) {
			return invalid("caller."+name, "caller.%s is longer than %d characters", name, MaxCallerFieldLen)
		}
	}
	return nil
}

// Validate checks a question request against CONTRACT §1 and normalises it
// in place: an intent-less multi-select without options is plain free text.
func (r *Questions) Validate() error {
	if len(r.Questions) == 0 {
		return codeErr(CodeEmptyQuestions)
	}
	if len(r.Questions) > MaxQuestions {
		return invalid("questions", "a request holds at most %d questions, this one has %d", MaxQuestions, len(r.Questions))
	}
	seen := make(map[string]bool, len(r.Questions))
	for i := range r.Questions {
		q := &r.Questions[i]
		if err := q.validate(i); err != nil {
			return err
		}
		if seen[q.ID] {
			return invalid(q.ID, "question id %q is used twice; ids must be unique in a request", q.ID)
		}
		seen[q.ID] = true
	}
	return nil
}

func (q *Question) validate(i int) error {
	where := fmt.Sprintf("questions[%d]", i)
	switch {
	case q.ID == "":
		return invalid(where, "%s has no id", where)
	case strings.TrimSpace(q.ID) == "":
		// The answer echoes it, and nobody can tell " " from "  " (or
		// from no id) in a message or a log.
		return invalid(where, "%s: id %q is blank; give it one with something besides spaces", where, q.ID)
	case len(q.ID) > MaxIDLen || hasControl(q.ID):
		return invalid(where, "%s: id must be at most %d bytes without control characters", where, MaxIDLen)
	}
	where = fmt.Sprintf("question %q", q.ID)
	switch {
	case strings.TrimSpace(q.Question) == "":
		return invalid(q.ID, "%s has no question text", where)
	case tooLong(q.Question, MaxQuestionLen):
		return invalid(q.ID, "%s: question text is longer than %d characters", where, MaxQuestionLen)
	case tooLong(q.Header, MaxHeaderLen):
		return invalid(q.ID, "%s: header is longer than %d characters", where, MaxHeaderLen)
	case tooLong(q.Detail, MaxDetailLen):
		return invalid(q.ID, "%s: detail is longer than %d characters", where, MaxDetailLen)
	case len(q.Options) > MaxOptions:
		return invalid(q.ID, "%s has %d options; at most %d are allowed", where, len(q.Options), MaxOptions)
	}
	labels := make(map[string]bool, len(q.Options))
	for j, o := range q.Options {
		switch {
		case strings.TrimSpace(o.Label) == "":
			return invalid(q.ID, "%s: options[%d] has an empty label", where, j)
		case tooLong(o.Label, MaxLabelLen):
			return invalid(q.ID, "%s: option label %q is longer than %d characters", where, o.Label, MaxLabelLen)
		case hasControl(o.Label):
			return invalid(q.ID, "%s: option label %q contains control characters", where, o.Label)
		case tooLong(o.Description, MaxDescriptionLen):
			return invalid(q.ID, "%s: description of option %q is longer than %d characters", where, o.Label, MaxDescriptionLen)
		case labels[o.Label]:
			return invalid(q.ID, "%s: option label %q appears twice; labels must be unique", where, o.Label)
		}
		labels[o.Label] = true
	}
	if len(q.Options) == 0 {
		q.MultiSelect = false // free text only: nothing to select
	}
	if q.Intent != nil {
		if err := q.validateIntent(where); err != nil {
			return err
		}
	}
	if q.Input != nil {
		if err := q.validateInput(where); err != nil {
			return err
		}
	}
	return nil
}

// validateIntent checks the two things the seam asserts of any intent
// (dsh-user-questions' ask()): approve names an option of the question,
// and detail holds what the intent declares the question a review of.
// Intent kinds are open: one the bridge does not know is shown as the
// plain options it comes with, as the seam asks of a UI that does not
// know the tag, never refused.
func (q *Question) validateIntent(where string) error {
	if strings.TrimSpace(q.Detail) == "" {
		return badIntent(q.ID, "%s: a %s intent needs detail (for plan-review, the plan)", where, q.Intent.Kind)
	}
	if q.Intent.Approve == "" {
		return badIntent(q.ID, "%s: intent.approve is required: the label of the option that approves (\"Approve\", say, among the question's options)", where)
	}
	if !q.HasOption(q.Intent.Approve) {
		return badIntent(q.ID, "%s: intent.approve %q names no option of the question", where, q.Intent.Approve)
	}
	return nil
}

func (q *Question) validateInput(where string) error {
	in := q.Input
	switch in.Type {
	case InputString, InputInteger, InputNumber, InputBoolean:
	case "":
		in.Type = InputString
	default:
		return invalid(q.ID, "%s: unknown input.type %q; use string, integer, number or boolean", where, in.Type)
	}
	if len(q.Options) > 0 {
		return invalid(q.ID, "%s: a typed input field can't also have options", where)
	}
	if tooLong(in.Value, MaxInputValueLen) {
		return invalid(q.ID, "%s: input.value is longer than %d characters", where, MaxInputValueLen)
	}
	if in.Value != "" && in.Type != InputString {
		// Kept as an answer's text would be ("true" for "yes", 7 for
		// 007), which is what the surfaces show chosen or filled in.
		// A string's is kept as sent: its lines and spaces are text.
		v, err := ParseInput(in.Type, in.Value)
		if err != nil {
			return invalid(q.ID, "%s: input.value %v", where, err)
		}
		if v != in.Value {
			in.sent, in.Value = in.Value, v
		}
	}
	return nil
}

// decimal is a number as a person types one and as the web inbox's check
// (internal/web/assets/app.js) takes it: digits with an optional sign,
// point and exponent, a JSON number give or take the sign and the point.
// strconv.ParseFloat also takes Go's literal forms (1_000, 0x1p4, Inf),
// which JSON does not, nor the agent that reads the answer as one.
var decimal = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// ParseInput checks text against a typed input field and returns it in
// canonical form: trimmed, booleans as "true" or "false", numbers as JSON
// writes them (" +4 " is "4", "007" is "7", ".50" is "0.50"), with every
// digit the person typed, so that an agent can read one as JSON; an
// integer's zeros after a point are dropped ("3.0" is "3").
func ParseInput(typ, text string) (string, error) {
	s := strings.TrimSpace(text)
	switch typ {
	case InputInteger:
		// A point followed by zeros alone is still a whole number: what
		// an agent writes for a float that holds one (Python's
		// json.dumps(3.0) is 3.0), and what some people type.
		digits := s
		if whole, frac, ok := strings.Cut(s, "."); ok && strings.Trim(frac, "0") == "" {
			digits = whole
		}
		n, err := strconv.ParseInt(digits, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			// An agent reads it as an int64 (docs/api.md).
			return "", fmt.Errorf("%s is not a whole number from %d to %d", quoteTyped(s), math.MinInt64, math.MaxInt64)
		} else if err != nil {
			return "", fmt.Errorf("%s is not a whole number", quoteTyped(s))
		}
		return strconv.FormatInt(n, 10), nil
	case InputNumber:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || !decimal.MatchString(s) {
			return "", fmt.Errorf("%s is not a number", quoteTyped(s))
		}
		return jsonNumber(s), nil
	case InputBoolean:
		switch strings.ToLower(s) {
		case "true", "yes", "y":
			return "true", nil
		case "false", "no", "n":
			return "false", nil
		}
		return "", fmt.Errorf("%s is not true or false", quoteTyped(s))
	}
	return s, nil
}

// jsonNumber writes s, which decimal matches, as a JSON number: no "+", no
// leading zeros, a digit on each side of a point, its digits kept.
func jsonNumber(s string) string {
	sign := ""
	switch s[0] {
	case '-':
		sign, s = "-", s[1:]
	case '+':
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i:]
	}
	whole, frac, point := strings.Cut(mant, ".")
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	if point && frac != "" {
		whole += "." + frac
	}
	return sign + whole + exp
}

// quoteTyped quotes what a person typed for an error shown beside the
// field, cut to its first 40 characters: a field takes thousands, and
// Slack refuses a field's error over 2,000 (a Socket Mode reply over 20 kB
// is dropped whole).
func quoteTyped(s string) string {
	const keep = 40
	if utf8.RuneCountInString(s) <= keep {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:keep]) + "…")
}

// Validate checks an approval request. Its arguments, when it has any, are
// the tool call's: a JSON object, as the seam and the MCP tool's schema
// say. null is no arguments (an MCP client or a harness may send it).
func (a *Approval) Validate() error {
	if bytes.Equal(bytes.TrimSpace(a.Arguments), []byte("null")) {
		a.Arguments = nil
	}
	switch {
	case strings.TrimSpace(a.ToolName) == "":
		return invalid("tool_name", "an approval needs tool_name")
	case tooLong(a.ToolName, MaxToolNameLen) || hasControl(a.ToolName):
		return invalid("tool_name", "tool_name must be at most %d characters without control characters", MaxToolNameLen)
	case len(a.CallID) > MaxApprovalCallID:
		return invalid("call_id", "call_id is longer than %d bytes", MaxApprovalCallID)
	case tooLong(a.Reason, MaxReasonLen):
		return invalid("reason", "reason is longer than %d characters", MaxReasonLen)
	case tooLong(a.DisplayReason, MaxReasonLen):
		return invalid("display_reason", "display_reason is longer than %d characters", MaxReasonLen)
	case len(a.Arguments) > MaxArgumentsBytes:
		return invalid("arguments", "arguments are larger than %d KiB", MaxArgumentsBytes>>10)
	case a.Arguments != nil && !isObject(a.Arguments):
		return invalid("arguments", `arguments must be a JSON object of the tool call's arguments, such as {"file": "prod.yaml"}`)
	}
	return nil
}

// isObject reports whether raw, which has been read as JSON, is an object.
func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// Normalize checks an answer against the request it answers and returns it
// in canonical form: one item per question in request order (the answerer
// may send them in any order, and a question it leaves out is skipped),
// labels verbatim and in the order of the question's options, custom
// trimmed and omitted when empty, custom overriding the selection of a
// single-select question, typed input in canonical form.
func (r Questions) Normalize(a Answer) (Answer, error) {
	byID := make(map[string]AnswerItem, len(a.Answers))
	for i, it := range a.Answers {
		if it.ID == "" {
			return Answer{}, invalid("", "answers[%d] has no id: name the question it answers (%s)", i, r.idList())
		}
		if !r.has(it.ID) {
			return Answer{}, invalid(it.ID, "the answer names question %q, which the request does not have", it.ID)
		}
		if _, dup := byID[it.ID]; dup {
			return Answer{}, invalid(it.ID, "the answer holds question %q twice", it.ID)
		}
		byID[it.ID] = it
	}
	out := Answer{Answers: make([]AnswerItem, 0, len(r.Questions))}
	for _, q := range r.Questions {
		it, err := q.normalize(byID[q.ID])
		if err != nil {
			return Answer{}, err
		}
		out.Answers = append(out.Answers, it)
	}
	return out, nil
}

// idList lists r's question ids for an error, quoted.
func (r Questions) idList() string {
	ids := make([]string, 0, len(r.Questions))
	for _, q := range r.Questions {
		ids = append(ids, strconv.Quote(q.ID))
	}
	return strings.Join(ids, ", ")
}

func (r Questions) has(id string) bool {
	for _, q := range r.Questions {
		if q.ID == id {
			return true
		}
	}
	return false
}

// optionList lists q's labels for an error, quoted: the first ten, and
// how many more.
func (q Question) optionList() string {
	const shown = 10
	var b strings.Builder
	for i, o := range q.Options {
		if i == shown {
			fmt.Fprintf(&b, " and %d more", len(q.Options)-shown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", o.Label)
	}
	return b.String()
}

func (q Question) normalize(it AnswerItem) (AnswerItem, error) {
	custom := strings.TrimSpace(it.Custom)
	if tooLong(custom, MaxCustomLen) {
		return AnswerItem{}, invalid(q.ID, "the answer to %q is longer than %d characters", q.ID, MaxCustomLen)
	}
	selected := make([]string, 0, len(it.Selected))
	seen := make(map[string]bool, len(it.Selected))
	for _, l := range it.Selected {
		switch {
		case seen[l]:
			// No surface sends one twice (Slack's and Discord's selects,
			// the web inbox's checkboxes); an answerer that does has a
			// bug worth hearing of, not a set it meant.
			return AnswerItem{}, invalid(q.ID, "the answer to question %q selects %q twice; select each option once", q.ID, l)
		case q.HasOption(l):
		case len(q.Options) == 0:
			return AnswerItem{}, invalid(q.ID, "%q is not an option of question %q, which has none: answer it in free text, with custom", l, q.ID)
		default:
			return AnswerItem{}, invalid(q.ID, "%q is not an option of question %q; its options: %s", l, q.ID, q.optionList())
		}
		seen[l] = true
	}
	// In the options' order, not the answerer's: a select may list what
	// was picked in the order it was picked, the web inbox's checkboxes
	// list it in the options' order, and one choice is one answer, on
	// every surface and when the same person sends it again.
	for _, o := range q.Options {
		if seen[o.Label] {
			selected = append(selected, o.Label)
		}
	}
	if !q.MultiSelect && len(selected) > 1 {
		return AnswerItem{}, invalid(q.ID, "question %q takes one option, the answer selects %d", q.ID, len(selected))
	}
	if !q.MultiSelect && custom != "" {
		selected = selected[:0] // free text overrides a single choice
	}
	if q.Input != nil && custom != "" {
		v, err := ParseInput(q.Input.Type, custom)
		if err != nil {
			return AnswerItem{}, invalid(q.ID, "%s: %v", q.FieldName(), err)
		}
		custom = v
	}
	if q.Input != nil && q.Input.Required && custom == "" {
		return AnswerItem{}, invalid(q.ID, "%s is required", q.FieldName())
	}
	return AnswerItem{ID: q.ID, Selected: selected, Custom: custom}, nil
}

// ShownHeader is q's header as people are shown it: none for a blank one
// (spaces or controls alone), which the API takes, but which would show
// as an empty heading, or as " : " before the question. Every surface and
// error reads it so.
func (q Question) ShownHeader() string {
	if strings.TrimFunc(q.Header, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) == "" {
		return ""
	}
	return q.Header
}

// FieldName is how an error names q's field: its header as shown, else
// its id (a blank header would read "  is required").
func (q Question) FieldName() string { return cmp.Or(q.ShownHeader(), q.ID) }

// Normalize checks a decision: the outcome is allowed-once or rejected, the
// note is trimmed.
func (d Decision) Normalize() (Decision, error) {
	switch d.Outcome {
	case OutcomeAllowedOnce, OutcomeRejected:
	default:
		return Decision{}, invalid("outcome", "outcome must be %q or %q, not %q", OutcomeAllowedOnce, OutcomeRejected, d.Outcome)
	}
	d.Note = strings.TrimSpace(d.Note)
	if tooLong(d.Note, MaxNoteLen) {
		return Decision{}, invalid("note", "note is longer than %d characters", MaxNoteLen)
	}
	return d, nil
}

// Package seam is askbridge's vocabulary: the question and approval requests
// an agent hands the bridge, the answers and decisions people give back, the
// statuses a request moves through and the error codes of the DeepSeek
// Harness seam (@deepseek-ai/dsh-user-questions, @deepseek-ai/dsh-user-approval).
//
// Field names are the seam's own. Everything here is pure: no Redis, no
// network, no HTTP.
package seam

import (
	"encoding/json"
	"reflect"
	"strconv"
)

// Kind tells a question request from an approval request.
type Kind string

const (
	KindQuestion Kind = "question"
	KindApproval Kind = "approval"
)

// Article is k with its indefinite article: "a question", "an approval".
func (k Kind) Article() string {
	if k == KindApproval {
		return "an approval"
	}
	return "a " + string(k)
}

// Resolve is the last segment of the paths (the API's and the web
// inbox's) that end a request of kind k with a person's word: "answer"
// for a question, "decision" for an approval.
func (k Kind) Resolve() string {
	if k == KindApproval {
		return "decision"
	}
	return "answer"
}

// Status is where a request is in its life.
type Status string

const (
	StatusPending   Status = "pending"
	StatusAnswered  Status = "answered"  // answered or decided by a person
	StatusCancelled Status = "cancelled" // the agent withdrew it (its turn was aborted)
	StatusDismissed Status = "dismissed" // a person declined to answer
	StatusExpired   Status = "expired"   // expires_in passed unanswered
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusAnswered, StatusCancelled, StatusDismissed, StatusExpired:
		return true
	}
	return false
}

// Final reports whether s ends the request.
func (s Status) Final() bool { return s.Valid() && s != StatusPending }

// Code is the seam error a request that ended without an answer reports, or
// "" for pending and answered requests.
func (s Status) Code() Code {
	switch s {
	case StatusCancelled:
		return CodeAborted
	case StatusDismissed:
		return CodeCancelled
	case StatusExpired:
		return CodeTimedOut
	}
	return ""
}

// Caller says who asks. It is shown to the people who answer.
type Caller struct {
	Agent     string `json:"agent,omitempty"`
	Name      string `json:"name,omitempty"`
	Session   string `json:"session,omitempty"`
	Delegated bool   `json:"delegated,omitempty"`
}

// Option is one choice of a question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Intent is a presentation hint. The bridge knows one kind, plan-review;
// any other is shown as the plain options it comes with.
type Intent struct {
	Kind    string `json:"kind"`
	Approve string `json:"approve,omitempty"`
}

// IntentPlanReview marks a question whose detail is a plan to approve.
const IntentPlanReview = "plan-review"

// Input types of a typed free-text field.
const (
	InputString  = "string"
	InputInteger = "integer"
	InputNumber  = "number"
	InputBoolean = "boolean"
)

// Input makes a question a typed free-text field (Agno's user_input_schema).
// The answer still carries the text in custom; it must parse as Type.
type Input struct {
	Type     string `json:"type"`
	Value    string `json:"value,omitempty"` // prefill; JSON numbers and booleans are accepted as text, Validate makes it canonical (ParseInput)
	Required bool   `json:"required,omitempty"`

	sent string // Value as sent, where Validate made it canonical
}

// Sent is the prefill as the agent sent it, before Validate made it
// canonical: what bridges before 2026-12-06 kept, and hashed to tell a
// create sent again under its tool_call_id from another request.
func (in Input) Sent() string {
	if in.sent != "" {
		return in.sent
	}
	return in.Value
}

// UnmarshalJSON accepts a prefill value of any JSON scalar, since Agno sends
// typed values (42, true) as well as strings.
func (in *Input) UnmarshalJSON(b []byte) error {
	var raw struct {
		Type     string          `json:"type"`
		Value    json.RawMessage `json:"value"`
		Required bool            `json:"required"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*in = Input{Type: raw.Type, Required: raw.Required}
	if len(raw.Value) == 0 || string(raw.Value) == "null" {
		return nil
	}
	// raw.Value is one JSON value, as the body's decoder checked it.
	switch c := raw.Value[0]; {
	case c == '"':
		return json.Unmarshal(raw.Value, &in.Value)
	case c == 't' || c == 'f' || c == '-' || '0' <= c && c <= '9':
		// A number is kept as written: 42, not 42.000000, and one no
		// float64 holds (1e400) is the type's to judge (Validate).
		in.Value = string(raw.Value)
		return nil
	}
	kind := "object"
	if raw.Value[0] == '[' {
		kind = "array"
	}
	// Field and Type, as encoding/json's own, give it its path in the body
	// (TypeErrorMessage): "questions[1].input.value must be ...".
	return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[any](), Field: "value"}
}

// Question is one question of a request.
type Question struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	Header      string   `json:"header,omitempty"`
	Detail      string   `json:"detail,omitempty"`
	Options     []Option `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Intent      *Intent  `json:"intent,omitempty"`
	Input       *Input   `json:"input,omitempty"`
}

// UnmarshalJSON accepts both spellings of multi-select: multiSelect (the
// seam's) and multi_select (the model-facing tool schema's). Both given
// with the same value is that value; with different values it is refused,
// since either reading would ask the question in a way its sender did not
// mean (one label where several were wanted, or the reverse).
func (q *Question) UnmarshalJSON(b []byte) error {
	type plain Question
	var raw struct {
		plain
		MultiCamel *bool `json:"multiSelect"` // shadows plain's, to tell false from absent
		MultiSnake *bool `json:"multi_select"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*q = Question(raw.plain)
	camel, snake := raw.MultiCamel, raw.MultiSnake
	if camel != nil && snake != nil && *camel != *snake {
		where := "a question"
		if q.ID != "" {
			where = "question " + strconv.Quote(q.ID)
		}
		return invalid(q.ID, "%s gives multiSelect %t and multi_select %t; they are two spellings of one field: send one", where, *camel, *snake)
	}
	q.MultiSelect = camel != nil && *camel || snake != nil && *snake
	return nil
}

// IsPlanReview reports whether q asks to approve a plan.
func (q Question) IsPlanReview() bool { return q.Intent != nil && q.Intent.Kind == IntentPlanReview }

// HasOption reports whether label names one of q's options, verbatim.
func (q Question) HasOption(label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}

// Questions is the body of a question request.
type Questions struct {
	Questions []Question `json:"questions"`
}

// Approval asks a person to allow or reject one tool call.
type Approval struct {
	ToolName      string          `json:"tool_name"`
	CallID        string          `json:"call_id,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	DisplayReason string          `json:"display_reason,omitempty"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
}

// Answer is the canonical answer to a question request: one item per
// question, in request order.
type Answer struct {
	Answers []AnswerItem `json:"answers"`
}

// AnswerItem answers one question. Selected is never nil, so it marshals as
// [] when nothing was chosen.
type AnswerItem struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   string   `json:"custom,omitempty"`
}

// Approval outcomes.
const (
	OutcomeAllowedOnce = "allowed-once"
	OutcomeRejected    = "rejected"
)

// Decision is a person's verdict on an approval.
type Decision struct {
	Outcome string `json:"outcome"`
	Note    string `json:"note,omitempty"`
}

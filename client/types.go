package client

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/internal/seam"
)

// The seam's vocabulary (CONTRACT §1), under the names a caller outside the
// module can use. They are aliases: a client.Question is a seam.Question.
type (
	Question   = seam.Question
	Option     = seam.Option
	Intent     = seam.Intent
	Input      = seam.Input
	Caller     = seam.Caller
	Approval   = seam.Approval
	Answer     = seam.Answer
	AnswerItem = seam.AnswerItem
	Decision   = seam.Decision
	Kind       = seam.Kind
	Status     = seam.Status
)

// Kinds of request.
const (
	KindQuestion = seam.KindQuestion
	KindApproval = seam.KindApproval
)

// Statuses of a request. Every status but pending is final.
const (
	StatusPending   = seam.StatusPending
	StatusAnswered  = seam.StatusAnswered  // answered or decided by a person
	StatusCancelled = seam.StatusCancelled // withdrawn by the agent that asked (ASK_ABORTED)
	StatusDismissed = seam.StatusDismissed // a person declined to answer (ASK_CANCELLED)
	StatusExpired   = seam.StatusExpired   // expires_in passed unanswered (ASK_TIMED_OUT)
)

// Approval outcomes.
const (
	OutcomeAllowedOnce = seam.OutcomeAllowedOnce
	OutcomeRejected    = seam.OutcomeRejected
)

// IntentPlanReview marks a question whose detail is a plan to approve.
const IntentPlanReview = seam.IntentPlanReview

// Input types of a typed free-text question.
const (
	InputString  = seam.InputString
	InputInteger = seam.InputInteger
	InputNumber  = seam.InputNumber
	InputBoolean = seam.InputBoolean
)

// Request is a request Create can post: a QuestionRequest or an
// ApprovalRequest.
type Request interface {
	kind() Kind
	// withToolCallID returns the request with a tool_call_id, a random one
	// when it has none, so a retried create re-attaches to it.
	withToolCallID() Request
	toolCallID() string
}

// QuestionRequest asks one or more questions.
type QuestionRequest struct {
	Questions []Question
	// ToolCallID makes the create idempotent: the same id and body return
	// the request that exists. Empty: the client makes up a random one.
	ToolCallID string
	Caller     *Caller       // who asks; shown to the people who answer
	Route      string        // empty: the bridge's "default" route
	ExpiresIn  time.Duration // 0: the route's or the bridge's default
}

type questionWire struct {
	Questions  []Question   `json:"questions"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Caller     *Caller      `json:"caller,omitempty"`
	Route      string       `json:"route,omitempty"`
	ExpiresIn  wireDuration `json:"expires_in,omitempty"`
}

// MarshalJSON writes the request body of POST /v1/questions.
func (r QuestionRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(questionWire{r.Questions, r.ToolCallID, r.Caller, r.Route, wireDuration(r.ExpiresIn)})
}

// UnmarshalJSON reads a request body of POST /v1/questions; expires_in may
// be a duration ("90s") or a number of seconds, as the bridge accepts.
func (r *QuestionRequest) UnmarshalJSON(b []byte) error {
	var w questionWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = QuestionRequest{w.Questions, w.ToolCallID, w.Caller, w.Route, time.Duration(w.ExpiresIn)}
	return nil
}

func (r QuestionRequest) toolCallID() string { return r.ToolCallID }

func (r QuestionRequest) withToolCallID() Request {
	if r.ToolCallID == "" {
		r.ToolCallID = NewToolCallID()
	}
	return r
}

// ApprovalRequest asks a person to allow or reject one tool call. The tool
// call is named by ToolCallID; Approval.CallID defaults to it.
type ApprovalRequest struct {
	Approval
	ToolCallID string // as in QuestionRequest
	Caller     *Caller
	Route      string
	ExpiresIn  time.Duration
}

type approvalWire struct {
	Approval
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Caller     *Caller      `json:"caller,omitempty"`
	Route      string       `json:"route,omitempty"`
	ExpiresIn  wireDuration `json:"expires_in,omitempty"`
}

// MarshalJSON writes the request body of POST /v1/approvals.
func (r ApprovalRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(approvalWire{r.Approval, r.ToolCallID, r.Caller, r.Route, wireDuration(r.ExpiresIn)})
}

// UnmarshalJSON reads a request body of POST /v1/approvals.
func (r *ApprovalRequest) UnmarshalJSON(b []byte) error {
	var w approvalWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ApprovalRequest{w.Approval, w.ToolCallID, w.Caller, w.Route, time.Duration(w.ExpiresIn)}
	return nil
}

func (r ApprovalRequest) toolCallID() string { return r.ToolCallID }

func (r ApprovalRequest) withToolCallID() Request {
	if r.ToolCallID == "" {
		r.ToolCallID = NewToolCallID()
	}
	return r
}

// wireDuration is a duration as the API writes it: "90s" out; "90s" or 90
// (seconds) in.
type wireDuration time.Duration

func (d wireDuration) MarshalJSON() ([]byte, error) {
	if d == 0 {
		return []byte(`"0s"`), nil
	}
	return json.Marshal(time.Duration(d).String())
}

func (d *wireDuration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*d = 0
		return nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && secs >= 0 && secs <= 1e9 {
		*d = wireDuration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("expires_in: %q is not a duration; write 30s, 10m or a number of seconds", s)
	}
	*d = wireDuration(v)
	return nil
}

// Record is a request as the bridge reports it (GET /v1/questions/{id}):
// the request, where it is in its life and, once it ended, how.
//
// It mirrors the bridge's own record field for field (a test keeps them in
// step) rather than aliasing it, so that importing this package does not
// link the bridge's server, Redis and metrics code into its callers.
type Record struct {
	ID         string     `json:"id"`
	Kind       Kind       `json:"kind"`
	Status     Status     `json:"status"`
	Route      string     `json:"route,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Caller     *Caller    `json:"caller,omitempty"`
	Questions  []Question `json:"questions,omitempty"`

	ToolName      string          `json:"tool_name,omitempty"`
	CallID        string          `json:"call_id,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	DisplayReason string          `json:"display_reason,omitempty"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`

	CreatedAt  time.Time   `json:"created_at"`
	ExpiresAt  *time.Time  `json:"expires_at,omitempty"`
	Answer     *Answer     `json:"answer,omitempty"`   // an answered question
	Decision   *Decision   `json:"decision,omitempty"` // a decided approval
	AnsweredBy *AnsweredBy `json:"answered_by,omitempty"`
	AnsweredAt *time.Time  `json:"answered_at,omitempty"`
	ResolvedAt *time.Time  `json:"resolved_at,omitempty"`
	Error      *ErrorBody  `json:"error,omitempty"` // the seam error of a request that ended unanswered
	Posts      []Post      `json:"posts,omitempty"`
}

// AnsweredBy is who answered, decided or dismissed a request, and where.
type AnsweredBy struct {
	Surface string `json:"surface"` // "slack", "discord", "api", ...
	UserID  string `json:"user_id,omitempty"`
	Name    string `json:"name,omitempty"`
}

// ErrorBody is the {"code","message"} of an error.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Post is one message the bridge posted for a request.
type Post struct {
	Surface   string    `json:"surface"`
	Target    string    `json:"target,omitempty"`
	Channel   string    `json:"channel"`
	MessageID string    `json:"message_id"`
	Thread    string    `json:"thread,omitempty"`
	PostedAt  time.Time `json:"posted_at"`
	// Bare: Discord showed the message without its embeds (the bot
	// lacks Embed Links in the channel), the request's text in its
	// content instead.
	Bare bool `json:"bare,omitempty"`
	// Short: Slack refused the message whole; it went out shorter, the
	// rest of its text in its thread.
	Short bool `json:"short,omitempty"`
	// To: the channel its target was configured with as it posted
	// (Slack: a channel's id or name, or a person's id); "" on a post
	// recorded before posts said.
	To string `json:"to,omitempty"`
}

// Err is the error of a request that ended without an answer: an *Error
// with the seam's code (ASK_ABORTED, ASK_CANCELLED, ASK_TIMED_OUT) and
// message. It is nil for pending and answered requests.
func (r *Record) Err() error {
	code := string(r.Status.Code())
	if code == "" {
		return nil
	}
	e := &Error{Code: code, Message: seam.Messages[r.Status.Code()]}
	if r.Error != nil {
		e.Code, e.Message = r.Error.Code, r.Error.Message
	}
	return e
}

// PendingList is what waits for an answer: pending questions and approvals,
// newest first.
type PendingList struct {
	Questions []Record `json:"questions"`
	Approvals []Record `json:"approvals"`
}

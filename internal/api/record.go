package api

import (
	"encoding/json"
	"time"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Record is a request as the API shows it.
type Record struct {
	ID         string          `json:"id"`
	Kind       seam.Kind       `json:"kind"`
	Status     seam.Status     `json:"status"`
	Route      string          `json:"route,omitempty"` // none on a record withdrawn before a create named it
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Caller     *seam.Caller    `json:"caller,omitempty"`
	Questions  []seam.Question `json:"questions,omitempty"`

	ToolName      string          `json:"tool_name,omitempty"`
	CallID        string          `json:"call_id,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	DisplayReason string          `json:"display_reason,omitempty"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`

	CreatedAt  time.Time      `json:"created_at"`
	ExpiresAt  *time.Time     `json:"expires_at,omitempty"`
	Answer     *seam.Answer   `json:"answer,omitempty"`
	Decision   *seam.Decision `json:"decision,omitempty"`
	AnsweredBy *AnsweredBy    `json:"answered_by,omitempty"`
	AnsweredAt *time.Time     `json:"answered_at,omitempty"`
	ResolvedAt *time.Time     `json:"resolved_at,omitempty"`
	Error      *ErrorBody     `json:"error,omitempty"`
	Posts      []pending.Post `json:"posts,omitempty"`
}

// AnsweredBy is who answered, decided or dismissed a request, and where.
type AnsweredBy struct {
	Surface string `json:"surface"`
	UserID  string `json:"user_id,omitempty"`
	Name    string `json:"name,omitempty"`
}

// ErrorBody is the {"code","message"} of an error.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// recordOf renders a stored record for the API.
func recordOf(rec *pending.Record) Record {
	out := Record{
		ID:         rec.ID,
		Kind:       rec.Kind,
		Status:     rec.Status,
		Route:      rec.Route,
		ToolCallID: rec.ToolCallID,
		Caller:     rec.Caller,
		CreatedAt:  rec.CreatedAt,
		ExpiresAt:  timePtr(rec.ExpiresAt),
		Answer:     rec.Answer,
		Decision:   rec.Decision,
		ResolvedAt: timePtr(rec.ResolvedAt),
		Posts:      rec.Posts,
	}
	if rec.Questions != nil {
		out.Questions = rec.Questions.Questions
	}
	if a := rec.Approval; a != nil {
		out.ToolName, out.CallID, out.Reason, out.DisplayReason, out.Arguments = a.ToolName, a.CallID, a.Reason, a.DisplayReason, a.Arguments
	}
	if rec.ResolvedBy != nil && (rec.Status == seam.StatusAnswered || rec.Status == seam.StatusDismissed) {
		by := AnsweredBy(*rec.ResolvedBy)
		out.AnsweredBy = &by
		out.AnsweredAt = timePtr(rec.ResolvedAt)
	}
	if c := rec.Status.Code(); c != "" {
		out.Error = &ErrorBody{Code: string(c), Message: seam.EndMessage(rec.Kind, c)}
	}
	return out
}

package seam

import "errors"

// Code is a stable, machine-readable error code of the seam.
type Code string

// The seam's codes. The messages of the last five are the harness's own,
// verbatim, so a plugin can reject a tool call with exactly the seam's error.
const (
	CodeEmptyQuestions  Code = "EMPTY_QUESTIONS"
	CodeBadIntent       Code = "BAD_INTENT"
	CodeInvalidRequest  Code = "INVALID_REQUEST"
	CodeDelegatedCaller Code = "DELEGATED_CALLER"
	CodeNoProvider      Code = "NO_PROVIDER"
	CodeAborted         Code = "ASK_ABORTED"
	CodeCancelled       Code = "ASK_CANCELLED"
	CodeTimedOut        Code = "ASK_TIMED_OUT"
)

// Messages is the seam's wording for the codes that have one.
var Messages = map[Code]string{
	CodeEmptyQuestions:  "ask_user_question requires at least one question",
	CodeDelegatedCaller: "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
	CodeNoProvider:      "no user-questions answerer accepted the request",
	CodeAborted:         "ask_user_question was aborted before the user answered",
	CodeCancelled:       "the user cancelled ask_user_question",
	CodeTimedOut:        "ask_user_question timed out before the user answered",
}

// Error is a seam error: a stable code and a sentence a person can act on.
// Field names the offending question id or input field when there is one,
// so a form can show the message beside it.
type Error struct {
	Code    Code
	Message string
	Field   string
}

func (e *Error) Error() string { return e.Message }

// Is matches any *Error with the same code, so errors.Is(err, ErrNoProvider)
// works for errors built with their own message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrEmptyQuestions  = codeErr(CodeEmptyQuestions)
	ErrBadIntent       = codeErr(CodeBadIntent)
	ErrInvalidRequest  = codeErr(CodeInvalidRequest)
	ErrDelegatedCaller = codeErr(CodeDelegatedCaller)
	ErrNoProvider      = codeErr(CodeNoProvider)
	ErrAborted         = codeErr(CodeAborted)
	ErrCancelled       = codeErr(CodeCancelled)
	ErrTimedOut        = codeErr(CodeTimedOut)
)

func codeErr(c Code) *Error { return &Error{Code: c, Message: Messages[c]} }

// CodeOf returns the seam code carried by err, or "" when it carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Field: field, Message: sprintf(format, args...)}
}

func badIntent(field, format string, args ...any) *Error {
	return &Error{Code: CodeBadIntent, Field: field, Message: sprintf(format, args...)}
}

// approvalMessages word the unanswered ends of an approval; the seam's own
// messages name ask_user_question.
var approvalMessages = map[Code]string{
	CodeAborted:   "the approval request was aborted before the user decided",
	CodeCancelled: "the user dismissed the approval request",
	CodeTimedOut:  "the approval request timed out before the user decided",
}

// EndMessage is the message of a request of kind k that ended with code c.
func EndMessage(k Kind, c Code) string {
	if m, ok := approvalMessages[c]; ok && k == KindApproval {
		return m
	}
	return Messages[c]
}

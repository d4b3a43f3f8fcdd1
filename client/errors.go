package client

import (
	"errors"
	"time"

	"github.com/askbridge/askbridge/internal/seam"
)

// Error codes the bridge answers with: the seam's and the API's own.
const (
	// A request that ended without an answer (Record.Err).
	CodeAborted   = string(seam.CodeAborted)   // the asking agent withdrew it (its turn was aborted)
	CodeCancelled = string(seam.CodeCancelled) // a person declined to answer
	CodeTimedOut  = string(seam.CodeTimedOut)  // its expires_in passed

	// Creating a request.
	CodeNoProvider      = string(seam.CodeNoProvider) // no answerer took it; fall through to the next
	CodeEmptyQuestions  = string(seam.CodeEmptyQuestions)
	CodeBadIntent       = string(seam.CodeBadIntent)
	CodeInvalidRequest  = string(seam.CodeInvalidRequest)
	CodeDelegatedCaller = string(seam.CodeDelegatedCaller)
	CodeConflict        = "CONFLICT" // the tool_call_id names a different request

	// Any call.
	CodeUnauthorized     = "UNAUTHORIZED"
	CodeForbidden        = "FORBIDDEN"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED" // the path takes other methods: a bug in the caller
	CodeAlreadyResolved  = "ALREADY_RESOLVED"
	CodeTooLarge         = "TOO_LARGE"
	CodeUnavailable      = "UNAVAILABLE" // the bridge can't reach its Redis; try again
	CodeInternal         = "INTERNAL"
)

// Error is an error the bridge reported: an API error
// ({"error":{"code","message"}} with its HTTP status), or a request that
// ended without an answer (Status 0, Code from the record's "error").
//
// Test for a code with errors.Is and the sentinels below, or errors.As and
// Code. Message is the bridge's sentence; for ASK_* codes it is the seam's
// own wording, fit to reject a tool call with.
type Error struct {
	Status  int // HTTP status; 0 when the error is a request's outcome
	Code    string
	Message string

	retryAfter time.Duration // the response's Retry-After, in seconds; 0 without one
}

func (e *Error) Error() string {
	switch {
	case e.Code == "":
		return e.Message
	case e.Message == "":
		return e.Code
	}
	return e.Message + " (" + e.Code + ")"
}

// Is matches any *Error with the same Code, so errors.Is(err, ErrTimedOut)
// holds whatever the status and message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrAborted         = &Error{Code: CodeAborted}
	ErrCancelled       = &Error{Code: CodeCancelled}
	ErrTimedOut        = &Error{Code: CodeTimedOut}
	ErrNoProvider      = &Error{Code: CodeNoProvider}
	ErrEmptyQuestions  = &Error{Code: CodeEmptyQuestions}
	ErrBadIntent       = &Error{Code: CodeBadIntent}
	ErrInvalidRequest  = &Error{Code: CodeInvalidRequest}
	ErrDelegatedCaller = &Error{Code: CodeDelegatedCaller}
	ErrConflict        = &Error{Code: CodeConflict}
	ErrUnauthorized    = &Error{Code: CodeUnauthorized}
	ErrForbidden       = &Error{Code: CodeForbidden}
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrAlreadyResolved = &Error{Code: CodeAlreadyResolved}
	ErrTooLarge        = &Error{Code: CodeTooLarge}
	ErrUnavailable     = &Error{Code: CodeUnavailable}
	ErrInternal        = &Error{Code: CodeInternal}
)

// ErrUnreachable is the error of a create that could not reach the bridge
// at all: nothing was asked.
var ErrUnreachable = errors.New("can't reach the bridge")

// ErrNotWithdrawn is in the error of a call whose request was to be
// withdrawn (the caller's context ended, or a create was given up on) and
// was not: the bridge could not be reached, or refused, within
// WithdrawTimeout. The request may still be pending, its posted messages
// answerable, until it expires.
var ErrNotWithdrawn = errors.New("withdrawing it failed")

// CodeOf returns the code of the *Error in err's chain, or "" when there is
// none (a network error, a cancelled context).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

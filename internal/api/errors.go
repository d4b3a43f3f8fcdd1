package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Codes of the HTTP API beyond the seam's own.
const (
	CodeUnauthorized     = "UNAUTHORIZED"
	CodeForbidden        = "FORBIDDEN"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeConflict         = "CONFLICT"
	CodeAlreadyResolved  = "ALREADY_RESOLVED"
	CodeTooLarge         = "TOO_LARGE"
	CodeUnavailable      = "UNAVAILABLE"
	CodeInternal         = "INTERNAL"
)

// Error is an API error with its HTTP status.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func apiErr(status int, code, msg string) *Error { return &Error{status, code, msg} }

// seamStatus is the HTTP status of each seam code.
var seamStatus = map[seam.Code]int{
	seam.CodeEmptyQuestions:  http.StatusBadRequest,
	seam.CodeBadIntent:       http.StatusBadRequest,
	seam.CodeInvalidRequest:  http.StatusBadRequest,
	seam.CodeDelegatedCaller: http.StatusForbidden,
	seam.CodeNoProvider:      http.StatusServiceUnavailable,
}

// toError maps any error to the API error a client sees. Causes that are
// not the client's business (Redis addresses, internals) stay in the log.
func toError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var se *seam.Error
	if errors.As(err, &se) {
		if st, ok := seamStatus[se.Code]; ok {
			return apiErr(st, string(se.Code), se.Message)
		}
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return apiErr(http.StatusRequestEntityTooLarge, CodeTooLarge, "the request body is larger than 1 MiB")
	case errors.Is(err, pending.ErrNotFound):
		return apiErr(http.StatusNotFound, CodeNotFound, "no such request")
	case errors.Is(err, pending.ErrAlreadyResolved):
		return apiErr(http.StatusConflict, CodeAlreadyResolved, "the request is already resolved")
	case errors.Is(err, pending.ErrConflict):
		return apiErr(http.StatusConflict, CodeConflict, "this tool_call_id already names a different request: send that request's body again to re-attach to it, or give this one a tool_call_id of its own")
	case errors.Is(err, pending.ErrUnavailable):
		return apiErr(http.StatusServiceUnavailable, CodeUnavailable, "the bridge can't reach its Redis; try again shortly")
	case errors.Is(err, dispatch.ErrStopping):
		return apiErr(http.StatusServiceUnavailable, CodeUnavailable, "this replica of the bridge is stopping; try again shortly")
	}
	return apiErr(http.StatusInternalServerError, CodeInternal, "internal error")
}

// handlerFunc is a handler that returns its error; serve writes it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// serve adapts h to http.Handler: every error is written by writeError.
func (s *Server) serve(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError writes every error as {"error":{"code","message"}}.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		return // the client went away; nobody reads the answer
	}
	e := toError(err)
	if s.inMemory && errors.Is(err, pending.ErrNotFound) {
		// An agent still waiting on a request this bridge made before it
		// last started would otherwise not know why it vanished.
		e = apiErr(e.Status, e.Code, e.Message+" (if it was made before this bridge last started, it is gone: this bridge keeps requests in memory, with no redis.url)")
	}
	level := slog.LevelDebug
	if e.Status >= 500 {
		// Redis not answering is logged as an outage, once as it begins
		// and once as it ends (app's redisHealth), not at each 503.
		level = s.store.LogLevel(err)
	}
	s.log.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", err)
	switch e.Code {
	case CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="askbridge"`)
	case CodeUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	WriteError(w, e)
}

// WriteError writes e as every endpoint of the bridge answers an error,
// {"error":{"code","message"}}: the API's, and the interaction endpoints'
// refusals (Slack and Discord read only the status).
func WriteError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
}

// BodyError is the error of a request body that could not be read
// (surface.ReadBody): 413 TOO_LARGE over its limit, else 400
// INVALID_REQUEST.
func BodyError(err error) *Error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return toError(err)
	}
	return apiErr(http.StatusBadRequest, string(seam.CodeInvalidRequest), "the body could not be read")
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

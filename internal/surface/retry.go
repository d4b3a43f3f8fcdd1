// Package surface holds what the chat surfaces (Slack, Discord) share: the
// one retry policy for calls to a platform, the wording of the line that
// says how a request ended, and small pure helpers for fitting agent text
// into a platform's limits.
package surface

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	slackapi "github.com/slack-go/slack"
)

// Retry is the one retry policy of every call a surface makes to its
// platform: a 2xx answer is done; a 429 waits Retry-After and tries again;
// a 5xx, or a call sent and never answered (its connection dropped, or
// its attempt timed out), tries again after a growing backoff; any other
// failure (other 4xx, Slack's {"ok":false}, another network error) fails
// at once. ctx is checked before every attempt and during every wait, and
// the attempts are bounded.
//
// The zero value is the default policy.
type Retry struct {
	Attempts      int           // tries in all, the first included; default 5
	Backoff       time.Duration // wait after the first 5xx, doubled after each; default 500ms
	MaxBackoff    time.Duration // cap of the 5xx backoff; default 8s
	RateLimitWait time.Duration // wait after a 429 that names no Retry-After; default 1s
	MaxWait       time.Duration // a 429 asking for longer fails at once; default 60s

	// Once marks a call that a 5xx or a lost answer may have applied, a
	// POST that is not idempotent: neither is tried again (a 429 and a
	// failure to connect, which apply nothing, still are).
	Once bool

	// Sleep waits d or until ctx ends. Tests replace it to record the waits
	// instead of sleeping; default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 5
	}
	if r.Backoff <= 0 {
		r.Backoff = 500 * time.Millisecond
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 8 * time.Second
	}
	if r.RateLimitWait <= 0 {
		r.RateLimitWait = time.Second
	}
	if r.MaxWait <= 0 {
		r.MaxWait = time.Minute
	}
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Do calls call until it succeeds, fails for good, or the attempts or ctx
// run out. It returns call's last error, wrapped with the number of
// attempts when there were several.
func (r Retry) Do(ctx context.Context, call func(context.Context) error) error {
	r = r.withDefaults()
	backoff := r.Backoff
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return fmt.Errorf("%w (after %d attempts; last error: %w)", err, attempt-1, last)
			}
			return err
		}
		err := call(ctx)
		if err == nil {
			return nil
		}
		last = err
		wait, retry := r.classify(err, &backoff)
		if !retry {
			return wrapAttempts(err, attempt)
		}
		if attempt >= r.Attempts {
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return fmt.Errorf("not waiting %s to retry, past the deadline: %w", wait, wrapAttempts(err, attempt))
		}
		if err := r.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w (after %d attempts; last error: %w)", err, attempt, last)
		}
	}
}

func wrapAttempts(err error, attempts int) error {
	if attempts == 1 {
		return err
	}
	return fmt.Errorf("after %d attempts: %w", attempts, err)
}

// classify says whether err is worth another try and how long to wait
// first. backoff is the 5xx backoff, advanced on each 5xx.
func (r Retry) classify(err error, backoff *time.Duration) (time.Duration, bool) {
	status, retryAfter := StatusOf(err)
	switch {
	case status == http.StatusTooManyRequests:
		wait := retryAfter
		if wait <= 0 {
			wait = r.RateLimitWait
		}
		return wait, wait <= r.MaxWait
	case notSent(err), (status >= 500 || unanswered(err)) && !r.Once: // MayHaveApplied, status read once
		wait := *backoff
		*backoff = min(2**backoff, r.MaxBackoff)
		return wait, true
	}
	return 0, false
}

// notSent reports whether err is a failure to connect (refused, no route,
// a name that did not resolve): the call never reached the platform, so
// trying again can't apply it twice. A failure once connected may have
// been applied (unanswered).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// unanswered reports whether err is a call that went out and got no
// answer: the connection dropped (reset, closed) or the attempt timed out
// once connected. The platform may have carried it out, as with a 5xx.
func unanswered(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) || notSent(err) {
		return false
	}
	return ue.Timeout() || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// MayHaveApplied reports whether a call that failed with err may have been
// carried out all the same: the platform answered with a 5xx (or Slack's
// internal_error), or never answered at all. Trying such a call again may
// do it twice, unless the call is idempotent or looks first.
func MayHaveApplied(err error) bool {
	status, _ := StatusOf(err)
	return status >= 500 || unanswered(err)
}

// Slack's {"ok":false} errors that mean "try again later" rather than "this
// call is wrong": the Web API reports them with HTTP 200.
var (
	slackRateLimited = map[string]bool{"ratelimited": true, "rate_limited": true}
	slackServerError = map[string]bool{"internal_error": true, "fatal_error": true, "service_unavailable": true}
)

// StatusOf returns the HTTP status err stands for (429 for a rate limit,
// 5xx for a server error, the status of any other HTTP failure) and the
// Retry-After it carried, or 0 when err is not an HTTP failure. It knows
// slack-go's RateLimitedError, StatusCodeError and SlackErrorResponse, and
// *HTTPError for plain HTTP calls.
func StatusOf(err error) (status int, retryAfter time.Duration) {
	var (
		he  *HTTPError
		rl  *slackapi.RateLimitedError
		sc  slackapi.StatusCodeError
		ser slackapi.SlackErrorResponse
	)
	switch {
	case errors.As(err, &he):
		return he.Status, he.RetryAfter
	case errors.As(err, &rl):
		return http.StatusTooManyRequests, rl.RetryAfter
	case errors.As(err, &sc):
		return sc.Code, 0
	case errors.As(err, &ser):
		switch {
		case slackRateLimited[ser.Err]:
			return http.StatusTooManyRequests, 0
		case slackServerError[ser.Err]:
			return http.StatusServiceUnavailable, 0
		}
	}
	return 0, 0
}

// HTTPError is a non-2xx answer to a plain HTTP call.
type HTTPError struct {
	Method, URL string // URL without its query, which may carry a token
	Status      int
	RetryAfter  time.Duration // from the Retry-After header; 0 when absent
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
}

// CheckResponse returns nil for a 2xx response and an *HTTPError for any
// other, with Retry-After read as seconds (fractions allowed, as Discord
// sends them) or as an HTTP date.
func CheckResponse(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := &HTTPError{Status: resp.StatusCode, RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if req := resp.Request; req != nil && req.URL != nil {
		u := *req.URL
		u.RawQuery, u.User = "", nil
		e.Method, e.URL = req.Method, u.String()
	}
	return e
}

// ParseRetryAfter reads a Retry-After header: seconds, possibly fractional,
// or an HTTP date. It returns 0 when v is empty or unreadable, and at most
// a day: a wait that long is one no call makes, and is given up on.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case secs <= 0 || math.IsNaN(secs):
			return 0
		case secs > 24*3600:
			return 24 * time.Hour
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

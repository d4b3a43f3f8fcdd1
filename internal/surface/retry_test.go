package surface

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"
)

// recorder is a Retry whose waits are recorded, not slept.
func recorder() (Retry, *[]time.Duration) {
	var waits []time.Duration
	return Retry{Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}}, &waits
}

// script returns a call that fails with errs in turn, then succeeds, and
// counts its calls.
func script(errs ...error) (func(context.Context) error, *int) {
	n := 0
	return func(context.Context) error {
		n++
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, &n
}

// refused is what an HTTP client returns when nothing listens.
func refused() error {
	return &url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

// reset is what an HTTP client returns when the connection is reset after
// the request went out.
func reset() error {
	return &url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage",
		Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
}

func TestRetryPolicy(t *testing.T) {
	status := func(code int) error { return slackapi.StatusCodeError{Code: code, Status: http.StatusText(code)} }
	for _, tc := range []struct {
		name      string
		errs      []error
		wantErr   bool
		wantCalls int
		wantWaits []time.Duration
	}{
		{"ok at once", nil, false, 1, nil},
		{"429 waits Retry-After", []error{&slackapi.RateLimitedError{RetryAfter: 7 * time.Second}}, false, 2, []time.Duration{7 * time.Second}},
		{"429 without Retry-After waits the default", []error{status(429)}, false, 2, []time.Duration{time.Second}},
		{"ok:false ratelimited is a 429", []error{slackapi.SlackErrorResponse{Err: "ratelimited"}}, false, 2, []time.Duration{time.Second}},
		{"5xx backs off, doubling", []error{status(500), status(502), status(503)}, false, 4, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"ok:false internal_error backs off", []error{slackapi.SlackErrorResponse{Err: "internal_error"}}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"plain HTTP 429", []error{&HTTPError{Status: 429, RetryAfter: 1500 * time.Millisecond}}, false, 2, []time.Duration{1500 * time.Millisecond}},
		{"plain HTTP 503", []error{&HTTPError{Status: 503}}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"wrapped errors are seen through", []error{fmt.Errorf("chat.postMessage: %w", status(504))}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"other 4xx fails at once", []error{status(404)}, true, 1, nil},
		{"ok:false fails at once", []error{slackapi.SlackErrorResponse{Err: "channel_not_found"}}, true, 1, nil},
		{"a refused connection backs off (nothing was sent)", []error{refused(), refused()}, false, 3, []time.Duration{500 * time.Millisecond, time.Second}},
		{"a name that did not resolve backs off", []error{&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "slack.com", IsTemporary: true}}}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"a connection reset once sent backs off as a 5xx", []error{reset()}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"a connection closed once sent backs off as a 5xx", []error{&url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage", Err: io.EOF}}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"another failure once connected fails at once", []error{&url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage", Err: errors.New("tls: bad certificate")}}, true, 1, nil},
		{"an untyped network error fails at once", []error{errors.New("dial tcp: connection refused")}, true, 1, nil},
		{"a Retry-After beyond MaxWait fails at once", []error{&slackapi.RateLimitedError{RetryAfter: 2 * time.Minute}}, true, 1, nil},
		{"attempts are bounded", []error{status(500), status(500), status(500), status(500), status(500), status(500)}, true, 5,
			[]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}},
		{"once: a 5xx fails at once (it may have been applied)", []error{status(500)}, true, 1, nil},
		{"once: a 429 still waits", []error{&HTTPError{Status: 429, RetryAfter: time.Second}}, false, 2, []time.Duration{time.Second}},
		{"once: a refused connection still backs off", []error{refused()}, false, 2, []time.Duration{500 * time.Millisecond}},
		{"once: a connection reset once sent fails at once (it may have been applied)", []error{reset()}, true, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, waits := recorder()
			r.Once = strings.HasPrefix(tc.name, "once: ")
			call, calls := script(tc.errs...)
			err := r.Do(context.Background(), call)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.errs[len(tc.errs)-1].Error()) {
				t.Errorf("the error %v does not wrap the call's error", err)
			}
			if *calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", *calls, tc.wantCalls)
			}
			if fmt.Sprint(*waits) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits %v, want %v", *waits, tc.wantWaits)
			}
		})
	}
}

func TestRetryHonoursContext(t *testing.T) {
	t.Run("checked before the first call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		call, calls := script()
		if err := (Retry{}).Do(ctx, call); !errors.Is(err, context.Canceled) || *calls != 0 {
			t.Errorf("err %v after %d calls", err, *calls)
		}
	})
	t.Run("a wait past the deadline is not waited", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, waits := recorder()
		call, calls := script(&slackapi.RateLimitedError{RetryAfter: 30 * time.Second})
		err := r.Do(ctx, call)
		var rl *slackapi.RateLimitedError
		if !errors.As(err, &rl) || *calls != 1 || len(*waits) != 0 {
			t.Errorf("err %v, %d calls, waits %v", err, *calls, *waits)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := Retry{Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }}
		call, calls := script(slackapi.StatusCodeError{Code: 500})
		err := r.Do(ctx, call)
		if !errors.Is(err, context.Canceled) || !errors.As(err, new(slackapi.StatusCodeError)) || *calls != 1 {
			t.Errorf("err %v after %d calls", err, *calls)
		}
	})
	t.Run("the default sleep ends with ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Errorf("sleep: %v", err)
		}
	})
}

func TestCheckResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/limited":
			w.Header().Set("Retry-After", "2.5")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/down":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	get := func(path string) error {
		resp, err := http.Get(srv.URL + path + "?token=SECRET")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return CheckResponse(resp)
	}
	if err := get("/ok"); err != nil {
		t.Errorf("2xx: %v", err)
	}
	err := get("/limited")
	if st, ra := StatusOf(err); st != 429 || ra != 2500*time.Millisecond {
		t.Errorf("429: status %d, retry after %v", st, ra)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error shows the query: %v", err)
	}
	if st, _ := StatusOf(get("/down")); st != 502 {
		t.Errorf("502: status %d", st)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0.25":                          250 * time.Millisecond,
		"-1":                            0,
		"86401":                         24 * time.Hour, // given up on, not taken for none
		"1e30":                          24 * time.Hour,
		"NaN":                           0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:00:10 GMT": 10 * time.Second,
	} {
		if got := ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// What an HTTP client returns when nothing listens is a dial failure.
func TestNotSentIsWhatAClientReturns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Post("http://"+addr+"/api/chat.postMessage", "application/json", strings.NewReader("{}"))
	if err == nil || !notSent(err) {
		t.Errorf("notSent(%v) = false, want true", err)
	}
}

// What an HTTP client returns for a call that reached the platform and got
// no answer (the connection closed, or the attempt timed out) may have
// been applied; a 4xx, or a call that never went out, was not.
func TestMayHaveAppliedIsWhatAClientReturns(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/drop":
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		case "/slow":
			<-release
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	post := func(path string) error {
		resp, err := client.Post(srv.URL+path, "application/json", strings.NewReader("{}"))
		if err == nil {
			err = CheckResponse(resp)
			resp.Body.Close()
		}
		return err
	}
	for path, want := range map[string]bool{"/drop": true, "/slow": true, "/missing": false} {
		if err := post(path); err == nil || MayHaveApplied(err) != want {
			t.Errorf("%s: MayHaveApplied(%v) = %v, want %v", path, err, !want, want)
		}
	}
	if err := refused(); MayHaveApplied(err) {
		t.Errorf("MayHaveApplied(%v) = true for a call that never went out", err)
	}
}

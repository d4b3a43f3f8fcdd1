package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyErr is an error reply of Redis, as go-redis tells them.
type replyErr string

func (r replyErr) Error() string { return string(r) }
func (replyErr) RedisError()     {}

// netTimeout is a network timeout as Go's net package makes them: it
// reads as context.DeadlineExceeded too.
type netTimeout struct{}

func (netTimeout) Error() string     { return "i/o timeout" }
func (netTimeout) Timeout() bool     { return true }
func (netTimeout) Temporary() bool   { return true }
func (netTimeout) Is(err error) bool { return err == context.DeadlineExceeded }

// TestUnservedAndLogLevel: what counts as Redis serving nothing, and what
// an outage the replica knows of quiets in the log: Redis's failures, not
// the bridge's own.
func TestUnservedAndLogLevel(t *testing.T) {
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: netTimeout{}}
	badJSON := json.Unmarshal([]byte("{"), &struct{}{})
	for _, tt := range []struct {
		name        string
		err         error
		unserved    bool
		unavailable bool // what the store's calls make of it
	}{
		{"none", nil, false, false},
		{"a key not found", redis.Nil, false, false},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, true, true},
		{"a dial timing out", dialTimeout, true, true},
		{"a connection cut mid-reply", io.ErrUnexpectedEOF, true, true},
		{"a connection closed", fmt.Errorf("read: %w", io.EOF), true, true},
		{"no connection free in time", redis.ErrPoolTimeout, true, true},
		{"loading", replyErr("LOADING Redis is loading the dataset in memory"), true, true},
		{"loading, in a script on Redis 6", replyErr("ERR Error running script (call to f_1): @user_script:1: @user_script: 1: -LOADING Redis is loading the dataset in memory"), true, true},
		{"out of memory", replyErr("OOM command not allowed when used memory > 'maxmemory'"), false, true},
		{"a script's bug", replyErr("ERR user_script:1: attempt to index a nil value"), false, false},
		{"the caller gave up", context.Canceled, false, false},
		{"a closed client", redis.ErrClosed, false, true},
	} {
		// unavailable reads the errors of Redis calls only.
		if got := Unserved(tt.err); got != tt.unserved {
			t.Errorf("%s: Unserved = %v; want %v", tt.name, got, tt.unserved)
		}
		if got := IsUnavailable(unavailable(tt.err)); got != tt.unavailable {
			t.Errorf("%s: unavailable() is ErrUnavailable: %v; want %v", tt.name, got, tt.unavailable)
		}
	}

	outage := false
	s := New(redis.NewClient(&redis.Options{}), Options{Outage: func() bool { return outage }})
	refused := unavailable(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")})
	bug := fmt.Errorf("get x: %w", badJSON) // a record that does not decode
	if Unserved(bug) {
		t.Errorf("Unserved(%v) = true; want false", bug)
	}
	for _, tt := range []struct {
		err    error
		outage bool
		want   slog.Level
	}{
		{refused, false, slog.LevelWarn}, // no outage logged: each failure warns
		{refused, true, slog.LevelDebug},
		{io.EOF, true, slog.LevelDebug}, // a subscription's own error
		{bug, true, slog.LevelWarn},     // not Redis's: warns, outage or not
		{unavailable(replyErr("OOM command not allowed")), false, slog.LevelWarn},
	} {
		outage = tt.outage
		if got := s.LogLevel(tt.err); got != tt.want {
			t.Errorf("LogLevel(%v) with outage %v = %v; want %v", tt.err, tt.outage, got, tt.want)
		}
	}
}

// leveled is a slog handler that passes each record's level and message
// to a channel, as "INFO message".
type leveled struct{ ch chan string }

func (l leveled) Enabled(context.Context, slog.Level) bool { return true }

func (l leveled) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.ch <- r.Level.String() + " " + r.Message:
	default:
	}
	return nil
}

func (l leveled) WithAttrs([]slog.Attr) slog.Handler { return l }

func (l leveled) WithGroup(string) slog.Handler { return l }

// TestSubscriptionClosedLogLevel: a wake-up subscription whose connection
// the server closes is logged at info, unless the replica has an outage
// under way and logged, which says it.
func TestSubscriptionClosedLogLevel(t *testing.T) {
	for _, tt := range []struct {
		outage bool
		want   string
	}{{false, "INFO"}, {true, "DEBUG"}} {
		embeddedOnly(t, func(t *testing.T, b *backend) {
			lg := leveled{make(chan string, 100)}
			s := b.store(func(o *Options) {
				o.Logger = slog.New(lg)
				o.Outage = func() bool { return tt.outage }
			})
			b.run(s)
			b.mr.Close()
			for {
				line := recv(t, "the subscription's interruption", lg.ch)
				if !strings.HasSuffix(line, "wake-up subscription interrupted") {
					continue
				}
				if line != tt.want+" wake-up subscription interrupted" {
					t.Errorf("with an outage logged %v: %q; want it at %s", tt.outage, line, tt.want)
				}
				break
			}
		})
	}
}

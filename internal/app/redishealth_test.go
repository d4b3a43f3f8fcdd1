package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// reply is an error reply of Redis, as go-redis tells them: a redis.Error.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// TestRedisHealthEdges: the rules that keep one outage one outage in the
// log, whatever order the calls on their way when it begins and ends come
// back in.
func TestRedisHealthEdges(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }

	var logs bytes.Buffer // one goroutine
	h := &redisHealth{log: slog.New(slog.NewTextHandler(&logs, nil))}
	count := func(msg string) int { return strings.Count(logs.String(), msg) }
	for _, s := range []struct {
		what      string
		sent, now int // ms
		err       error
		call      bool
		down      bool
		begun     int // outages logged as begun so far
		ended     int // and as ended
	}{
		{"a call served", 0, 1, nil, true, false, 0, 0},
		{"a refusal of writes alone", 1, 2, reply("OOM command not allowed when used memory > 'maxmemory'"), true, false, 0, 0},
		{"a call whose caller gave up", 1, 3, fmt.Errorf("create: %w", context.DeadlineExceeded), true, false, 0, 0},
		{"a call failed with the pool's last dial error, no dial seen", 2, 3, fmt.Errorf("pool: %w", refused), true, false, 0, 0},
		{"a dial refused", 3, 4, refused, false, true, 1, 0},
		{"a connection reset while down", 3, 5, reset, true, true, 1, 0},
		{"a reply to a call sent before the outage began", 2, 6, nil, true, true, 1, 0},
		{"a reply to a call sent after it began", 7, 8, nil, true, false, 1, 1},
		{"a failure of a call sent before it ended", 6, 9, reset, true, false, 1, 1},
		{"Redis loading its dataset", 10, 11, reply("LOADING Redis is loading the dataset in memory"), true, true, 2, 1},
		{"served again", 12, 13, nil, true, false, 2, 2},
	} {
		h.observe(at(s.sent), at(s.now), s.err, s.call)
		if h.down() != s.down || count("Redis is unavailable") != s.begun || count("Redis serves again") != s.ended {
			t.Fatalf("%s: down %v, %d begun, %d ended; want %v, %d, %d. Log:\n%s",
				s.what, h.down(), count("Redis is unavailable"), count("Redis serves again"), s.down, s.begun, s.ended, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `msg="Redis serves again" after=2ms unserved_calls=1`) {
		t.Errorf("the second outage's end does not say how long it lasted and what it left unserved:\n%s", logs.String())
	}
}

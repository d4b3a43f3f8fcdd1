package app_test

import (
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// lines is an io.Writer that hands each line written to it to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		select {
		case l <- line:
		default: // nobody reads any more
		}
	}
	return len(p), nil
}

// What go-redis logs on its own (here: dials to a Redis that is down)
// reaches the bridge's logger as structured lines, not stderr as plain
// text that a JSON log pipeline can't read.
func TestRedisClientLinesGoToTheLogger(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "redis://" + ln.Addr().String() + "/0" // nothing listens once closed
	ln.Close()

	out := make(lines, 1000)
	log := slog.New(slog.NewJSONHandler(out, nil))
	cfg := apptest.Config(t, "", down, "redislog:")
	a, err := app.New(cfg, log, app.Options{})
	if err != nil {
		t.Fatalf("app.New with Redis down: %v", err)
	}
	defer a.Close()

	deadline := time.After(20 * time.Second)
	for {
		select {
		case line := <-out:
			var rec struct{ Level, Msg, Detail string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("a log line is not JSON: %q", line)
			}
			if rec.Msg == "redis client" {
				if rec.Level != "WARN" || !strings.Contains(rec.Detail, "dial") {
					t.Fatalf("go-redis's line: %q", line)
				}
				return
			}
		case <-deadline:
			t.Fatal("no line of go-redis reached the bridge's logger within 20s of Redis being down")
		}
	}
}

package api_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// long-poll, subscriber, sweeper and server must stop with its app.
// go-redis's pool keeps probing a Redis it could not dial once a second and
// notices its Close only at the next probe: that goroutine is theirs.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

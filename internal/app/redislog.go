package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// go-redis logs what it does on its own (a dial that keeps failing, a
// Sentinel naming a new master, a cluster node it can't reach) through one
// logger for the whole process, by default straight to stderr as plain
// text: lines that a log pipeline reading log.format json can't parse,
// and that log.level can't silence. redisLogs sends them to the bridge's
// logger instead, as warnings (news of Sentinel's master at info).
//
// The logger is the process's: with several replicas in one process (as
// in tests) the last one started logs for all, and once it is closed
// go-redis's lines are dropped rather than written to a logger whose
// owner is gone.
var redisLogs struct {
	install sync.Once
	current atomic.Pointer[redisLog]
}

// redisLog is where go-redis's lines go: log, at debug while quiet says
// an outage is under way and logged (redisHealth): go-redis then writes
// a line for each dial that fails.
type redisLog struct {
	log   *slog.Logger
	quiet func() bool
}

// redisLogger is the go-redis logger that writes to redisLogs.current.
type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	to := redisLogs.current.Load()
	if to == nil {
		return
	}
	level := slog.LevelWarn
	for _, p := range redisNews {
		if strings.HasPrefix(format, p) {
			level = slog.LevelInfo
		}
	}
	if level == slog.LevelWarn && to.quiet() {
		level = slog.LevelDebug
	}
	to.log.Log(ctx, level, "redis client", "detail", fmt.Sprintf(format, v...))
}

// redisNews are the formats of go-redis lines that report what it found,
// not what went wrong: logged at info. Sentinel names its master at every
// start, and again after a failover.
var redisNews = []string{"sentinel: selected addr", "sentinel: new master"}

// logRedisTo makes log the logger of go-redis's own lines, whose
// warnings go at debug while quiet reports true, and returns a function
// that stops it being that, unless another has taken its place.
func logRedisTo(log *slog.Logger, quiet func() bool) (stop func()) {
	redisLogs.install.Do(func() { redis.SetLogger(redisLogger{}) })
	to := &redisLog{log: log, quiet: quiet}
	redisLogs.current.Store(to)
	return func() { redisLogs.current.CompareAndSwap(to, nil) }
}

package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// redisMetrics is a go-redis hook that counts what the replica sends
// Redis: each command sent alone and each pipeline is one round trip.
// `bridge bench` reads them to report round trips per request.
type redisMetrics struct {
	trips, commands prometheus.Counter
}

func newRedisMetrics(reg prometheus.Registerer) *redisMetrics {
	m := &redisMetrics{
		trips: prometheus.NewCounter(prometheus.CounterOpts{Name: "askbridge_redis_round_trips_total",
			Help: "Round trips to Redis: each command sent alone and each pipeline counts one."}),
		commands: prometheus.NewCounter(prometheus.CounterOpts{Name: "askbridge_redis_commands_total",
			Help: "Commands sent to Redis, each command of a pipeline included."}),
	}
	reg.MustRegister(m.trips, m.commands)
	return m
}

func (*redisMetrics) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *redisMetrics) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		m.trips.Inc()
		m.commands.Inc()
		return next(ctx, cmd)
	}
}

func (m *redisMetrics) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		m.trips.Inc()
		m.commands.Add(float64(len(cmds)))
		return next(ctx, cmds)
	}
}

package api

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/internal/pending"
)

var (
	waitingDesc = prometheus.NewDesc("askbridge_waiters",
		"Calls (and live web pages) waiting for a request to end in this process.", nil, nil)
	pendingDesc = prometheus.NewDesc("askbridge_pending_requests",
		"Pending requests in the store, all replicas together.", nil, nil)
	uneditedDesc = prometheus.NewDesc("askbridge_unedited_requests",
		"Ended requests whose posted messages are not yet known to be edited, all replicas together.", nil, nil)
	overdueDesc = prometheus.NewDesc("askbridge_overdue_requests",
		"Pending requests more than a minute past their expiry that no sweeper has expired yet, all replicas together.", nil, nil)
	redisUpDesc = prometheus.NewDesc("askbridge_redis_up",
		"1 when this replica read the store's counts from Redis at scrape time, else 0 (and the counts are left out).", nil, nil)
)

// overdueAfter is how far past its expiry a pending request must be to
// count as overdue: the sweepers, every store.sweep_interval, expire it
// well within it, so under traffic the count is 0 unless they fall behind.
const overdueAfter = time.Minute

// waitingCollector reports this process's waiters at scrape time.
type waitingCollector struct{ store *pending.Store }

func (c waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- waitingDesc }

func (c waitingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(c.store.Waiting()))
}

// pendingCollector counts pending requests, those of them overdue, and
// ended requests whose messages are still to be edited, in Redis at
// scrape time.
type pendingCollector struct{ store *pending.Store }

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- uneditedDesc
	ch <- overdueDesc
	ch <- redisUpDesc
}

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := c.store.Count(ctx, overdueAfter) // one round trip for the three
	if err != nil {
		// Not an invalid metric: that fails the whole scrape, and with it
		// the counters that tell what an outage is doing (posts failing,
		// 503s). askbridge_redis_up says why the counts are missing.
		ch <- prometheus.MustNewConstMetric(redisUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n.Pending))
	ch <- prometheus.MustNewConstMetric(uneditedDesc, prometheus.GaugeValue, float64(n.Unedited))
	ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(n.Overdue))
	ch <- prometheus.MustNewConstMetric(redisUpDesc, prometheus.GaugeValue, 1)
}

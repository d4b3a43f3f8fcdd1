package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/internal/pending"
)

// Metrics counts what the dispatcher does. A nil *Metrics counts nothing.
type Metrics struct {
	createdTotal  *prometheus.CounterVec
	resolvedTotal *prometheus.CounterVec
	timeToResolve *prometheus.HistogramVec
	postFailures  *prometheus.CounterVec
	editFailures  *prometheus.CounterVec
}

// NewMetrics registers the dispatcher's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		createdTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_requests_created_total",
			Help: "Requests created and taken by a target (or on a route with none), by kind and route.",
		}, []string{"kind", "route"}),
		resolvedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_requests_resolved_total",
			Help: "Requests ended, by kind, route and outcome (answered, cancelled, dismissed, expired), counted by the replica that ended them.",
		}, []string{"kind", "route", "outcome"}),
		timeToResolve: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "askbridge_time_to_resolve_seconds",
			Help:    "Time from creating a request to its end, by kind and outcome.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600},
		}, []string{"kind", "outcome"}),
		postFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_post_failures_total",
			Help: "Posts to a surface that failed after retries, by surface.",
		}, []string{"surface"}),
		editFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_edit_failures_total",
			Help: "Edits of an ended request's posted messages that failed after retries, by surface; a finisher tries them again for an hour.",
		}, []string{"surface"}),
	}
	reg.MustRegister(m.createdTotal, m.resolvedTotal, m.timeToResolve, m.postFailures, m.editFailures)
	return m
}

func (m *Metrics) created(rec *pending.Record) {
	if m != nil {
		m.createdTotal.WithLabelValues(string(rec.Kind), rec.Route).Inc()
	}
}

func (m *Metrics) resolved(rec *pending.Record) {
	if m == nil {
		return
	}
	m.resolvedTotal.WithLabelValues(string(rec.Kind), rec.Route, string(rec.Status)).Inc()
	if !rec.ResolvedAt.IsZero() && !rec.CreatedAt.IsZero() {
		m.timeToResolve.WithLabelValues(string(rec.Kind), string(rec.Status)).Observe(rec.ResolvedAt.Sub(rec.CreatedAt).Seconds())
	}
}

// surface starts a configured surface's series at 0: an alert on their
// increase sees the first failure after a start only if the series was
// there before it.
func (m *Metrics) surface(name string) {
	if m != nil {
		m.postFailures.WithLabelValues(name)
		m.editFailures.WithLabelValues(name)
	}
}

func (m *Metrics) postFailed(surface string) {
	if m != nil {
		m.postFailures.WithLabelValues(surface).Inc()
	}
}

func (m *Metrics) editFailed(surface string) {
	if m != nil {
		m.editFailures.WithLabelValues(surface).Inc()
	}
}

package surface

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Connection is a surface's long-lived connection to its platform, Slack's
// Socket Mode or Discord's gateway, as metrics: whether it is up, and how
// often one that was up went down. Over such a connection the replica
// receives its clicks, and a connection that is down receives none; the
// platform says nothing, and the bridge only logs. A nil *Connection
// counts nothing.
type Connection struct {
	up    prometheus.Gauge
	drops prometheus.Counter

	mu   sync.Mutex
	isUp bool
}

// NewConnection registers the connection metrics of the surface named
// name on reg, both at 0; nil reg: nowhere (and a nil Connection). A
// surface registers them only when it opens such a connection, so a
// replica that takes its clicks over HTTP has no series to alert on.
func NewConnection(reg prometheus.Registerer, name string) *Connection {
	if reg == nil {
		return nil
	}
	c := &Connection{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "askbridge_connection_up",
			Help: "1 while this replica's Slack Socket Mode or Discord gateway connection is up and takes clicks, else 0, by surface.",
		}),
		drops: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askbridge_connection_drops_total",
			Help: "Times this replica's Slack Socket Mode or Discord gateway connection went down after it was up, by surface.",
		}),
	}
	// One series per surface, under names both surfaces share.
	prometheus.WrapRegistererWith(prometheus.Labels{"surface": name}, reg).MustRegister(c.up, c.drops)
	return c
}

// Up records that the connection is up.
func (c *Connection) Up() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.isUp = true
	c.up.Set(1)
}

// Down records that the connection is down, and counts a drop when it
// was up.
func (c *Connection) Down() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isUp {
		c.drops.Inc()
	}
	c.isUp = false
	c.up.Set(0)
}

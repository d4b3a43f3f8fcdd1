package web

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Default caps on the live streams (GET /web/events) of one replica. A
// stream is a held connection: a file descriptor, about 35 KB of memory
// (two goroutines and net/http's buffers, docs/performance.md), and
// Redis reads for as long as it is open (a request's page reads its
// record every ten seconds, an inbox the pending ids every two). A
// signed link needs no sign-in and is seen by everyone in its channel,
// so without a cap one holder of it could open streams until the
// replica runs out of descriptors, for its API and its Slack and
// Discord callbacks too.
const (
	// DefaultStreamsPerKey is how many streams one session, or one link
	// from one client address, holds at once. A browser holds one per
	// open page (over HTTP/1.1 at most six to a host, over HTTP/2 one per
	// tab); behind a proxy that hides the client's address, everyone who
	// opened a link shares it.
	DefaultStreamsPerKey = 64
	// DefaultLinkStreams is how many streams opened by links one replica
	// holds at once: about 35 MB and 100 Redis reads a second at most.
	// Streams opened by sessions, whose holders have an answer-scoped
	// token, are not counted in it, so that links can't take the
	// inbox's live updates away.
	DefaultLinkStreams = 1000
)

// streamLimits counts the live streams open on this replica by the key of
// who opened them, and those opened by links in all.
type streamLimits struct {
	perKey, links int // the caps

	mu     sync.Mutex
	byKey  map[string]int
	linked int
	warned time.Time // when a full replica was last logged
}

// warnFull reports whether a refusal for a full replica is to be logged
// as a warning now: once a minute at most, as refused pages ask again.
func (l *streamLimits) warnFull(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.warned) < time.Minute {
		return false
	}
	l.warned = now
	return true
}

// errTooManyStreams is take's refusal, as a web error.
var errTooManyStreams = &webError{http.StatusTooManyRequests, CodeTooManyStreams,
	"too many live streams are open for this link or session; close a page, or wait: the page works without one, only it is not updated live", ""}

// CodeTooManyStreams is the code of a live stream refused for the caps
// above (HTTP 429).
const CodeTooManyStreams = "TOO_MANY_STREAMS"

// A streamCap is one of the caps of streamLimits, as the cap label of
// askbridge_web_streams_refused_total names it.
type streamCap string

const (
	capSession streamCap = "session" // a session's streams (streamsPerKey)
	capLink    streamCap = "link"    // a link's from one client address (streamsPerKey)
	capReplica streamCap = "replica" // the links' streams of this replica (web.max_link_streams)
)

// streamCaps are every cap, to start their series at 0.
var streamCaps = []streamCap{capSession, capLink, capReplica}

// take counts a stream for key, and for the links' cap when link is
// true (key is then a link's, else a session's), and returns what
// uncounts it; or refuses it, over the cap it names.
func (l *streamLimits) take(key string, link bool) (release func(), over streamCap, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byKey[key] >= l.perKey && link:
		return nil, capLink, false
	case l.byKey[key] >= l.perKey:
		return nil, capSession, false
	case link && l.linked >= l.links:
		return nil, capReplica, false
	}
	if l.byKey == nil {
		l.byKey = map[string]int{}
	}
	l.byKey[key]++
	if link {
		l.linked++
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.byKey[key]--; l.byKey[key] <= 0 {
			delete(l.byKey, key)
		}
		if link {
			l.linked--
		}
	}, "", true
}

// newRefusedStreams is askbridge_web_streams_refused_total, registered on
// reg unless it is nil, with each cap's series at 0 from the start: an
// alert on their increase sees the first refusal after a start.
func newRefusedStreams(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "askbridge_web_streams_refused_total",
		Help: "Live web streams (GET /web/events) refused with 429 TOO_MANY_STREAMS, by the cap they were over: session, link (one link from one client address), or replica (the streams links opened on this replica, web.max_link_streams).",
	}, []string{"cap"})
	for _, over := range streamCaps {
		c.WithLabelValues(string(over))
	}
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}

// open returns how many streams are counted, in all and for links.
func (l *streamLimits) open() (all, links int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.byKey {
		all += n
	}
	return all, l.linked
}

// clientNet is the address a stream is counted by: the connection's IP,
// or, for IPv6, its /64, which one host or network is handed whole.
func clientNet(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/" + strconv.Itoa(64)
}

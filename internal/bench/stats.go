package bench

import (
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Latency summarises a set of durations by nearest rank.
type Latency struct {
	N    int           `json:"n"`
	P50  time.Duration `json:"-"`
	P99  time.Duration `json:"-"`
	P999 time.Duration `json:"-"`
	Max  time.Duration `json:"-"`
}

// MarshalJSON writes the durations in microseconds, the unit the report
// compares them in.
func (l Latency) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		N    int     `json:"n"`
		P50  float64 `json:"p50_us"`
		P99  float64 `json:"p99_us"`
		P999 float64 `json:"p999_us"`
		Max  float64 `json:"max_us"`
	}{l.N, us(l.P50), us(l.P99), us(l.P999), us(l.Max)})
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// summarize sorts ds in place and returns its summary.
func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	// rank returns the nearest-rank p-th per-mille: the smallest value with
	// at least p/1000 of the values at or below it.
	rank := func(p int) time.Duration { return ds[max(0, (len(ds)*p+999)/1000-1)] }
	return Latency{N: len(ds), P50: rank(500), P99: rank(990), P999: rank(999), Max: ds[len(ds)-1]}
}

// samples collects durations from many goroutines.
type samples struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
}

// summary summarises what was collected so far.
func (s *samples) summary() Latency {
	s.mu.Lock()
	ds := slices.Clone(s.ds)
	s.mu.Unlock()
	return summarize(ds)
}

func (s *samples) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ds)
}

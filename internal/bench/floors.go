package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Floors are the round trips every figure of the run is built on, measured
// in the same run on the same Redis and loopback.
type Floors struct {
	RedisRTT Latency `json:"redis_rtt"` // PING, one connection
	PubSub   Latency `json:"pubsub"`    // PUBLISH on one connection until a subscriber on another reads it
	HTTP     Latency `json:"http"`      // a keep-alive GET to a net/http server that answers 200 at once
	// ClickPath is what no click-to-waiter can beat in this design: the
	// click's and the agent's HTTP (one loopback call between them), the
	// resolve script (one Redis round trip: the button carries what the
	// click needs, so nothing is read first) and the wake-up's pub/sub
	// hop, summed percentile by percentile.
	ClickPath Latency `json:"click_path"`
}

// Paced are the floors again, each sample taken after the pause the wake
// phase's person takes before each click (Options.Think): meanwhile every
// process goes idle, and a hop that wakes an idle process costs more than
// one of a back-to-back series, where nothing sleeps.
type Paced struct {
	Every time.Duration
	Floors
}

// MarshalJSON writes Every in microseconds, the report's unit, beside the
// floors.
func (p Paced) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		EveryUS float64 `json:"every_us"`
		Floors
	}{us(p.Every), p.Floors})
}

func sumFloors(n int, ls ...Latency) Latency {
	out := Latency{N: n}
	for _, l := range ls {
		out.P50 += l.P50
		out.P99 += l.P99
		out.P999 += l.P999
		out.Max += l.Max
	}
	return out
}

const floorTimeout = 5 * time.Second

// floorer takes samples of each floor: a Redis round trip, a pub/sub hop
// and a loopback HTTP call.
type floorer struct {
	pub     *redis.Client
	sub     redis.UniversalClient
	ps      *redis.PubSub
	channel string
	publish func(ctx context.Context, channel string, msg any) *redis.IntCmd
	got     chan time.Time
	srv     *http.Server
	client  *http.Client
	url     string
}

func newFloorer(ctx context.Context, rs *redisServer, prefix string) (_ *floorer, err error) {
	f := &floorer{channel: prefix + "floor", got: make(chan time.Time, 1), client: httpClient()}
	if f.pub, f.sub, err = floorClients(ctx, rs, f.channel); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	// On a cluster, sharded pub/sub, as the bridge's wake-ups there.
	subscribe, publish := f.sub.Subscribe, f.pub.Publish
	if len(rs.addrs) > 0 {
		subscribe, publish = f.sub.SSubscribe, f.pub.SPublish
	}
	f.publish = publish
	f.ps = subscribe(ctx, f.channel)
	if _, err := f.ps.Receive(ctx); err != nil {
		return nil, fmt.Errorf("SUBSCRIBE: %w", err)
	}
	go func() {
		for {
			msg, err := f.ps.Receive(context.Background())
			if err != nil {
				return // closed
			}
			if _, ok := msg.(*redis.Message); ok {
				f.got <- time.Now()
			}
		}
	}()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	})}
	go f.srv.Serve(ln)
	f.url = "http://" + ln.Addr().String() + "/"
	return f, nil
}

func (f *floorer) close() {
	if f.srv != nil {
		f.srv.Close()
	}
	if f.ps != nil {
		f.ps.Close()
	}
	f.pub.Close()
	f.sub.Close()
}

func (f *floorer) ping(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if err := f.pub.Ping(ctx).Err(); err != nil {
		return 0, fmt.Errorf("PING: %w", err)
	}
	return time.Since(start), nil
}

var floorPayload = strings.Repeat("x", 16) // a request id's length

func (f *floorer) hop(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if err := f.publish(ctx, f.channel, floorPayload).Err(); err != nil {
		return 0, fmt.Errorf("PUBLISH: %w", err)
	}
	select {
	case at := <-f.got:
		return at.Sub(start), nil
	case <-time.After(floorTimeout):
		return 0, fmt.Errorf("a published message did not arrive within %v", floorTimeout)
	}
}

func (f *floorer) call(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("HTTP floor: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), nil
}

// measure takes n samples of each floor. With every zero they are taken
// back to back, each kind in a series of its own; otherwise in turns, each
// after a pause of every.
func (f *floorer) measure(ctx context.Context, n int, every time.Duration) (Floors, error) {
	kinds := []func(context.Context) (time.Duration, error){f.ping, f.hop, f.call}
	ds := make([][]time.Duration, len(kinds))
	take := func(k int) error {
		d, err := kinds[k](ctx)
		ds[k] = append(ds[k], d)
		return err
	}
	if every == 0 {
		for k := range kinds {
			for range n {
				if err := take(k); err != nil {
					return Floors{}, err
				}
			}
		}
	} else {
		pause := time.NewTimer(every)
		defer pause.Stop()
		for range n {
			for k := range kinds {
				pause.Reset(every)
				select {
				case <-ctx.Done():
					return Floors{}, ctx.Err()
				case <-pause.C:
				}
				if err := take(k); err != nil {
					return Floors{}, err
				}
			}
		}
	}
	fl := Floors{RedisRTT: summarize(ds[0]), PubSub: summarize(ds[1]), HTTP: summarize(ds[2])}
	fl.ClickPath = sumFloors(n, fl.HTTP, fl.RedisRTT, fl.PubSub)
	return fl, nil
}

// floorClients returns the clients the floors are measured with: on one
// Redis, two connections to it. On a cluster, where the bridge's wake-ups
// go through sharded pub/sub, a connection to the master that holds the
// floor channel's slot publishes (SPUBLISH) and a cluster client
// subscribes (SSUBSCRIBE, on that master), as a resolve script and a
// replica do; the round trip floor is PING to that master.
func floorClients(ctx context.Context, rs *redisServer, channel string) (pub *redis.Client, sub redis.UniversalClient, err error) {
	if len(rs.addrs) == 0 {
		opt, err := redis.ParseURL(rs.url)
		if err != nil {
			return nil, nil, fmt.Errorf("redis url: not a redis:// URL")
		}
		opt.PoolSize = 1
		return redis.NewClient(opt), redis.NewClient(opt), nil
	}
	cc, err := rs.connect(1)
	if err != nil {
		return nil, nil, err
	}
	master, err := cc.(*redis.ClusterClient).MasterForKey(ctx, channel)
	if err != nil {
		cc.Close()
		return nil, nil, fmt.Errorf("redis cluster: the master of %s: %w", channel, err)
	}
	return redis.NewClient(&redis.Options{Addr: master.Options().Addr, PoolSize: 1}), cc, nil
}

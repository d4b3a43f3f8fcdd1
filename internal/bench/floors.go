package bench

import (
	"context"
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

// measureFloors takes n samples of each floor.
func measureFloors(ctx context.Context, rs *redisServer, prefix string, n int) (Floors, error) {
	channel := prefix + "floor"
	pub, sub, err := floorClients(ctx, rs, channel)
	if err != nil {
		return Floors{}, err
	}
	defer pub.Close()
	defer sub.Close()

	var fl Floors
	ds := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := pub.Ping(ctx).Err(); err != nil {
			return fl, fmt.Errorf("PING: %w", err)
		}
		ds = append(ds, time.Since(start))
	}
	fl.RedisRTT = summarize(ds)

	// On a cluster, sharded pub/sub, as the bridge's wake-ups there.
	subscribe, publish := sub.Subscribe, pub.Publish
	if len(rs.addrs) > 0 {
		subscribe, publish = sub.SSubscribe, pub.SPublish
	}
	ps := subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return fl, fmt.Errorf("SUBSCRIBE: %w", err)
	}
	got := make(chan time.Time, 1)
	go func() {
		for {
			msg, err := ps.Receive(context.Background())
			if err != nil {
				return // closed
			}
			if _, ok := msg.(*redis.Message); ok {
				got <- time.Now()
			}
		}
	}()
	payload := strings.Repeat("x", 16) // a request id's length
	ds = ds[:0]
	for range n {
		start := time.Now()
		if err := publish(ctx, channel, payload).Err(); err != nil {
			return fl, fmt.Errorf("PUBLISH: %w", err)
		}
		select {
		case at := <-got:
			ds = append(ds, at.Sub(start))
		case <-time.After(floorTimeout):
			return fl, fmt.Errorf("a published message did not arrive within %v", floorTimeout)
		}
	}
	fl.PubSub = summarize(ds)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fl, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	client := httpClient()
	url := "http://" + ln.Addr().String() + "/"
	ds = ds[:0]
	for range n {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			return fl, fmt.Errorf("HTTP floor: %w", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ds = append(ds, time.Since(start))
	}
	fl.HTTP = summarize(ds)
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

// Package bench is `bridge bench`: it runs bridge replicas on one Redis
// beside a fake Slack, has simulated agents ask and wait and simulated
// people answer through signed /slack/interactions callbacks on random
// replicas, and reports how fast and how cheaply every answer comes back,
// next to the Redis and loopback floors measured in the same run. Every
// answer is checked: it must reach its agent once, as clicked, and its
// message must be edited to show it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultDuration is the default length of the timed phases.
const DefaultDuration = 10 * time.Second

// Options configure a run. Zero values take the defaults.
type Options struct {
	Redis        string        // redis:// URL of a Redis to use; "" starts a redis-server (or miniredis)
	RedisCluster []string      // or the seed addresses of a Redis Cluster to use
	Replicas     int           // bridge replicas; default 2
	Samples      int           // floor samples and sequential click-to-waiter samples; default 2000
	Rate         float64       // clicks per second of the load phase; default 500
	Duration     time.Duration // length of the load and the throughput phases; default 10s
	Agents       int           // concurrent agents of the throughput phase; default 64
	Waiters      int           // long-polls held on one replica in the memory phase; default 10000; <0 skips it
	// Think is how long a person of the wake phase takes to click once the
	// agent's call is parked: the processes go idle meanwhile, as between a
	// message and a person's answer in production. The floors are taken a
	// second time with the same pause before each sample. Default 2ms.
	Think time.Duration

	// Serve returns the command that runs one replica on a config file:
	// `bridge serve --config FILE`. Required.
	Serve func(config string) *exec.Cmd
	// WaitClient starts the memory phase's long-polling client process for
	// the bridge at addr (see WaitClient). Nil skips the memory phase.
	WaitClient func(addr string) *exec.Cmd

	Progress io.Writer    // progress lines; nil discards them
	Log      *slog.Logger // the memory phase's in-process replica's log; nil discards it
}

func (o *Options) defaults() {
	if o.Replicas <= 0 {
		o.Replicas = 2
	}
	if o.Samples <= 0 {
		o.Samples = 2000
	}
	if o.Rate <= 0 {
		o.Rate = 500
	}
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.Agents <= 0 {
		o.Agents = 64
	}
	if o.Think <= 0 {
		o.Think = 2 * time.Millisecond
	}
	if o.Waiters == 0 {
		o.Waiters = 10_000
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Report is what a run measured. Its JSON is `bridge bench --json`.
type Report struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Machine  Machine   `json:"machine"`
	Replicas int       `json:"replicas"`

	Floors     Floors     `json:"floors"`
	Paced      *Paced     `json:"paced_floors,omitempty"`
	Wake       Wake       `json:"wake"`
	Load       Load       `json:"load"`
	Throughput Throughput `json:"throughput"`
	Memory     *Memory    `json:"memory,omitempty"`
	Targets    []Target   `json:"targets"`
	Checks     Checks     `json:"checks"`
}

// Machine is where the run ran.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Redis      string `json:"redis"`
	RedisKind  string `json:"redis_kind"`
	Load       string `json:"load_average,omitempty"`
}

// Wake is click-to-waiter latency with one request at a time: from the
// signed click leaving the person to the waiting agent reading the answer,
// split by whether the click reached the agent's replica.
type Wake struct {
	Same  Latency `json:"same_replica"`
	Cross Latency `json:"cross_replica"`
	Ack   Latency `json:"ack"` // the callback's HTTP answer
}

// Load is the open-loop phase: clicks sent on a fixed schedule, whatever
// the bridge's pace, with agents asking to keep questions ready.
type Load struct {
	Rate     float64 `json:"rate"`     // clicks per second scheduled
	Achieved float64 `json:"achieved"` // clicks per second sent
	Clicks   int     `json:"clicks"`
	Starved  int     `json:"starved"` // ticks with no posted question to click
	Ack      Latency `json:"ack"`     // the callback's HTTP answer
	Same     Latency `json:"same_replica"`
	Cross    Latency `json:"cross_replica"`
}

// Throughput is the closed-loop phase: agents ask again as soon as they
// are answered, people click as soon as a question is posted.
type Throughput struct {
	Agents     int     `json:"agents"`
	Lifecycles int     `json:"lifecycles"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"per_second"`
	Lifecycle  Latency `json:"lifecycle"` // ask to answer read, a person's click included
	// Per lifecycle: Redis round trips and commands the replicas sent
	// (background work included), and the server's bytes in and out.
	RoundTrips    float64 `json:"redis_round_trips_per_lifecycle"`
	Commands      float64 `json:"redis_commands_per_lifecycle"`
	ServerCmds    float64 `json:"redis_server_commands_per_lifecycle,omitempty"`
	BytesIn       float64 `json:"redis_bytes_in_per_lifecycle,omitempty"`
	BytesOut      float64 `json:"redis_bytes_out_per_lifecycle,omitempty"`
	ServerCounted bool    `json:"redis_server_counted"` // INFO gave the server's counters
	// CPU time per lifecycle, in ms: the replica processes' (their
	// process_cpu_seconds_total), the Redis server's (INFO cpu) and this
	// process's, where the agents, the people and the fake Slack run.
	CPU struct {
		Replicas float64 `json:"replicas"`
		Redis    float64 `json:"redis"`
		Bench    float64 `json:"bench"`
	} `json:"cpu_ms_per_lifecycle"`
	// Heap the replicas allocated per lifecycle, in KB
	// (go_memstats_alloc_bytes_total): what their GC has to clear away.
	AllocKB float64 `json:"replica_alloc_kb_per_lifecycle"`
	// Lifecycles per second that 2 cores of replica CPU (and of replica
	// plus Redis CPU) would serve at the measured cost: a projection, not
	// a measurement.
	Capacity          float64 `json:"replica_lifecycles_per_2_cores"`
	CapacityWithRedis float64 `json:"replica_and_redis_lifecycles_per_2_cores,omitempty"`
}

// Checks are what must hold in every run.
type Checks struct {
	Answered   int64    `json:"answered"`    // answers agents received, each checked against its click
	Posted     int64    `json:"posted"`      // messages posted to Slack
	Edited     int64    `json:"edited"`      // edits of messages to their outcome (a message may be edited twice)
	Unedited   int      `json:"unedited"`    // posted messages never edited (must be 0)
	EditedLive int64    `json:"edited_live"` // edits that left controls live (must be 0)
	Errors     int      `json:"errors"`
	First      []string `json:"first_errors,omitempty"`
}

// Run runs every phase and returns the report. A run whose checks fail
// returns the report and an error.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	rep := &Report{Started: time.Now().UTC(), Replicas: o.Replicas, Machine: machine()}
	progress := func(format string, args ...any) { fmt.Fprintf(o.Progress, format+"\n", args...) }

	rs, err := startRedis(ctx, o.Redis, o.RedisCluster)
	if err != nil {
		return nil, err
	}
	defer rs.stop()
	info := redisInfo(ctx, rs)
	rep.Machine.Redis, rep.Machine.RedisKind = info, rs.kind
	progress("redis: %s (%s)", info, rs.kind)

	if o.Serve == nil {
		return nil, errors.New("bench: Options.Serve is required")
	}
	c, err := startCluster(ctx, rs, o.Replicas, o.Serve)
	if err != nil {
		return nil, err
	}
	f := newFlow(c)
	defer func() {
		if err := c.close(context.Background()); err != nil {
			progress("stopping: %v", err)
		}
	}()

	fl, err := newFloorer(ctx, rs, c.prefix)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	progress("floors: %d samples each of a Redis round trip, a pub/sub hop and a loopback HTTP call", o.Samples)
	if rep.Floors, err = fl.measure(ctx, o.Samples, 0); err != nil {
		return nil, err
	}

	progress("wake: %d questions one at a time, each clicked on a random replica", o.Samples)
	if rep.Wake, err = f.wake(ctx, o.Samples, o.Think); err != nil {
		return nil, err
	}

	progress("floors again, paced as the clicks: each sample %v after the one before", o.Think)
	paced, err := fl.measure(ctx, o.Samples, o.Think)
	if err != nil {
		return nil, err
	}
	rep.Paced = &Paced{Every: o.Think, Floors: paced}

	progress("load: %.0f clicks/s for %v", o.Rate, o.Duration)
	rep.Load = f.load(ctx, o.Rate, o.Duration, progress)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stopped during the load phase: %w", err)
	}

	progress("throughput: %d agents asking back to back for %v", o.Agents, o.Duration)
	rep.Throughput = f.throughput(ctx, o.Agents, o.Duration, progress)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stopped during the throughput phase: %w", err)
	}

	if o.Waiters > 0 && o.WaitClient != nil {
		progress("memory: %d long-polls on replica 0", o.Waiters)
		m, err := f.memory(ctx, o.Waiters, o.WaitClient, o.Log)
		if err != nil {
			f.errs.add(fmt.Errorf("memory: %w", err))
		} else {
			rep.Memory = &m
		}
	}

	progress("checking that every posted message was edited to its outcome")
	f.errs.add(f.awaitEdits(ctx, 60*time.Second))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stopped before the end: %w", err)
	}

	rep.Checks = Checks{Answered: f.answered.Load(), Posted: f.posted.Load(), Edited: f.edited.Load(), Unedited: f.left(),
		EditedLive: f.editedLive.Load(), Errors: f.errs.count(), First: f.errs.list()}
	rep.Targets = targets(rep)
	rep.Seconds = time.Since(rep.Started).Seconds()
	if rep.Checks.Errors > 0 {
		return rep, fmt.Errorf("%d errors; the first: %s", rep.Checks.Errors, rep.Checks.First[0])
	}
	return rep, nil
}

// wake answers n questions one at a time. Each click is sent think after
// the agent's call is seen parked on its replica: in production a person
// takes seconds to answer, and meanwhile every process is idle. (The
// scrape that sees the call parked is work for the replica and Redis; the
// pause also keeps it from overlapping the click.)
func (f *flow) wake(ctx context.Context, n int, think time.Duration) (Wake, error) {
	var same, cross, acks []time.Duration
	pause := time.NewTimer(think)
	defer pause.Stop()
	type result struct {
		a   answered
		err error
	}
	for i := range n {
		r, cr := rand.IntN(len(f.c.replicas)), rand.IntN(len(f.c.replicas))
		done := make(chan result, 1)
		go func() {
			a, err := f.ask(ctx, r, i)
			done <- result{a, err}
		}()
		p, err := f.next(ctx, 10*time.Second)
		if err != nil {
			return Wake{}, err
		}
		if err := f.parked(ctx, r, 1); err != nil {
			return Wake{}, err
		}
		pause.Reset(think)
		select {
		case <-pause.C:
		case <-ctx.Done():
			return Wake{}, ctx.Err()
		}
		ack, err := f.answer(ctx, p, cr, true, time.Time{})
		if err != nil {
			return Wake{}, err
		}
		acks = append(acks, ack)
		var res result
		select {
		case res = <-done:
		case <-time.After(10 * time.Second):
			return Wake{}, fmt.Errorf("an agent was not answered within 10s of its click")
		}
		if res.err != nil {
			return Wake{}, res.err
		}
		f.answered.Add(1)
		if res.a.sameRep {
			same = append(same, res.a.wait)
		} else {
			cross = append(cross, res.a.wait)
		}
	}
	return Wake{Same: summarize(same), Cross: summarize(cross), Ack: summarize(acks)}, nil
}

// parked waits until replica r holds n waiting calls.
func (f *flow) parked(ctx context.Context, r, n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := f.c.replicas[r].metrics(ctx, f.client, "askbridge_waiters")
		if err != nil {
			return err
		}
		if int(m["askbridge_waiters"]) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %d holds %v waiting calls after 10s; want %d", r, m["askbridge_waiters"], n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Microsecond): // each scrape costs the replica and Redis work
		}
	}
}

// agents runs n agents that ask on random replicas until stop is closed,
// handing each answer to got. It returns once they have all been answered.
func (f *flow) agents(ctx context.Context, n int, stop <-chan struct{}, got func(answered)) {
	var seq atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				a, err := f.ask(ctx, rand.IntN(len(f.c.replicas)), int(seq.Add(1)))
				if err != nil {
					f.errs.add(err)
					return
				}
				f.answered.Add(1)
				got(a)
			}
		})
	}
	wg.Wait()
}

// people click every posted question until the agents are done, each on a
// random replica, in clickers goroutines; measure tells whether a click
// counts.
func (f *flow) people(ctx context.Context, clickers int, agentsDone <-chan struct{}, measure func() bool) {
	var wg sync.WaitGroup
	for range clickers {
		wg.Go(func() {
			for {
				select {
				case p := <-f.posts:
					if _, err := f.answer(ctx, p, rand.IntN(len(f.c.replicas)), measure(), time.Time{}); err != nil {
						f.errs.add(err)
					}
				case <-agentsDone:
					return
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
}

// load clicks at rate for d, open loop: click i is sent at start + i/rate
// on a random replica, whether or not the earlier ones have been
// acknowledged. Agents keep enough questions posted and waiting; when they
// stop, the questions still open are clicked outside the figures. The
// clock starts once the agents' first questions are posted: the agents all
// asking in the same instant is a start-up burst, not the rate.
func (f *flow) load(ctx context.Context, rate float64, d time.Duration, progress func(string, ...any)) Load {
	var ack, same, cross samples
	stop, agentsDone := make(chan struct{}), make(chan struct{})
	nAgents := max(16, int(rate/2)) // half a second of clicks waiting
	go func() {
		defer close(agentsDone)
		f.agents(ctx, nAgents, stop, func(a answered) {
			switch {
			case !a.measure:
			case a.sameRep:
				same.add(a.wait)
			default:
				cross.add(a.wait)
			}
		})
	}()

	f.waitPosted(ctx, nAgents, 5*time.Second)
	period := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var sent, starved int
	var inflight sync.WaitGroup
	nextReport := start.Add(time.Second)
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * period)
		if at.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait) // the schedule, not a wait for an event
		}
		select {
		case p := <-f.posts:
			sent++
			inflight.Go(func() {
				took, err := f.answer(ctx, p, rand.IntN(len(f.c.replicas)), true, at)
				if err != nil {
					f.errs.add(err)
					return
				}
				ack.add(took)
			})
		default:
			starved++
		}
		if now := time.Now(); now.After(nextReport) {
			a := ack.summary()
			progress("  load %4.1fs: %d clicks, ack p50 %v p99 %v", now.Sub(start).Seconds(), sent, a.P50, a.P99)
			nextReport = nextReport.Add(time.Second)
		}
	}
	elapsed := time.Since(start)
	close(stop)
	inflight.Wait()
	f.people(ctx, 8, agentsDone, func() bool { return false }) // answer what is still open
	return Load{Rate: rate, Achieved: float64(sent) / elapsed.Seconds(), Clicks: sent, Starved: starved,
		Ack: ack.summary(), Same: same.summary(), Cross: cross.summary()}
}

// waitPosted waits until n questions are posted and not yet clicked, for
// d at most. Nothing signals the count, so it looks every millisecond.
func (f *flow) waitPosted(ctx context.Context, n int, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for len(f.posts) < n {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// throughput runs n agents back to back for d with people clicking at
// once, and counts whole lifecycles and what they cost Redis.
func (f *flow) throughput(ctx context.Context, n int, d time.Duration, progress func(string, ...any)) Throughput {
	var lifecycles samples
	var counted atomic.Bool
	stop, agentsDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(agentsDone)
		f.agents(ctx, n, stop, func(a answered) {
			if counted.Load() {
				lifecycles.add(a.lifecycle)
			}
		})
	}()
	go f.people(ctx, n, agentsDone, func() bool { return true })

	// The first second warms connections and pools up and is not counted.
	warm := time.NewTimer(time.Second)
	select {
	case <-warm.C:
	case <-ctx.Done():
	}
	rdb, err := f.c.redis.connect(1)
	if err != nil {
		f.errs.add(err)
		return Throughput{Agents: n}
	}
	defer rdb.Close()
	cost0, err := f.costs(ctx)
	if err != nil {
		f.errs.add(err)
	}
	srv0, self0 := readServerStats(ctx, rdb), selfCPU()
	start := time.Now()
	counted.Store(true)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
loop:
	for {
		select {
		case now := <-tick.C:
			progress("  throughput %4.1fs: %d lifecycles, %.0f/s", now.Sub(start).Seconds(), lifecycles.len(),
				float64(lifecycles.len())/now.Sub(start).Seconds())
		case <-end.C:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	counted.Store(false)
	elapsed := time.Since(start)
	cost, err := f.costs(ctx)
	if err != nil {
		f.errs.add(err)
	}
	cost = cost.sub(cost0)
	srv, self := readServerStats(ctx, rdb).sub(srv0), selfCPU()-self0
	close(stop)
	<-agentsDone

	t := Throughput{Agents: n, Lifecycles: lifecycles.len(), Seconds: elapsed.Seconds(), Lifecycle: lifecycles.summary()}
	if t.Lifecycles == 0 {
		return t
	}
	per := func(v float64) float64 { return v / float64(t.Lifecycles) }
	t.PerSecond = float64(t.Lifecycles) / t.Seconds
	t.RoundTrips, t.Commands = per(cost.trips), per(cost.commands)
	t.CPU.Replicas, t.CPU.Bench = 1000*per(cost.cpu), 1000*per(self.Seconds())
	t.AllocKB = per(cost.alloc) / 1000
	if srv.known {
		t.ServerCounted = true
		t.ServerCmds, t.BytesIn, t.BytesOut = per(float64(srv.commands)), per(float64(srv.netIn)), per(float64(srv.netOut))
		t.CPU.Redis = 1000 * per(srv.cpu)
	}
	if t.CPU.Replicas > 0 {
		t.Capacity = 2000 / t.CPU.Replicas
		if t.ServerCounted {
			t.CapacityWithRedis = 2000 / (t.CPU.Replicas + t.CPU.Redis)
		}
	}
	return t
}

// redisInfo names the run's Redis: "redis 7.0.15", or "redis 7.0.15, a
// Redis Cluster of 3 masters".
func redisInfo(ctx context.Context, rs *redisServer) string {
	rdb, err := rs.connect(1)
	if err != nil {
		return "unknown"
	}
	defer rdb.Close()
	var mu sync.Mutex
	version, masters := "", 0
	err = eachNode(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		version, masters = infoField(info, "redis_version"), masters+1
		return nil
	})
	switch {
	case err != nil || version == "":
		return "unknown"
	case len(rs.addrs) > 0:
		return fmt.Sprintf("redis %s, a Redis Cluster of %d masters", version, masters)
	}
	return "redis " + version
}

func machine() Machine {
	return Machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Load: loadAverage()}
}

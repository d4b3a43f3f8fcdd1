package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/askbridge/askbridge/internal/bench"
)

const benchUsage = `usage: bridge bench [flags]

Runs bridge replicas (bridge serve processes) on one Redis (or, with
--redis-cluster, a Redis Cluster) beside a fake Slack API; simulated agents
ask and wait through the HTTP API, simulated people answer through signed
/slack/interactions callbacks on random replicas. Reports the
Redis and loopback floors, click-to-waiter latency (same and cross replica),
interaction ack latency under an open-loop click rate, lifecycles per
second, Redis round trips and bytes per lifecycle, and memory per waiting
call, each against its target. Every answer is checked: it must reach its
agent once, as clicked, and its message must be edited to its outcome.

Progress goes to stderr, the summary (or --json) to stdout. Exits 1 when a
check fails, and with --check also when a target is missed.

`

// waitClientEnv, set to a bridge's address, runs bridge bench as the memory
// phase's client process (bench.WaitClient): a process of its own, so that
// its long-polls' memory is not counted as the replica's. An environment
// variable, not a flag: it is no knob for a person.
const waitClientEnv = "ASKBRIDGE_BENCH_WAIT_CLIENT"

func benchCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o bench.Options
	fs.StringVar(&o.Redis, "redis", "", "redis:// URL of a Redis to use (keys under a prefix of the run's own, deleted after); none: start a redis-server on a free port, or an embedded Redis without one")
	cluster := fs.String("redis-cluster", "", "`host:port,...` seed addresses of a Redis Cluster to use instead (keys under a prefix of the run's own, deleted after, on every master)")
	fs.IntVar(&o.Replicas, "replicas", 2, "bridge replicas")
	fs.IntVar(&o.Samples, "samples", 2000, "samples of each floor and of click-to-waiter one at a time")
	fs.DurationVar(&o.Think, "think", 2*time.Millisecond, "how long a person takes to click, one at a time, once the agent is waiting; the paced floors pause as long")
	fs.Float64Var(&o.Rate, "rate", 500, "clicks per second of the open-loop load phase")
	fs.DurationVar(&o.Duration, "duration", bench.DefaultDuration, "length of the load phase and of the throughput phase")
	fs.IntVar(&o.Agents, "agents", 64, "agents asking back to back in the throughput phase")
	fs.IntVar(&o.Waiters, "waiters", 10_000, "long-polls held on one replica in the memory phase; 0 skips it")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	check := fs.Bool("check", false, "exit 1 when a target is missed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (agents, people, the fake Slack and the memory phase's replica; not the replica processes) to this file")
	replicaProfile := fs.String("replica-cpuprofile", "", "write a CPU profile of each replica process to `PREFIX`.N (N from 0)")
	replicaBin := fs.String("replica-bin", "", "run the replica processes from this `bridge` binary instead of this one, to compare two builds under one bench (the memory phase's in-process replica stays this build)")
	if addr := os.Getenv(waitClientEnv); addr != "" {
		return bench.WaitClient(addr, stdin, stdout)
	}
	if code, ok := parseFlags(fs, args, benchUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		// Not fs.Usage: parseFlags made it print nothing.
		return usageErr(stderr, "bench", "unexpected argument %q", fs.Arg(0))
	}
	if o.Waiters == 0 {
		o.Waiters = -1
	}
	for _, addr := range strings.Split(*cluster, ",") {
		if addr = strings.TrimSpace(addr); addr != "" {
			o.RedisCluster = append(o.RedisCluster, addr)
		}
	}
	if o.Rate <= 0 || o.Rate > 100_000 || o.Replicas < 1 || o.Replicas > 64 || o.Samples < 1 || o.Agents < 1 || o.Duration <= 0 || o.Think <= 0 {
		fmt.Fprintln(stderr, "bridge bench: --rate must be in (0, 100000], --replicas in [1, 64], --samples and --agents at least 1, --duration and --think positive")
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "bridge bench:", err)
		return exitError
	}
	replicaExe := self
	if *replicaBin != "" {
		replicaExe = *replicaBin
	}
	replicas := 0
	o.Serve = func(config string) *exec.Cmd {
		args := []string{"serve", "--config", config}
		if *replicaProfile != "" {
			args = append(args, "--cpuprofile", fmt.Sprintf("%s.%d", *replicaProfile, replicas))
			replicas++
		}
		cmd := exec.Command(replicaExe, args...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		return cmd
	}
	o.WaitClient = func(addr string) *exec.Cmd {
		cmd := exec.Command(self, "bench")
		cmd.Env = append(os.Environ(), waitClientEnv+"="+addr)
		cmd.Stderr = stderr
		return cmd
	}
	o.Progress = stderr
	o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bridge bench:", err)
			return exitError
		}
		defer stop()
	}
	rep, runErr := bench.Run(ctx, o)
	if rep != nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.Encode(rep)
		} else {
			rep.WriteTable(stdout)
		}
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "bridge bench:", runErr)
		return exitError
	}
	if *check {
		for _, t := range rep.Targets {
			if !t.Met {
				fmt.Fprintf(stderr, "bridge bench: target missed: %s\n", t.Name)
				return exitError
			}
		}
	}
	return exitOK
}

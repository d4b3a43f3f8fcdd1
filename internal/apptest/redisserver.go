package apptest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process of a test's own on a free loopback
// port, with the append-only file on (appendfsync always, so a kill -9
// loses no acknowledged write) in a temporary directory. Fault tests kill
// and restart it; nothing else ever runs on it, so the shared Redis of
// BRIDGE_TEST_REDIS_URL is never restarted.
type RedisServer struct {
	Port int
	dir  string
	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited
}

// StartRedisServer starts a RedisServer, stopped when t ends. It skips t
// when redis-server is not installed.
func StartRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &RedisServer{Port: port, dir: t.TempDir(), t: t}
	s.Start()
	t.Cleanup(func() { s.Kill() })
	return s
}

// URL is the server's redis:// URL.
func (s *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.Port) }

// Start starts the server (again, after Kill) on the same port and
// directory, so it loads its append-only file, and waits until it answers.
func (s *RedisServer) Start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port),
		"--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.cmd, s.done)
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			// It could not start: on a restart after Kill, most likely
			// because another process took its port meanwhile.
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			state := s.cmd.ProcessState
			s.cmd = nil // Kill has nothing to do
			s.t.Fatalf("redis-server on port %d exited (%v):\n%s", s.Port, state, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("redis-server on port %d does not answer: %v\n%s", s.Port, err, log)
		}
		time.Sleep(20 * time.Millisecond) // polling a process that signals nothing
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *RedisServer) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

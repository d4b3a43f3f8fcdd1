package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// TestSecondSignalStopsAtOnce: the first SIGTERM stops the bridge in
// order, waiting for posts in flight (up to a minute); a second one stops
// it at once, as an operator who pressed Ctrl-C twice expects, instead of
// being swallowed while a hung post is waited for.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	if os.Getenv("BRIDGE_TEST_SIGNAL_CHILD") == "1" {
		os.Exit(run([]string{"serve", "--config", os.Getenv("BRIDGE_TEST_SIGNAL_CONFIG")}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	// A Slack that takes the post and never answers it.
	arrived := make(chan struct{}, 1)
	hung := make(chan struct{})
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer slack.Close()
	defer close(hung)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
slack:
  bot_token: xoxb-1111-2222-SIGNALBOTTOKEN
  signing_secret: signal-signing-secret
  api_url: %s/api/
routes:
  - name: default
    targets:
      - slack: {channel: C0AGENTS}
`, slack.URL)), 0o600); err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestSecondSignalStopsAtOnce$")
	child.Env = append(os.Environ(), "BRIDGE_TEST_SIGNAL_CHILD=1", "BRIDGE_TEST_SIGNAL_CONFIG="+cfg)
	stderr, err := child.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(20 * time.Second)
	waitLine := func(what string) string {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the bridge ended before logging %q", what)
				}
				if strings.Contains(line, what) {
					return line
				}
			case <-deadline:
				t.Fatalf("the bridge did not log %q", what)
			}
		}
	}
	_, addr, _ := strings.Cut(waitLine("askbridge listening"), "addr=")
	addr, _, _ = strings.Cut(addr, " ")

	// A create whose post hangs: the stop waits for it.
	go http.Post("http://"+addr+"/v1/questions", "application/json",
		strings.NewReader(`{"questions":[{"id":"go","question":"Deploy?"}]}`))
	select {
	case <-arrived:
	case <-deadline:
		t.Fatal("the post never reached Slack")
	}
	child.Process.Signal(syscall.SIGTERM)
	waitLine("stopping: ")
	child.Process.Signal(syscall.SIGTERM)

	exited := make(chan error, 1)
	go func() {
		for range lines { // drain, so the child never blocks on its log
		}
		exited <- child.Wait()
	}()
	select {
	case err := <-exited:
		if err == nil {
			t.Errorf("after a second SIGTERM the bridge exited 0, as if it had finished stopping")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the bridge still runs 5 s after a second SIGTERM")
	}
}

// TestSignalledTwiceWithdraws: a bridge ask or bridge approve that is
// signalled gets the signal twice more often than not: timeout(1) sends
// its SIGTERM to the command and then to its process group, and a closing
// terminal sends SIGHUP twice (the shell forwards its own to its jobs, and
// the kernel sends one to the foreground process group as the shell
// exits). It withdraws its request and exits 3, rather than dying at the
// second with the request left pending, for a person to answer for
// nobody, until it expires. The second comes here while the withdrawal is
// on its way, which the command has said it is making by then: the person
// who pressed Ctrl-C sees that something is happening.
func TestSignalledTwiceWithdraws(t *testing.T) {
	if cmd := os.Getenv("BRIDGE_TEST_SIG_CHILD"); cmd != "" {
		for _, tc := range requesters {
			if tc.args[0] == cmd {
				os.Exit(run(append(tc.args, "--server", os.Getenv("BRIDGE_TEST_SIG_SERVER")), strings.NewReader(""), os.Stdout, os.Stderr))
			}
		}
		os.Exit(exitUsage)
	}
	for _, tc := range requesters {
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT} {
			cmd := tc.args[0]
			t.Run(cmd+"/"+sig.String(), func(t *testing.T) {
				if signal.Ignored(sig) {
					// Run under nohup (or trap '' HUP): the child inherits the
					// ignored signal, which the command leaves ignored, as it should.
					t.Skipf("%s is ignored in this process, so in bridge %s too (nohup)", sig, cmd)
				}
				url := startBridge(t, app.Options{})
				proxy, withdrawing, release := holdingWithdrawals(t, url)
				child := exec.Command(os.Args[0], "-test.run=^TestSignalledTwiceWithdraws$")
				child.Env = append(os.Environ(), "BRIDGE_TEST_SIG_CHILD="+cmd, "BRIDGE_TEST_SIG_SERVER="+proxy)
				stderr := &apptest.LogBuffer{}
				child.Stderr = stderr
				if err := child.Start(); err != nil {
					t.Fatal(err)
				}
				defer child.Process.Kill()
				rec := awaitPending(t, url)
				child.Process.Signal(sig)
				select {
				case <-withdrawing:
				case <-time.After(within):
					t.Fatalf("bridge %s did not withdraw its request after %s", cmd, sig)
				}
				stderr.WaitFor(t, "bridge: "+cmd+": withdrawing "+tc.unnamed+" (up to 10s)…", within)
				child.Process.Signal(sig)
				release()
				exited := make(chan error, 1)
				go func() { exited <- child.Wait() }()
				select {
				case err := <-exited:
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != exitCancelled {
						t.Errorf("bridge %s after %s twice: %v, want exit %d; stderr:\n%s", cmd, sig, err, exitCancelled, stderr.String())
					}
				case <-time.After(within):
					t.Fatalf("bridge %s still runs after %s", cmd, sig)
				}
				c, _ := client.New(url)
				if got, err := c.Get(context.Background(), rec.ID, 0); err != nil || got.Status != client.StatusCancelled {
					t.Errorf("%s after %s twice = %+v, %v; want cancelled", tc.noun, sig, got, err)
				}
			})
		}
	}
}

// TestServeHangUpsStopInOrder: a bridge serve whose terminal closes gets
// SIGHUP twice (the shell forwards its own, the kernel sends one as the
// shell exits), and stops in order at the first: no SIGHUP that comes
// before it has stopped ends it by the signal's default action. Here they
// come without pause until it has exited, so that one lands while the
// first is being handled, to 20 bridges in turn. (Once it has stopped,
// as run returns, a SIGHUP may end it: nothing is left to do.)
func TestServeHangUpsStopInOrder(t *testing.T) {
	if os.Getenv("BRIDGE_TEST_HUPS_CHILD") == "1" {
		os.Exit(run([]string{"serve", "--listen", "127.0.0.1:0"}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored in this process, so in bridge serve too (nohup)")
	}
	for n := range 20 {
		child := exec.Command(os.Args[0], "-test.run=^TestServeHangUpsStopInOrder$")
		child.Env = append(os.Environ(), "BRIDGE_TEST_HUPS_CHILD=1")
		logs := &apptest.LogBuffer{}
		child.Stderr = logs
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		defer child.Process.Kill()
		logs.WaitFor(t, "askbridge listening", within)
		exited := make(chan error, 1)
		go func() { exited <- child.Wait() }()
		deadline := time.After(within)
	hangUps:
		for {
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if err != nil && !(errors.As(err, &ee) && !ee.Exited() && strings.Contains(logs.String(), "askbridge stopped")) {
					t.Fatalf("bridge serve %d after SIGHUPs: %v, want it stopped in order; its log:\n%s", n, err, logs.String())
				}
				break hangUps
			case <-deadline:
				t.Fatalf("bridge serve %d still runs after SIGHUPs", n)
			default:
				child.Process.Signal(syscall.SIGHUP)
			}
		}
	}
}

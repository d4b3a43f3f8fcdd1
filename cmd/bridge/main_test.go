package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// TestServeCannotStart: a bridge that can't start says why and exits 1,
// after releasing what it had started (here the embedded Redis).
func TestServeCannotStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := cli("serve", "--listen", busy.Addr().String())
	if r.code != exitError || !strings.Contains(r.stderr, "cannot start") || !strings.Contains(r.stderr, "listen on "+busy.Addr().String()) {
		t.Errorf("serve on a busy port: exit %d, stderr %q; want exit %d and why", r.code, r.stderr, exitError)
	}
	// And what to do about it: a new user's bridge meets a port some
	// other program holds.
	if !strings.Contains(r.stderr, "--listen") || !strings.Contains(r.stderr, "BRIDGE_SERVER") {
		t.Errorf("serve on a busy port: stderr %q; want it to say how to run on another address (--listen) and reach it (BRIDGE_SERVER)", r.stderr)
	}
}

// TestServeUsage: a config file named without --config is refused, not
// ignored in favour of the embedded defaults (with every flag after it);
// -h shows the usage and exits 0, as the other commands' -h does.
func TestServeUsage(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Without the check the bridge would run with its defaults: on a free
	// port, so that such a failure only times out.
	r := await(t, "serve", cliAsync("serve", "--listen", "127.0.0.1:0", cfg))
	if r.code != exitUsage || !strings.Contains(r.stderr, "--config") || strings.Contains(r.stderr, "listening") {
		t.Errorf("serve FILE: exit %d, stderr %q; want exit %d pointing at --config", r.code, r.stderr, exitUsage)
	}
	// A bad --listen is the flag's, not the config's listen key, and the
	// form offered works: on loopback while the API is open (no
	// api.tokens), the embedded defaults' or a file's.
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tokens, []byte("listen: 127.0.0.1:0\napi:\n  tokens: [{name: a, token: tok-7f3c9e21b4aa, scopes: [ask]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "18487"}, `--listen "18487" is not host:port, such as 127.0.0.1:18487` + "\n"},
		{[]string{"--config", cfg, "--listen", "18487"}, `--listen "18487" is not host:port, such as 127.0.0.1:18487` + "\n"},
		{[]string{"--listen", ":18487"}, `--listen ":18487" is not a loopback address, and with no api.tokens the API is open to anyone who can reach it: listen on 127.0.0.1:18487 (or ::1, localhost), or add tokens`},
		{[]string{"--listen", "0.0.0.0:99999"}, `--listen "0.0.0.0:99999": the port is not a number from 0 to 65535`},
		{[]string{"--config", tokens, "--listen", "18487"}, `--listen "18487" is not host:port, such as 127.0.0.1:18487, or :18487 for every interface` + "\n"},
	} {
		r := cli(slices.Concat([]string{"serve"}, tc.args)...)
		if want := "bridge serve: " + tc.want; r.code != exitUsage || !strings.HasPrefix(r.stderr, want) || !strings.HasSuffix(r.stderr, "Run \"bridge serve -h\" for its flags.\n") ||
			strings.Contains(r.stderr, "config") {
			t.Errorf("serve %q: exit %d, stderr %q; want exit %d, stderr starting %q, naming the flag, not the config", tc.args, r.code, r.stderr, exitUsage, want)
		}
	}
	r = cli("serve", "-h")
	if r.code != exitOK || !strings.Contains(r.stdout, "usage: bridge serve") {
		t.Errorf("serve -h: exit %d, stdout %q; want exit 0 and the usage", r.code, r.stdout)
	}
}

// TestServeEmptyFlag: a flag given an empty value (--config "$CONFIG"
// with CONFIG unset) is refused, not read as left out: the bridge would
// run on the embedded defaults, or the config's listen, instead of what
// was meant.
func TestServeEmptyFlag(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Stopped before it starts: without the check, serve would start
	// and stop at once, exit 0.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "", "--listen", "127.0.0.1:0"}, "--config is empty; leave it out for the embedded defaults"},
		{[]string{"--config", cfg, "--listen", ""}, "--listen is empty; leave it out for the config's listen"},
		{[]string{"--config", cfg, "--cpuprofile="}, "--cpuprofile is empty"},
	} {
		var stdout, stderr bytes.Buffer
		code := serve(ctx, tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %q: exit %d, stderr %q; want exit %d saying %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

// TestConfigProblemsInOneRun: config check and serve name a file's unset
// ${VAR}s, unknown keys and Validate's problems together, a line each, so
// that setting up takes one run; serve still refuses the file, even when
// an unknown key or an unset variable is its only problem. A value of the
// wrong type is reported without Validate's problems, as Parse words it:
// Validate would check what did not decode. Both commands print them
// alike, whatever their kind: a line naming the file, then a problem a
// line.
func TestConfigProblemsInOneRun(t *testing.T) {
	const (
		slak     = "routes[0].targets[0].slak: unknown key (line 6); the keys of routes[0].targets[0] are: discord, slack\n"
		lisen    = "lisen: unknown key (line 2); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web\n"
		validate = "slack: set signing_secret (interactions over the Request URL) or app_token (Socket Mode)\n" +
			"routes[0].targets[0]: set exactly one of slack or discord\n"
		// Named once, with both keys; neither key's own problem (an empty
		// signing_secret and no app_token, an empty channel) is reported.
		unsetVars = "slack.signing_secret (line 4): environment variable ASKBRIDGE_TEST_UNSET_SECRET is not set: set it, or write ${ASKBRIDGE_TEST_UNSET_SECRET:-} where the key may be left empty\n" +
			"routes[0].targets[0].slack.channel (line 9), routes[0].targets[1].slack.channel (line 11): environment variable ASKBRIDGE_TEST_UNSET_CHANNEL is not set: set it, or write ${ASKBRIDGE_TEST_UNSET_CHANNEL:-} where the key may be left empty\n"
		unsetLevel = "log.level (line 2): environment variable ASKBRIDGE_TEST_UNSET_LEVEL is not set: set it, or write ${ASKBRIDGE_TEST_UNSET_LEVEL:-} where the key may be left empty\n"
	)
	t.Setenv("ASKBRIDGE_TEST_BOT_TOKEN", "xoxb-LEAK-bot")
	for _, name := range []string{"ASKBRIDGE_TEST_UNSET_SECRET", "ASKBRIDGE_TEST_UNSET_CHANNEL", "ASKBRIDGE_TEST_UNSET_LEVEL"} {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	// Stopped before it starts: a serve that ran the file would start and
	// stop at once, exit 0.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name, yaml    string
		check, served string // stderr after "bridge: "; PATH is the file's
	}{
		{"an unknown key and Validate's problems",
			"listen: 127.0.0.1:0\nslack: {bot_token: xoxb-LEAK-bot}\nroutes:\n  - name: default\n    targets:\n      - slak: {channel: C1}\n",
			"config PATH:\n" + slak + validate, "config PATH:\n" + slak + validate},
		{"only an unknown key", "listen: 127.0.0.1:0\nlisen: x\n",
			"config PATH:\n" + lisen, "config PATH:\n" + lisen},
		{"unset variables, an unknown key and Validate's problems",
			"listen: 127.0.0.1:0\nlisen: x\nslack:\n  signing_secret: ${ASKBRIDGE_TEST_UNSET_SECRET}\n  bot_token: ${ASKBRIDGE_TEST_BOT_TOKEN}\nroutes:\n  - name: default\n    targets:\n" +
				"      - slack: {channel: \"${ASKBRIDGE_TEST_UNSET_CHANNEL}\"}\n        discord: {channel: \"2\"}\n      - slack: {channel: \"${ASKBRIDGE_TEST_UNSET_CHANNEL}\"}\nlog: {format: xml}\n",
			"config PATH:\n" + unsetVars + lisen + "routes[0].targets[0]: set exactly one of slack or discord\n" + `log.format: "xml" is not a format; use text or json` + "\n",
			"config PATH:\n" + unsetVars + lisen + "routes[0].targets[0]: set exactly one of slack or discord\n" + `log.format: "xml" is not a format; use text or json` + "\n"},
		{"only an unset variable", "listen: 127.0.0.1:0\nlog: {level: \"${ASKBRIDGE_TEST_UNSET_LEVEL}\"}\n",
			"config PATH:\n" + unsetLevel, "config PATH:\n" + unsetLevel},
		{"a wrong type", "listen: 127.0.0.1:0\nlisen: x\nslack: {bot_token: xoxb-LEAK-bot}\nstore: {max_wait: 90}\n",
			"config PATH:\n" + lisen + "store.max_wait (line 4): cannot read `90` as a duration (write 90s)\n",
			"config PATH:\n" + lisen + "store.max_wait (line 4): cannot read `90` as a duration (write 90s)\n"},
		{"only a wrong type", "store:\n  max_wait: 90\n",
			"config PATH:\nstore.max_wait (line 2): cannot read `90` as a duration (write 90s)\n",
			"config PATH:\nstore.max_wait (line 2): cannot read `90` as a duration (write 90s)\n"},
		{"only Validate's problem", "listen: 127.0.0.1:0\nlog: {format: xml}\n",
			"config PATH:\n" + `log.format: "xml" is not a format; use text or json` + "\n",
			"config PATH:\n" + `log.format: "xml" is not a format; use text or json` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			r := cli("config", "check", path)
			if want := "bridge: " + strings.ReplaceAll(tc.check, "PATH", path); r.code != exitError || r.stderr != want || r.stdout != "" {
				t.Errorf("config check: exit %d, stdout %q, stderr:\n%s\nwant exit %d, no stdout, stderr:\n%s", r.code, r.stdout, r.stderr, exitError, want)
			}
			var stdout, stderr bytes.Buffer
			code := serve(ctx, []string{"--config", path}, &stdout, &stderr)
			if want := "bridge: " + strings.ReplaceAll(tc.served, "PATH", path); code != exitError || stderr.String() != want {
				t.Errorf("serve: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr.String(), exitError, want)
			}
			if strings.Contains(r.stdout+r.stderr+stdout.String()+stderr.String(), "LEAK") {
				t.Errorf("a secret is in the output:\n%s%s%s%s", r.stdout, r.stderr, stdout.String(), stderr.String())
			}
		})
	}
}

// TestServeListenAndConfigProblems: a bad --listen is reported with the
// config file's problems in one run, its line first (after the line
// naming the file, every line is one of the file's), and the file's
// listen, which the flag overrides, is not among them. The exit status is
// the file's, 1; the flag's alone is a usage error, 2 (TestServeUsage).
func TestServeListenAndConfigProblems(t *testing.T) {
	const (
		notHostPort = `--listen "18487" is not host:port, such as 127.0.0.1:18487`
		notLoopback = `--listen ":18487" is not a loopback address, and with no api.tokens the API is open to anyone who can reach it: ` +
			`listen on 127.0.0.1:18487 (or ::1, localhost), or add tokens under api.tokens (`
		format = "config PATH:\n" + `log.format: "xml" is not a format; use text or json` + "\n"
		lisen  = "config PATH:\nlisen: unknown key (line 2); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web\n"
	)
	// Stopped before it starts: a serve that ran the file would start and
	// stop at once, exit 0.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name, yaml, listen string
		flag, file         string // stderr's first line after "bridge serve: " (its start), then the rest after "bridge: "; PATH is the file's
	}{
		{"Validate's problem", "listen: 127.0.0.1:0\nlog: {format: xml}\n", "18487", notHostPort, format},
		{"an unknown key", "listen: 127.0.0.1:0\nlisen: x\n", ":18487", notLoopback, lisen},
		{"the file's listen overridden", "listen: nowhere\nlog: {format: xml}\n", "18487", notHostPort, format},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := serve(ctx, []string{"--config", path, "--listen", tc.listen}, &stdout, &stderr)
			flag, file, _ := strings.Cut(stderr.String(), "\n")
			wantFlag, wantFile := "bridge serve: "+tc.flag, "bridge: "+strings.ReplaceAll(tc.file, "PATH", path)
			if code != exitError || !strings.HasPrefix(flag, wantFlag) || file != wantFile {
				t.Errorf("serve --listen %q: exit %d, stderr:\n%s\nwant exit %d, a line starting %q, then:\n%s",
					tc.listen, code, stderr.String(), exitError, wantFlag, wantFile)
			}
		})
	}
}

func TestConfigCheckUsage(t *testing.T) {
	valid := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(valid, []byte("listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		code  int
		usage bool // the usage is shown: on stdout when asked for (exit 0), else on stderr
	}{
		{[]string{"config", "check", "-h"}, exitOK, true},
		{[]string{"config", "check", "--help"}, exitOK, true},
		{[]string{"config", "-h"}, exitOK, true},
		{[]string{"config", "check"}, exitUsage, false},
		{[]string{"config", "check", valid, "extra"}, exitUsage, false},
		{[]string{"config", "check", "--bogus", valid}, exitUsage, false}, // named, with a pointer to -h (TestFlagErrorIsShort)
		{[]string{"config", "check", "--post", valid}, exitUsage, false},
		{[]string{"config", "check", "--post", filepath.Join(t.TempDir(), "missing.yaml")}, exitUsage, false},
		{[]string{"config"}, exitUsage, true},
		{[]string{"config", "check", valid}, exitOK, false},
		{[]string{"config", "check", "--config", valid}, exitOK, false}, // as serve takes it
		{[]string{"config", "check", "--config=" + valid}, exitOK, false},
		{[]string{"config", "check", "--config", valid, "extra"}, exitUsage, false},
		{[]string{"config", "check", valid, "--config", valid}, exitUsage, false},
		{[]string{"config", "check", filepath.Join(t.TempDir(), "missing.yaml")}, exitError, false},
	} {
		r := cli(tc.args...)
		shown, other := r.stderr, r.stdout
		if tc.code == exitOK && tc.usage {
			shown, other = r.stdout, r.stderr
		}
		const usage = "usage: bridge config check [--connect [--post]] FILE"
		if r.code != tc.code || strings.Contains(shown, usage) != tc.usage || strings.Contains(other, usage) {
			t.Errorf("bridge %s: exit %d, stdout %q, stderr %q; want exit %d, usage shown %v (on stdout only when asked for)", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.code, tc.usage)
		}
	}
	// Arguments wrong in number are named, not answered with the usage.
	for args, want := range map[string]string{
		"config check":                   "bridge config check: name the config FILE to check",
		"config check " + valid + " two": `bridge config check: one FILE at a time; unexpected "two"`,
	} {
		if r := cli(strings.Fields(args)...); r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("bridge %s = %+v; want exit 2 saying %q", args, r, want)
		}
	}
}

// TestConfigCheckConnect: --connect (before or after the file) reports
// what it found of each connection the file names, one line each, and
// exits 1 on a problem, with no secret in its output.
func TestConfigCheckConnect(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, "xoxb-LEAK-bot")
	fake.Scopes += ",channels:read" // C1 can be read
	fake.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
	m := miniredis.RunT(t)
	m.RequireAuth("LEAK-pw")
	write := func(redisURL, channel string) string {
		path := filepath.Join(t.TempDir(), "config.yaml")
		yaml := "listen: 127.0.0.1:0\n" +
			"redis: {url: \"" + redisURL + "\"}\n" +
			"slack: {bot_token: xoxb-LEAK-bot, signing_secret: LEAK-signing, api_url: \"" + fake.URL + "\"}\n" +
			"routes: [{name: default, targets: [{slack: {channel: " + channel + "}}]}]\n"
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("redis://:LEAK-pw@"+m.Addr()+"/0", "C1")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		want   []string
		absent []string
	}{{
		name:   "all set",
		args:   []string{"config", "check", "--connect", good},
		code:   exitOK,
		want:   []string{"ok      redis: answers PING\n", "ok      slack: signed in to Fake Workspace", "ok      slack channel C1: #deploys, and @askbridge is in it\n"},
		absent: []string{"the token lacks"}, // channels:history, as the manifest asks
	}, {
		// The manifest's scopes leave out im:history: a post Slack fails
		// after making it can't be looked for in a person's DM.
		name: "a person, without im:history",
		args: []string{"config", "check", "--connect", write("redis://:LEAK-pw@"+m.Addr()+"/0", "U0ADA")},
		code: exitOK,
		want: []string{"note    slack channel U0ADA: the token lacks im:history, needed to read this DM: when Slack fails a post it has made here (internal_error, or an answer lost), the bridge can't find the message and posts the request again, which may then show twice; add im:history (OAuth & Permissions, Bot Token Scopes) and reinstall the app\n"},
	}, {
		name: "the flag after the file",
		args: []string{"config", "check", good, "--connect"},
		code: exitOK,
		want: []string{"ok      slack channel C1: #deploys"},
	}, {
		name: "posting",
		args: []string{"config", "check", "--connect", "--post", good},
		code: exitOK,
		want: []string{"ok      slack channel C1: posted a test message and deleted it\n"},
	}, {
		name: "a wrong password, a channel the bot is not in",
		args: []string{"config", "check", "--connect", write("redis://:LEAK-wrong@"+m.Addr()+"/0", "C9")},
		code: exitError,
		want: []string{"PROBLEM redis: check the database number and the credentials in redis.url (or redis.username and redis.password); Redis said: WRONGPASS", "ok      slack: signed in", "PROBLEM slack channel C9: Slack knows no such channel"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout has no %q:\n%s", w, r.stdout)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(r.stdout, a) {
					t.Errorf("stdout has %q:\n%s", a, r.stdout)
				}
			}
			if strings.Contains(r.stdout+r.stderr, "LEAK") {
				t.Errorf("a secret is in the output:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestConfigCheckConnectRedisDown: a Redis that can't be reached is one
// finding on stdout. go-redis's own lines about each dial that failed,
// which it writes to the process's stderr by itself, are not added to it.
func TestConfigCheckConnectRedisDown(t *testing.T) {
	if path := os.Getenv("BRIDGE_TEST_CHECK_CONFIG"); path != "" {
		os.Exit(run([]string{"config", "check", "--connect", path}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: every dial is refused
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("redis: {url: \"redis://"+addr+"/0\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// In a process of its own: go-redis writes to the real stderr.
	child := exec.Command(os.Args[0], "-test.run=^TestConfigCheckConnectRedisDown$")
	child.Env = append(os.Environ(), "BRIDGE_TEST_CHECK_CONFIG="+cfg)
	var stdout, stderr bytes.Buffer
	child.Stdout, child.Stderr = &stdout, &stderr
	err = child.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitError {
		t.Errorf("config check --connect: %v; want exit %d", err, exitError)
	}
	if !strings.Contains(stdout.String(), "PROBLEM redis: PING failed") {
		t.Errorf("stdout has no PING finding:\n%s", stdout.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr, beside the finding:\n%s", stderr.String())
	}
}

// TestConfigCheckWarnsOfAnOpenAPI: a valid file whose API is open while
// Slack's callbacks reach the bridge from outside passes, with a warning
// on stderr that names the key, not its value.
func TestConfigCheckWarnsOfAnOpenAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	yaml := "listen: 127.0.0.1:0\n" +
		"slack: {bot_token: xoxb-LEAK-bot, signing_secret: LEAK-signing}\n" +
		"routes: [{name: default, targets: [{slack: {channel: C1}}]}]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli("config", "check", path)
	if r.code != exitOK || !strings.HasPrefix(r.stderr, "bridge: warning: config "+path+": no api.tokens: the API is open") ||
		!strings.Contains(r.stderr, "slack.signing_secret") || !strings.Contains(r.stdout, "listen: 127.0.0.1:0") {
		t.Errorf("exit %d; want %d, the effective config, and a warning of the open API\nstdout:\n%s\nstderr:\n%s", r.code, exitOK, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "LEAK") {
		t.Errorf("a secret is in the output:\n%s%s", r.stdout, r.stderr)
	}
}

// TestConfigCheckWarnsOfNoDefaultRoute: routes without one named default
// pass config check (a bridge may want every request to name its route),
// with a warning that such requests are refused and how to fix it.
func TestConfigCheckWarnsOfNoDefaultRoute(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:0\nroutes: [{name: ops}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli("config", "check", path)
	want := "bridge: warning: config " + path + ": no route is named default (routes: ops): a request that names no route"
	if r.code != exitOK || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "NO_PROVIDER") || !strings.Contains(r.stdout, "name: ops") {
		t.Errorf("exit %d; want %d, the effective config, and a warning %q…\nstdout:\n%s\nstderr:\n%s", r.code, exitOK, want, r.stdout, r.stderr)
	}
}

// TestConfigCheckBaseURLOfAnyPort: listen's port 0 has config check say
// that the base URL is known once the bridge runs, not show it as :0.
func TestConfigCheckBaseURLOfAnyPort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli("config", "check", path)
	if r.code != exitOK || strings.Contains(r.stdout, "127.0.0.1:0/") || strings.Contains(r.stdout, "base_url: http://127.0.0.1:0") ||
		!strings.Contains(r.stdout, `base_url: "" # known only once the bridge runs`) {
		t.Errorf("exit %d; want %d, and base_url said to be known once the bridge runs\nstdout:\n%s\nstderr:\n%s", r.code, exitOK, r.stdout, r.stderr)
	}
}

// TestConfigCheckWarnsOfAnUnusedSurface: config.example.yaml with its
// slack: block uncommented and the default route's targets left empty
// passes, with a warning naming the section and saying to add a target;
// with a Slack target under the route, no such warning.
func TestConfigCheckWarnsOfAnUnusedSurface(t *testing.T) {
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Uncomment the slack: block: "# slack:" and its "#   " lines.
	var withSlack []string
	inSlack := false
	for _, l := range strings.Split(string(example), "\n") {
		if strings.HasPrefix(l, "# slack:") {
			inSlack = true
		}
		if inSlack && strings.HasPrefix(l, "#") {
			l = strings.TrimPrefix(l, "# ")
		} else {
			inSlack = false
		}
		withSlack = append(withSlack, l)
	}
	unused := strings.Join(withSlack, "\n")
	if !strings.Contains(unused, "\nslack:") || !strings.Contains(unused, "\n    targets: []") {
		t.Fatalf("config.example.yaml has no slack: block to uncomment or no default route with targets: []:\n%s", unused)
	}
	used := strings.Replace(unused, "\n    targets: []", "\n    targets: [{slack: {channel: C0123456789}}]", 1)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-LEAK-bot-token")
	t.Setenv("SLACK_SIGNING_SECRET", "LEAK-signing-secret")
	const warning = ": the slack: section is set but no route's targets use it"
	for _, tt := range []struct {
		name, yaml string
		warned     bool
	}{
		{"no target", unused, true},
		{"a slack target", used, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			r := cli("config", "check", path)
			if r.code != exitOK {
				t.Fatalf("exit %d; want %d\nstderr:\n%s", r.code, exitOK, r.stderr)
			}
			warned := strings.Contains(r.stderr, "bridge: warning: config "+path+warning)
			if warned != tt.warned {
				t.Errorf("warned of the unused slack: section %v; want %v\nstderr:\n%s", warned, tt.warned, r.stderr)
			}
			if tt.warned && !strings.Contains(r.stderr, "Add a target under a route") {
				t.Errorf("the warning does not say what to do:\n%s", r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "LEAK") {
				t.Errorf("a secret is in the output:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestServeRefusedByRedis: a setting Redis refuses (a wrong password; on a
// real Redis, a database past its last) stops the bridge at start with
// Redis's reason, without the URL's password. A Redis that can't be
// reached does not: the API answers 503 until it can (api's
// TestRedisDownIs503).
func TestServeRefusedByRedis(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("the-right-one")
	cases := []struct{ name, url, reason string }{
		{"wrong password", "redis://:LEAK-pw@" + m.Addr() + "/0", "WRONGPASS"},
	}
	if real := os.Getenv("BRIDGE_TEST_REDIS_URL"); real != "" {
		u, err := url.Parse(real)
		if err != nil {
			t.Fatal(err)
		}
		opt, err := redis.ParseURL(real)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		dbs, err := rdb.ConfigGet(context.Background(), "databases").Result()
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + dbs["databases"] // one past the last
		cases = append(cases, struct{ name, url, reason string }{"database out of range", u.String(), "DB index is out of range"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			yaml := "listen: 127.0.0.1:0\nredis: {url: \"" + tc.url + "\", prefix: \"abtest:refused:\"}\n"
			if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop() // a bridge that started after all stops with the test
			done := make(chan cliResult, 1)
			go func() {
				var stderr bytes.Buffer
				code := serve(ctx, []string{"--config", cfg}, io.Discard, &stderr)
				done <- cliResult{code: code, stderr: stderr.String()}
			}()
			r := await(t, "serve", done)
			if r.code != exitError || !strings.Contains(r.stderr, "cannot start") || !strings.Contains(r.stderr, tc.reason) {
				t.Errorf("serve: exit %d, stderr %q; want exit %d and Redis's reason", r.code, r.stderr, exitError)
			}
			if strings.Contains(r.stderr, "LEAK") {
				t.Errorf("stderr shows the password: %q", r.stderr)
			}
		})
	}
}

// Every command's -h is help, asked for: on stdout (bridge serve -h | less),
// exit 0. A mistaken flag is an error: its help goes to stderr, exit 2.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"serve", "-h"}, {"ask", "-h"}, {"answer", "-h"}, {"pending", "-h"}, {"mcp", "-h"},
		{"bench", "-h"}, {"config", "-h"}, {"config", "check", "-h"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "usage") || stderr.Len() != 0 {
			t.Errorf("bridge %s: exit %d, stdout %d bytes, stderr %q", strings.Join(args, " "), code, stdout.Len(), stderr.String())
		}
	}
	for _, args := range [][]string{{"serve", "--nope"}, {"bench", "--nope"}, {"bench", "nope"}, {"config", "nope"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), "nope") {
			t.Errorf("bridge %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
}

// TestLogDurations: a duration in a log line reads as a duration in both
// formats, "1.5s", not JSON's nanoseconds (1500000000), in a group too.
func TestLogDurations(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			cfg, err := config.Parse([]byte("log: {format: " + format + "}\n"))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			newLogger(cfg, &out).WithGroup("outage").Info("Redis serves again", "after", 1500*time.Millisecond, "unserved_calls", 3)
			want := map[string]string{"text": "outage.after=1.5s outage.unserved_calls=3", "json": `"outage":{"after":"1.5s","unserved_calls":3}`}[format]
			if !strings.Contains(out.String(), want) {
				t.Errorf("logged %q; want it to hold %q", out.String(), want)
			}
		})
	}
}

// TestFlagErrorIsShort: a flag the command can't parse is said in one line
// and a pointer to -h, as the commands' other usage errors are, not above
// the whole help, where it scrolls out of sight.
func TestFlagErrorIsShort(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ask", "--question", "Q?", "--bogus"}, "bridge ask: flag provided but not defined: -bogus"},
		{[]string{"ask", "--question", "Q?", "--expires", "5"}, "bridge ask: invalid value \"5\" for flag -expires: a duration needs a unit"},
		{[]string{"answer", "abc", "--select"}, "bridge answer: flag needs an argument: -select"},
		{[]string{"serve", "--config"}, "bridge serve: flag needs an argument: -config"},
		{[]string{"pending", "--bogus"}, "bridge pending: flag provided but not defined: -bogus"},
		{[]string{"mcp", "--reattach", "x"}, "bridge mcp: invalid value \"x\" for flag -reattach"},
		{[]string{"signin-link", "--bogus"}, "bridge signin-link: flag provided but not defined: -bogus"},
		{[]string{"config", "check", "--bogus"}, "bridge config check: flag provided but not defined: -bogus"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(tc.args...)
			hint := fmt.Sprintf("Run \"bridge %s -h\" for its flags.", strings.TrimPrefix(strings.SplitN(tc.want, ":", 2)[0], "bridge "))
			if r.code != exitUsage || !strings.HasPrefix(r.stderr, tc.want) || !strings.Contains(r.stderr, hint) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stderr starting %q, then %q", r.code, r.stdout, r.stderr, exitUsage, tc.want, hint)
			}
			if n := strings.Count(r.stderr, "\n"); n > 2 {
				t.Errorf("stderr has %d lines, want the error and the pointer to -h alone:\n%s", n, r.stderr)
			}
		})
	}
}

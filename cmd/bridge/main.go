// Command bridge is askbridge: the service that puts agents' questions to
// people on Slack and Discord and hands their answers back.
//
//	bridge serve [--config FILE] [--listen ADDR]
//	bridge ask --question TEXT [--option LABEL]... [flags]
//	bridge approve --tool NAME [--arg KEY=VALUE]... [flags]
//	bridge answer ID [--select LABEL]... [--custom TEXT]
//	bridge pending
//	bridge config check FILE
//	bridge bench [flags]
//	bridge version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/config"
	mcpserver "github.com/askbridge/askbridge/internal/mcp"
	"github.com/askbridge/askbridge/internal/surface"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usage = `usage: bridge <command> [flags]

commands:
  serve          run the bridge (no config: embedded Redis, open API on loopback)
  ask            ask a question and print the answer JSON (for scripts and CI)
  approve        ask to allow a tool call; exit 0 once allowed (for scripts and CI)
  answer ID      answer a pending question (answer-scoped token)
  pending        list pending questions and approvals (answer-scoped token)
  signin-link    print a one-time sign-in link to the web inbox (a bridge without tokens)
  mcp            serve ask_user_question and request_approval to an MCP client on stdio
  config check   validate a config file (--connect: and the connections it names)
  bench          measure latency, throughput and memory on replicas beside a fake Slack
  version        print the version

Run "bridge <command> -h" for a command's flags.
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	ctx, stop := stopOnSignal(cmd != "ask" && cmd != "approve" && cmd != "mcp")
	defer stop()
	switch cmd {
	case "serve":
		return serve(ctx, rest, stdout, stderr)
	case "ask":
		return ask(ctx, rest, stdin, stdout, stderr)
	case "approve":
		return approve(ctx, rest, stdin, stdout, stderr)
	case "answer":
		return answer(ctx, rest, stdout, stderr)
	case "pending":
		return pendingCmd(ctx, rest, stdout, stderr)
	case "signin-link":
		return signInLinkCmd(ctx, rest, stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, rest, stdin, stdout, stderr)
	case "config":
		switch {
		case len(rest) > 0 && rest[0] == "check":
			return configCheck(ctx, rest[1:], stdout, stderr)
		case len(rest) == 1 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "help"):
			return configCheck(ctx, []string{"-h"}, stdout, stderr) // its flags too
		case len(rest) > 0:
			fmt.Fprintf(stderr, "bridge config: unknown subcommand %q\n\n", rest[0])
		}
		fmt.Fprint(stderr, configCheckUsage)
		return exitUsage
	case "bench":
		return benchCmd(ctx, rest, stdin, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "askbridge", version())
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "bridge: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// stopOnSignal returns a context that ends at the first SIGINT, SIGTERM or
// SIGHUP (the terminal closed): serve then stops in order (waiting up to a
// minute for posts in flight), ask, approve and mcp withdraw their requests. With
// again, the default action of SIGINT and SIGTERM is back before the
// context ends, so that a second one stops the process at once.
// (signal.NotifyContext keeps catching them until stop is called.) Without
// it (ask, approve, mcp), every later signal is dropped: their withdrawals are
// bounded (the client gives each 10 s), and signals come in pairs where
// nobody asked to hurry: timeout(1) sends its SIGTERM to the command and
// then to its process group, and a closing terminal sends SIGHUP twice
// (the shell forwards its own to its jobs, the kernel sends one to the
// foreground process group as the shell exits); the second would end the
// command before it withdrew its question. A second SIGHUP is dropped
// either way.
// A SIGHUP ignored at start (nohup) stays ignored. The context's cause
// (context.Cause) is a signalled naming the signal, which the client's
// errors then give as the reason, not Go's "context canceled".
func stopOnSignal(again bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	stopping := []os.Signal{os.Interrupt, syscall.SIGTERM}
	hup := !signal.Ignored(syscall.SIGHUP)
	if hup {
		stopping = append(stopping, syscall.SIGHUP)
	}
	signal.Notify(sigs, stopping...)
	hups := make(chan os.Signal, 1) // SIGHUP after the first signal, with again: caught, and dropped
	go func() {
		var cause error
		select {
		case sig := <-sigs:
			cause = signalled{sig}
			if again {
				// SIGHUP is caught on hups before sigs lets it go: a
				// moment without a channel for it would let a closing
				// terminal's second SIGHUP end the process.
				if hup {
					signal.Notify(hups, syscall.SIGHUP)
				}
				signal.Stop(sigs)
			}
		case <-ctx.Done():
		}
		cancel(cause)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		signal.Stop(hups)
		cancel(nil)
	}
}

// signalled is the cause of a context that a signal ended, worded for the
// person who sent it.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string {
	switch s.sig {
	case os.Interrupt:
		return "interrupted by Ctrl-C (SIGINT)"
	case syscall.SIGHUP:
		return "its terminal closed (SIGHUP)"
	}
	return "stopped by " + signalName(s.sig)
}

// signalName is "SIGTERM" where String says "terminated".
func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return sig.String()
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "devel-" + s.Value[:12]
			}
		}
	}
	return "devel"
}

// loadConfig reads path, or an empty config when path is "".
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Parse(nil)
	}
	return config.Load(path)
}

// configProblems prints err, the problems of the config file at path (""
// for the embedded defaults) that config.Load or Validate found, as serve
// and config check both print them: a line naming the file, then one
// problem a line, whatever their kind. An error that is not of the
// file's content (it could not be read) is one line, naming the file.
func configProblems(w io.Writer, path string, err error) {
	var (
		fe *config.FileError
		pe *fs.PathError
	)
	switch {
	case errors.As(err, &fe):
		err = fe.Err
	case errors.As(err, &pe):
		// Not a problem in the file: os.ReadFile's error names it.
		fmt.Fprintln(w, "bridge:", err)
		return
	}
	if path == "" {
		fmt.Fprintf(w, "bridge: the embedded config:\n%v\n", err)
		return
	}
	fmt.Fprintf(w, "bridge: config %s:\n%v\n", path, err)
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDuration}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// readableDuration writes a duration as people read it ("1.5s"): slog's
// JSON handler writes its nanoseconds (1500000000), the text handler
// its String already.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

const serveUsage = `usage: bridge serve [--config FILE] [--listen ADDR]

Runs the bridge. With no --config: an embedded in-memory Redis and an open
API on 127.0.0.1:8080 (docs/config.md).

flags:
`

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config file (YAML); none: embedded defaults")
	listen := fs.String("listen", "", "listen address, overrides the config's listen")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE` when the bridge stops")
	if code, ok := parseFlags(fs, args, serveUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		// "bridge serve config.yaml" (as "bridge config check config.yaml"
		// takes it) would otherwise run the embedded defaults, and ignore
		// every flag after the file.
		return usageErr(stderr, "serve", "unexpected argument %q; name the config file with --config (bridge serve --config %s)", fs.Arg(0), fs.Arg(0))
	}
	// An empty value reads as the flag left out: --config "$CONFIG" with
	// CONFIG unset would run the embedded defaults, not the config meant.
	if msg := emptyGiven(fs, visited(fs), map[string]string{
		"config":     "the embedded defaults",
		"listen":     "the config's listen",
		"cpuprofile": "no profile",
	}); msg != "" {
		return usageErr(stderr, "serve", "%s", msg)
	}
	cfg, err := loadConfig(*cfgPath)
	if cfg == nil {
		configProblems(stderr, *cfgPath, err)
		return exitError
	}
	var listenProblem string
	if *listen != "" {
		// The flag's problem, named as the flag's: else Validate would
		// name the config's listen key, which the flag overrode. Checked
		// against the config: loopback, unless it has api.tokens.
		cfg.Listen = *listen
		if listenProblem = cfg.ListenProblem(*listen); listenProblem != "" {
			// Overridden still: Validate checks the file's other keys
			// against an address it accepts, so that this run names
			// their problems too.
			cfg.Listen = config.DefaultListen
		}
	}
	// A config that came with an error (an unknown key) never validates:
	// Validate reports that error's problems first, then its own, so that
	// one run names them all.
	switch err := cfg.Validate(); {
	case err != nil:
		// The flag's line first: after the line naming the file, every
		// line reads as one of the file's problems. Exit 1, as for the
		// file's problems alone: the file is refused too.
		if listenProblem != "" {
			fmt.Fprintf(stderr, "bridge serve: --listen %s\n", listenProblem)
		}
		configProblems(stderr, *cfgPath, err)
		return exitError
	case listenProblem != "":
		return usageErr(stderr, "serve", "--listen %s", listenProblem)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bridge:", err)
			return exitError
		}
		defer stop()
	}
	log := newLogger(cfg, stderr)
	a, err := app.New(cfg, log, app.Options{MCP: func(apiURL string, tokens bool, log *slog.Logger) app.MCP {
		return mcpserver.NewHTTP(mcpserver.HTTPOptions{
			Bridge: apiURL, Tokens: tokens,
			Server: mcpserver.Options{Logger: log.With("mcp", "http"), Version: version()},
		})
	}})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// The first thing a new user may meet: 8080 is a popular port.
			log.Error("cannot start", "err", err, "hint",
				"another program listens there: stop it, or run on another address (bridge serve --listen 127.0.0.1:PORT, or listen: in the config) and point the clients at it (--server or BRIDGE_SERVER=http://127.0.0.1:PORT)")
			return exitError
		}
		log.Error("cannot start", "err", err)
		return exitError
	}
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("stopped", "err", err)
		return exitError
	}
	return exitOK
}

const configCheckUsage = `usage: bridge config check [--connect [--post]] FILE

Validates the config file FILE (or --config FILE, as bridge serve takes
it), naming the key of every problem, and prints the effective
configuration: defaults filled in, every secret shown as <secret>. Exits 0
when the file is valid, 1 when it is not.

With --connect it then connects with the file's credentials instead of
printing the configuration: Redis answers (a note when it answers without
the file's password too, which then protects nothing); the Slack bot
token signs in and may post (chat:write), the bot is in each target's
channel, the token may read its history (so that a post Slack fails after making it
is not made twice), each responders group can be read and has members;
the Discord bot token signs in, application_id and public_key are the
bot's application's, Discord sends interactions where the bridge takes
them, the bot can see each target's channel. It changes nothing and
exits 1 when it finds a problem. With --post it checks each channel by
posting a message there and deleting it at once: the only way to know the
Slack bot is in a channel without the channels:read scope, or that the
Discord bot may post where it can see, embeds included (without Embed
Links, Discord drops the embeds that hold each question's text).

`

// configCheck validates a config file and, with --connect, checks the
// connections it names. Flags may come after the file too.
func configCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	connect := fs.Bool("connect", false, "connect with the file's credentials and check what the bridge needs (changes nothing)")
	post := fs.Bool("post", false, "with --connect: post a message to each target's channel and delete it")
	// As serve names it: "bridge config check --config FILE" would
	// otherwise be refused with the usage, for a file that may be fine.
	named := fs.String("config", "", "the config `FILE`, as bridge serve takes it (or name it without the flag)")
	if code, ok := parseFlags(fs, args, configCheckUsage, stdout, stderr); !ok {
		return code
	}
	path := *named
	if path == "" {
		if fs.NArg() < 1 {
			return usageErr(stderr, "config check", "name the config FILE to check")
		}
		path = fs.Arg(0)
		if code, ok := parseFlags(fs, fs.Args()[1:], configCheckUsage, stdout, stderr); !ok {
			return code
		}
		if *named != "" {
			return usageErr(stderr, "config check", "one FILE at a time; unexpected --config %q", *named)
		}
	}
	if fs.NArg() != 0 {
		return usageErr(stderr, "config check", "one FILE at a time; unexpected %q", fs.Arg(0))
	}
	if *post && !*connect {
		return usageErr(stderr, "config check", "--post goes with --connect")
	}
	cfg, err := config.Load(path)
	if cfg == nil {
		configProblems(stderr, path, err)
		return exitError
	}
	// As in serve: Validate names the unknown keys Load found, then the
	// rest, a line each.
	if err := cfg.Validate(); err != nil {
		configProblems(stderr, path, err)
		return exitError
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stderr, "bridge: warning: config %s: %s\n", path, w)
	}
	if *connect {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		code := exitOK
		for _, f := range app.Check(ctx, cfg, surface.HTTPClient(), *post) {
			fmt.Fprintln(stdout, f)
			if f.Level == surface.Problem {
				code = exitError
			}
		}
		return code
	}
	out, err := cfg.Effective()
	if err != nil {
		fmt.Fprintln(stderr, "bridge:", err)
		return exitError
	}
	stdout.Write(out)
	return exitOK
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

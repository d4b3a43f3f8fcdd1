package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/askbridge/askbridge/client"
	mcpserver "github.com/askbridge/askbridge/internal/mcp"
)

const mcpUsage = `usage: bridge mcp [--server URL] [flags]

Serves MCP over stdio for an MCP client (Claude Desktop, Claude Code,
Cursor, VS Code, ...), with two tools that reach a person through the
bridge and wait for the reply:

  ask_user_question  questions with options; the result is the answer JSON
                     {"answers":[{"id":"q1","selected":["Yes"]}]}
  request_approval   allow or reject a tool call; the result is
                     {"outcome":"allowed-once"|"rejected","note":"..."}

While a call waits, the server sends a progress notification every
--progress-interval (when the client asked for progress). A call the client
gave up on keeps its question asked for --reattach, so that the same call
made again re-attaches to it instead of asking twice; after that it is
withdrawn. Questions still pending when the client disconnects are
withdrawn. See docs/mcp.md.

Logs go to stderr; stdout is the protocol.

environment:
  BRIDGE_SERVER  default of --server
  BRIDGE_TOKEN   API token (needs the ask scope; none for an open bridge)

flags:
`

func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	route := fs.String("route", "", "route to post requests to (default: the bridge's \"default\" route)")
	expires := durationFlag(fs, "expires", 0, "expire requests unanswered after this `duration` (30m, 2h); 0: the route's or bridge's default")
	caller := fs.String("caller", "", "who asks, `NAME` shown to the people who answer (default: the MCP client's name)")
	progress := durationFlag(fs, "progress-interval", mcpserver.DefaultProgressInterval, "how often (a `duration`) a waiting call sends a progress notification")
	reattach := durationFlag(fs, "reattach", mcpserver.DefaultReattach, "how long (a `duration`) a question whose call was given up on stays asked for a retry to re-attach; 0: withdraw it at once")
	server := serverFlag(fs)
	if code, ok := parseFlags(fs, args, mcpUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "mcp", "unexpected argument %q", fs.Arg(0))
	}
	if msg := emptyGiven(fs, visited(fs), map[string]string{
		"route":  "the bridge's default route",
		"caller": "the MCP client's name",
	}); msg != "" {
		return usageErr(stderr, "mcp", "%s", msg)
	}
	// Else every tool call would fail with the bridge's INVALID_REQUEST.
	if msg := tooLong(*route, "", *caller); msg != "" {
		return usageErr(stderr, "mcp", "%s", msg)
	}
	if *progress <= 0 {
		return usageErr(stderr, "mcp", "--progress-interval must be positive")
	}
	if *expires < 0 {
		// Else every tool call would fail with the bridge's INVALID_REQUEST,
		// which tells the model its arguments were wrong.
		return usageErr(stderr, "mcp", "--expires must not be negative")
	}
	if *reattach < 0 {
		// Else read as 0, unsaid.
		return usageErr(stderr, "mcp", "--reattach must not be negative; 0 withdraws a question at once")
	}
	if msg := serverProblem(fs); msg != "" {
		return usageErr(stderr, "mcp", "%s", msg)
	}
	bc, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: mcp:", err)
		return exitError
	}
	opts := mcpserver.Options{
		Route:            *route,
		ExpiresIn:        *expires,
		ProgressInterval: *progress,
		Reattach:         *reattach,
		Logger:           slog.New(slog.NewTextHandler(stderr, nil)).With("server", bc.URL()),
		Version:          version(),
	}
	if *reattach == 0 {
		opts.Reattach = -1 // the package's zero means its default
	}
	if *caller != "" {
		opts.Caller = &client.Caller{Name: *caller}
	}
	// A client that dies closes stdout and stderr with stdin. Go kills a
	// process whose write to fd 1 or 2 meets a closed pipe with SIGPIPE,
	// which would end bridge mcp before it withdrew what its calls wait
	// for; ignored, the write fails, stdin ends, and Close withdraws them.
	signal.Ignore(syscall.SIGPIPE)
	srv := mcpserver.New(bc, opts)
	opts.Logger.Info("serving MCP on stdio", "reattach", *reattach, "progress_interval", *progress)
	err = srv.Run(ctx, mcpserver.Stdio(stdin, stdout, opts.Logger))
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "bridge: mcp:", err)
		return exitError
	}
	return exitOK
}

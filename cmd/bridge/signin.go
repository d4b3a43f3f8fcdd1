package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

const signInUsage = `usage: bridge signin-link [--server URL]

Prints a new one-time link that signs a browser in to the web inbox of a
running bridge without API tokens (the embedded default): the one its log
printed at start signs in one browser once, within an hour. Run it on the
bridge's machine; a bridge without tokens answers no other. A bridge with
tokens has no such links: sign in there with an answer-scoped token.

environment:
  BRIDGE_SERVER  default of --server

flags:
`

func signInLinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("signin-link", flag.ContinueOnError)
	server := serverFlag(fs)
	if code, ok := parseFlags(fs, args, signInUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "signin-link", "unexpected argument %q", fs.Arg(0))
	}
	c, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: signin-link:", err)
		return exitError
	}
	link, err := c.SignInLink(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: signin-link:", hint(err))
		return exitError
	}
	fmt.Fprintln(stdout, link)
	return exitOK
}

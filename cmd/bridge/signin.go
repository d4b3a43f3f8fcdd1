package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/askbridge/askbridge/client"
)

const signInUsage = `usage: bridge signin-link [--server URL]

Prints a new one-time link that signs a browser in to the web inbox of a
running bridge without API tokens (the embedded default): the one its log
printed at start signs in one browser once, within an hour. Run it on the
bridge's machine; a bridge without tokens answers no other. It needs no
token. A bridge with API tokens gives no such links, whatever the token:
open its web inbox (the bridge's URL, e.g. http://127.0.0.1:8080/) and
paste an answer-scoped token there.

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
	if msg := serverProblem(fs); msg != "" {
		return usageErr(stderr, "signin-link", "%s", msg)
	}
	c, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: signin-link:", err)
		return exitError
	}
	link, err := c.SignInLink(ctx)
	switch {
	case errors.Is(err, client.ErrUnauthorized), errors.Is(err, client.ErrForbidden):
		// Only a bridge with API tokens refuses the call, and it gives no
		// links to any token (to an answer-scoped one it says so itself):
		// say at once what works there rather than to set BRIDGE_TOKEN.
		inbox := strings.TrimRight(*server, "/") + "/"
		if u, err := url.Parse(inbox); err == nil && u.User != nil {
			u.User = nil // a proxy's credentials stay out of the output
			inbox = u.String()
		}
		fmt.Fprintf(stderr, "bridge: signin-link: this bridge has API tokens, so it gives no sign-in links: "+
			"open its web inbox, %s, and sign in there with an answer-scoped token (%v)\n", inbox, err)
		return exitError
	case err != nil:
		fmt.Fprintln(stderr, "bridge: signin-link:", hint(err))
		return exitError
	}
	fmt.Fprintln(stdout, link)
	return exitOK
}

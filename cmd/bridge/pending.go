package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/surface"
)

const pendingUsage = `usage: bridge pending [--json] [--server URL]

Lists the questions and approvals waiting for an answer, oldest first: id,
age, kind, the (first) question or the tool to approve, and the options.
The API lists the newest 500 of each kind; with more, it says so on stderr.
Answer one with "bridge answer ID". --json prints
{"questions":[...],"approvals":[...]} with the full records, newest first.

environment:
  BRIDGE_SERVER  default of --server
  BRIDGE_TOKEN   API token (needs the answer scope; none for an open bridge)

flags:
`

func pendingCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pending", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the records as JSON")
	server := serverFlag(fs)
	if code, ok := parseFlags(fs, args, pendingUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "pending", "unexpected argument %q", fs.Arg(0))
	}
	if msg := serverProblem(fs); msg != "" {
		return usageErr(stderr, "pending", "%s", msg)
	}
	c, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: pending:", err)
		return exitError
	}
	list, err := c.Pending(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "bridge: pending:", hint(err))
		return exitError
	}
	for _, k := range []struct {
		kind string
		n    int
	}{{"questions", len(list.Questions)}, {"approvals", len(list.Approvals)}} {
		if k.n >= client.PendingLimit {
			// The oldest, which have waited longest, would be the ones left
			// out; with exactly the limit pending, none are.
			fmt.Fprintf(stderr, "bridge: pending: %d pending %s listed, the most the API lists: any older ones are not shown\n", k.n, k.kind)
		}
	}
	if *asJSON {
		if list.Questions == nil {
			list.Questions = []client.Record{}
		}
		if list.Approvals == nil {
			list.Approvals = []client.Record{}
		}
		if err := writeJSON(stdout, list, true); err != nil {
			fmt.Fprintln(stderr, "bridge: pending:", err)
			return exitError
		}
		return exitOK
	}
	if err := writeTable(stdout, list, time.Now()); err != nil {
		fmt.Fprintln(stderr, "bridge: pending:", err)
		return exitError
	}
	return exitOK
}

// writeTable writes the pending requests as a table, oldest first.
func writeTable(w io.Writer, list *client.PendingList, now time.Time) error {
	recs := slices.Concat(list.Questions, list.Approvals)
	if len(recs) == 0 {
		_, err := fmt.Fprintln(w, "nothing pending")
		return err
	}
	slices.SortStableFunc(recs, func(a, b client.Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGE\tKIND\tASKED\tOPTIONS")
	for _, r := range recs {
		asked, options := summary(r)
		age := max(now.Sub(r.CreatedAt), 0).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, age, r.Kind, asked, options)
	}
	return tw.Flush()
}

// summary is what a table row shows of a request: its first question (and
// how many more) or the tool to approve, and the choices.
func summary(r client.Record) (asked, options string) {
	if r.Kind == client.KindApproval {
		return cell(r.ToolName, 60), "--allow | --reject"
	}
	if len(r.Questions) == 0 {
		return "", ""
	}
	q := r.Questions[0]
	asked = cell(q.Question, 60)
	if n := len(r.Questions) - 1; n > 0 {
		asked += fmt.Sprintf(" (+%d more)", n)
	}
	labels := make([]string, 0, len(q.Options))
	for _, o := range q.Options {
		labels = append(labels, cell(o.Label, 30))
	}
	options = strings.Join(labels, " | ")
	switch {
	case options == "" && q.Input != nil && q.Input.Type != client.InputString:
		options = "(" + strings.ToLower(surface.InputHint(q.Input.Type)) + ")" // what --custom takes
	case options == "":
		options = "(free text)"
	case q.MultiSelect:
		options += " (multi)"
	}
	return asked, options
}

// cell makes s fit one table cell: control characters and runs of blanks
// become one space, and it is cut to at most n characters.
func cell(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

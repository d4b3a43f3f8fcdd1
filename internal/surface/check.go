package surface

import (
	"fmt"
	"net/url"
)

// Level says how much a Finding matters.
type Level int

const (
	Fine    Level = iota // works as the bridge needs
	Note                 // worth knowing; not checked, or unusual but workable
	Problem              // the bridge will fail on it
)

func (l Level) String() string {
	switch l {
	case Fine:
		return "ok"
	case Note:
		return "note"
	default:
		return "PROBLEM"
	}
}

// Finding is one thing a check of the configured connections found
// (`bridge config check --connect`): what was looked at and what it said.
// Its text never holds a secret.
type Finding struct {
	Level Level
	What  string // "slack", "slack channel C0123", "redis"
	Text  string
}

func (f Finding) String() string { return fmt.Sprintf("%-7s %s: %s", f.Level, f.What, f.Text) }

// Findings collects findings in the order they are made.
type Findings []Finding

// Add appends a finding whose text is formatted from format and args.
func (fs *Findings) Add(l Level, what, format string, args ...any) {
	*fs = append(*fs, Finding{Level: l, What: what, Text: fmt.Sprintf(format, args...)})
}

// CheckText is what a check with --post posts to each channel, and
// deletes at once.
const CheckText = "askbridge: checking that this bridge can post here (bridge config check --connect --post). This message is deleted at once."

// Unreachable says a connection to the API at apiURL failed with err,
// naming only the API's scheme and host: a path may hold an interaction
// token, a query a bot token.
func Unreachable(apiURL string, err error) string {
	host := ""
	if u, perr := url.Parse(apiURL); perr == nil {
		host = u.Scheme + "://" + u.Host
	}
	return fmt.Sprintf("can't reach %s: %v", host, err)
}

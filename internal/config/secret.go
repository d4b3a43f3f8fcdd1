package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// redacted is what a non-empty Secret prints as.
const redacted = "<secret>"

// Secret is a credential from the config file: an API token, a Slack or
// Discord token, a Redis URL that may carry a password. It prints, logs and
// marshals as "<secret>" (an empty Secret as ""), so that a Config can be
// logged or shown whole; Reveal returns the value for the one place that
// sends it.
//
// fmt honours Format for every verb but %p and %w, which are wrong for a
// string: fmt prints those through its bad-verb path, which calls no
// methods and prints the raw value. go vet's printf check reports both. The
// same path prints everything beneath a pointer given a verb other than
// %v, %p, %d or %x, so a struct that holds a Secret behind a pointer needs a
// Format method, as Slack and Discord have.
type Secret string

// Reveal returns the secret's value. Call it only where the value is sent to
// the service it belongs to.
func (s Secret) Reveal() string { return string(s) }

// String returns "<secret>", or "" when s is empty.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString returns the Go syntax of String, quoted: "<secret>" or "".
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// Format prints s for every fmt verb as String would print with that verb;
// %#v prints GoString.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// LogValue makes slog print "<secret>" whatever the handler.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText returns String, for encoders that use encoding.TextMarshaler.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON returns String as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalYAML returns String.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// fmt prints a pointer field with a verb other than %v, %p, %d or %x through
// its bad-verb path, which calls no methods on anything beneath it: %s of a
// Config would print its *Slack's tokens raw. Slack and Discord, the
// sections held by pointer, therefore print themselves, as method-less
// copies whose Secret fields still format as <secret>.

type slackFields Slack
type discordFields Discord

// Format prints s with its secrets as <secret>, for every fmt verb.
func (s Slack) Format(f fmt.State, verb rune) {
	formatFields(f, verb, slackFields(s), "config.slackFields", "config.Slack")
}

// Format prints d with its secrets as <secret>, for every fmt verb.
func (d Discord) Format(f fmt.State, verb rune) {
	formatFields(f, verb, discordFields(d), "config.discordFields", "config.Discord")
}

func formatFields(f fmt.State, verb rune, v any, typeName, realName string) {
	out := fmt.Sprintf(fmt.FormatString(f, verb), v)
	if verb == 'v' && f.Flag('#') {
		out = strings.Replace(out, typeName, realName, 1)
	}
	fmt.Fprint(f, out)
}

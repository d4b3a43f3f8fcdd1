package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes d the way a config file would: "168h", "1m30s", "500ms", "0".
func (d Duration) String() string {
	if d == 0 {
		return "0"
	}
	s := time.Duration(d).String()
	s, _ = strings.CutSuffix(s, "m0s") // 1h30m0s -> 1h30m; 2m0s -> 2m
	if strings.HasSuffix(s, "h0") {    // 1h0m0s -> 1h0 -> 1h
		s = s[:len(s)-1]
	}
	if strings.HasSuffix(s, "h") || strings.HasSuffix(s, "s") {
		return s
	}
	return s + "m"
}

// UnmarshalYAML reads a duration string such as "90s", "24h" or "0" (see
// time.ParseDuration). An empty string leaves d as it was, so
// `${VAR:-}` with VAR unset keeps the default.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf(
			"line %d: expected a duration such as 90s, 24h or 0", n.Line)}}
	}
	if n.Value == "" {
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		// A yaml.TypeError lets the decoder carry on and report every bad
		// value at once. Parse finds these first, naming the key.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf(
			"line %d: cannot read `%s` as a duration: write a number with a unit, such as 90s, 24h or 0",
			n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// bareNumber is durationProblem's word for a number without a unit.
const bareNumber = "a number without a unit"

var decimal = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?$`)

// durationProblem says what kind of value s, which time.ParseDuration
// refused, is: bareNumber (90, 1.5), to which a unit can be added, or ""
// for anything else.
func durationProblem(s string) string {
	if decimal.MatchString(s) {
		return bareNumber
	}
	return ""
}

// MarshalYAML writes d as String does, and 0 as the number 0.
func (d Duration) MarshalYAML() (any, error) {
	if d == 0 {
		return 0, nil
	}
	return d.String(), nil
}

// MarshalText writes d as String does (JSON, slog).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

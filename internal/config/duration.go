package config

import (
	"fmt"
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
		// value at once; Parse hides values that came from the environment.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf(
			"line %d: cannot read `%s` as a duration: write a number with a unit, such as 90s, 24h or 0",
			n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
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

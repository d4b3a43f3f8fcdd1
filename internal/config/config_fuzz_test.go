package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// FuzzParse reads arbitrary config files: Parse and Validate never panic,
// a config that parses prints its effective form, a config Parse returns
// with an error (an unknown key) never validates, and no error or
// effective form ever shows a secret's value.
func FuzzParse(f *testing.F) {
	// Seeds stay small. The fuzzer minimizes every input that finds new
	// coverage, trying up to about n²/2 shorter ones for n bytes (for up to
	// -fuzzminimizetime, 60s by default), and reports no execs meanwhile:
	// mutants of the 5 kB config.example.yaml and the 0.9 kB validBase held
	// both workers at 0 execs/s through a whole short run. So those two come
	// one top-level key at a time, without comments, in flow style; each of
	// their keys still appears in a seed.
	if b, err := os.ReadFile("../../config.example.yaml"); err == nil {
		addSections(f, string(b))
	}
	addSections(f, validBase)
	f.Add("redis: {addrs: [\"r1:7000\", \"r2:7000\"], password: LEAKpw, tls: true}\n")
	f.Add("redis:\n  addrs: [s1:26379]\n  master_name: m\n  sentinel_password: LEAKspw\n  db: 2\n")
	f.Add("redis: {url: \"redis://:LEAKpw@localhost:6379/0\"}\napi:\n  tokens:\n    - {name: a, token: LEAKtok-7f3c9e21b4, scopes: [ask]}\n")
	f.Add("routes:\n  - name: default\n    targets:\n      - slack: {channel: C1}\n        discord: {channel: \"2\"}\n")
	f.Add("store: {retention: 1h, default_expires_in: 0, sweep_interval: -1s}\nlog: {level: loud}\n")
	f.Add("x-anchor: &a {prefix: p}\nredis:\n  <<: *a\n---\nlisten: 1\n")
	f.Add("x: &a {prefix: p}\ny: &b {<<: [*a, *a]}\nredis: {<<: [*b, *b]}\n")
	f.Add("redis: &a {<<: [*a, {prefix: p}]}\n")
	f.Add("listen: ${NOPE}\nbase_url: $${x}\n")
	f.Fuzz(func(t *testing.T, data string) {
		c, err := parse([]byte(data), noEnv)
		if c == nil {
			return
		}
		verr := c.Validate()
		if err != nil && verr == nil {
			t.Fatalf("parse refused it (%v) and returned a config that validates", err)
		}
		eff, err := c.Effective()
		if err != nil {
			t.Fatalf("Effective of a parsed config: %v", err)
		}
		for _, s := range []Secret{c.Redis.Password, c.Redis.SentinelPassword, c.Redis.URL} {
			v := s.Reveal()
			if len(v) < 8 || v == redacted || !strings.HasPrefix(v, "LEAK") {
				continue
			}
			if strings.Contains(string(eff), v) || verr != nil && strings.Contains(verr.Error(), v) {
				t.Fatalf("a secret shows: %q", v)
			}
		}
	})
}

// addSections adds each top-level key of the YAML document doc as a seed of
// its own, comments dropped and in flow style.
func addSections(f *testing.F, doc string) {
	f.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) != 1 {
		f.Fatalf("a seed document does not parse: %v", err)
	}
	top := n.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		sec := &yaml.Node{Kind: yaml.MappingNode, Content: top.Content[i : i+2]}
		compact(sec)
		b, err := yaml.Marshal(sec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// compact drops n's comments and writes its collections in flow style.
func compact(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style |= yaml.FlowStyle
	}
	for _, c := range n.Content {
		compact(c)
	}
}

// TestParseAliases: anchors merged into one another are checked in time
// linear in the document, and an anchor merged into itself is an error,
// not a stack overflow.
func TestParseAliases(t *testing.T) {
	// bomb: each level merges the one below ten times, 10^12 paths in all.
	var bomb strings.Builder
	bomb.WriteString("x0: &a0 {prefix: p}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&bomb, "x%d: &a%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ","))
	}
	bomb.WriteString("redis: {<<: *a12}\n")
	for _, tc := range []struct{ name, data, want string }{
		{"merges of merges", bomb.String(), "x12: unknown key"},
		{"merged into itself", "redis: &a {<<: *a}\n", "contains itself"},
		{"merged into itself in a list", "redis: &a {<<: [{prefix: p}, *a]}\n", "contains itself"},
		{"nested", "routes:\n  - &r {name: a, targets: [{slack: &s {channel: C1, <<: *s}}]}\n  - *r\n", "contains itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := parse([]byte(tc.data), noEnv)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("parse: %v, want an error with %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("parse of %d bytes still running after 10s", len(tc.data))
			}
		})
	}
}

package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse reads arbitrary config files: Parse and Validate never panic,
// a config that parses prints its effective form, and no error or
// effective form ever shows a secret's value.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../config.example.yaml"); err == nil {
		f.Add(string(b))
	}
	f.Add(validBase)
	f.Add("redis: {addrs: [\"r1:7000\", \"r2:7000\"], password: LEAKpw, tls: true}\n")
	f.Add("redis:\n  addrs: [s1:26379]\n  master_name: m\n  sentinel_password: LEAKspw\n  db: 2\n")
	f.Add("redis: {url: \"redis://:LEAKpw@localhost:6379/0\"}\napi:\n  tokens:\n    - {name: a, token: LEAKtok, scopes: [ask]}\n")
	f.Add("routes:\n  - name: default\n    targets:\n      - slack: {channel: C1}\n        discord: {channel: \"2\"}\n")
	f.Add("store: {retention: 1h, default_expires_in: 0, sweep_interval: -1s}\nlog: {level: loud}\n")
	f.Add("x-anchor: &a {prefix: p}\nredis:\n  <<: *a\n---\nlisten: 1\n")
	f.Add("listen: ${NOPE}\nbase_url: $${x}\n")
	f.Fuzz(func(t *testing.T, data string) {
		c, err := parse([]byte(data), noEnv)
		if err != nil {
			return
		}
		verr := c.Validate()
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

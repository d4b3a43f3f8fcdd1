package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestRedisPasswordsNeverLeak prints a Cluster and a Sentinel redis section
// every way the bridge might and looks for their passwords in the output.
func TestRedisPasswordsNeverLeak(t *testing.T) {
	vars := env(map[string]string{"PW": "LEAK-redis-password", "SPW": "LEAK-sentinel-password"})
	for _, doc := range []string{
		`redis: {addrs: ["r1:7000", "r2:7000"], username: u, password: "${PW}", tls: true}`,
		`redis: {addrs: ["s1:26379"], master_name: m, password: "${PW}", sentinel_password: "${SPW}", db: 2}`,
	} {
		c := mustParse(t, doc, vars)
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if c.Redis.Password.Reveal() != "LEAK-redis-password" {
			t.Fatalf("password = %q", c.Redis.Password.Reveal())
		}
		var out []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out = append(out, fmt.Sprintf(verb, c.Redis), fmt.Sprintf(verb, c))
		}
		var b bytes.Buffer
		slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "redis", c.Redis, "config", c)
		slog.New(slog.NewTextHandler(&b, nil)).Info("config", "redis", c.Redis)
		out = append(out, b.String())
		y, _ := yaml.Marshal(c.Redis)
		j, _ := json.Marshal(c.Redis)
		eff, err := c.Effective()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(y), string(j), string(eff))
		bad := *c
		bad.Redis.URL = "redis://:LEAK-url-password@x:6379"
		bad.Redis.Addrs = append(bad.Redis.Addrs, "LEAK")
		if err := bad.Validate(); err == nil {
			t.Fatal("url and addrs together validated")
		} else {
			out = append(out, strings.ReplaceAll(err.Error(), `"LEAK"`, "")) // the bad address itself is not a secret
		}
		for _, o := range out {
			if strings.Contains(o, "LEAK") {
				t.Errorf("a secret leaked: %s", o)
			}
		}
		if !strings.Contains(string(eff), "password: <secret>") {
			t.Errorf("Effective does not show the password as <secret>:\n%s", eff)
		}
	}
}

// TestRedisURLErrorsHidePassword: whatever is wrong with redis.url, the
// error names the key and never repeats the password, not even the part of
// a password with unencoded characters that a parser stopped at.
func TestRedisURLErrorsHidePassword(t *testing.T) {
	for _, u := range []string{
		"redis://u:LEAKpw@localhost:6379/abc",
		"redis://u:LEAKpw@:notaport/0",
		"redis://:LEAK/pw@localhost:6379/0",
		"redis://:LEAK#pw@localhost:6379/0",
		"redis://:LEAK%zzpw@localhost:6379/0",
		"redis://:LEAK pw@localhost:6379/0",
		"redis://:pw@localhost:6379/LEAK",
		"redis://:pw@localhost:6379/0/LEAK",
		"http://:LEAKpw@localhost:6379/0",
		"redis://:LEAK@pw@localhost:6379/0/x",
		"redis://user:1234?LEAKpw@localhost:6379/0", // digits before '?' read as a port
		"redis://:7?LEAK@redis.internal:6379",
	} {
		c := mustParse(t, "", noEnv)
		c.Redis.URL = Secret(u)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: no error", u)
			continue
		}
		if !strings.HasPrefix(err.Error(), "redis.url: ") || strings.Contains(err.Error(), "LEAK") {
			t.Errorf("%s: %v; want an error naming redis.url without the password", u, err)
		}
	}
}

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// env is a fake environment for parse.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

var noEnv = env(nil)

func mustParse(t *testing.T, data string, lookup func(string) (string, bool)) *Config {
	t.Helper()
	c, err := parse([]byte(data), lookup)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return c
}

func defaultConfig() *Config {
	return &Config{
		Listen: "127.0.0.1:8080",
		Redis:  Redis{Prefix: "askbridge:"},
		Store: Store{
			Retention:        Duration(168 * time.Hour),
			DefaultExpiresIn: Duration(24 * time.Hour),
			SweepInterval:    Duration(time.Second),
			MaxWait:          Duration(60 * time.Second),
		},
		Web:    Web{SessionTTL: Duration(12 * time.Hour), LinkTTL: Duration(168 * time.Hour), MaxLinkStreams: 1000},
		Routes: []Route{{Name: "default", Mode: "all"}},
		Log:    Log{Level: "info", Format: "text"},
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
	}{
		{"empty file", ""},
		{"only comments", "# nothing here\n"},
		{"empty document", "---\n"},
		{"null", "null\n"},
		{"empty mapping", "{}\n"},
		{"empty sections", "redis:\nstore:\napi:\nlog:\nroutes: []\n"},
		{"explicit defaults", `
listen: 127.0.0.1:8080
redis: {url: "", prefix: "askbridge:"}
store: {retention: 168h, default_expires_in: 24h, sweep_interval: 1s, max_wait: 60s}
routes: [{name: default, mode: all}]
log: {level: info, format: text}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.data, noEnv)
			sameConfig(t, c, defaultConfig())
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if !c.OpenAPI() {
				t.Error("OpenAPI() = false with no tokens")
			}
			r, ok := c.Route("")
			if !ok || r.Name != "default" || len(r.Targets) != 0 {
				t.Errorf(`Route("") = %+v, %v; want the implicit default route`, r, ok)
			}
			if got := c.PublicURL(); got != "http://127.0.0.1:8080" {
				t.Errorf("PublicURL() = %q", got)
			}
		})
	}
}

func TestDefaultsFillGaps(t *testing.T) {
	c := mustParse(t, `
api:
  tokens: [{name: a, token: t-7f3c9e21b4a0cd, scopes: [ask]}]
listen: ":9090"
store:
  default_expires_in: 0
  max_wait: 0
slack: {bot_token: b, app_token: xapp-a, api_url: "http://127.0.0.1:1234/api"}
discord: {bot_token: b, application_id: "1", gateway: true}
routes:
  - name: ops
    expires_in: 90s
    targets: [{slack: {channel: C1}}]
`, noEnv)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"explicit 0 default_expires_in stays 0 (never)", c.Store.DefaultExpiresIn, Duration(0)},
		{"explicit 0 max_wait stays 0", c.Store.MaxWait, Duration(0)},
		{"unset retention gets its default", c.Store.Retention, Duration(168 * time.Hour)},
		{"slack api_url gets its slash", c.Slack.APIURL, "http://127.0.0.1:1234/api/"},
		{"discord api_url defaults", c.Discord.APIURL, "https://discord.com/api/v10/"},
		{"route mode defaults to all", c.Routes[0].Mode, ModeAll},
		{"route expires_in", c.Routes[0].ExpiresIn.D(), 90 * time.Second},
		{"no implicit default route when routes are given", len(c.Routes), 1},
		{"public URL of an unspecified host", c.PublicURL(), "http://localhost:9090"},
		{"OpenAPI with a token", c.OpenAPI(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if _, ok := c.Route(""); ok {
		t.Error(`Route("") found a route though none is named default`)
	}
	if r, ok := c.Route("ops"); !ok || r != &c.Routes[0] {
		t.Errorf(`Route("ops") = %p, %v; want &c.Routes[0]`, r, ok)
	}
}

func TestEnvExpansion(t *testing.T) {
	vars := env(map[string]string{
		"TOKEN":   "s3cr3t-value",
		"EMPTY":   "",
		"HASH":    "a #b: *c",
		"TRUE":    "true",
		"NUMBER":  "0123",
		"CHANNEL": "C42",
	})
	for _, tc := range []struct {
		name string
		data string
		get  func(*Config) any
		want any
	}{
		{"plain", "slack:\n  bot_token: ${TOKEN}\n  app_token: x\n", func(c *Config) any { return c.Slack.BotToken.Reveal() }, "s3cr3t-value"},
		{"quoted", `slack: {bot_token: "${TOKEN}", app_token: x}`, func(c *Config) any { return c.Slack.BotToken.Reveal() }, "s3cr3t-value"},
		{"inside text", `base_url: "http://${CHANNEL}.example/"`, func(c *Config) any { return c.BaseURL }, "http://C42.example/"},
		{"two in one value", `base_url: "${CHANNEL}-${CHANNEL}"`, func(c *Config) any { return c.BaseURL }, "C42-C42"},
		{"default when unset", "listen: ${NOPE:-127.0.0.1:9999}", func(c *Config) any { return c.Listen }, "127.0.0.1:9999"},
		{"default when empty", "listen: ${EMPTY:-127.0.0.1:9999}", func(c *Config) any { return c.Listen }, "127.0.0.1:9999"},
		{"set but empty without default", "redis: {prefix: \"x${EMPTY}\"}", func(c *Config) any { return c.Redis.Prefix }, "x"},
		{"empty plain value keeps the default", "store:\n  retention: ${NOPE:-}\n", func(c *Config) any { return c.Store.Retention.D() }, 168 * time.Hour},
		{"value with yaml syntax stays one value", "redis:\n  prefix: ${HASH}\n", func(c *Config) any { return c.Redis.Prefix }, "a #b: *c"},
		{"plain value is typed after expansion", "discord:\n  gateway: ${TRUE}\n", func(c *Config) any { return c.Discord.Gateway }, true},
		{"number-like value into a string", "discord:\n  application_id: ${NUMBER}\n", func(c *Config) any { return c.Discord.ApplicationID }, "0123"},
		{"$${ is a literal ${", `base_url: "$${TOKEN}"`, func(c *Config) any { return c.BaseURL }, "${TOKEN}"},
		{"lone $ is kept", `redis: {prefix: "a$b$"}`, func(c *Config) any { return c.Redis.Prefix }, "a$b$"},
		{"comments are not expanded", "# ${NOPE}\nlisten: 127.0.0.1:1 # ${NOPE}\n", func(c *Config) any { return c.Listen }, "127.0.0.1:1"},
		{"in a nested flow list, quoted", "routes: [{name: r, targets: [{slack: {channel: \"${CHANNEL}\"}}]}]", func(c *Config) any { return c.Routes[0].Targets[0].Slack.Channel }, "C42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.data, vars)
			if got := tc.get(c); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}

	t.Run("from the process environment", func(t *testing.T) {
		t.Setenv("ASKBRIDGE_TEST_LISTEN", "127.0.0.2:7000")
		c, err := Parse([]byte("listen: ${ASKBRIDGE_TEST_LISTEN}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Listen != "127.0.0.2:7000" {
			t.Errorf("listen = %q", c.Listen)
		}
	})

	for _, tc := range []struct {
		name string
		data string
		want []string // substrings of the error
	}{
		{"unset names the variable and the key", "slack:\n  bot_token: ${SLACK_BOT_TOKEN}\n",
			[]string{"slack.bot_token (line 2)", "SLACK_BOT_TOKEN is not set: set it, or write ${SLACK_BOT_TOKEN:-} where the key may be left empty"}},
		{"every unset variable is reported", "listen: ${A1}\nbase_url: ${A2}\n", []string{"A1 is not set", "A2 is not set"}},
		{"in a list", "api: {tokens: [{name: a, token: \"${NOPE}\"}]}", []string{"api.tokens[0].token (line 1)", "NOPE is not set"}},
		{"unterminated", "listen: ${TOKEN\n", []string{"listen (line 1)", "no closing }"}},
		{"bad name", "listen: ${1X}\n", []string{"listen (line 1)", `"1X" is not an environment variable name`}},
		// An empty plain value reads as not set: a list item would be left
		// out, and responders left open to anyone in the channel.
		{"an empty list item", "api:\n  tokens:\n    - name: a\n      token: t\n      scopes:\n        - ask\n        - ${EMPTY}\n", []string{"api.tokens[0].scopes[1] (line 7): ${EMPTY} is empty, and a list item can't be"}},
		{"an empty responder", "routes:\n  - name: r\n    targets:\n      - slack:\n          channel: C1\n          responders:\n            users:\n              - ${EMPTY}\n",
			[]string{"routes[0].targets[0].slack.responders.users[0] (line 8): ${EMPTY} is empty"}},
		{"empty responders", "routes:\n  - name: r\n    targets:\n      - discord:\n          channel: \"1\"\n          responders:\n            roles: ${EMPTY}\n",
			[]string{"routes[0].targets[0].discord.responders.roles (line 7): ${EMPTY} is empty: responders left unset let anyone in the channel answer"}},
		// Quoted, as docs/config.md says to write it inside [...]: still
		// said to be the variable, where the id would be.
		{"an empty responder, quoted in a flow list", "routes:\n  - name: r\n    targets:\n      - slack:\n          channel: C1\n          responders: {users: [\"${EMPTY}\"]}\n",
			[]string{"routes[0].targets[0].slack.responders.users[0] (line 6): ${EMPTY} is empty, and a list item can't be: remove the item, or set the variable"}},
		{"empty responders, with an empty default", "routes:\n  - name: r\n    targets:\n      - slack:\n          channel: C1\n          responders: ${NOPE:-}\n",
			[]string{"routes[0].targets[0].slack.responders (line 6): ${NOPE:-} is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.data), vars)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q contains a value", err)
			}
		})
	}
}

// TestTypeErrors: a value of the wrong type is reported with its key, not
// only its line (a line of a flow mapping may hold several keys), and with
// what to write instead.
func TestTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string // whole lines of the error
	}{
		{"a duration without a unit", "store: {max_wait: 90}\n", []string{"store.max_wait (line 1): cannot read `90` as a duration (write 90s)"}},
		{"a duration that is not one", "store:\n  retention: soon\n", []string{"store.retention (line 2): cannot read `soon` as a duration: write a number with a unit, such as 90s, 24h or 0"}},
		{"one of several on a line", "store: {retention: 1h, max_wait: 1.5, sweep_interval: 1s}\n", []string{"store.max_wait (line 1): cannot read `1.5` as a duration (write 1.5s)"}},
		{"a string for a list", "api:\n  tokens:\n    - {name: a, token: t, scopes: ask}\n", []string{"api.tokens[0].scopes (line 3): expected a list, got `ask`; write [ask] for a list of one"}},
		{"a bool", "discord: {bot_token: b, gateway: maybe}\n", []string{"discord.gateway (line 1): cannot read `maybe` as true or false"}},
		{"a quoted bool", "discord: {bot_token: b, gateway: \"true\"}\n", []string{"discord.gateway (line 1): cannot read `true` as true or false (quoted, it is text: write it without quotes)"}},
		{"a number", "redis: {db: two}\n", []string{"redis.db (line 1): cannot read `two` as a whole number"}},
		{"a list for one value", "listen: [a, b]\n", []string{"listen (line 1): expected one value, got a list"}},
		{"a mapping for a list", "routes: {name: a}\n", []string{"routes (line 1): expected a list, got keys with values"}},
		{"a value for a section", "slack: on\n", []string{"slack (line 1): expected keys with values (key: value), got `on`"}},
		{"not a mapping at all", "- listen\n", []string{"the top level (line 1): expected keys with values (key: value), got a list"}},
		{"a long value is cut", "discord: {gateway: xoxb-123456789-abcdef}\n", []string{"discord.gateway (line 1): cannot read `xoxb-12...` as true or false"}},
		{"every one, with unknown keys", "store: {max_wait: 90, retention: x}\nlog: {levle: info}\n", []string{
			"store.max_wait (line 1): cannot read `90` as a duration (write 90s)",
			"store.retention (line 1): cannot read `x` as a duration: write a number with a unit, such as 90s, 24h or 0",
			"log.levle: unknown key (line 2); the keys of log are: format, level",
		}},
		{"in an anchor", "x-s: &s {max_wait: 90}\nstore: {<<: *s}\n", []string{"x-s: unknown key (line 1); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web", "store.max_wait (line 1): cannot read `90` as a duration (write 90s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.data), noEnv)
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("error:\n%s\nwant:\n%s", err, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A value expanded into the wrong key is named by the key and shown as
// written, never expanded: it may be a token. What is wrong with it is
// said without it.
func TestTypeErrorsHideExpandedValues(t *testing.T) {
	const tok = "xoxb-1234567890-leaky"
	vars := env(map[string]string{"TOK": tok, "MAYBE": "maybe", "NUM": "90"})
	for _, tc := range []struct {
		name, data, want string
	}{
		{"into a bool", "discord:\n  gateway: ${TOK}\n", "discord.gateway (line 2): cannot read `${TOK}` as true or false: its value (not shown) is neither"},
		{"a word into a bool", "discord:\n  gateway: ${MAYBE}\n", "discord.gateway (line 2): cannot read `${MAYBE}` as true or false: its value (not shown) is neither"},
		{"into a duration", "store:\n  retention: ${TOK}\n", "store.retention (line 2): cannot read `${TOK}` as a duration: its value (not shown) is not a number with a unit, such as 90s, 24h or 0"},
		{"a number into a duration", "store:\n  max_wait: ${NUM}\n", "store.max_wait (line 2): cannot read `${NUM}` as a duration: its value is a number without a unit (write one, such as 90s)"},
		{"inside text", "store:\n  max_wait: \"1${NUM}\"\n", "store.max_wait (line 2): cannot read `1${NUM}` as a duration: its value is a number without a unit (write one, such as 90s)"},
		{"into a number", "redis: {db: \"${TOK}\"}\n", "redis.db (line 1): cannot read `${TOK}` as a whole number (quoted, it is text: write it without quotes)"},
		{"into a list", "api:\n  tokens: ${TOK}\n", "api.tokens (line 2): expected a list, got `${TOK}`; write [\"${TOK}\"] for a list of one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.data), vars)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tc.want {
				t.Errorf("error %q\nwant  %q", err, tc.want)
			}
			for _, v := range []string{tok[:5], "maybe", "190"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q shows the value", err)
				}
			}
		})
	}
}

// TestValidateHidesExpandedValues: a value from the environment that
// Validate refuses is shown as written: a secret expanded into the wrong
// key must not reach the error (and so the log).
func TestValidateHidesExpandedValues(t *testing.T) {
	const tok = "xoxb-1234567890-leaky"
	vars := env(map[string]string{"TOK": tok})
	for _, tc := range []struct {
		name, data, want string
	}{
		{"log.level", "log:\n  level: ${TOK}\n", `log.level: "${TOK}" is not a level`},
		{"log.format", "log:\n  format: ${TOK}\n", `log.format: "${TOK}" is not a format`},
		{"listen", "listen: ${TOK}\n", `listen: "${TOK}" is not host:port`},
		{"listen's port", "listen: 127.0.0.1:${TOK}\n", `listen: "127.0.0.1:${TOK}": the port is not a number`},
		{"route mode", "routes:\n  - name: default\n    mode: ${TOK}\n", `routes[0].mode: "${TOK}" is not a mode`},
		{"scope", "api:\n  tokens:\n    - {name: a, token: 0123456789abcdef0123, scopes: [\"${TOK}\"]}\n", `api.tokens[0].scopes[0]: "${TOK}" is not a scope`},
		{"redis addr", "redis:\n  addrs: [\"${TOK}\"]\n", `redis.addrs[0]: "${TOK}" is not host:port`},
		{"through an alias", "slack:\n  bot_token: &t ${TOK}\n  signing_secret: abc\nlog:\n  level: *t\n", `log.level: "${TOK}" is not a level`},
		{"through an alias, listen", "slack:\n  bot_token: &t ${TOK}\n  signing_secret: abc\nlisten: *t\n", `listen: "${TOK}" is not host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse([]byte(tc.data), vars)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant one holding %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), tok[5:]) {
				t.Errorf("error %q shows the value", err)
			}
		})
	}
	// A value set after parsing (--listen) is not the environment's, and
	// is shown as it is.
	c, err := parse([]byte("listen: ${TOK}\n"), vars)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen = "8080"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `listen: "8080" is not host:port`) {
		t.Errorf("an overridden listen: %v", err)
	}
}

// TestValidateSlackSecretFromFile: a Slack secret read from a file keeps
// its final newline in the environment; Validate names the key, not the
// value, rather than let Slack refuse the token as unknown.
func TestValidateSlackSecretFromFile(t *testing.T) {
	vars := env(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1-2-leaky\n", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543"})
	c, err := parse([]byte("slack:\n  bot_token: ${SLACK_BOT_TOKEN}\n  signing_secret: ${SLACK_SIGNING_SECRET}\n"), vars)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	const want = "slack.bot_token: starts or ends with white space, or holds a control character (a final newline read from a file?): write the value alone"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %q", err, want)
	}
}

func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"top level", "listne: 127.0.0.1:1\n", []string{"listne: unknown key (line 1)", "the keys of the top level are: api, base_url, discord"}},
		{"in a section", "redis:\n  uri: x\n", []string{"redis.uri: unknown key (line 2)", "the keys of redis are: addrs, db, master_name, password, prefix, sentinel_password, tls, url, username"}},
		{"in a target", "slack: {bot_token: b, app_token: a}\nroutes:\n  - name: a\n  - name: b\n    targets:\n      - slack: {chanel: C1}\n",
			[]string{"routes[1].targets[0].slack.chanel: unknown key (line 6)", "channel, mention, responders, thread_by_session"}},
		{"in responders", "routes: [{name: a, targets: [{discord: {channel: '1', responders: {groups: [x]}}}]}]",
			[]string{"routes[0].targets[0].discord.responders.groups: unknown key", "roles, users"}},
		{"every one is reported", "a: 1\nb: 2\n", []string{"a: unknown key (line 1)", "b: unknown key (line 2)"}},
		{"in a merged anchor", "x-common: &c {prefix: p, bogus: 1}\nredis:\n  <<: *c\n", []string{"x-common: unknown key", "redis.bogus: unknown key (line 1)"}},
		{"a duplicate key", "listen: a:1\nlisten: b:2\n", []string{`mapping key "listen" already defined`}},
		{"a second document", "listen: a:1\n---\nlisten: b:2\n", []string{"line 2: a second YAML document"}},
		{"a wrong type", "routes: {name: a}\n", []string{"routes (line 1): expected a list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.data), noEnv)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestUnknownKeysWithValidate: a document whose only problems are its keys
// is refused by Parse, which returns the config as well, and Validate on
// it names those problems and then its own, a line each: whoever sets up
// the bridge meets them in one run, not an unknown key first and a missing
// secret on the next. A value of the wrong type returns no config, and
// Validate's problems are not reported: it checked nothing trustworthy.
func TestUnknownKeysWithValidate(t *testing.T) {
	const tok = "xoxb-1234567890-leaky"
	vars := env(map[string]string{"TOK": tok})
	const slakKey = "routes[0].targets[0].slak: unknown key (line 5); the keys of routes[0].targets[0] are: discord, slack"
	for _, tc := range []struct {
		name, data string
		parseErr   []string // Parse's error, a line each
		validate   []string // Validate's, a line each; none: Parse returns no config
	}{
		{"an unknown key and Validate's problems",
			"slack: {bot_token: xoxb-1}\nroutes:\n  - name: default\n    targets:\n      - slak: {channel: C1}\n",
			[]string{slakKey},
			[]string{slakKey,
				"slack: set signing_secret (interactions over the Request URL) or app_token (Socket Mode)",
				"routes[0].targets[0]: set exactly one of slack or discord"}},
		{"only an unknown key", validBase + "web: {sesion_ttl: 1h}\n",
			[]string{"web.sesion_ttl: unknown key (line 25); the keys of web are: link_ttl, max_link_streams, secret, session_ttl"},
			[]string{"web.sesion_ttl: unknown key (line 25); the keys of web are: link_ttl, max_link_streams, secret, session_ttl"}},
		{"responders that name nobody and Validate's problem",
			"slack: {bot_token: xoxb-1, app_token: xapp-1}\nroutes:\n  - name: default\n    targets:\n      - slack: {channel: C1, responders: {users: []}}\n        discord: {channel: \"2\"}\n",
			[]string{"routes[0].targets[0].slack.responders.users (line 5): an empty list names nobody, and responders that name nobody let anyone in the channel answer; list who may answer, or remove responders to let anyone in the channel answer"},
			[]string{"routes[0].targets[0].slack.responders.users (line 5): an empty list names nobody, and responders that name nobody let anyone in the channel answer; list who may answer, or remove responders to let anyone in the channel answer",
				"routes[0].targets[0]: set exactly one of slack or discord"}},
		{"a value from the environment is shown as written", "lisen: x\nlog: {level: \"${TOK}\"}\n",
			[]string{"lisen: unknown key (line 1); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web"},
			[]string{"lisen: unknown key (line 1); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web",
				`log.level: "${TOK}" is not a level; use debug, info, warn or error`}},
		{"a wrong type stops before Validate",
			"slack: {bot_token: xoxb-1}\nstore: {max_wait: 90}\nroutes:\n  - name: default\n    targets:\n      - slak: {channel: C1}\n",
			[]string{"store.max_wait (line 2): cannot read `90` as a duration (write 90s)",
				"routes[0].targets[0].slak: unknown key (line 6); the keys of routes[0].targets[0] are: discord, slack"},
			nil},
		{"a duplicate key stops before Validate", "slack: {bot_token: xoxb-1}\nlisen: x\nlog: {level: debug, level: info}\n",
			[]string{"lisen: unknown key (line 2); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web",
				`yaml: unmarshal errors:`, `  line 3: mapping key "level" already defined at line 3`},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, verr := parseThenValidate(t, tc.data, vars, tc.parseErr, tc.validate)
			if strings.Contains(err+verr, tok[5:]) {
				t.Errorf("an error shows the value:\n%s\n%s", err, verr)
			}
		})
	}

	// Load refuses the file, naming it, and returns the config for
	// Validate to name every problem.
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("slack: {bot_token: xoxb-1}\nroutes:\n  - name: default\n    targets:\n      - slak: {channel: C1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if want := "config " + path + ": " + slakKey; err == nil || err.Error() != want {
		t.Errorf("Load: %v\nwant %q", err, want)
	}
	if c == nil {
		t.Fatal("Load returned no config to validate")
	}
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), slakKey+"\nslack: set signing_secret") {
		t.Errorf("Validate of what Load returned: %v\nwant the unknown key, then the missing secret", err)
	}
}

// parseThenValidate parses data with the environment lookupEnv, wanting
// the lines of Parse's error, then the config it returns validated,
// wanting the lines of Validate's; with validate nil, Parse must return
// no config. It returns both errors' texts ("" for Validate's not run).
func parseThenValidate(t *testing.T, data string, lookupEnv func(string) (string, bool), parseErr, validate []string) (string, string) {
	t.Helper()
	c, err := parse([]byte(data), lookupEnv)
	if err == nil {
		t.Fatal("parse: no error")
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, parseErr) {
		t.Errorf("parse's error:\n%s\nwant:\n%s", err, strings.Join(parseErr, "\n"))
	}
	if validate == nil {
		if c != nil {
			t.Errorf("parse returned a config with %q", err)
		}
		return err.Error(), ""
	}
	if c == nil {
		t.Fatal("parse returned no config to validate")
	}
	verr := c.Validate()
	if verr == nil {
		t.Fatal("Validate: no error")
	}
	if got := strings.Split(verr.Error(), "\n"); !reflect.DeepEqual(got, validate) {
		t.Errorf("Validate's error:\n%s\nwant:\n%s", verr, strings.Join(validate, "\n"))
	}
	return err.Error(), verr.Error()
}

// TestUnsetVariablesWithValidate: a ${VAR} whose variable is not set is
// reported with the unknown keys and Validate's problems, a line each, so
// that setting up takes one run: each variable once, with every key that
// uses it. The key reads as not set, and Validate says nothing of it, nor
// of what follows from it being empty (its value is not known). Set but
// empty is fine, as before. A wrong type still returns no config.
func TestUnsetVariablesWithValidate(t *testing.T) {
	const leak = "LEAK-0123456789abcdef"
	vars := env(map[string]string{"SET": leak, "EMPTY": ""})
	unset := func(name, where string) string {
		return where + ": environment variable " + name + " is not set: set it, or write ${" + name + ":-} where the key may be left empty"
	}
	const lisen = "lisen: unknown key (line 1); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web"
	for _, tc := range []struct {
		name, data string
		parseErr   []string // Parse's error, a line each
		validate   []string // Validate's, a line each; none: Parse returns no config
	}{
		{"unset variables, an unknown key and Validate's problems",
			"lisen: x\nslack:\n  bot_token: ${BOT}\n  signing_secret: ${SIGN}\napi:\n  tokens:\n" +
				"    - {name: a, token: \"${TOK}\", scopes: [ask]}\n    - {name: b, token: \"${TOK}\", scopes: [answer]}\nlog: {level: loud}\n",
			[]string{unset("BOT", "slack.bot_token (line 3)"), unset("SIGN", "slack.signing_secret (line 4)"),
				unset("TOK", "api.tokens[0].token (line 7), api.tokens[1].token (line 8)"), lisen},
			[]string{unset("BOT", "slack.bot_token (line 3)"), unset("SIGN", "slack.signing_secret (line 4)"),
				unset("TOK", "api.tokens[0].token (line 7), api.tokens[1].token (line 8)"), lisen,
				`log.level: "loud" is not a level; use debug, info, warn or error`}},
		{"only an unset variable", "log: {level: \"${LEVEL}\"}\n",
			[]string{unset("LEVEL", "log.level (line 1)")},
			[]string{unset("LEVEL", "log.level (line 1)")}},
		{"twice in one value, and beside one that is set", "redis: {url: \"redis://${U}:${SET}@${H}:${H}/0\"}\n",
			[]string{unset("U", "redis.url (line 1)"), unset("H", "redis.url (line 1)")},
			[]string{unset("U", "redis.url (line 1)"), unset("H", "redis.url (line 1)")}},
		// Each a key whose problem would be that another key is empty.
		{"nothing follows from an unset key",
			"redis: {url: \"${RURL}\", password: pw}\nslack: {bot_token: xoxb-1, app_token: \"${APP}\"}\ndiscord: {bot_token: d, application_id: \"1\", gateway: \"${GW}\"}\n",
			[]string{unset("RURL", "redis.url (line 1)"), unset("APP", "slack.app_token (line 2)"), unset("GW", "discord.gateway (line 3)")},
			[]string{unset("RURL", "redis.url (line 1)"), unset("APP", "slack.app_token (line 2)"), unset("GW", "discord.gateway (line 3)")}},
		{"nothing follows from unset tokens or master_name",
			"listen: 0.0.0.0:8080\napi: {tokens: \"${TOKS}\"}\nredis: {addrs: [\"s1:26379\"], master_name: \"${M}\", db: 2}\n",
			[]string{unset("TOKS", "api.tokens (line 2)"), unset("M", "redis.master_name (line 3)")},
			[]string{unset("TOKS", "api.tokens (line 2)"), unset("M", "redis.master_name (line 3)")}},
		{"through an alias", "x-tok: &t \"${TOK}\"\napi:\n  tokens:\n    - {name: a, token: *t, scopes: [ask]}\n    - {name: b, token: *t, scopes: [answer]}\n",
			[]string{unset("TOK", "x-tok (line 1)"), "x-tok: unknown key (line 1); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web"},
			[]string{unset("TOK", "x-tok (line 1)"), "x-tok: unknown key (line 1); the keys of the top level are: api, base_url, discord, listen, log, redis, routes, slack, store, web"}},
		{"as a target's channel and responder",
			"slack: {bot_token: xoxb-1, app_token: xapp-1}\nroutes:\n  - name: default\n    targets:\n      - slack: {channel: \"${CH}\", responders: {users: [\"${U1}\"]}}\n      - slack: {channel: C2, responders: {users: \"${US}\"}}\n      - slack: {channel: C3, responders: \"${R}\"}\n",
			[]string{unset("CH", "routes[0].targets[0].slack.channel (line 5)"), unset("U1", "routes[0].targets[0].slack.responders.users[0] (line 5)"),
				unset("US", "routes[0].targets[1].slack.responders.users (line 6)"), unset("R", "routes[0].targets[2].slack.responders (line 7)")},
			[]string{unset("CH", "routes[0].targets[0].slack.channel (line 5)"), unset("U1", "routes[0].targets[0].slack.responders.users[0] (line 5)"),
				unset("US", "routes[0].targets[1].slack.responders.users (line 6)"), unset("R", "routes[0].targets[2].slack.responders (line 7)")}},
		{"an empty list item, and a ${ with no }", "listen: \"${L\"\napi:\n  tokens:\n    - name: a\n      token: tok-7f3c9e21b4aaaa\n      scopes:\n        - ask\n        - ${EMPTY}\nlog: {format: xml}\n",
			[]string{`listen (line 1): "${L" has no closing }`,
				"api.tokens[0].scopes[1] (line 8): ${EMPTY} is empty, and a list item can't be: remove the item, or set the variable"},
			[]string{`listen (line 1): "${L" has no closing }`,
				"api.tokens[0].scopes[1] (line 8): ${EMPTY} is empty, and a list item can't be: remove the item, or set the variable",
				`log.format: "xml" is not a format; use text or json`}},
		{"a wrong type stops before Validate, with the variable", "listen: ${L}\nstore: {max_wait: 90}\nlog: {level: loud}\n",
			[]string{unset("L", "listen (line 1)"), "store.max_wait (line 2): cannot read `90` as a duration (write 90s)"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, verr := parseThenValidate(t, tc.data, vars, tc.parseErr, tc.validate)
			if strings.Contains(err, leak) || strings.Contains(verr, leak) {
				t.Errorf("an error shows a value:\n%s\n%s", err, verr)
			}
		})
	}

	// Set but empty is not unset: the key keeps its default.
	c := mustParse(t, "listen: ${EMPTY}\n", vars)
	if err := c.Validate(); err != nil || c.Listen != DefaultListen {
		t.Errorf("listen: ${EMPTY} = %q, Validate: %v; want the default, valid", c.Listen, err)
	}
}

// TestEmptyResponders: responders written to name nobody are refused. The
// bridge reads no one named as no limit, so `users: []` would let anyone
// in the channel answer; leaving responders out is how to say that.
func TestEmptyResponders(t *testing.T) {
	const head = "slack: {bot_token: b, app_token: a}\ndiscord: {bot_token: d, application_id: \"1\", public_key: k}\nroutes:\n  - name: r\n    targets:\n"
	for _, tc := range []struct {
		name, targets string
		want          []string // substrings of the error; none: parses
	}{
		{"a slack user list", "      - slack: {channel: C1, responders: {users: []}}\n",
			[]string{"routes[0].targets[0].slack.responders.users (line 6): an empty list names nobody, and responders that name nobody let anyone in the channel answer; list who may answer, or remove responders to let anyone in the channel answer"}},
		{"a slack group list", "      - slack:\n          channel: C1\n          responders:\n            groups: []\n",
			[]string{"routes[0].targets[0].slack.responders.groups (line 9): an empty list names nobody", "remove responders to let anyone"}},
		{"a discord role list", "      - discord: {channel: \"2\", responders: {roles: []}}\n",
			[]string{"routes[0].targets[0].discord.responders.roles (line 6): an empty list names nobody", "remove responders to let anyone"}},
		{"both lists", "      - discord: {channel: \"2\", responders: {users: [], roles: []}}\n",
			[]string{"discord.responders.users (line 6): an empty list", "discord.responders.roles (line 6): an empty list"}},
		{"a key with no value", "      - slack:\n          channel: C1\n          responders:\n            users:\n",
			[]string{"routes[0].targets[0].slack.responders.users (line 9): an empty list names nobody"}},
		{"a null list", "      - discord: {channel: \"2\", responders: {users: ~}}\n",
			[]string{"discord.responders.users (line 6): an empty list names nobody"}},
		{"empty beside a list that names someone", "      - slack: {channel: C1, responders: {users: [U1], groups: []}}\n",
			[]string{"slack.responders.groups (line 6): an empty list names nobody; list who may answer, or remove the key"}},
		{"empty responders", "      - slack: {channel: C1, responders: {}}\n",
			[]string{"routes[0].targets[0].slack.responders (line 6): empty, it names nobody; list groups or users, or remove responders to let anyone in the channel answer"}},
		{"responders with no value", "      - discord:\n          channel: \"2\"\n          responders:\n",
			[]string{"routes[0].targets[0].discord.responders (line 8): empty, it names nobody; list roles or users"}},
		{"an empty list from an anchor", "      - slack: {channel: C1, responders: {users: &none []}}\n      - slack: {channel: C2, responders: {users: *none}}\n",
			[]string{"targets[0].slack.responders.users (line 6)", "targets[1].slack.responders.users (line 7)"}},
		{"merged in", "      - slack: {channel: C1, responders: &open {<<: {users: []}}}\n",
			[]string{"slack.responders.users (line 6): an empty list names nobody"}},
		// Fine: responders left out, or naming someone.
		{"left out", "      - slack: {channel: C1}\n      - discord: {channel: \"2\"}\n", nil},
		{"naming someone", "      - slack: {channel: C1, responders: {groups: [S1]}}\n      - discord: {channel: \"2\", responders: {users: [\"3\"]}}\n", nil},
		{"naming someone through an anchor", "      - slack: {channel: C1, responders: &r {users: [U1]}}\n      - slack: {channel: C2, responders: *r}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse([]byte(head+tc.targets), noEnv)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				// What parses, config check shows; what it shows parses back.
				out, err := c.Effective()
				if err != nil {
					t.Fatal(err)
				}
				back, err := parse(out, noEnv)
				if err != nil {
					t.Fatalf("Effective() does not parse: %v\n%s", err, out)
				}
				sameConfig(t, back, c)
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		str     string
		wantErr bool
	}{
		{in: "90s", want: 90 * time.Second, str: "1m30s"},
		{in: "24h", want: 24 * time.Hour, str: "24h"},
		{in: "168h", want: 168 * time.Hour, str: "168h"},
		{in: "1h30m", want: 90 * time.Minute, str: "1h30m"},
		{in: "10m", want: 10 * time.Minute, str: "10m"},
		{in: "1h0m30s", want: time.Hour + 30*time.Second, str: "1h0m30s"},
		{in: "500ms", want: 500 * time.Millisecond, str: "500ms"},
		{in: "0", want: 0, str: "0"},
		{in: `"0s"`, want: 0, str: "0"},
		{in: "-5s", want: -5 * time.Second, str: "-5s"},
		{in: "90", wantErr: true},
		{in: "soon", wantErr: true},
		{in: "[1s]", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var d Duration
			err := yaml.Unmarshal([]byte(tc.in), &d)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; got %v", d.D())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.D() != tc.want {
				t.Errorf("D() = %v, want %v", d.D(), tc.want)
			}
			if d.String() != tc.str {
				t.Errorf("String() = %q, want %q", d.String(), tc.str)
			}
			out, err := yaml.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var back Duration
			if err := yaml.Unmarshal(out, &back); err != nil || back != d {
				t.Errorf("round trip through %q: %v, %v", out, back.D(), err)
			}
		})
	}
}

// validBase is a config using every section, valid as it stands.
const validBase = `
listen: 0.0.0.0:8080
base_url: https://bridge.example.com/
redis: {url: "redis://:pw@localhost:6379/0"}
api:
  tokens:
    - {name: agents, token: tok-agents-7f3c9e21b4, scopes: [ask]}
    - {name: inbox, token: tok-inbox-7f3c9e21b4, scopes: [answer, ask]}
store: {retention: 1h, default_expires_in: 0, sweep_interval: 1s, max_wait: 0}
slack: {bot_token: xoxb-1, signing_secret: sig}
discord:
  bot_token: dtok
  application_id: "1"
  public_key: 0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef
routes:
  - name: default
    targets:
      - slack: {channel: C1, responders: {users: [U1], groups: [S1]}}
      - discord: {channel: "2", responders: {users: ["3"], roles: ["4"]}}
  - name: ops
    mode: first
    expires_in: 1h
    targets: [{slack: {channel: C1}}, {slack: {channel: C2}}]
log: {level: debug, format: json}
`

// TestSlackBotTokenOfAnotherKind: a Slack token that is not a bot's, in
// slack.bot_token, is refused at load with what to write there instead,
// and the error never shows the token.
func TestSlackBotTokenOfAnotherKind(t *testing.T) {
	const where = "write the Bot User OAuth Token (xoxb-…, the app's OAuth & Permissions page) here"
	for _, tc := range []struct{ token, want string }{
		{"xoxp-1234-5678-LEAKuser", "slack.bot_token: is a user token (xoxp-…), which would post every question as that person; " + where},
		{"xoxe.xoxp-1-LEAKconfig", "slack.bot_token: is a user token (xoxe.xoxp-…), which would post every question as that person; " + where},
		{"xoxe-1-LEAKrefresh", "slack.bot_token: is a refresh token (xoxe-…); " + where},
		{"xapp-1-A1-2-LEAKapp", "slack.bot_token: is an app-level token (xapp-…); " + where + ", and the xapp- one under app_token"},
		{"xoxb-1234-5678-LEAKbot", ""},
		{"xoxe.xoxb-1-LEAKrotating", ""}, // a bot token that rotates
	} {
		name, _, _ := strings.Cut(tc.token, "LEAK")
		t.Run(name, func(t *testing.T) {
			c, err := parse([]byte(`slack: {bot_token: "${TOK}", signing_secret: sig}`), env(map[string]string{"TOK": tc.token}))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("error %v\nwant %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "LEAK") {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
}

// TestRotatingBotTokenWarned: a bot token of an app with token rotation
// on (xoxe.xoxb-) passes, but is warned of: Slack expires it within 12
// hours and the bridge does not renew it. The warning says so, and what
// to do, without the token; a bot token that does not expire is not
// warned of.
func TestRotatingBotTokenWarned(t *testing.T) {
	for _, tc := range []struct {
		token  string
		warned bool
	}{
		{"xoxe.xoxb-1-LEAKrotating", true},
		{"xoxb-1234-5678-LEAKbot", false},
	} {
		name, _, _ := strings.Cut(tc.token, "LEAK")
		t.Run(name, func(t *testing.T) {
			c, err := parse([]byte(`{slack: {bot_token: "${TOK}", signing_secret: sig}, routes: [{name: default, targets: [{slack: {channel: C1}}]}]}`),
				env(map[string]string{"TOK": tc.token}))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			var got []string
			for _, w := range c.Warnings() {
				if strings.Contains(w, "LEAK") {
					t.Errorf("the warning shows the token: %s", w)
				}
				if strings.Contains(w, "token rotation") {
					got = append(got, w)
				}
			}
			if !tc.warned {
				if len(got) != 0 {
					t.Errorf("warned %q; want no warning of token rotation", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %q; want one of token rotation", c.Warnings())
			}
			for _, says := range []string{"slack.bot_token", "xoxe.xoxb-", "12 hours", "does not renew it", "token_expired",
				"can't be turned off", "create a Slack app without it", "Bot User OAuth Token (xoxb-…)"} {
				if !strings.Contains(got[0], says) {
					t.Errorf("the warning does not say %q: %s", says, got[0])
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	base := func(t *testing.T) *Config {
		t.Helper()
		return mustParse(t, validBase, noEnv)
	}
	if err := base(t).Validate(); err != nil {
		t.Fatalf("base config: %v", err)
	}

	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string // the whole message, or a prefix ending in ": "
	}{
		{"listen not host:port", func(c *Config) { c.Listen = "8080" }, `listen: "8080" is not host:port`},
		{"listen bad port", func(c *Config) { c.Listen = "127.0.0.1:http" }, `listen: "127.0.0.1:http": the port is not a number`},
		{"listen port too big", func(c *Config) { c.Listen = "127.0.0.1:65536" }, `listen: "127.0.0.1:65536": the port is not a number from 0 to 65535`},
		{"open API off loopback", func(c *Config) { c.API.Tokens = nil }, `listen: "0.0.0.0:8080" is not a loopback address, and with no api.tokens the API is open`},
		{"open API on all interfaces", func(c *Config) { c.API.Tokens = nil; c.Listen = ":8080" }, `listen: ":8080" is not a loopback address`},
		{"open API on a host name", func(c *Config) { c.API.Tokens = nil; c.Listen = "bridge.internal:8080" }, `listen: "bridge.internal:8080" is not a loopback address`},
		{"base_url not a URL", func(c *Config) { c.BaseURL = "bridge.example.com" }, "base_url: not an http:// or https:// URL"},
		{"base_url with a path", func(c *Config) { c.BaseURL = "https://tools.example.com/askbridge/" }, ""},
		{"base_url with a query", func(c *Config) { c.BaseURL = "https://tools.example.com/askbridge?x=1" }, "base_url: must be a scheme, a host and optionally a path, with no user info, query or fragment"},
		{"base_url with a fragment", func(c *Config) { c.BaseURL = "https://tools.example.com/#top" }, "base_url: must be a scheme, a host and optionally a path, with no user info, query or fragment"},
		{"base_url with user info", func(c *Config) { c.BaseURL = "https://u:p@tools.example.com/" }, "base_url: must be a scheme, a host and optionally a path, with no user info, query or fragment"},
		{"redis url scheme", func(c *Config) { c.Redis.URL = "http://localhost:6379" }, "redis.url: not a redis://, rediss:// or unix:// URL"},
		{"redis url placeholder", func(c *Config) { c.Redis.URL = "<secret>" }, "redis.url: is the placeholder <secret>"},
		{"redis url database not a number", func(c *Config) { c.Redis.URL = "redis://u:p@localhost:6379/abc" }, "redis.url: the database (the path after host:port, or ?db=) is not a number"},
		{"redis url database in the query not a number", func(c *Config) { c.Redis.URL = "redis://localhost:6379?db=x" }, "redis.url: the database (the path after host:port, or ?db=) is not a number"},
		{"redis url negative database", func(c *Config) { c.Redis.URL = "redis://localhost:6379/-1" }, "redis.url: the database number must not be negative, got -1"},
		{"redis url past the last database is found by connecting", func(c *Config) { c.Redis.URL = "redis://127.0.0.1:6379/99" }, ""},
		{"redis url path", func(c *Config) { c.Redis.URL = "redis://localhost:6379/0/1" }, "redis.url: the path must be the database number alone"},
		{"redis url port not a number", func(c *Config) { c.Redis.URL = "redis://u:p@:notaport/0" }, "redis.url: the port is not a number"},
		{"redis url port out of range", func(c *Config) { c.Redis.URL = "redis://localhost:65536/0" }, "redis.url: the port must be a number from 1 to 65535"},
		{"redis url not a url", func(c *Config) { c.Redis.URL = "redis://u:p@local host:6379" }, "redis.url: not a URL such as redis://[user:password@]host:port[/db]"},
		{"redis url unknown option", func(c *Config) { c.Redis.URL = "redis://localhost:6379/0?timeout=1s" }, "redis.url: unexpected option: timeout"},
		{"redis url unix socket", func(c *Config) { c.Redis.URL = "unix:///run/redis/redis.sock?db=2" }, ""},
		{"redis url unix without a path", func(c *Config) { c.Redis.URL = "unix://" }, "redis.url: unix:// needs the socket's path"},
		{"redis url and addrs", func(c *Config) { c.Redis.Addrs = []string{"r1:7000"} }, "redis.addrs: set redis.url (one server) or redis.addrs (a Cluster or Sentinels), not both"},
		{"redis url with password is fine", func(c *Config) { c.Redis.Username = "bridge"; c.Redis.Password = "pw2" }, ""},
		{"redis url with master_name", func(c *Config) { c.Redis.MasterName = "mymaster" }, "redis.master_name: needs redis.addrs (the Sentinels' addresses) instead of redis.url"},
		{"redis url with tls", func(c *Config) { c.Redis.TLS = true }, "redis.tls: with redis.url, write rediss:// for TLS"},
		{"redis url with db", func(c *Config) { c.Redis.DB = 2 }, "redis.db: with redis.url, put the database in the URL"},
		{"redis url with sentinel_password", func(c *Config) { c.Redis.SentinelPassword = "s" }, "redis.sentinel_password: needs redis.addrs and redis.master_name"},
		{"redis password placeholder", func(c *Config) { c.Redis.Password = "<secret>" }, "redis.password: is the placeholder <secret>"},
		{"redis cluster", func(c *Config) {
			c.Redis = Redis{Addrs: []string{"10.0.0.1:7000", "r2.internal:7000"}, Password: "pw", TLS: true, Prefix: "p:"}
		}, ""},
		{"redis sentinel", func(c *Config) {
			c.Redis = Redis{Addrs: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster", Password: "pw", SentinelPassword: "spw", DB: 3, Prefix: "p:"}
		}, ""},
		{"redis addrs not host:port", func(c *Config) { c.Redis = Redis{Addrs: []string{"r1:7000", "r2"}, Prefix: "p:"} }, `redis.addrs[1]: "r2" is not host:port`},
		{"redis addrs bad port", func(c *Config) { c.Redis = Redis{Addrs: []string{"r1:0"}, Prefix: "p:"} }, `redis.addrs[0]: "r1:0" is not host:port`},
		{"redis addrs duplicate", func(c *Config) { c.Redis = Redis{Addrs: []string{"r1:7000", "r1:7000"}, Prefix: "p:"} }, `redis.addrs[1]: "r1:7000" is also redis.addrs[0]`},
		{"redis cluster db", func(c *Config) { c.Redis = Redis{Addrs: []string{"r1:7000"}, DB: 1, Prefix: "p:"} }, "redis.db: a Redis Cluster has database 0 only"},
		{"redis cluster sentinel_password", func(c *Config) { c.Redis = Redis{Addrs: []string{"r1:7000"}, SentinelPassword: "x", Prefix: "p:"} }, "redis.sentinel_password: needs redis.master_name"},
		{"redis negative db", func(c *Config) { c.Redis = Redis{Addrs: []string{"s1:26379"}, MasterName: "m", DB: -1, Prefix: "p:"} }, "redis.db: must not be negative, got -1"},
		{"redis prefix with an empty hash tag", func(c *Config) { c.Redis.Prefix = "x{}:" }, "redis.prefix: must not hold an empty hash tag ({}): on a Redis Cluster every script would fail with CROSSSLOT"},
		{"redis embedded with password", func(c *Config) { c.Redis = Redis{Password: "pw", Prefix: "p:"} }, "redis.password: needs redis.url or redis.addrs"},
		{"redis embedded with master_name", func(c *Config) { c.Redis = Redis{MasterName: "m", Prefix: "p:"} }, "redis.master_name: needs redis.url or redis.addrs"},
		{"token name empty", func(c *Config) { c.API.Tokens[1].Name = "" }, "api.tokens[1].name: required"},
		{"token name duplicate", func(c *Config) { c.API.Tokens[1].Name = "agents" }, `api.tokens[1].name: "agents" is also the name of api.tokens[0]`},
		{"token empty", func(c *Config) { c.API.Tokens[0].Token = "" }, "api.tokens[0].token: required"},
		{"token duplicate", func(c *Config) { c.API.Tokens[1].Token = "tok-agents-7f3c9e21b4" }, "api.tokens[1].token: the same token as api.tokens[0]"},
		{"token placeholder", func(c *Config) { c.API.Tokens[1].Token = "<secret>" }, "api.tokens[1].token: is the placeholder <secret>"},
		{"token with a final newline", func(c *Config) { c.API.Tokens[1].Token = "tok-inbox-7f3c9e21b4\n" }, "api.tokens[1].token: starts or ends with white space, or holds a control character"},
		{"token with a leading space", func(c *Config) { c.API.Tokens[1].Token = " tok-inbox-7f3c9e21b4" }, "api.tokens[1].token: starts or ends with white space"},
		{"token with a control character", func(c *Config) { c.API.Tokens[1].Token = "tok\x00inbox" }, "api.tokens[1].token: starts or ends with white space, or holds a control character"},
		{"token with a space inside", func(c *Config) { c.API.Tokens[1].Token = "tok inbox 7f3c9e21b4" }, ""},
		{"token too short", func(c *Config) { c.API.Tokens[1].Token = "0123456789abcde" }, "api.tokens[1].token: is 15 characters; use at least 16"},
		{"token of 16", func(c *Config) { c.API.Tokens[1].Token = "0123456789abcdef" }, ""},
		{"token of 16 characters, not bytes", func(c *Config) { c.API.Tokens[1].Token = "ééééééééééééééé" }, "api.tokens[1].token: is 15 characters"},
		{"no scopes", func(c *Config) { c.API.Tokens[0].Scopes = nil }, "api.tokens[0].scopes: set at least one of ask, answer"},
		{"bad scope", func(c *Config) { c.API.Tokens[1].Scopes[1] = "admin" }, `api.tokens[1].scopes[1]: "admin" is not a scope`},
		{"duplicate scope", func(c *Config) { c.API.Tokens[1].Scopes[1] = "answer" }, `api.tokens[1].scopes[1]: "answer" is listed twice`},
		{"retention 0", func(c *Config) { c.Store.Retention = 0 }, "store.retention: must be at least 1h"},
		{"retention under an hour", func(c *Config) { c.Store.Retention = Duration(59 * time.Minute) }, "store.retention: must be at least 1h"},
		{"web secret too short", func(c *Config) { c.Web.Secret = "short" }, "web.secret: must be at least 32 characters"},
		{"web secret placeholder", func(c *Config) { c.Web.Secret = "<secret>" }, "web.secret: is the placeholder <secret>"},
		{"web secret of 32 is fine", func(c *Config) { c.Web.Secret = Secret(strings.Repeat("k", 32)) }, ""},
		{"web session_ttl 0", func(c *Config) { c.Web.SessionTTL = 0 }, "web.session_ttl: must be more than 0"},
		{"web link_ttl 0", func(c *Config) { c.Web.LinkTTL = 0 }, "web.link_ttl: must be more than 0"},
		{"web max_link_streams 0", func(c *Config) { c.Web.MaxLinkStreams = 0 }, "web.max_link_streams: must be at least 1"},
		{"web max_link_streams 1 is fine", func(c *Config) { c.Web.MaxLinkStreams = 1 }, ""},
		{"negative default_expires_in", func(c *Config) { c.Store.DefaultExpiresIn = -1 }, "store.default_expires_in: must not be negative"},
		{"sweep_interval 0", func(c *Config) { c.Store.SweepInterval = 0 }, "store.sweep_interval: must be more than 0"},
		{"negative max_wait", func(c *Config) { c.Store.MaxWait = Duration(-time.Second) }, "store.max_wait: must not be negative"},
		{"slack bot_token", func(c *Config) { c.Slack.BotToken = "" }, "slack.bot_token: required: the Bot User OAuth Token (xoxb-…"},
		{"slack neither secret nor app token", func(c *Config) { c.Slack.SigningSecret = "" }, "slack: set signing_secret (interactions over the Request URL) or app_token (Socket Mode)"},
		{"slack app token instead is fine", func(c *Config) { c.Slack.SigningSecret = ""; c.Slack.AppToken = "xapp-1" }, ""},
		{"slack api_url", func(c *Config) { c.Slack.APIURL = "ftp://x/" }, "slack.api_url: not an http:// or https:// URL"},
		{"slack api_url slash", func(c *Config) { c.Slack.APIURL = "http://x/api" }, "slack.api_url: must end in /"},
		{"discord bot_token", func(c *Config) { c.Discord.BotToken = "" }, "discord.bot_token: required: the bot's token (Developer Portal"},
		{"discord bot_token with a final newline", func(c *Config) { c.Discord.BotToken = "MTIw.GabcDE.xyz\n" }, "discord.bot_token: holds white space or a control character"},
		{"discord bot_token with the Bot prefix", func(c *Config) { c.Discord.BotToken = "Bot MTIw.GabcDE.xyz" }, `discord.bot_token: holds white space or a control character (a final newline read from a file? a "Bot " prefix?)`},
		{"discord application_id", func(c *Config) { c.Discord.ApplicationID = "" }, "discord.application_id: required"},
		{"discord application_id not a number", func(c *Config) { c.Discord.ApplicationID = "askbridge" }, "discord.application_id: must be the application's id, a number"},
		{"discord channel by name", func(c *Config) { c.Routes[0].Targets[1].Discord.Channel = "ops" }, "routes[0].targets[1].discord.channel: must be the channel's id, a number"},
		{"discord responder by name", func(c *Config) { c.Routes[0].Targets[1].Discord.Responders.Users[0] = "ada" }, `routes[0].targets[1].discord.responders.users[0]: "ada" is not a Discord user id`},
		{"discord role by name", func(c *Config) { c.Routes[0].Targets[1].Discord.Responders.Roles[0] = "@ops" }, `routes[0].targets[1].discord.responders.roles[0]: "@ops" is not a Discord role id`},
		{"slack responder by name", func(c *Config) { c.Routes[0].Targets[0].Slack.Responders.Users[0] = "@ada" }, `routes[0].targets[0].slack.responders.users[0]: "@ada" is not a Slack user id`},
		{"slack responder lower case", func(c *Config) { c.Routes[0].Targets[0].Slack.Responders.Users[0] = "u0123" }, `routes[0].targets[0].slack.responders.users[0]: "u0123" is not a Slack user id`},
		{"slack enterprise user id is fine", func(c *Config) { c.Routes[0].Targets[0].Slack.Responders.Users[0] = "W0123ABC" }, ""},
		{"slack group by handle", func(c *Config) { c.Routes[0].Targets[0].Slack.Responders.Groups[0] = "oncall" }, `routes[0].targets[0].slack.responders.groups[0]: "oncall" is not a Slack user group id`},
		{"slack mention @here", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "@here" }, `routes[0].targets[0].slack.mention: "@here" would ping nobody; write <!here>,`},
		{"slack mention by name", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "@oncall" }, `routes[0].targets[0].slack.mention: "@oncall" would ping nobody`},
		{"slack mention <@name>", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "<@ada>" }, `routes[0].targets[0].slack.mention: "<@ada>" would ping nobody`},
		{"slack mention <!here>", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "<!here>" }, ""},
		{"slack mention a user", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "<@U0123ABC>" }, ""},
		{"slack mention a group", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = " <!subteam^S0123ABC|@oncall> " }, ""},
		{"slack mention two", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "<@U01> <@U02>" }, ""},
		{"slack mention with text", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "<!subteam^S01> on call:" }, ""},
		{"discord mention @role", func(c *Config) { c.Routes[0].Targets[1].Discord.Mention = "@ops" }, `routes[0].targets[1].discord.mention: "@ops" would ping nobody; write @here, @everyone,`},
		// The doc's placeholder, copied as it is: the fix names the ids as
		// numbers, not the placeholder again.
		{"discord mention placeholder", func(c *Config) { c.Routes[0].Targets[1].Discord.Mention = "<@&ROLE_ID>" }, `routes[0].targets[1].discord.mention: "<@&ROLE_ID>" would ping nobody; write @here, @everyone, or a user's or a role's id, a number (Developer Mode, Copy User ID or Copy Role ID), as <@123456789012345678> or <@&123456789012345678>`},
		{"slack mention placeholder", func(c *Config) { c.Routes[0].Targets[0].Slack.Mention = "<@USER_ID>" }, `routes[0].targets[0].slack.mention: "<@USER_ID>" would ping nobody; write <!here>, <!channel>, a user's id as <@U0123456789> (a profile's More menu, Copy member ID) or a user group's id as <!subteam^S0123456789>`},
		{"discord mention <!here>", func(c *Config) { c.Routes[0].Targets[1].Discord.Mention = "<!here>" }, `routes[0].targets[1].discord.mention: "<!here>" would ping nobody`},
		{"discord mention @here", func(c *Config) { c.Routes[0].Targets[1].Discord.Mention = "@here" }, ""},
		{"discord mention a role", func(c *Config) { c.Routes[0].Targets[1].Discord.Mention = "<@&123456789012345678>" }, ""},
		{"discord mention a user", func(c *Config) { c.Routes[0].Targets[1].Discord.Mention = "<@!123>" }, ""},
		{"discord public_key missing", func(c *Config) { c.Discord.PublicKey = "" }, "discord.public_key: required unless gateway: true"},
		{"discord gateway needs no public_key", func(c *Config) { c.Discord.PublicKey = ""; c.Discord.Gateway = true }, ""},
		{"discord public_key short", func(c *Config) { c.Discord.PublicKey = "abcd" }, "discord.public_key: must be 64 hex characters"},
		{"discord public_key not hex", func(c *Config) { c.Discord.PublicKey = strings.Repeat("g", 64) }, "discord.public_key: must be 64 hex characters"},
		{"discord api_url", func(c *Config) { c.Discord.APIURL = "discord.com/api/" }, "discord.api_url: not an http:// or https:// URL"},
		{"route name empty", func(c *Config) { c.Routes[1].Name = "" }, "routes[1].name: required"},
		{"route name duplicate", func(c *Config) { c.Routes[1].Name = "default" }, `routes[1].name: "default" is also the name of routes[0]`},
		{"route mode", func(c *Config) { c.Routes[1].Mode = "any" }, `routes[1].mode: "any" is not a mode; use all or first`},
		{"slack tokens swapped, bot", func(c *Config) { c.Slack.BotToken = "xapp-1-A1-2-abc" }, `slack.bot_token: is an app-level token (xapp-…); write the Bot User OAuth Token (xoxb-…`},
		{"slack tokens swapped, app", func(c *Config) { c.Slack.AppToken = "xoxb-1-2-abc" }, `slack.app_token: is not an app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write); the xoxb- one is bot_token`},
		{"slack app token of another kind", func(c *Config) { c.Slack.AppToken = "xoxp-1-2-abc" }, `slack.app_token: is not an app-level token (xapp-…`},
		{"slack bot token with a final newline", func(c *Config) { c.Slack.BotToken = "xoxb-1-2-abc\n" }, "slack.bot_token: starts or ends with white space, or holds a control character (a final newline read from a file?)"},
		{"slack bot token with a leading space", func(c *Config) { c.Slack.BotToken = " xoxb-1-2-abc" }, "slack.bot_token: starts or ends with white space"},
		{"slack signing secret with a final newline", func(c *Config) { c.Slack.SigningSecret = "8f14e45fceea167a5a36dedd4bea2543\r\n" }, "slack.signing_secret: starts or ends with white space"},
		{"slack app token with a final newline", func(c *Config) { c.Slack.AppToken = "xapp-1-A1-2-abc\n" }, "slack.app_token: starts or ends with white space"},
		{"slack app token with a control character", func(c *Config) { c.Slack.AppToken = "xapp-1-A1\x00-2-abc" }, "slack.app_token: starts or ends with white space, or holds a control character"},
		{"route expires_in", func(c *Config) { c.Routes[0].ExpiresIn = -1 }, "routes[0].expires_in: must not be negative"},
		{"target with both", func(c *Config) { c.Routes[1].Targets[0].Discord = &DiscordTarget{Channel: "9"} }, "routes[1].targets[0]: set exactly one of slack or discord"},
		{"target with neither", func(c *Config) { c.Routes[1].Targets[0] = Target{} }, "routes[1].targets[0]: set exactly one of slack or discord"},
		{"slack target without slack section", func(c *Config) { c.Slack = nil }, "routes[0].targets[0].slack: there is no top-level slack: section"},
		{"discord target without discord section", func(c *Config) { c.Discord = nil }, "routes[0].targets[1].discord: there is no top-level discord: section"},
		{"slack channel", func(c *Config) { c.Routes[1].Targets[1].Slack.Channel = "" }, "routes[1].targets[1].slack.channel: required"},
		{"discord channel", func(c *Config) { c.Routes[0].Targets[1].Discord.Channel = "" }, "routes[0].targets[1].discord.channel: required"},
		{"same channel twice", func(c *Config) { c.Routes[1].Targets[1].Slack.Channel = "C1" }, "routes[1].targets[1]: the same slack channel as routes[1].targets[0]"},
		{"empty responder", func(c *Config) { c.Routes[0].Targets[0].Slack.Responders.Groups = []string{""} }, "routes[0].targets[0].slack.responders.groups[0]: empty"},
		{"empty discord role", func(c *Config) { c.Routes[0].Targets[1].Discord.Responders.Roles = []string{" "} }, "routes[0].targets[1].discord.responders.roles[0]: empty"},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, `log.level: "verbose" is not a level`},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, `log.format: "xml" is not a format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base(t)
			tc.change(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			// Exactly one problem, and its message starts with the key.
			if msgs := strings.Split(err.Error(), "\n"); len(msgs) != 1 || !strings.HasPrefix(msgs[0], tc.want) {
				t.Errorf("error %q\nwant one line starting with %q", err, tc.want)
			}
		})
	}

	t.Run("loopback listens are fine with an open API", func(t *testing.T) {
		for _, l := range []string{"127.0.0.1:0", "127.8.9.10:80", "[::1]:8080", "localhost:8080", "LOCALHOST:1"} {
			c := mustParse(t, "", noEnv)
			c.Listen = l
			if err := c.Validate(); err != nil {
				t.Errorf("listen %q: %v", l, err)
			}
		}
	})

	t.Run("every problem is reported", func(t *testing.T) {
		c := base(t)
		c.Log.Level = "x"
		c.Routes[0].Name = ""
		c.Slack.BotToken = ""
		err := c.Validate()
		for _, w := range []string{"log.level: ", "routes[0].name: ", "slack.bot_token: "} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v does not contain %q", err, w)
			}
		}
	})
}

// TestSecretsNeverLeak prints a config holding every kind of secret in
// every way the bridge might, and looks for the secrets in the output.
func TestSecretsNeverLeak(t *testing.T) {
	secrets := map[string]string{
		"REDIS_URL": "redis://:LEAK-redis-pw@localhost:6379",
		"API_TOKEN": "LEAK-api-token-value",
		"BOT":       "xoxb-LEAK-slack-bot",
		"SIGNING":   "LEAK-slack-signing",
		"APP":       "xapp-LEAK-slack-app",
		"DISCORD":   "LEAK-discord-bot-token",
	}
	c := mustParse(t, `
redis: {url: "${REDIS_URL}"}
api: {tokens: [{name: a, token: "${API_TOKEN}", scopes: [ask]}]}
slack: {bot_token: "${BOT}", signing_secret: "${SIGNING}", app_token: "${APP}"}
discord: {bot_token: "${DISCORD}", application_id: "1", gateway: true}
`, env(secrets))
	if c.Slack.BotToken.Reveal() != secrets["BOT"] {
		t.Fatalf("Reveal() = %q", c.Slack.BotToken.Reveal())
	}

	outputs := map[string]string{}
	// Every verb fmt knows, and some it doesn't. %p and %w are left out:
	// with a string type fmt prints them through its bad-verb path, which
	// calls no methods; go vet reports both (see the Secret doc).
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%T", "%d", "%t", "%b", "%o", "%c", "%U", "%e", "%f", "%g", "%10s", "%-20.3q", "%#x", "%z"} {
		for name, v := range map[string]any{"Config": *c, "*Config": c, "Slack": *c.Slack, "Secret": c.Slack.BotToken, "Token": c.API.Tokens[0], "[]Token": c.API.Tokens} {
			outputs["fmt "+verb+" "+name] = fmt.Sprintf(verb, v)
		}
	}
	outputs["Sprint"] = fmt.Sprint(c.Slack.BotToken, *c.Slack, c.Redis)
	outputs["Sprintln"] = fmt.Sprintln(c.Slack.BotToken, *c.Slack, c.Redis)
	outputs["Errorf %v"] = fmt.Errorf("bad token %v: %w", c.Slack.BotToken, errors.New("x")).Error()
	outputs["String"] = c.Slack.BotToken.String()
	outputs["GoString"] = c.Slack.BotToken.GoString()

	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		log := slog.New(h(&b))
		log.Info("config", "config", c, "value", *c, "slack", c.Slack, "secret", c.Slack.BotToken, "redis", c.Redis,
			slog.Any("tokens", c.API.Tokens), slog.Group("g", "discord", c.Discord.BotToken))
		log.With("secret", c.Redis.URL).Error("failed", "err", fmt.Errorf("redis %v: %w", c.Redis.URL, errors.New("down")))
		outputs["slog "+name] = b.String()
	}

	y, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outputs["yaml.Marshal"] = string(y)
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outputs["json.Marshal"] = string(j)
	eff, err := c.Effective()
	if err != nil {
		t.Fatal(err)
	}
	outputs["Effective"] = string(eff)
	bad := *c
	bad.Redis.URL = "http://:LEAK-redis-pw@x"
	bad.Slack = &Slack{BotToken: "xoxb-LEAK-slack-bot", APIURL: "http://user:LEAK-proxy@:bad/"}
	if err := bad.Validate(); err == nil {
		t.Fatal("bad config validated")
	} else {
		outputs["Validate"] = err.Error()
	}

	for name, out := range outputs {
		// JSON writes < and > as \u003c and \u003e.
		out = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(out)
		outputs[name] = out
		if strings.Contains(out, "LEAK") {
			t.Errorf("%s leaks a secret: %s", name, out)
		}
	}
	// The outputs above must show the secrets as <secret>, or the test
	// proves nothing.
	for _, name := range []string{"fmt %v Config", "fmt %#v *Config", "fmt %q Secret", "fmt %s Token", "slog text", "slog json", "yaml.Marshal", "json.Marshal", "Effective", "Errorf %v"} {
		if !strings.Contains(outputs[name], "<secret>") {
			t.Errorf("%s shows no <secret>: %s", name, outputs[name])
		}
	}
}

func TestSecretFormatting(t *testing.T) {
	for _, tc := range []struct {
		s             Secret
		format        string
		want          string
		wantMarshaled string
	}{
		{"tok", "%v", "<secret>", `"\u003csecret\u003e"`},
		{"tok", "%s", "<secret>", ""},
		{"tok", "%q", `"<secret>"`, ""},
		{"tok", "%#v", `"<secret>"`, ""},
		{"tok", "%12s", "    <secret>", ""},
		{"", "%v", "", `""`},
		{"", "%s", "", ""},
		{"", "%q", `""`, ""},
		{"", "%#v", `""`, ""},
	} {
		t.Run(fmt.Sprintf("%q %s", string(tc.s), tc.format), func(t *testing.T) {
			if got := fmt.Sprintf(tc.format, tc.s); got != tc.want {
				t.Errorf("Sprintf = %q, want %q", got, tc.want)
			}
			if tc.wantMarshaled != "" {
				j, _ := json.Marshal(tc.s)
				if string(j) != tc.wantMarshaled {
					t.Errorf("json = %s, want %s", j, tc.wantMarshaled)
				}
			}
			if tc.s.Reveal() != string(tc.s) {
				t.Errorf("Reveal() = %q", tc.s.Reveal())
			}
		})
	}
}

func TestEffective(t *testing.T) {
	c := mustParse(t, validBase, noEnv)
	out, err := c.Effective()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("null")) {
		t.Errorf("Effective() shows nulls:\n%s", out)
	}
	for _, want := range []string{
		"listen: 0.0.0.0:8080\n",
		"base_url: https://bridge.example.com\n",
		"  url: <secret>\n",
		"  retention: 1h\n",
		"  default_expires_in: 0\n",
		"  api_url: https://slack.com/api/\n",
		"mode: all\n",
		"  level: debug\n",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("Effective() lacks %q:\n%s", want, out)
		}
	}
	// It reads back as the same config.
	back, err := parse(out, noEnv)
	if err != nil {
		t.Fatalf("Effective() does not parse: %v\n%s", err, out)
	}
	sameConfig(t, back, c)
}

// TestEffectiveBaseURLOfAnyPort: with listen's port 0 the base URL is
// known only once the bridge runs; config check says so rather than show
// http://127.0.0.1:0, and what it shows reads back as the same config. A
// base_url set is shown as set.
func TestEffectiveBaseURLOfAnyPort(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"listen: 127.0.0.1:0\n", `base_url: "" # known only once the bridge runs: listen's port 0 lets the system pick one`},
		{"listen: :0\n", `base_url: "" # known only once the bridge runs`},
		{"listen: 127.0.0.1:0\nbase_url: https://bridge.example.com/\n", "base_url: https://bridge.example.com\n"},
		{"listen: 127.0.0.1:9090\n", "base_url: http://127.0.0.1:9090\n"},
	} {
		c := mustParse(t, tc.yaml, noEnv)
		out, err := c.Effective()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), ":0/") || strings.Contains(string(out), "base_url: http://127.0.0.1:0") {
			t.Errorf("%q: Effective() shows\n%s\nwant %q", tc.yaml, out, tc.want)
		}
		back, err := parse(out, noEnv)
		if err != nil {
			t.Fatalf("Effective() does not parse: %v\n%s", err, out)
		}
		sameConfig(t, back, c)
	}
}

// TestEffectiveHidesProxyCredentials: an API URL may carry a proxy's
// user and password (validate.go); config check shows them as <secret>.
func TestEffectiveHidesProxyCredentials(t *testing.T) {
	c := mustParse(t, validBase, noEnv)
	c.Slack.APIURL = "https://proxyuser:LEAK-proxy-pw@proxy.example.com/slack/api/"
	c.Discord = &Discord{APIURL: "https://LEAK-token@proxy.example.com/discord/api/v10/"}
	out, err := c.Effective()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("LEAK")) || bytes.Contains(out, []byte("proxyuser")) {
		t.Errorf("Effective() shows a proxy's credentials:\n%s", out)
	}
	for _, want := range []string{"api_url: https://<secret>@proxy.example.com/slack/api/\n", "api_url: https://<secret>@proxy.example.com/discord/api/v10/\n"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("Effective() lacks %q:\n%s", want, out)
		}
	}
	if c.Slack.APIURL != "https://proxyuser:LEAK-proxy-pw@proxy.example.com/slack/api/" {
		t.Errorf("Effective() changed the config it shows: %s", c.Slack.APIURL)
	}
}

// sameConfig compares two configs by their Effective output (secrets hidden).
func sameConfig(t *testing.T, got, want *Config) {
	t.Helper()
	g, err := got.Effective()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.Effective()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("got config\n%s\nwant\n%s", g, w)
	}
}

// leafKeys lists every key of t as a path, e.g. routes[].targets[].slack.channel.
func leafKeys(t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return []string{path}
	}
	switch t.Kind() {
	case reflect.Struct:
		var keys []string
		for name, ft := range yamlFields(t) {
			keys = append(keys, leafKeys(ft, joinKey(path, name))...)
		}
		return keys
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return append([]string{path}, leafKeys(t.Elem(), path+"[]")...)
		}
	}
	return []string{path}
}

func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("loads and validates with no environment", func(t *testing.T) {
		c, err := parse(data, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		sameConfig(t, c, defaultConfig())
	})
	t.Run("Load", func(t *testing.T) {
		c, err := Load("../../config.example.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Load names the file", func(t *testing.T) {
		_, err := Load("testdata-does-not-exist.yaml")
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Load of a missing file: %v", err)
		}
	})
	t.Run("shows every key", func(t *testing.T) {
		for _, k := range leafKeys(reflect.TypeFor[Config](), "") {
			name := k[strings.LastIndexAny(k, ".]")+1:]
			if !regexp.MustCompile(`(?m)^[ #]*(- )?(\{)?` + regexp.QuoteMeta(name) + `:`).Match(data) {
				t.Errorf("config.example.yaml does not show %s", k)
			}
		}
	})
}

func TestDocs(t *testing.T) {
	data, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("every key is documented", func(t *testing.T) {
		for _, k := range leafKeys(reflect.TypeFor[Config](), "") {
			if !bytes.Contains(data, []byte("`"+k+"`")) {
				t.Errorf("docs/config.md does not document `%s`", k)
			}
		}
	})
	t.Run("examples validate", func(t *testing.T) {
		vars := env(map[string]string{
			"REDIS_URL":              "redis://redis:6379",
			"REDIS_PASSWORD":         "pw",
			"ASKBRIDGE_ASK_TOKEN":    "ask-7f3c9e21b4a0",
			"SLACK_BOT_TOKEN":        "xoxb-1",
			"SLACK_SIGNING_SECRET":   "s",
			"SLACK_APP_TOKEN":        "xapp-1",
			"DISCORD_BOT_TOKEN":      "d",
			"DISCORD_PUBLIC_KEY":     strings.Repeat("ab", 32),
			"ASKBRIDGE_ANSWER_TOKEN": "answer-7f3c9e21b4a0",
		})
		// Every ```yaml block is a bridge config; YAML of other tools
		// (a Kubernetes pod spec) is fenced ```yml.
		blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(data, -1)
		if len(blocks) < 3 {
			t.Fatalf("found %d yaml examples, want 3", len(blocks))
		}
		for i, b := range blocks {
			c, err := parse(b[1], vars)
			if err == nil {
				err = c.Validate()
			}
			if err != nil {
				t.Errorf("example %d: %v\n%s", i+1, err, b[1])
			}
		}
	})
}

// A tab where YAML takes only spaces is named: go-yaml says only that a
// character "cannot start any token".
func TestTabIndentIsNamed(t *testing.T) {
	_, err := Parse([]byte("routes:\n  - name: a\n    targets:\n\t  - slack: {channel: C1}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 4 is indented with a tab; YAML indents with spaces only") {
		t.Errorf("Parse = %v; want it to name the tab on line 4", err)
	}
}

// TestUnquotedVarInFlowIsNamed: ${VAR} without quotes inside {...} ends
// the collection early; the parser's message points at the line before,
// so the hint names the line and the fix.
func TestUnquotedVarInFlowIsNamed(t *testing.T) {
	for _, data := range []string{
		"api:\n  tokens:\n    - {name: agent, token: ${T}, scopes: [ask]}\n",
		"redis:\n  addrs: [${A}, b:1]\n",
	} {
		_, err := Parse([]byte(data))
		line := strings.Count(data[:strings.Index(data, "${")], "\n") + 1
		if want := fmt.Sprintf("line %d has ${...} inside {...} or [...] without quotes; write it as \"${VAR}\"", line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want it to say %q", data, err, want)
		}
	}
	if _, err := Parse([]byte("api:\n  tokens:\n    - {name: agent, token: \"${T:-0123456789abcdef}\", scopes: [ask]}\n")); err != nil {
		t.Errorf("a quoted variable in a flow mapping: %v", err)
	}
}

// TestOpenAPIExampleParses: the api.tokens that the open API's messages
// suggest can be pasted into a config as they are, with the environment
// variables config.example.yaml and docs/config.md read tokens from (not
// the harness plugin's ASKBRIDGE_TOKEN, which is a client's), and give
// each client one scope, as those do: an agent's token that could answer
// would answer its own questions.
func TestOpenAPIExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`\$\{(ASKBRIDGE_[A-Z_]*TOKEN)\}`).FindAllStringSubmatch(string(doc), -1) {
		vars[m[1]] = fmt.Sprintf("%s-0123456789abcdef", strings.ToLower(m[1]))
	}
	if len(vars) == 0 {
		t.Fatal("config.example.yaml reads no token from the environment")
	}

	listen := &Config{Listen: "0.0.0.0:8080"}
	listen.setDefaults()
	outside := mustParse(t, "slack: {bot_token: b, signing_secret: s}\n", noEnv)
	for _, m := range []struct{ name, msg string }{
		{"listen", listen.Validate().Error()},
		{"OpenAPIWarning", outside.OpenAPIWarning()},
	} {
		t.Run(m.name, func(t *testing.T) {
			examples := regexp.MustCompile(`\{name: (?:[^{}]|\$\{[A-Z_]+\})*\}`).FindAllString(m.msg, -1)
			if len(examples) == 0 {
				t.Fatalf("no example in %q", m.msg)
			}
			c, err := parse([]byte("api:\n  tokens:\n    - "+strings.Join(examples, "\n    - ")+"\n"), env(vars))
			if err != nil {
				t.Fatalf("the examples %s: %v", examples, err)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("the examples %s: %v", examples, err)
			}
			scopes := map[string]bool{}
			for _, tok := range c.API.Tokens {
				if len(tok.Scopes) != 1 {
					t.Errorf("the example token %s has scopes %v; one client's token has one", tok.Name, tok.Scopes)
				}
				for _, s := range tok.Scopes {
					scopes[s] = true
				}
			}
			if !scopes[ScopeAsk] || !scopes[ScopeAnswer] {
				t.Errorf("the examples %s don't show both scopes: %v", examples, scopes)
			}
		})
	}
}

// TestOpenToOutside: an open API on a bridge that Slack, Discord or people
// reach from outside is warned of, naming what reaches it and no secret;
// one that nothing outside reaches, or that has tokens, is not.
func TestOpenToOutside(t *testing.T) {
	const (
		slackHTTP   = "slack: {bot_token: xoxb-LEAK-bot-token, signing_secret: LEAK-signing-secret}\n"
		slackSocket = "slack: {bot_token: xoxb-LEAK-bot-token, signing_secret: LEAK-signing-secret, app_token: xapp-LEAK-app-token}\n"
		discordHTTP = "discord: {bot_token: LEAK-discord-token, application_id: \"123456789012345678\", public_key: " +
			"\"0000000000000000000000000000000000000000000000000000000000000000\"}\n"
		discordGateway = "discord: {bot_token: LEAK-discord-token, application_id: \"123456789012345678\", gateway: true}\n"
		tokens         = "api: {tokens: [{name: agent, token: LEAK-api-token-0123, scopes: [ask, answer]}]}\n"
	)
	for _, tt := range []struct {
		yaml string
		want []string // what the warning names; none: no warning
	}{
		{"", nil},
		{slackHTTP, []string{"Slack's interactions (slack.signing_secret"}},
		{slackSocket, nil},
		{discordHTTP, []string{"Discord's interactions (discord.public_key"}},
		{discordGateway, nil},
		{"base_url: https://bridge.example.com/ask\n", []string{"(base_url bridge.example.com)"}},
		{"base_url: http://localhost:8080\n", nil},
		{"base_url: http://127.0.0.1:8080\n", nil},
		{slackHTTP + discordHTTP + "base_url: https://bridge.example.com\n", []string{"Slack's", " and Discord's", " and the web pages"}},
		{tokens + slackHTTP + discordHTTP + "base_url: https://bridge.example.com\n", nil},
	} {
		c := mustParse(t, tt.yaml, noEnv)
		w := c.OpenAPIWarning()
		if (w != "") != (tt.want != nil) {
			t.Errorf("%s: warning %q; want one: %v", tt.yaml, w, tt.want != nil)
		}
		for _, part := range tt.want {
			if !strings.Contains(w, part) {
				t.Errorf("%s: warning %q has no %q", tt.yaml, w, part)
			}
		}
		if strings.Contains(w, "LEAK") {
			t.Errorf("%s: a secret is in the warning: %s", tt.yaml, w)
		}
	}
}

// TestNoDefaultRouteWarned: routes none of which is named default are
// valid (a request that names no route is refused, CONTRACT §2), and
// warned of: which requests are refused, and how to have them asked. No
// routes at all (the implicit default) and a default among others are
// not.
func TestNoDefaultRouteWarned(t *testing.T) {
	const warning = "no route is named default"
	for _, tt := range []struct {
		yaml string
		warn bool
	}{
		{"", false},
		{"routes: [{name: default}]\n", false},
		{"routes: [{name: ops}, {name: default}]\n", false},
		{"routes: [{name: ops}]\n", true},
		{"routes: [{name: ops}, {name: release}]\n", true},
	} {
		c := mustParse(t, tt.yaml, noEnv)
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		var got string
		for _, w := range c.Warnings() {
			if strings.HasPrefix(w, warning) {
				got = w
			}
		}
		if (got != "") != tt.warn {
			t.Errorf("%q: warnings %q; want one of no default route: %v", tt.yaml, c.Warnings(), tt.warn)
		}
		if got == "" {
			continue
		}
		for _, want := range []string{"(routes: ops", "a request that names no route", "without --route", "is refused with 503 NO_PROVIDER", "rename the route such requests should go to default, or add a route named default"} {
			if !strings.Contains(got, want) {
				t.Errorf("%q: warning %q does not say %q", tt.yaml, got, want)
			}
		}
	}
}

// TestUnusedSurfaceWarned: a slack: or discord: section that no route's
// targets use is warned of, naming the section and where to add a target,
// and no secret; one that a route posts to is not. The target the warning
// suggests, pasted into the default route, is valid and ends the warning.
func TestUnusedSurfaceWarned(t *testing.T) {
	const (
		slack   = "slack: {bot_token: xoxb-LEAK-bot-token, app_token: xapp-LEAK-app-token}\n"
		discord = "discord: {bot_token: LEAK-discord-token, application_id: \"123456789012345678\", gateway: true}\n"
	)
	unused := func(section string) string {
		return "the " + section + ": section is set but no route's targets use it"
	}
	for _, tt := range []struct {
		name, yaml string
		want       []string // the sections warned of, in order
	}{
		{"no surfaces", "", nil},
		{"slack, no routes", slack, []string{"slack"}},
		{"discord, no routes", discord, []string{"discord"}},
		{"both, default route with no targets", slack + discord + "routes: [{name: default, targets: []}]\n", []string{"slack", "discord"}},
		{"slack used", slack + "routes: [{name: default, targets: [{slack: {channel: C1}}]}]\n", nil},
		{"slack used by another route", slack + "routes: [{name: default}, {name: ops, targets: [{slack: {channel: C1}}]}]\n", nil},
		{"discord used, slack not", slack + discord + "routes: [{name: default, targets: [{discord: {channel: \"1\"}}]}]\n", []string{"slack"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.yaml, noEnv)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.Warnings() {
				if strings.Contains(w, "LEAK") {
					t.Errorf("a secret is in the warning: %s", w)
				}
				for _, s := range []string{"slack", "discord"} {
					if strings.HasPrefix(w, unused(s)) {
						got = append(got, s)
						if !strings.Contains(w, "Add a target under a route") {
							t.Errorf("the warning does not say what to do: %s", w)
						}
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warned of %q; want %q. Warnings: %q", got, tt.want, c.Warnings())
			}
		})
	}
	for name, section := range map[string]string{"slack's example": slack, "discord's example": discord} {
		t.Run(name, func(t *testing.T) {
			ws := mustParse(t, section, noEnv).Warnings()
			if len(ws) != 1 {
				t.Fatalf("warnings %q; want one", ws)
			}
			i := strings.Index(ws[0], "(e.g. ")
			j := strings.Index(ws[0], " on the route named default)")
			if i < 0 || j < i {
				t.Fatalf("no example in %q", ws[0])
			}
			example := ws[0][i+len("(e.g. ") : j]
			c := mustParse(t, section+"routes:\n  - name: default\n    "+example+"\n", noEnv)
			if err := c.Validate(); err != nil {
				t.Errorf("the example %s: %v", example, err)
			}
			if ws := c.Warnings(); len(ws) != 0 {
				t.Errorf("the example %s: still warned %q", example, ws)
			}
		})
	}
}

// TestListenOffersWhatWorks: a listen that is not host:port is answered
// with a form that works with the API as it is (loopback while it is
// open), its port kept; a non-loopback listen of an open API with its own
// port on loopback. ListenProblem says the same of a value from elsewhere
// (bridge serve --listen). A value from the environment is not echoed,
// not even its port.
func TestListenOffersWhatWorks(t *testing.T) {
	const tokens = "api:\n  tokens: [{name: a, token: tok-7f3c9e21b4aa, scopes: [ask]}]\n"
	vars := env(map[string]string{"PORT": "18476"})
	for _, tc := range []struct {
		name, data, listen, want string
	}{
		{"a bare port, open", "", "18476", `"18476" is not host:port, such as 127.0.0.1:18476`},
		{"a bare port, tokens", tokens, "18476", `"18476" is not host:port, such as 127.0.0.1:18476, or :18476 for every interface`},
		{"no port, open", "", "localhost", `"localhost" is not host:port, such as 127.0.0.1:8080`},
		{"every interface, open", "", ":18476", `":18476" is not a loopback address, and with no api.tokens the API is open to anyone who can reach it: listen on 127.0.0.1:18476 (or ::1, localhost), or add tokens under api.tokens`},
		{"every interface, tokens", tokens, ":18476", ""},
		{"a bare port from the environment", "", "${PORT}", `"${PORT}" is not host:port, such as 127.0.0.1:8080`},
		{"a port from the environment, open", "", "0.0.0.0:${PORT}", `"0.0.0.0:${PORT}" is not a loopback address, and with no api.tokens the API is open to anyone who can reach it: listen on 127.0.0.1, ::1 or localhost, or add`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse([]byte(tc.data+"listen: \""+tc.listen+"\"\n"), vars)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("Validate: %v; want none", err)
				}
			} else if err == nil || !strings.HasPrefix(err.Error(), "listen: "+tc.want) || strings.Contains(err.Error(), "18476") != strings.Contains(tc.listen, "18476") {
				t.Errorf("Validate: %v\nwant it to start %q, the port shown only when written", err, "listen: "+tc.want)
			}
			if strings.Contains(tc.listen, "$") {
				return
			}
			if got := c.ListenProblem(tc.listen); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("ListenProblem(%q) = %q; want it to start %q", tc.listen, got, tc.want)
			}
		})
	}
}

// A slack: or discord: line with nothing under it (its keys commented
// out) is an empty section, not a missing one: it gets the same errors
// as slack: {}, not a route target's "there is no top-level slack:
// section" nor, with no target, a surface silently off. So is a route
// target's slack: with nothing under it. A section the environment gave
// empty stays not set.
func TestNullSectionIsEmpty(t *testing.T) {
	problems := func(t *testing.T, doc string) string {
		t.Helper()
		c, err := parse([]byte(doc), env(map[string]string{"EMPTY": ""}))
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			return ""
		}
		return err.Error()
	}
	const slackRoute = "routes: [{name: default, targets: [{slack: {channel: C1}}]}]\n"
	const discordRoute = "routes: [{name: default, targets: [{discord: {channel: \"1\"}}]}]\n"
	for _, tc := range []struct{ name, doc, empty string }{
		{"slack, keys commented out", "slack:\n  # bot_token: ${SLACK_BOT_TOKEN}\n" + slackRoute, "slack: {}\n" + slackRoute},
		{"slack: ~", "slack: ~\n" + slackRoute, "slack: {}\n" + slackRoute},
		{"slack, no target", "slack:\n", "slack: {}\n"},
		{"discord, keys commented out", "discord:\n  # bot_token: x\n" + discordRoute, "discord: {}\n" + discordRoute},
		{"discord, no target", "discord: null\n", "discord: {}\n"},
		{"a target's slack", "slack: {bot_token: xoxb-1, app_token: xapp-1}\nroutes: [{name: default, targets: [{slack: }]}]\n",
			"slack: {bot_token: xoxb-1, app_token: xapp-1}\nroutes: [{name: default, targets: [{slack: {}}]}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := problems(t, tc.doc), problems(t, tc.empty)
			if got != want || !strings.Contains(got, "required") || strings.Contains(got, "no top-level") {
				t.Errorf("problems:\n%s\nwant those of %q:\n%s", got, tc.empty, want)
			}
		})
	}
	t.Run("empty from the environment", func(t *testing.T) {
		if got := problems(t, "slack: ${EMPTY}\ndiscord: ${EMPTY}\n"); got != "" {
			t.Errorf("problems: %s; want none: a section the environment gave empty is not set", got)
		}
	})
}

// What `bridge config check` prints, pasted back as a config, is told
// that each secret is the placeholder <secret>, once per key: two
// tokens both shown as <secret> are not "the same token" as well.
func TestEffectivePastedBackNamesOnlyPlaceholders(t *testing.T) {
	out, err := mustParse(t, validBase, noEnv).Effective()
	if err != nil {
		t.Fatal(err)
	}
	back, err := parse(out, noEnv)
	if err == nil {
		err = back.Validate()
	}
	if err == nil {
		t.Fatalf("no error; want each secret named as the placeholder:\n%s", out)
	}
	for _, key := range []string{"api.tokens[0].token", "api.tokens[1].token", "slack.bot_token", "discord.bot_token"} {
		if w := key + ": is the placeholder <secret>"; !strings.Contains(err.Error(), w) {
			t.Errorf("error:\n%v\nwant %q", err, w)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, ": is the placeholder <secret>") {
			t.Errorf("error line %q; want only placeholders named", line)
		}
	}
}

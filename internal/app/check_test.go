package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/surface"
)

// A platform that never answers uses up the check's time, but only its
// own: Discord's answer (here, a refused token) is still reported, not a
// deadline that Slack's silence ran out.
func TestCheckHangingPlatformBlamesOnlyItself(t *testing.T) {
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server sees the client go
		select {
		case <-r.Context().Done(): // the client gave up
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop) // before Close, which waits for the handler
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"message": "401: Unauthorized", "code": 0}`)
	}))
	defer refuse.Close()
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: "xoxb-test", SigningSecret: "s", APIURL: hang.URL + "/api/"},
		Discord: &config.Discord{BotToken: "discord-test", ApplicationID: "1", PublicKey: strings.Repeat("ab", 32),
			APIURL: refuse.URL + "/api/v10/"},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{
			{Slack: &config.SlackTarget{Channel: "C1"}}, {Discord: &config.DiscordTarget{Channel: "111"}},
		}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var lines []string
	for _, f := range app.Check(ctx, cfg, surface.HTTPClient(), false) {
		lines = append(lines, f.String())
	}
	got := strings.Join(lines, "\n")
	for _, w := range []string{
		"note    redis: no redis.url",
		"PROBLEM slack: auth.test with slack.bot_token failed: can't reach " + hang.URL,
		"PROBLEM discord: signing in with discord.bot_token failed: 401: Unauthorized (HTTP 401, code 0)",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	if len(lines) != 3 {
		t.Errorf("findings:\n%s\nwant 3, redis, slack, discord", got)
	}
}

// A Redis whose default user has no password (nopass, as Redis ships)
// takes any password go-redis signs in with: the check warns that the
// password in the config protects nothing, and passes all the same. A
// config with no password, or a Redis that requires one, gets no such
// note. No finding shows the password.
func TestCheckRedisThatNeedsNoPassword(t *testing.T) {
	shared := os.Getenv("BRIDGE_TEST_REDIS_URL")
	if shared == "" {
		t.Skip("BRIDGE_TEST_REDIS_URL is not set")
	}
	const pw = "LEAK-redis-password"
	withPassword := func(t *testing.T, raw string) string {
		t.Helper()
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("", pw)
		return u.String()
	}
	u, err := url.Parse(shared)
	if err != nil {
		t.Fatal(err)
	}
	open := ":" + u.Port() + ": accepts connections without a password, so the password in " // the address dialed: localhost is 127.0.0.1

	protected := apptest.StartRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", protected.Port)})
	defer rdb.Close()
	if err := rdb.ConfigSet(context.Background(), "requirepass", pw).Err(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		redis config.Redis
		want  string // a finding, or "" for none about a password
	}{
		{"password in redis.url", config.Redis{URL: config.Secret(withPassword(t, shared))}, open + "redis.url protects nothing"},
		{"redis.password", config.Redis{URL: config.Secret(shared), Password: pw}, open + "redis.password protects nothing"},
		{"no password", config.Redis{URL: config.Secret(shared)}, ""},
		{"a Redis that requires the password", config.Redis{URL: config.Secret(withPassword(t, protected.URL()))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkText(t, &config.Config{Redis: tc.redis})
			if !strings.Contains(got, "ok      redis: answers PING") {
				t.Errorf("findings:\n%s\nwant redis to answer PING", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("findings:\n%s\nwant %q", got, tc.want)
			}
			if tc.want == "" && strings.Contains(got, "without a password") {
				t.Errorf("findings:\n%s\nwant none about a password", got)
			}
			if strings.Contains(got, "PROBLEM") || strings.Contains(got, "LEAK") {
				t.Errorf("findings:\n%s\nwant no problem, and no password", got)
			}

			// bridge serve warns of it at start.
			var out bytes.Buffer
			cfg := apptest.Config(t, "", string(tc.redis.URL), "nopass:")
			cfg.Redis.Password = tc.redis.Password
			a, err := app.New(cfg, slog.New(slog.NewJSONHandler(&out, nil)), app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a.Close() // New has checked; the log is written
			warned := strings.Contains(out.String(), "redis accepts connections without a password")
			if warned != (tc.want != "") || strings.Contains(out.String(), "LEAK") {
				t.Errorf("warned at start: %v, want %v, and no password; log:\n%s", warned, tc.want != "", out.String())
			}
		})
	}
}

// The same on a Cluster (each node) and on a Sentinel's master, named by
// the address the Sentinels gave.
func TestCheckClusterAndSentinelThatNeedNoPassword(t *testing.T) {
	const pw = "LEAK-redis-password"
	t.Run("cluster", func(t *testing.T) {
		addrs := os.Getenv("BRIDGE_TEST_REDIS_CLUSTER")
		if addrs == "" {
			t.Skip("BRIDGE_TEST_REDIS_CLUSTER is not set")
		}
		seeds := strings.Split(addrs, ",")
		got := checkText(t, &config.Config{Redis: config.Redis{Addrs: seeds[:1], Password: pw}})
		for _, addr := range seeds {
			w := "note    redis " + addr + ": accepts connections without a password, so the password in redis.password protects nothing"
			if !strings.Contains(got, w) {
				t.Errorf("findings:\n%s\nwant %q", got, w)
			}
		}
		if strings.Contains(got, "PROBLEM") || strings.Contains(got, "LEAK") {
			t.Errorf("findings:\n%s\nwant no problem, and no password", got)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		addr, name, ok := strings.Cut(os.Getenv("BRIDGE_TEST_REDIS_SENTINEL"), "/")
		if !ok {
			t.Skip("BRIDGE_TEST_REDIS_SENTINEL is not set (host:port/master)")
		}
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		defer sc.Close()
		master, err := sc.GetMasterAddrByName(context.Background(), name).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := checkText(t, &config.Config{Redis: config.Redis{Addrs: []string{addr}, MasterName: name, Password: pw}})
		w := "note    redis " + net.JoinHostPort(master[0], master[1]) + ": accepts connections without a password, so the password in redis.password protects nothing"
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
		if strings.Contains(got, "PROBLEM") || strings.Contains(got, "LEAK") {
			t.Errorf("findings:\n%s\nwant no problem, and no password", got)
		}
	})
}

// checkText is what app.Check finds about cfg, a finding a line.
func checkText(t *testing.T, cfg *config.Config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lines []string
	for _, f := range app.Check(ctx, cfg, surface.HTTPClient(), false) {
		lines = append(lines, f.String())
	}
	return strings.Join(lines, "\n")
}

// A Redis that refuses a redis.addrs config is explained in that
// config's terms, by `config check --connect` and by serve's start:
// Sentinels that watch no master of that name (go-redis's error read
// "all sentinels ... are unreachable: redis: nil"), a plain Redis given
// as a Cluster, a Cluster node given as a Sentinel, a Sentinel given as a
// Cluster. None of it points at redis.url, which such a config doesn't
// use; a redis.url config is pointed at it, and not at redis.db, which it
// can't use. Nothing is written to Redis: each refuses the first call.
func TestRedisRefusalNamesTheKeysInUse(t *testing.T) {
	sentinel, master, _ := strings.Cut(os.Getenv("BRIDGE_TEST_REDIS_SENTINEL"), "/")
	cluster, _, _ := strings.Cut(os.Getenv("BRIDGE_TEST_REDIS_CLUSTER"), ",")
	var plain string
	if u, err := url.Parse(os.Getenv("BRIDGE_TEST_REDIS_URL")); err == nil {
		plain = u.Host
	}
	for _, tc := range []struct {
		name, addr, master string
		want               string
	}{
		{"url, database out of range", plain, "", "check the database number and the credentials in redis.url (or redis.username and redis.password); Redis said: ERR DB index is out of range"},
		{"sentinel, unknown master", sentinel, "nosuch", `no Sentinel in redis.addrs watches a master named "nosuch" (redis.master_name)`},
		{"plain redis as a cluster", plain, "", "this Redis is not a Cluster: use redis.url (or redis.master_name for Sentinel); Redis said: ERR This instance has cluster support disabled"},
		{"cluster node as a sentinel", cluster, master, "the addresses in redis.addrs are not Sentinels: with redis.master_name they must be"},
		{"sentinel as a cluster", sentinel, "", "the addresses in redis.addrs are not a Cluster's nodes: for Sentinels name their master in redis.master_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.addr == "" || master == "" && tc.master != "" {
				t.Skip("BRIDGE_TEST_REDIS_URL, BRIDGE_TEST_REDIS_CLUSTER or BRIDGE_TEST_REDIS_SENTINEL is not set")
			}
			r := config.Redis{Addrs: []string{tc.addr}, MasterName: tc.master, Prefix: "abtest:refusal:"}
			if strings.HasPrefix(tc.name, "url") {
				r.Addrs, r.URL = nil, config.Secret("redis://"+tc.addr+"/100000")
			}
			got := checkText(t, &config.Config{Redis: r})
			if want := "PROBLEM redis: " + tc.want; !strings.Contains(got, want) {
				t.Errorf("findings:\n%s\nwant %q", got, want)
			}
			cfg := apptest.Config(t, "", "", "abtest:refusal:")
			cfg.Redis = r
			a, err := app.New(cfg, slog.New(slog.DiscardHandler), app.Options{})
			if err == nil {
				a.Close()
				t.Fatal("app.New: no error; want Redis's refusal")
			}
			if want := "redis refused the connection: " + tc.want; !strings.Contains(err.Error(), want) {
				t.Errorf("app.New: %v\nwant %q", err, want)
			}
			for _, f := range []string{got, err.Error()} {
				if r.URL == "" && strings.Contains(strings.ReplaceAll(f, "use redis.url", ""), "redis.url") {
					t.Errorf("%q points at redis.url, which the config doesn't use", f)
				}
				if strings.Contains(f, "redis.db") || strings.Contains(f, "unreachable") {
					t.Errorf("%q points at redis.db, or says Redis is unreachable", f)
				}
			}
		})
	}
}

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

	"github.com/alicebob/miniredis/v2/server"
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

// A redis.url that reaches a Sentinel or one node of a Redis Cluster
// answers PING, and used to pass: the bridge started and every command
// failed ("unknown command 'eval'", MOVED). INFO server's mode says
// which, so `config check --connect` and serve's start refuse it, with a
// database in the URL too (a Sentinel knows no SELECT; a Cluster node
// takes database 0 only). A one-server Redis passes, and so does a
// server whose INFO or CLUSTER NODES fails (renamed or disabled on some
// managed services, not allowed to an ACL user) and one whose CLUSTER
// NODES says it serves every slot itself (Dragonfly's emulated cluster
// mode): one connection reaches every key. Nothing is
// written to Redis.
func TestRedisURLAtSentinelOrClusterNode(t *testing.T) {
	const (
		toSentinel = "redis.url points at a Redis Sentinel: list the Sentinels in redis.addrs and name the master in redis.master_name"
		toCluster  = "redis.url points at a node of a Redis Cluster: list its nodes in redis.addrs (the bridge uses the cluster's slots)"
		toReplica  = "redis.url points at a read-only replica: point it at the master (with Sentinel, list the Sentinels in redis.addrs and name the master in redis.master_name)"
	)
	sentinel, _, _ := strings.Cut(os.Getenv("BRIDGE_TEST_REDIS_SENTINEL"), "/")
	cluster, _, _ := strings.Cut(os.Getenv("BRIDGE_TEST_REDIS_CLUSTER"), ",")
	var plain string
	if u, err := url.Parse(os.Getenv("BRIDGE_TEST_REDIS_URL")); err == nil {
		plain = u.Host
	}
	const allSlots = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:6379@6379 myself,master - 0 0 0 connected 0-16383\n"
	for _, tc := range []struct {
		name, addr, db string
		want           string // the refusal; "" for none
	}{
		{"sentinel", sentinel, "", toSentinel},
		{"sentinel, a database", sentinel, "/1", toSentinel},
		{"cluster node", cluster, "", toCluster},
		{"cluster node, a database", cluster, "/1", toCluster},
		{"one server", plain, "/0", ""},
		{"INFO unknown", fakeRedis(t, map[string]string{}), "", ""},
		{"a read-only replica", fakeRedis(t, map[string]string{"DEL": "-READONLY You can't write against a read only replica.", "INFO": "# Server\r\nredis_mode:standalone\r\n"}), "", toReplica},
		{"DEL not allowed", fakeRedis(t, map[string]string{"DEL": "-NOPERM No permissions to access a key", "INFO": "# Server\r\nredis_mode:standalone\r\n"}), "", ""},
		{"INFO not allowed", fakeRedis(t, map[string]string{"INFO": "-NOPERM User default has no permissions to run the 'info' command"}), "", ""},
		{"INFO without a mode", fakeRedis(t, map[string]string{"INFO": "# Server\r\nredis_version:7.2.4\r\n"}), "", ""},
		{"Valkey's server_mode", fakeRedis(t, map[string]string{"INFO": "# Server\r\nserver_mode:sentinel\r\n"}), "", toSentinel},
		{"emulated cluster, every slot served", fakeRedis(t, map[string]string{"INFO": "redis_mode:cluster\r\n", "CLUSTER NODES": allSlots}), "", ""},
		{"cluster, CLUSTER NODES unknown", fakeRedis(t, map[string]string{"INFO": "redis_mode:cluster\r\n"}), "", ""},
		{"cluster replica", fakeRedis(t, map[string]string{"INFO": "redis_mode:cluster\r\n", "CLUSTER NODES": strings.Replace(allSlots, "myself,master -", "myself,slave 09dbe9720cda62f7865eabc5fd8857c5d2678366", 1)}), "", toCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.addr == "" {
				t.Skip("BRIDGE_TEST_REDIS_URL, BRIDGE_TEST_REDIS_CLUSTER or BRIDGE_TEST_REDIS_SENTINEL is not set")
			}
			r := config.Redis{URL: config.Secret("redis://" + tc.addr + tc.db), Prefix: "abtest:urlmode:"}
			got := checkText(t, &config.Config{Redis: r})
			want := "PROBLEM redis: " + tc.want
			if tc.want == "" {
				want = "ok      redis: answers PING"
			}
			if !strings.Contains(got, want) || tc.want != "" && strings.Contains(got, "Redis said") {
				t.Errorf("findings:\n%s\nwant %q, without what Redis said", got, want)
			}
			cfg := apptest.Config(t, "", "", "abtest:urlmode:")
			cfg.Redis = r
			a, err := app.New(cfg, slog.New(slog.DiscardHandler), app.Options{})
			switch {
			case err == nil:
				a.Close()
				if tc.want != "" {
					t.Fatalf("app.New: no error; want %q", tc.want)
				}
			case tc.want == "":
				t.Fatalf("app.New: %v; want a start", err)
			case err.Error() != "redis refused the connection: "+tc.want:
				t.Errorf("app.New: %v\nwant %q", err, tc.want)
			}
		})
	}
	t.Run("embedded", func(t *testing.T) {
		got := checkText(t, &config.Config{})
		if !strings.Contains(got, "note    redis: no redis.url or redis.addrs: the bridge runs an embedded in-memory Redis") {
			t.Errorf("findings:\n%s\nwant the embedded Redis's note", got)
		}
		a, err := app.New(apptest.Config(t, "", "", "abtest:urlmode:"), slog.New(slog.DiscardHandler), app.Options{})
		if err != nil {
			t.Fatalf("app.New with the embedded Redis: %v", err)
		}
		a.Close()
	})
}

// A Redis that answers PING with "not now" (MISCONF: it can't save, and
// refuses even PING) is no setting to change: serve starts and answers
// 503 until Redis can save again, as for a Redis that can't be reached,
// and `config check --connect` says what Redis said, not to check the
// database number and the credentials.
func TestRedisNotNowAtStartIsNoRefusal(t *testing.T) {
	const misconf = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."
	r := config.Redis{URL: config.Secret("redis://" + fakeRedis(t, map[string]string{"PING": "-" + misconf})), Prefix: "abtest:notnow:"}
	if got := checkText(t, &config.Config{Redis: r}); !strings.Contains(got, "PROBLEM redis: PING failed: "+misconf) {
		t.Errorf("findings:\n%s\nwant %q", got, "PROBLEM redis: PING failed: "+misconf)
	}
	cfg := apptest.Config(t, "", "", "abtest:notnow:")
	cfg.Redis = r
	a, err := app.New(cfg, slog.New(slog.DiscardHandler), app.Options{})
	if err != nil {
		t.Fatalf("app.New: %v; want a start", err)
	}
	a.Close()
}

// fakeRedis starts a server that answers each command of replies (a
// name, or "CLUSTER NODES") with its reply: an error when it starts with
// "-", a simple string with "+", else a bulk string; PING with PONG
// unless replies say otherwise; and any other command with "unknown
// command", as a Redis whose INFO or CLUSTER is renamed away does. It
// returns the server's host:port.
func fakeRedis(t *testing.T, replies map[string]string) string {
	t.Helper()
	srv, err := server.NewServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if _, ok := replies["PING"]; !ok {
		replies["PING"] = "+PONG"
	}
	for cmd, reply := range replies {
		name, sub, _ := strings.Cut(cmd, " ")
		srv.Register(name, func(c *server.Peer, _ string, args []string) {
			switch {
			case sub != "" && (len(args) == 0 || !strings.EqualFold(args[0], sub)):
				c.WriteError("ERR unknown subcommand")
			case strings.HasPrefix(reply, "-"):
				c.WriteError(reply[1:])
			case strings.HasPrefix(reply, "+"):
				c.WriteInline(reply[1:])
			default:
				c.WriteBulk(reply)
			}
		})
	}
	return srv.Addr().String()
}

package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"
)

// OpenAPI reports whether the HTTP API takes requests without a token: no
// api.tokens are configured.
func (c *Config) OpenAPI() bool { return len(c.API.Tokens) == 0 }

// OpenToOutside returns, when the API is open (no api.tokens), what in c
// has the bridge reached from beyond this machine: Slack's or Discord's
// callbacks, a public base_url. A loopback listen does not keep the API
// to this machine then: the proxy or tunnel that forwards those forwards
// the API as well, unless it forwards their paths alone. The bridge can't
// tell, so it warns rather than refuses.
func (c *Config) OpenToOutside() []string {
	if !c.OpenAPI() {
		return nil
	}
	var by []string
	if s := c.Slack; s != nil && s.SigningSecret != "" && s.AppToken == "" {
		by = append(by, "Slack's interactions (slack.signing_secret, no app_token: the Request URL)")
	}
	if d := c.Discord; d != nil && d.PublicKey != "" && !d.Gateway {
		by = append(by, "Discord's interactions (discord.public_key: the Interactions Endpoint URL)")
	}
	if u, err := url.Parse(c.BaseURL); err == nil && u.Hostname() != "" && !isLoopback(u.Hostname()) {
		by = append(by, fmt.Sprintf("the web pages and their links (base_url %s)", u.Host))
	}
	return by
}

// OpenAPIWarning words OpenToOutside's findings for the log and for
// bridge config check; it is empty when there are none. It names keys,
// never their values.
func (c *Config) OpenAPIWarning() string {
	by := c.OpenToOutside()
	if len(by) == 0 {
		return ""
	}
	return "no api.tokens: the API is open to anyone who reaches the bridge, and " + strings.Join(by, " and ") +
		" reach it from outside this machine; whatever forwards those (a proxy, a tunnel) forwards the API too, where anyone may list, ask and answer." +
		" Add tokens under api.tokens (" + tokensExample + ")"
}

// tokensExample is the api.tokens the messages about an open API suggest:
// those of docs/config.md and config.example.yaml, one client's token per
// scope, read from the bridge's environment under the names those use.
// Not one token with both scopes: answer lists and answers every pending
// request, which an agent's token should not (it could answer its own
// questions, and everyone else's). Nor ${ASKBRIDGE_TOKEN}: that is the
// harness plugin's variable, in the client's environment.
const tokensExample = `e.g. {name: agents, token: "${ASKBRIDGE_ASK_TOKEN}", scopes: [ask]} for the agents, ` +
	`and {name: inbox, token: "${ASKBRIDGE_ANSWER_TOKEN}", scopes: [answer]} for whoever answers through the API or the web inbox`

// Warnings are what in a valid c is likely not what was meant, worded for
// the log and for bridge config check: OpenAPIWarning's, a Slack bot
// token that expires (rotatingBotTokenWarning), a slack: or discord:
// section that no route posts to, and routes none of which is named
// default. They name keys, never their values.
func (c *Config) Warnings() []string {
	var ws []string
	if w := c.OpenAPIWarning(); w != "" {
		ws = append(ws, w)
	}
	if c.Slack != nil && strings.HasPrefix(strings.TrimSpace(c.Slack.BotToken.Reveal()), "xoxe.xoxb-") {
		ws = append(ws, rotatingBotTokenWarning)
	}
	slackUsed, discordUsed := false, false
	for _, r := range c.Routes {
		for _, t := range r.Targets {
			slackUsed = slackUsed || t.Slack != nil
			discordUsed = discordUsed || t.Discord != nil
		}
	}
	// The bridge signs in to a surface no target names and posts nothing
	// there: the agent's request waits and nothing says why.
	if c.Slack != nil && !slackUsed {
		ws = append(ws, unusedSurfaceWarning("slack", "Slack", "{slack: {channel: C0123456789}}"))
	}
	if c.Discord != nil && !discordUsed {
		ws = append(ws, unusedSurfaceWarning("discord", "Discord", `{discord: {channel: "123456789012345678"}}`))
	}
	if w := noDefaultRouteWarning(c.Routes); w != "" {
		ws = append(ws, w)
	}
	return ws
}

// noDefaultRouteWarning words routes that name none default, or "": a
// request that names no route is refused then (CONTRACT §2, §5), which
// may be meant (every agent must say where it asks) but more often is a
// rename that left the default behind.
func noDefaultRouteWarning(routes []Route) string {
	names := make([]string, 0, len(routes))
	for _, r := range routes {
		if r.Name == DefaultRoute {
			return ""
		}
		names = append(names, r.Name)
	}
	if len(names) == 0 {
		return "" // none at all: the implicit default
	}
	return fmt.Sprintf("no route is named %[1]s (routes: %[2]s): a request that names no route (bridge ask or bridge mcp without --route, an agent or harness that sets none)"+
		" is refused with 503 NO_PROVIDER. If that is not meant, rename the route such requests should go to %[1]s, or add a route named %[1]s",
		DefaultRoute, strings.Join(names, ", "))
}

// rotatingBotTokenWarning words a slack.bot_token of an app with token
// rotation on (xoxe.xoxb-): Slack expires it 12 hours after issuing it,
// and renewing it takes the refresh token and the app's client secret,
// which the bridge does not hold, so from then on Slack refuses every
// call with token_expired. It is warned of, not refused: Slack does not
// let an app turn rotation off once it is on
// (docs.slack.dev/authentication/using-token-rotation), so a refusal
// would lock such an app out for good, while its token works for up to
// 12 hours (a trial; a token that something else renews, restarting the
// bridge with it).
const rotatingBotTokenWarning = "slack.bot_token is from a Slack app with token rotation on (xoxe.xoxb-…): Slack expires it 12 hours after issuing it" +
	" and the bridge does not renew it, so within 12 hours every post and edit fails with token_expired." +
	" Token rotation can't be turned off once on: create a Slack app without it (deploy/slack-app-manifest.yaml keeps it off)," +
	" install it, and use its Bot User OAuth Token (xoxb-…) here"

// unusedSurfaceWarning words a surface section that no route's targets
// use; target is a flow-style target to paste into a route's targets.
func unusedSurfaceWarning(section, name, target string) string {
	return fmt.Sprintf("the %s: section is set but no route's targets use it: the bridge posts nothing to %s,"+
		" and requests are answered through the API or the web inbox only."+
		" Add a target under a route (e.g. targets: [%s] on the route named %s)", section, name, target, DefaultRoute)
}

// Route returns the route with that name; the empty name means the route
// named "default". The pointer is into c.Routes.
func (c *Config) Route(name string) (*Route, bool) {
	if name == "" {
		name = DefaultRoute
	}
	for i := range c.Routes {
		if c.Routes[i].Name == name {
			return &c.Routes[i], true
		}
	}
	return nil, false
}

// PublicURL is base_url without its trailing slash or, when base_url is
// unset, http://<listen>, with an unspecified listen host shown as localhost.
func (c *Config) PublicURL() string {
	if c.BaseURL != "" {
		return strings.TrimRight(c.BaseURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return "http://" + c.Listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Effective returns the config as the bridge uses it, defaults included,
// as YAML with every secret shown as <secret>. Sections that are off (a nil
// slack:, a target's other surface) are left out.
//
// base_url shows the URL it defaults to, http://<listen>, except where
// listen's port is 0: the port, and so that URL, is known only once the
// bridge runs (it logs it), and the comment beside base_url says so.
func (c *Config) Effective() ([]byte, error) {
	e := *c
	e.BaseURL = c.PublicURL()
	anyPort := c.BaseURL == "" && listensOnAnyPort(c.Listen)
	if anyPort {
		e.BaseURL = ""
	}
	// An API URL may carry a proxy's credentials.
	if c.Slack != nil {
		sl := *c.Slack
		sl.APIURL = hideUserInfo(sl.APIURL)
		e.Slack = &sl
	}
	if c.Discord != nil {
		d := *c.Discord
		d.APIURL = hideUserInfo(d.APIURL)
		e.Discord = &d
	}
	var n yaml.Node
	if err := n.Encode(&e); err != nil {
		return nil, err
	}
	dropNulls(&n)
	if anyPort {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "base_url" {
				n.Content[i+1].LineComment = `# known only once the bridge runs: listen's port 0 lets the system pick one (its log's "askbridge listening" line names it)`
			}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// listensOnAnyPort reports whether listen asks for a port the system
// picks (":0").
func listensOnAnyPort(listen string) bool {
	_, port, err := net.SplitHostPort(listen)
	return err == nil && port == "0"
}

// hideUserInfo is u with its user info, if any, shown as <secret>.
func hideUserInfo(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	scheme, rest, _ := strings.Cut(p.String(), "//")
	return scheme + "//<secret>@" + rest
}

// dropNulls removes the mapping entries of n, at any depth, whose value is null.
func dropNulls(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := n.Content[i+1]; v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
				continue
			}
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		dropNulls(c)
	}
}

// botTokenWhere names what slack.bot_token holds and where to find it.
const botTokenWhere = "the Bot User OAuth Token (xoxb-…, the app's OAuth & Permissions page)"

// Validate reports every problem in c, each naming its key, such as
// "routes[1].targets[0]: set exactly one of slack or discord", joined with
// errors.Join. Messages never include a secret's value. The problems Parse
// returned this config with (unset variables, unknown keys) come first,
// each as Parse worded it; of a key whose ${VAR} gave no value it says
// nothing more, and nothing of what follows from the key not being set
// (slack's "set signing_secret or app_token" when ${VAR} was to give one).
func (c *Config) Validate() error {
	v := validator{env: c.env, unknown: c.unknown, errs: slices.Clone(c.parseErrs)}
	v.listen(c)
	if c.BaseURL != "" && v.httpURL("base_url", c.BaseURL) {
		// Links and the web pages' paths are built under base_url: a
		// query or fragment would end up in the middle of them.
		if u, _ := url.Parse(c.BaseURL); u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			v.add("base_url", "must be a scheme, a host and optionally a path, with no user info, query or fragment")
		}
	}
	v.redis(c.Redis)
	v.tokens(c.API.Tokens)
	v.store(c.Store)
	v.web(c.Web)
	if s := c.Slack; s != nil {
		if s.BotToken == "" {
			v.add("slack.bot_token", "required: %s", botTokenWhere)
		}
		v.secret("slack.bot_token", s.BotToken, false)
		v.secret("slack.signing_secret", s.SigningSecret, false)
		v.secret("slack.app_token", s.AppToken, false)
		// Slack's tokens and signing secret hold neither: a final newline
		// read from a file would pass until Slack refused the token as one
		// it does not know, or every click's signature failed.
		v.unpadded("slack.bot_token", s.BotToken)
		v.unpadded("slack.signing_secret", s.SigningSecret)
		v.unpadded("slack.app_token", s.AppToken)
		// A token of another kind (docs.slack.dev/authentication/tokens)
		// in bot_token: an app-level or refresh token passes until Slack
		// refuses it at start; a user's token signs in, and every question
		// is posted as that person instead of the app. A bot token that
		// rotates is xoxe.xoxb-, and passes with a warning (Warnings).
		bot, app := strings.TrimSpace(s.BotToken.Reveal()), strings.TrimSpace(s.AppToken.Reveal())
		switch {
		case strings.HasPrefix(bot, "xapp-"):
			v.add("slack.bot_token", "is an app-level token (xapp-…); write %s here, and the xapp- one under app_token", botTokenWhere)
		case strings.HasPrefix(bot, "xoxp-"), strings.HasPrefix(bot, "xoxe.xoxp-"):
			prefix, _, _ := strings.Cut(bot, "-")
			v.add("slack.bot_token", "is a user token (%s-…), which would post every question as that person; write %s here", prefix, botTokenWhere)
		case strings.HasPrefix(bot, "xoxe-"):
			v.add("slack.bot_token", "is a refresh token (xoxe-…); write %s here", botTokenWhere)
		}
		if app != "" && app != redacted && !strings.HasPrefix(app, "xapp-") {
			what := "is not an app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write)"
			if strings.HasPrefix(app, "xoxb-") {
				what += "; the xoxb- one is bot_token"
			}
			v.add("slack.app_token", "%s", what)
		}
		if s.SigningSecret == "" && s.AppToken == "" && !v.isUnknown("slack.signing_secret") && !v.isUnknown("slack.app_token") {
			v.add("slack", "set signing_secret (interactions over the Request URL) or app_token (Socket Mode)")
		}
		v.apiURL("slack.api_url", s.APIURL)
	}
	if d := c.Discord; d != nil {
		if d.BotToken == "" {
			v.add("discord.bot_token", "required: the bot's token (Developer Portal → your app → Bot → Reset Token)")
		}
		v.secret("discord.bot_token", d.BotToken, false)
		if tok := d.BotToken.Reveal(); strings.ContainsFunc(tok, unicode.IsSpace) || strings.ContainsFunc(tok, unicode.IsControl) {
			// A Discord token holds neither; sent in a header, it failed
			// every call as a connection that could not be made ("invalid
			// header field value"), or Discord refused "Bot Bot …".
			v.add("discord.bot_token", `holds white space or a control character (a final newline read from a file? a "Bot " prefix?): write the token alone, as the Bot page shows it`)
		}
		switch {
		case d.ApplicationID == "":
			v.add("discord.application_id", "required")
		case !isSnowflake(d.ApplicationID):
			v.add("discord.application_id", "must be the application's id, a number (Developer Portal, General Information, Application ID)")
		}
		switch {
		case d.PublicKey == "" && !d.Gateway && !v.isUnknown("discord.gateway"):
			v.add("discord.public_key", "required unless gateway: true (it verifies /discord/interactions)")
		case d.PublicKey != "" && !isHexKey(d.PublicKey):
			v.add("discord.public_key", "must be 64 hex characters (the application's Ed25519 public key), got %d characters", len(d.PublicKey))
		}
		v.apiURL("discord.api_url", d.APIURL)
	}
	v.routes(c)
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		v.add("log.level", "%s is not a level; use debug, info, warn or error", v.quote(c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		v.add("log.format", "%s is not a format; use text or json", v.quote(c.Log.Format))
	}
	return errors.Join(v.errs...)
}

type validator struct {
	errs    []error
	env     []envValue // see Config.env
	unknown []string   // see Config.unknown
}

// isUnknown reports whether the value at path, or at a key it is under,
// is one a ${VAR} did not give (Config.unknown).
func (v *validator) isUnknown(path string) bool {
	for _, p := range v.unknown {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// quote quotes a value as an error shows it: as written when it is a value
// that came from the environment (${VAR}), which may be a secret in the
// wrong key, and as it is otherwise. It goes by the value, not by the key
// it was written under: a YAML alias (*t) copies it to another key.
func (v *validator) quote(value string) string {
	sum := sha256.Sum256([]byte(value))
	for _, e := range v.env {
		if e.sum == sum {
			return strconv.Quote(e.written)
		}
	}
	return strconv.Quote(value)
}

// add reports a problem at path, unless the value there is unknown: its
// ${VAR} is reported instead.
func (v *validator) add(path, format string, args ...any) {
	if v.isUnknown(path) {
		return
	}
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

func (v *validator) listen(c *Config) {
	if msg := v.listenProblem(c.Listen, c.OpenAPI()); msg != "" {
		v.add("listen", "%s", msg)
	}
}

// ListenProblem says what is wrong with listen as the address c's bridge
// listens on, as Validate says it of the listen key, or "": for a value
// given elsewhere (bridge serve --listen), which its caller names.
func (c *Config) ListenProblem(listen string) string {
	v := validator{env: c.env, unknown: c.unknown}
	return v.listenProblem(listen, c.OpenAPI())
}

// listenProblem says what is wrong with listen, or "": not host:port, a
// port that is no number from 0 to 65535, or, with open (no api.tokens),
// a host that is not loopback. The forms it offers work with the API as
// open is: on loopback when it is open.
func (v *validator) listenProblem(listen string, open bool) string {
	// A value from the environment (${VAR}) is not shown, not even its
	// port: it may be a secret in the wrong key.
	shown := v.quote(listen) == strconv.Quote(listen)
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		// A bare port ("8080") is the likely slip: offered back with a host.
		p := "8080"
		if _, err := strconv.ParseUint(listen, 10, 16); err == nil && shown {
			p = listen
		}
		if open {
			return fmt.Sprintf("%s is not host:port, such as 127.0.0.1:%s", v.quote(listen), p)
		}
		return fmt.Sprintf("%s is not host:port, such as 127.0.0.1:%s, or :%s for every interface", v.quote(listen), p, p)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Sprintf("%s: the port is not a number from 0 to 65535", v.quote(listen))
	}
	if open && !isLoopback(host) && !v.isUnknown("api.tokens") {
		loopback := "127.0.0.1, ::1 or localhost"
		if shown {
			loopback = "127.0.0.1:" + port + " (or ::1, localhost)"
		}
		return fmt.Sprintf("%s is not a loopback address, and with no api.tokens the API is open to anyone "+
			"who can reach it: listen on %s, or add tokens under api.tokens "+
			"("+tokensExample+") that clients send as Authorization: Bearer <token>", v.quote(listen), loopback)
	}
	return ""
}

// isLoopback reports whether host is localhost or a loopback IP address
// (127.0.0.0/8, ::1). The empty host listens on every interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) redis(r Redis) {
	v.secret("redis.password", r.Password, false)
	v.secret("redis.sentinel_password", r.SentinelPassword, false)
	switch {
	case r.URL != "" && len(r.Addrs) > 0:
		v.add("redis.addrs", "set redis.url (one server) or redis.addrs (a Cluster or Sentinels), not both")
	case r.URL == "" && len(r.Addrs) == 0:
		if v.isUnknown("redis.url") || v.isUnknown("redis.addrs") {
			break // which the keys below need
		}
		for _, k := range []struct {
			key string
			set bool
		}{
			{"redis.master_name", r.MasterName != ""}, {"redis.username", r.Username != ""},
			{"redis.password", r.Password != ""}, {"redis.sentinel_password", r.SentinelPassword != ""},
			{"redis.db", r.DB != 0}, {"redis.tls", r.TLS},
		} {
			if k.set {
				v.add(k.key, "needs redis.url or redis.addrs (without them the bridge runs an embedded Redis)")
			}
		}
	case r.URL != "":
		v.redisURL(r)
	default:
		v.redisAddrs(r)
	}
	if r.DB < 0 {
		v.add("redis.db", "must not be negative, got %d", r.DB)
	}
	if i := strings.IndexByte(r.Prefix, '{'); i >= 0 && strings.HasPrefix(r.Prefix[i:], "{}") {
		// On a Cluster the first {...} of a key names its slot; an empty
		// one has the whole key name it, and a script's keys, each its
		// own slot, fail with CROSSSLOT. (A tag with text puts every
		// key in one slot: it works, without the spread.)
		v.add("redis.prefix", "must not hold an empty hash tag ({}): on a Redis Cluster every script would fail with CROSSSLOT")
	}
}

func (v *validator) redisURL(r Redis) {
	if r.MasterName != "" {
		v.add("redis.master_name", "needs redis.addrs (the Sentinels' addresses) instead of redis.url")
	}
	if r.SentinelPassword != "" {
		v.add("redis.sentinel_password", "needs redis.addrs and redis.master_name")
	}
	if r.DB != 0 {
		v.add("redis.db", "with redis.url, put the database in the URL: redis://host:port/<db>")
	}
	if r.TLS {
		v.add("redis.tls", "with redis.url, write rediss:// for TLS")
	}
	if r.URL == redacted {
		v.secret("redis.url", r.URL, false)
		return
	}
	// The URL is read as the bridge will read it, by go-redis's ParseURL,
	// but neither its errors nor url.Parse's are repeated: they quote the
	// URL, or the part of it they stopped at, which may be a password.
	const encode = " (a password with : / @ # ? or %% in it must be percent-encoded)"
	raw := r.URL.Reveal()
	u, err := url.Parse(raw)
	var ue *url.Error
	switch {
	case errors.As(err, &ue) && strings.HasPrefix(ue.Err.Error(), "invalid port"):
		v.add("redis.url", "the port is not a number"+encode)
		return
	case err != nil:
		v.add("redis.url", "not a URL such as redis://[user:password@]host:port[/db]"+encode)
		return
	case u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix":
		v.add("redis.url", "not a redis://, rediss:// or unix:// URL")
		return
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			v.add("redis.url", "the port must be a number from 1 to 65535")
			return
		}
	}
	opt, err := redis.ParseURL(raw)
	switch {
	case err == nil && opt.DB < 0:
		// go-redis would send no SELECT and use database 0.
		v.add("redis.url", "the database number must not be negative, got %d", opt.DB)
	case err == nil:
	case strings.HasPrefix(err.Error(), "redis: invalid database number"):
		v.add("redis.url", "the database (the path after host:port, or ?db=) is not a number")
	case strings.HasPrefix(err.Error(), "redis: invalid URL path"):
		v.add("redis.url", "the path must be the database number alone, such as /0")
	case strings.HasPrefix(err.Error(), "redis: empty unix socket path"):
		v.add("redis.url", "unix:// needs the socket's path, such as unix:///run/redis/redis.sock")
	case plainQuery(u.Query()): // an option of the query: its name and value, never the password
		v.add("redis.url", "%s", strings.TrimPrefix(err.Error(), "redis: "))
	default:
		// A query that does not read as options is most likely the rest
		// of a password cut at an unencoded '?': go-redis's message would
		// repeat it.
		v.add("redis.url", "the query after '?' holds options go-redis does not know"+encode)
	}
}

// plainQuery reports whether every name and value of q reads as a
// go-redis option (dial_timeout=5s, protocol=3), so that repeating them
// cannot repeat a password.
func plainQuery(q url.Values) bool {
	plain := func(s string, extra string) bool {
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c == '_' || strings.ContainsRune(extra, c)) {
				return false
			}
		}
		return true
	}
	for name, values := range q {
		if !plain(name, "") {
			return false
		}
		for _, v := range values {
			if !plain(strings.ToLower(v), "0123456789.-") {
				return false
			}
		}
	}
	return true
}

func (v *validator) redisAddrs(r Redis) {
	seen := map[string]int{}
	for i, a := range r.Addrs {
		p := fmt.Sprintf("redis.addrs[%d]", i)
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			v.add(p, "%s is not host:port", v.quote(a))
			continue
		}
		if j, dup := seen[a]; dup {
			v.add(p, "%s is also redis.addrs[%d]", v.quote(a), j)
		}
		seen[a] = i
	}
	if r.MasterName == "" && !v.isUnknown("redis.master_name") {
		if r.DB != 0 {
			v.add("redis.db", "a Redis Cluster has database 0 only")
		}
		if r.SentinelPassword != "" {
			v.add("redis.sentinel_password", "needs redis.master_name (Sentinel); without it redis.addrs are Cluster seeds")
		}
	}
}

// minTokenLen is the shortest API token config takes.
const minTokenLen = 16

func (v *validator) tokens(tokens []Token) {
	names := map[string]int{}
	values := map[Secret]int{}
	for i, t := range tokens {
		p := fmt.Sprintf("api.tokens[%d]", i)
		if t.Name == "" {
			v.add(p+".name", "required: it names the client in logs and records")
		} else if j, dup := names[t.Name]; dup {
			v.add(p+".name", "%s is also the name of api.tokens[%d]", v.quote(t.Name), j)
		} else {
			names[t.Name] = i
		}
		v.secret(p+".token", t.Token, true)
		tok := t.Token.Reveal()
		if padded(tok) {
			// A client sends it in a header, whose value can't hold control
			// characters and loses its outer spaces: no client could match it.
			v.add(p+".token", "starts or ends with white space, or holds a control character (a final newline read from a file?): no client can send it in an Authorization header")
		} else if n := utf8.RuneCountInString(tok); n > 0 && n < minTokenLen && tok != redacted {
			// The web inbox's sign-in form takes tokens, as many tries as
			// anyone cares to make: a short one can be guessed.
			v.add(p+".token", "is %d characters; use at least %d random ones, e.g. openssl rand -hex 16", n, minTokenLen)
		}
		// The placeholder is refused above, once per token; two of them
		// are not the same token as well.
		if t.Token != "" && t.Token != redacted {
			if j, dup := values[t.Token]; dup {
				v.add(p+".token", "the same token as api.tokens[%d]: give each client its own", j)
			} else {
				values[t.Token] = i
			}
		}
		if len(t.Scopes) == 0 {
			v.add(p+".scopes", "set at least one of %s, %s", ScopeAsk, ScopeAnswer)
		}
		seen := map[string]bool{}
		for j, s := range t.Scopes {
			switch {
			case s != ScopeAsk && s != ScopeAnswer:
				v.add(fmt.Sprintf("%s.scopes[%d]", p, j), "%s is not a scope; use %s or %s", v.quote(s), ScopeAsk, ScopeAnswer)
			case seen[s]:
				v.add(fmt.Sprintf("%s.scopes[%d]", p, j), "%s is listed twice", v.quote(s))
			}
			seen[s] = true
		}
	}
}

func (v *validator) store(s Store) {
	if s.Retention.D() < MinRetention {
		v.add("store.retention", "must be at least 1h: an agent reads its answer after it lands, and an ended request's messages are edited up to an hour after its end")
	}
	if s.DefaultExpiresIn < 0 {
		v.add("store.default_expires_in", "must not be negative (0: never)")
	}
	if s.SweepInterval <= 0 {
		v.add("store.sweep_interval", "must be more than 0")
	}
	if s.MaxWait < 0 {
		v.add("store.max_wait", "must not be negative")
	}
}

// minWebSecret is the shortest web.secret accepted: 32 bytes, as long as
// the HMAC-SHA256 it keys.
const minWebSecret = 32

func (v *validator) web(w Web) {
	v.secret("web.secret", w.Secret, false)
	if n := len(w.Secret.Reveal()); n > 0 && n < minWebSecret && w.Secret != redacted {
		v.add("web.secret", "must be at least %d characters (e.g. the output of openssl rand -hex 32), got %d", minWebSecret, n)
	}
	if w.SessionTTL <= 0 {
		v.add("web.session_ttl", "must be more than 0")
	}
	if w.LinkTTL <= 0 {
		v.add("web.link_ttl", "must be more than 0")
	}
	if w.MaxLinkStreams < 1 {
		v.add("web.max_link_streams", "must be at least 1")
	}
}

func (v *validator) routes(c *Config) {
	names := map[string]int{}
	noSection := map[string]bool{} // a missing slack: or discord: section is reported once
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		if r.Name == "" {
			v.add(p+".name", "required (a request names its route; %q is used when it names none)", DefaultRoute)
		} else if j, dup := names[r.Name]; dup {
			v.add(p+".name", "%s is also the name of routes[%d]", v.quote(r.Name), j)
		} else {
			names[r.Name] = i
		}
		if r.Mode != ModeAll && r.Mode != ModeFirst {
			v.add(p+".mode", "%s is not a mode; use %s or %s", v.quote(r.Mode), ModeAll, ModeFirst)
		}
		if r.ExpiresIn < 0 {
			v.add(p+".expires_in", "must not be negative (0: store.default_expires_in)")
		}
		channels := map[string]int{} // "slack C123" -> target index
		for j, t := range r.Targets {
			tp := fmt.Sprintf("%s.targets[%d]", p, j)
			var surface, channel string
			switch {
			case (t.Slack == nil) == (t.Discord == nil):
				v.add(tp, "set exactly one of slack or discord")
				continue
			case t.Slack != nil:
				surface, channel = "slack", t.Slack.Channel
				if c.Slack == nil && !noSection["slack"] {
					noSection["slack"] = true
					v.add(tp+".slack", "there is no top-level slack: section (bot_token, and signing_secret or app_token)")
				}
				v.ids(tp+".slack.responders.users", t.Slack.Responders.Users, slackID("UW"), "a Slack user id (U… or W…: a profile's More menu, Copy member ID), not a name")
				v.ids(tp+".slack.responders.groups", t.Slack.Responders.Groups, slackID("S"), "a Slack user group id (S…), not its handle")
				v.mention(tp+".slack.mention", t.Slack.Mention, slackMention, "<!here>, <!channel>, a user's id as <@U0123456789> (a profile's More menu, Copy member ID) or a user group's id as <!subteam^S0123456789>")
			case t.Discord != nil:
				surface, channel = "discord", t.Discord.Channel
				if c.Discord == nil && !noSection["discord"] {
					noSection["discord"] = true
					v.add(tp+".discord", "there is no top-level discord: section (bot_token, application_id, public_key)")
				}
				v.ids(tp+".discord.responders.users", t.Discord.Responders.Users, isSnowflake, "a Discord user id, a number (Developer Mode, Copy User ID), not a name")
				v.ids(tp+".discord.responders.roles", t.Discord.Responders.Roles, isSnowflake, "a Discord role id, a number (Developer Mode, Copy Role ID), not a name")
				v.mention(tp+".discord.mention", t.Discord.Mention, discordMention, "@here, @everyone, or a user's or a role's id, a number (Developer Mode, Copy User ID or Copy Role ID), as <@123456789012345678> or <@&123456789012345678>")
			}
			if channel == "" {
				v.add(tp+"."+surface+".channel", "required: the channel id to post in")
				continue
			}
			if surface == "discord" && !isSnowflake(channel) {
				v.add(tp+".discord.channel", "must be the channel's id, a number (Developer Mode, Copy Channel ID), not its name")
			}
			key := surface + " " + channel
			if k, dup := channels[key]; dup {
				v.add(tp, "the same %s channel as %s.targets[%d]: a request would be posted there twice", surface, p, k)
			} else {
				channels[key] = j
			}
		}
	}
}

// mention checks a target's mention. Written with no ping in it (a name,
// "@here" in Slack), it is shown as text and pings nobody: no one learns
// that a request waits for them.
func (v *validator) mention(path, m string, pings *regexp.Regexp, forms string) {
	if t := strings.TrimSpace(m); t != "" && !pings.MatchString(t) {
		v.add(path, "%s would ping nobody; write %s", v.quote(m), forms)
	}
}

var (
	// A Slack mention goes into the message's mrkdwn as written: any
	// number of pings, with text around them ("<!subteam^S1> on call").
	slackMention = regexp.MustCompile(`<(@[UW][A-Z0-9]+|!subteam\^S[A-Z0-9]+|!here|!channel|!everyone)(\|[^<>|]*)?>`)
	// A Discord message allows exactly one ping through (allowed_mentions):
	// the mention is that one.
	discordMention = regexp.MustCompile(`^(<@[!&]?\d{1,20}>|@here|@everyone)$`)
)

// ids checks a list of responders' ids: one that is not an id (a name,
// a handle) would match nobody, and nobody could answer.
func (v *validator) ids(path string, ids []string, valid func(string) bool, what string) {
	for i, id := range ids {
		switch {
		case strings.TrimSpace(id) == "":
			v.add(fmt.Sprintf("%s[%d]", path, i), "empty")
		case !valid(id):
			v.add(fmt.Sprintf("%s[%d]", path, i), "%s is not %s", v.quote(id), what)
		}
	}
}

// isSnowflake reports whether s is a Discord id: a number of up to 20
// digits.
func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// slackID returns a check of a Slack id whose first letter is one of
// first and whose rest is upper-case letters and digits.
func slackID(first string) func(string) bool {
	return func(s string) bool {
		if len(s) < 2 || !strings.ContainsRune(first, rune(s[0])) {
			return false
		}
		for _, r := range s[1:] {
			if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
				return false
			}
		}
		return true
	}
}

// secret checks a secret without ever printing it.
func (v *validator) secret(path string, s Secret, required bool) {
	switch {
	case s == "" && required:
		v.add(path, "required")
	case s == redacted:
		v.add(path, "is the placeholder %s, as `bridge config check` prints it: write the real value, or ${ENV_VAR}", redacted)
	}
}

// padded reports whether s starts or ends with white space or holds a
// control character, as a secret read from a file with its final newline
// does.
func padded(s string) bool {
	return s != strings.TrimSpace(s) || strings.ContainsFunc(s, unicode.IsControl)
}

// unpadded checks that a platform's secret is not padded: no such secret
// holds white space or a control character.
func (v *validator) unpadded(path string, s Secret) {
	if padded(s.Reveal()) {
		v.add(path, "starts or ends with white space, or holds a control character (a final newline read from a file?): write the value alone")
	}
}

// apiURL checks a surface's API base URL; setDefaults added the final "/".
func (v *validator) apiURL(path, u string) {
	if v.httpURL(path, u) && !strings.HasSuffix(u, "/") {
		v.add(path, "must end in /")
	}
}

// httpURL checks that u is an absolute http or https URL. It does not quote
// u, which may carry credentials for a proxy.
func (v *validator) httpURL(path, u string) bool {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		v.add(path, "not an http:// or https:// URL")
		return false
	}
	return true
}

func isHexKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Package config loads the bridge's YAML configuration: ${ENV} expansion,
// unknown keys rejected, defaults, then Validate naming the bad key.
package config

import (
	"crypto/sha256"
	"time"
)

// Config is the whole configuration file. Every key, its default and its
// meaning is in config.example.yaml.
type Config struct {
	Listen  string   `yaml:"listen"`   // default 127.0.0.1:8080
	BaseURL string   `yaml:"base_url"` // public URL of the bridge, for links; default http://<listen>
	Redis   Redis    `yaml:"redis"`
	API     API      `yaml:"api"`
	Store   Store    `yaml:"store"`
	Web     Web      `yaml:"web"`
	Slack   *Slack   `yaml:"slack"`   // nil: Slack is off
	Discord *Discord `yaml:"discord"` // nil: Discord is off
	Routes  []Route  `yaml:"routes"`
	Log     Log      `yaml:"log"`

	// env holds the values that came from ${VAR}: Validate's errors show
	// them as written, since a secret may be expanded into the wrong key.
	env []envValue
	// parseErrs are the problems Parse found in a document whose values
	// decoded all the same (unknown keys, a ${VAR} not set): Validate
	// reports them first, so that a config Parse refused never validates.
	parseErrs []error
	// unknown are the keys, as Validate names them, whose value a ${VAR}
	// should have given and did not: they read as not set, and Validate
	// says nothing of them or under them, since their value is not known.
	unknown []string
}

// envValue is how a value expanded from the environment was written, and
// the value's digest: the value itself may be a secret, and Config must
// not print one.
type envValue struct {
	sum     [sha256.Size]byte
	written string
}

// Redis says where the store lives: one server by URL, a Redis Cluster by
// its seed addresses, or a Sentinel-watched master by the Sentinels'
// addresses and the master's name. Neither URL nor Addrs runs an embedded,
// in-memory Redis.
type Redis struct {
	URL              Secret   `yaml:"url"`               // redis://[user:pass@]host:port[/db] or rediss://
	Addrs            []string `yaml:"addrs"`             // host:port: Cluster seeds, or Sentinels with master_name
	MasterName       string   `yaml:"master_name"`       // Sentinel: the master's name
	Username         string   `yaml:"username"`          // ACL user; with url, overrides the URL's
	Password         Secret   `yaml:"password"`          // with url, overrides the URL's
	SentinelPassword Secret   `yaml:"sentinel_password"` // Sentinel: the Sentinels' own password
	DB               int      `yaml:"db"`                // Sentinel only; a Cluster has database 0 only
	TLS              bool     `yaml:"tls"`               // with addrs: TLS to every node (url says rediss://)
	Prefix           string   `yaml:"prefix"`            // key prefix; default "askbridge:"
}

// API holds the bearer tokens of the HTTP API. No tokens: the API is open and
// the bridge listens on loopback only.
type API struct {
	Tokens []Token `yaml:"tokens"`
}

// Scopes of an API token.
const (
	ScopeAsk    = "ask"    // create, read, wait for and cancel its own requests
	ScopeAnswer = "answer" // list pending requests and answer or decide them
)

// Token is one API client.
type Token struct {
	Name   string   `yaml:"name"`
	Token  Secret   `yaml:"token"`
	Scopes []string `yaml:"scopes"` // ask, answer
}

// Store tunes the pending-request store.
type Store struct {
	Retention        Duration `yaml:"retention"`          // finished records kept; default 168h
	DefaultExpiresIn Duration `yaml:"default_expires_in"` // when neither request nor route says; default 24h; 0 never
	SweepInterval    Duration `yaml:"sweep_interval"`     // default 1s
	MaxWait          Duration `yaml:"max_wait"`           // longest ?wait= honoured; default 60s
}

// Web tunes the web inbox and the signed answer links.
type Web struct {
	Secret     Secret   `yaml:"secret"`      // signs sessions and answer links; "": a random one per process
	SessionTTL Duration `yaml:"session_ttl"` // how long a browser stays signed in; default 12h
	LinkTTL    Duration `yaml:"link_ttl"`    // validity of a link to a request that never expires; default 168h
	// MaxLinkStreams is how many live streams opened by links one replica
	// holds at once; default 1000 (docs/web.md, Live streams' limits).
	MaxLinkStreams int `yaml:"max_link_streams"`
}

// Slack is the Slack app's credentials and endpoints.
type Slack struct {
	BotToken      Secret `yaml:"bot_token"`      // xoxb-
	SigningSecret Secret `yaml:"signing_secret"` // verifies /slack/interactions
	AppToken      Secret `yaml:"app_token"`      // xapp-: Socket Mode instead of the Request URL
	APIURL        string `yaml:"api_url"`        // default https://slack.com/api/
}

// Discord is the Discord application's credentials and endpoints.
type Discord struct {
	BotToken      Secret `yaml:"bot_token"`
	PublicKey     string `yaml:"public_key"` // hex Ed25519 key: verifies /discord/interactions
	ApplicationID string `yaml:"application_id"`
	APIURL        string `yaml:"api_url"` // default https://discord.com/api/v10/
	Gateway       bool   `yaml:"gateway"` // receive interactions over the gateway instead
}

// Route modes.
const (
	ModeAll   = "all"   // post to every target; first answer anywhere wins
	ModeFirst = "first" // post to the first target that takes it
)

// Route is a named set of targets a request is posted to.
type Route struct {
	Name      string   `yaml:"name"`
	Mode      string   `yaml:"mode"`       // all (default) or first
	ExpiresIn Duration `yaml:"expires_in"` // default for requests on this route; 0: store.default_expires_in
	Targets   []Target `yaml:"targets"`    // none: answered through the API only
}

// Target is one place a route posts to: exactly one of its fields is set.
type Target struct {
	Slack   *SlackTarget   `yaml:"slack"`
	Discord *DiscordTarget `yaml:"discord"`
}

// SlackTarget is a Slack channel and who may answer there.
type SlackTarget struct {
	Channel         string          `yaml:"channel"`              // channel id, e.g. C0123456789
	Mention         string          `yaml:"mention"`              // e.g. <!subteam^S123> or <@U123>; the only ping
	Responders      SlackResponders `yaml:"responders,omitempty"` // left out: anyone in the channel
	ThreadBySession bool            `yaml:"thread_by_session"`    // one thread per caller session
}

// ByConversationID reports whether t names its channel by a conversation
// id (C…, G…, D…), the id Slack answers a post with. A channel's name or
// a person's id (Slack posts in the app's DM with them) is not one.
func (t *SlackTarget) ByConversationID() bool { return isConversationID(t.Channel) }

var isConversationID = slackID("CGD")

// SlackResponders are who may answer on a Slack target. Written, they
// must name someone: Parse refuses an empty list, since read as no limit
// it would let anyone answer (load.go, checker.responders). omitempty
// keeps `bridge config check` from showing an open target's as empty
// lists, which it would then refuse.
type SlackResponders struct {
	Users  []string `yaml:"users,omitempty"`  // user ids
	Groups []string `yaml:"groups,omitempty"` // user group ids
}

// DiscordTarget is a Discord channel and who may answer there.
type DiscordTarget struct {
	Channel         string            `yaml:"channel"`              // channel id
	Mention         string            `yaml:"mention"`              // e.g. <@&role> or <@user>; the only ping
	Responders      DiscordResponders `yaml:"responders,omitempty"` // left out: anyone in the channel
	ThreadBySession bool              `yaml:"thread_by_session"`
}

// DiscordResponders are who may answer on a Discord target; written, they
// must name someone, as SlackResponders.
type DiscordResponders struct {
	Users []string `yaml:"users,omitempty"` // user ids
	Roles []string `yaml:"roles,omitempty"` // role ids
}

// Log sets the log output.
type Log struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error
	Format string `yaml:"format"` // text (default) or json
}

// Duration is a time.Duration written as "90s", "24h".
type Duration time.Duration

package pending

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Dial connects to the Redis at url: redis://[user:password@]host:port[/db]
// or rediss:// for TLS. The error never repeats the URL, which may hold a
// password.
func Dial(url string) (redis.UniversalClient, error) {
	return Connect(Conn{URL: url})
}

// Conn says how to reach Redis: one server by URL, a Redis Cluster by the
// addresses of some of its nodes, or a master that Sentinels watch by the
// Sentinels' addresses and the master's name.
type Conn struct {
	URL              string   // redis://[user:password@]host:port[/db], rediss:// or unix://
	Addrs            []string // host:port: Cluster seeds, or the Sentinels with MasterName
	MasterName       string   // Sentinel: the master's name
	Username         string   // ACL user; with URL, overrides the URL's
	Password         string   // with URL, overrides the URL's
	SentinelPassword string   // Sentinel: the Sentinels' own password
	DB               int      // Sentinel only: a Cluster has database 0 only
	TLS              bool     // with Addrs: TLS to every node; a URL says rediss://
	// NodeHooks are added to a Cluster's node clients, which dial, for
	// calls and subscriptions, without the cluster client's hooks.
	NodeHooks []redis.Hook
}

// Connect returns a client for c: a Client for a URL, a ClusterClient for
// Addrs, a FailoverClient (which follows the master through failovers) for
// Addrs with a MasterName. Every key of one request shares a hash slot
// (see keys.go), so the store runs unchanged on all three. Errors never
// repeat a URL or a password.
func Connect(c Conn) (redis.UniversalClient, error) {
	var tlsConfig *tls.Config
	if c.TLS {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	switch {
	case c.URL != "":
		if len(c.Addrs) > 0 || c.MasterName != "" || c.TLS || c.DB != 0 {
			return nil, errors.New("redis: set either a url, or addrs with their options; not both")
		}
		opt, err := redis.ParseURL(c.URL)
		if err != nil {
			return nil, errors.New("redis.url must look like redis://[user:password@]host:port[/db] or rediss://...")
		}
		if c.Username != "" {
			opt.Username = c.Username
		}
		if c.Password != "" {
			opt.Password = c.Password
		}
		return redis.NewClient(opt), nil
	case len(c.Addrs) == 0:
		return nil, errors.New("redis: set a url or addrs")
	case c.MasterName != "":
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:       c.MasterName,
			SentinelAddrs:    c.Addrs,
			SentinelPassword: c.SentinelPassword,
			Username:         c.Username,
			Password:         c.Password,
			DB:               c.DB,
			TLSConfig:        tlsConfig,
		}), nil
	default:
		if c.DB != 0 {
			return nil, errors.New("redis: a Redis Cluster has database 0 only")
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:     c.Addrs,
			Username:  c.Username,
			Password:  c.Password,
			TLSConfig: tlsConfig,
			NewClient: func(opt *redis.Options) *redis.Client {
				node := redis.NewClient(opt)
				for _, h := range c.NodeHooks {
					node.AddHook(h)
				}
				return node
			},
		})
		cc.AddHook(reloadOnDown{cc})
		return cc, nil
	}
}

// reloadOnDown is a hook of a cluster client: a command or pipeline that
// could not reach its node makes the client read the cluster's slots
// again. go-redis rereads them on a MOVED reply, which a dead node never
// sends, and otherwise every 60 s: after a master fails over, the commands
// of its slots would go to its dead address for up to a minute.
// ReloadState is lazy and merges concurrent calls.
type reloadOnDown struct{ c *redis.ClusterClient }

func (h reloadOnDown) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnDown) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if unreached(err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}

// ProcessPipelineHook looks at every command's error: a pipeline across
// nodes returns only the first, which may be a reply (redis.Nil) from a
// node that is up.
func (h reloadOnDown) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if unreached(cmd.Err()) {
				h.c.ReloadState(ctx)
				break
			}
		}
		return err
	}
}

// unreached reports whether err means a node could not be reached: not a
// reply (redis.Nil, MOVED and the like are replies), not a caller that
// gave up. A deadline that ran out while go-redis retried a dead node
// counts.
func unreached(err error) bool {
	var reply redis.Error
	return err != nil && !errors.As(err, &reply) && !errors.Is(err, context.Canceled)
}

// Embedded is an in-process Redis (miniredis): the working default for one
// machine, lost when the process ends.
type Embedded struct {
	m *miniredis.Miniredis
}

// StartEmbedded starts an in-process Redis on a loopback port.
func StartEmbedded() (*Embedded, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	return &Embedded{m: m}, nil
}

// URL is the embedded Redis's address as a redis:// URL.
func (e *Embedded) URL() string { return "redis://" + e.m.Addr() }

// Close stops the embedded Redis.
func (e *Embedded) Close() { e.m.Close() }

// Run makes the embedded Redis's key TTLs follow the wall clock until ctx
// ends. miniredis only expires keys when told time has passed, and without
// this, finished records would never leave memory.
func (e *Embedded) Run(ctx context.Context) error {
	const every = time.Second
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			e.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

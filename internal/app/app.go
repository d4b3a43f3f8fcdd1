// Package app composes the bridge: Redis (or the embedded one), the store,
// the dispatcher with its surfaces, the HTTP API, and the long-running parts
// that run as one group.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/slack"
	"github.com/askbridge/askbridge/internal/surface"
	"github.com/askbridge/askbridge/internal/web"
)

// App is one bridge replica. A test can start it on 127.0.0.1:0 and stop it.
type App struct {
	cfg      *config.Config
	log      *slog.Logger
	embedded *pending.Embedded // nil with an external Redis
	rdb      redis.UniversalClient
	store    *pending.Store
	dispatch *dispatch.Dispatcher
	api      *api.Server
	web      *web.Server
	ln       net.Listener
	srv      *http.Server
	mcp      MCP                           // nil without Options.MCP
	parts    []func(context.Context) error // surfaces' long-running parts
	unlog    func()                        // stops go-redis's lines going to log
	closed   sync.Once
}

// Options tune an App beyond its config; tests use them.
type Options struct {
	Now     func() time.Time // the clock of the store and of the web pages; default time.Now
	Recheck time.Duration    // waiters' re-read interval; default the store's

	// MCP builds the handler of /mcp, MCP's Streamable HTTP transport
	// (internal/mcp's NewHTTP), given the URL of this replica's API on
	// loopback, whether the API has tokens, and the replica's logger. It is passed in, not
	// built here, because internal/mcp's tests start replicas of this
	// package. Nil: no /mcp.
	MCP func(apiURL string, tokens bool, log *slog.Logger) MCP
}

// MCP is the handler of /mcp. Close ends its sessions, withdrawing their
// questions.
type MCP interface {
	http.Handler
	Close()
}

// New builds an App from a validated config and listens on cfg.Listen, so
// Addr is known before Run. With no redis.url it starts an embedded Redis.
//
// The App is not a named result: an error return would set it to nil
// before the deferred Close releases what was acquired.
func New(cfg *config.Config, log *slog.Logger, opt Options) (_ *App, err error) {
	a := &App{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	conn := connOf(cfg.Redis)
	if conn.URL == "" && len(conn.Addrs) == 0 {
		if a.embedded, err = pending.StartEmbedded(); err != nil {
			return nil, fmt.Errorf("start the embedded redis: %w", err)
		}
		conn.URL = a.embedded.URL()
		log.Warn("no redis.url or redis.addrs configured: using an EMBEDDED IN-MEMORY Redis; every request is lost when the bridge stops and replicas can't share it. Set redis.url (or redis.addrs) for production.")
	}
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	health := &redisHealth{log: log}
	a.unlog = logRedisTo(log, health.down)
	conn.NodeHooks = []redis.Hook{nodeDials{health}}
	if a.rdb, err = pending.Connect(conn); err != nil {
		return nil, err
	}
	a.store = pending.New(a.rdb, pending.Options{
		Prefix:    cfg.Redis.Prefix,
		Retention: cfg.Store.Retention.D(),
		Now:       opt.Now,
		Recheck:   opt.Recheck,
		Logger:    log,
		Outage:    health.down,
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.rdb.AddHook(newRedisMetrics(reg))
	a.rdb.AddHook(health)
	// Watched from its first dial: a Redis down at the start is an outage
	// like any other, logged once, its dial lines at debug.
	if err := checkRedis(a.rdb, conn, health, log); err != nil {
		return nil, err
	}
	// The web app's signer exists before the surfaces: their messages carry
	// its signed "Open in browser" links when the bridge has a public URL.
	signer := web.NewSigner(cfg.Web.Secret.Reveal())
	links := web.NewLinks(signer, cfg.PublicURL(), cfg.Web.LinkTTL.D())
	var linkFor surface.Links
	if cfg.BaseURL != "" {
		linkFor = links
	}
	surfaces, err := buildSurfaces(cfg, a.store, linkFor, reg, log)
	if err != nil {
		return nil, err
	}
	if a.dispatch, err = dispatch.New(a.store, cfg, surfaces.byName, dispatch.NewMetrics(reg), log); err != nil {
		return nil, err
	}
	var tokens []api.Token
	for _, t := range cfg.API.Tokens {
		tokens = append(tokens, api.Token{Name: t.Name, Token: t.Token.Reveal(), Scopes: t.Scopes})
	}
	a.api = api.New(api.Options{
		Store: a.store, Dispatcher: a.dispatch, Tokens: tokens, BaseURL: cfg.BaseURL,
		MaxWait: cfg.Store.MaxWait.D(), InMemory: a.embedded != nil, Registry: reg, Logger: log,
		SignInLink: func() string { return a.web.SignInLink(a.inboxBase()) },
	})
	a.web, err = web.New(web.Options{
		Store: a.store, Dispatcher: a.dispatch, Tokens: tokens, Signer: signer, Links: links,
		BaseURL: cfg.BaseURL, SessionTTL: cfg.Web.SessionTTL.D(), LinkStreams: cfg.Web.MaxLinkStreams, Registry: reg, Logger: log,
		Now: opt.Now,
	})
	if err != nil {
		return nil, err
	}
	a.web.Mount(a.api)
	for _, wire := range surfaces.wire {
		if part := wire(a.dispatch, a.api); part != nil {
			a.parts = append(a.parts, part)
		}
	}
	if a.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if opt.MCP != nil {
		a.mcp = opt.MCP(loopbackURL(a.ln.Addr()), len(tokens) > 0, log)
		a.api.Mount("/mcp", a.api.RequireAsk(a.mcp))
	}
	a.srv = &http.Server{
		Handler:           a.api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Live pages' streams end and held calls answer at once (the request
	// still pending, as when a wait ends), so shutdown need not wait for
	// them and agents wait again on another replica.
	a.srv.RegisterOnShutdown(a.web.Shutdown)
	a.srv.RegisterOnShutdown(a.api.Shutdown)
	return a, nil
}

// connOf is how to reach the Redis of r.
func connOf(r config.Redis) pending.Conn {
	return pending.Conn{
		URL: r.URL.Reveal(), Addrs: r.Addrs, MasterName: r.MasterName,
		Username: r.Username, Password: r.Password.Reveal(), SentinelPassword: r.SentinelPassword.Reveal(),
		DB: r.DB, TLS: r.TLS,
	}
}

// checkRedis asks Redis for one answer before the bridge starts
// (firstCall, as `config check --connect` does). A setting only Redis can
// refuse (a database number past its last, a wrong password, a redis.url
// that reaches a Sentinel or one node of a Cluster) stops the start with
// what to do about it; otherwise every command would fail, and be logged,
// for as long as the bridge ran. A Redis that can't be reached yet, or
// says "not now" (loading, failing over), does not stop it: the API
// answers 503 until Redis is back. A Redis that answers and may evict
// keys, or takes the configured password and would take none, is warned
// about. conn is how rdb was set up: the refusal names the keys of that
// kind of connection.
func checkRedis(rdb redis.UniversalClient, conn pending.Conn, health *redisHealth, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	switch err := firstCall(ctx, rdb, conn); {
	case err == nil:
		warnIfEvicting(rdb, log)
		for _, addr := range passwordless(ctx, rdb) {
			log.Warn("redis accepts connections without a password, so the configured password protects nothing: set requirepass on it, or give its default user a password",
				"node", addr)
		}
	case errors.As(err, new(*redisRefusal)):
		return fmt.Errorf("redis refused the connection: %w", err)
	default:
		if !health.down() { // else the outage's first line said so
			log.Warn("redis can't be reached yet: the API answers 503 UNAVAILABLE until it can", "err", err)
		}
	}
	return nil
}

// surfaceSet is what buildSurfaces built: the surfaces by name, for the
// dispatcher, and for each surface that takes callbacks a function that
// finishes wiring it once the dispatcher exists (its callbacks resolve
// requests through it): it mounts the callback endpoint and returns the
// surface's long-running part, if any.
type surfaceSet struct {
	byName map[string]dispatch.Surface
	wire   []func(*dispatch.Dispatcher, *api.Server) func(context.Context) error
}

// buildSurfaces builds the surfaces the config turns on, joining their
// config errors. links, when not nil, gives each posted message its
// "Open in browser" link; reg takes the surfaces' metrics.
func buildSurfaces(cfg *config.Config, store *pending.Store, links surface.Links, reg prometheus.Registerer, log *slog.Logger) (surfaceSet, error) {
	set := surfaceSet{byName: map[string]dispatch.Surface{}}
	var errs []error
	if cfg.Slack != nil {
		s, err := slack.New(cfg, slack.Options{Store: store, Links: links, Registry: reg, Logger: log})
		if err != nil {
			errs = append(errs, err)
		} else {
			set.byName["slack"] = s
			set.wire = append(set.wire, func(d *dispatch.Dispatcher, srv *api.Server) func(context.Context) error {
				ix := s.Interactions(d)
				srv.Mount("POST /slack/interactions", ix)
				return ix.Run // Socket Mode with slack.app_token; drains callback work on stop
			})
		}
	}
	if cfg.Discord != nil {
		s, err := discord.New(cfg, discord.Options{Store: store, Links: links, Registry: reg, Logger: log})
		if err != nil {
			errs = append(errs, err)
		} else {
			set.byName["discord"] = s
			set.wire = append(set.wire, func(d *dispatch.Dispatcher, srv *api.Server) func(context.Context) error {
				ix := s.Interactions(d)
				srv.Mount("POST /discord/interactions", ix)
				return ix.Run // the gateway with discord.gateway; drains callback work on stop
			})
		}
	}
	return set, errors.Join(errs...)
}

// loopbackURL is the URL of the API listening on addr, reached on this
// machine: a listener on every address (0.0.0.0, [::]) is reached on
// 127.0.0.1.
func loopbackURL(addr net.Addr) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	ip := ta.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(ta.Port))
}

// Addr is the address the API listens on.
func (a *App) Addr() string { return a.ln.Addr().String() }

// URL is the API's base URL.
func (a *App) URL() string { return "http://" + a.Addr() }

// Web is the app's web inbox: its signed links, its one-time sign-in links.
func (a *App) Web() *web.Server { return a.web }

// Store is the app's pending-request store.
func (a *App) Store() *pending.Store { return a.store }

// Run serves until ctx ends or a part fails, then stops every part and
// waits for them. Long-polls in flight answer at once when the server
// shuts down, with their requests still pending.
func (a *App) Run(ctx context.Context) error {
	var g group
	// The surfaces' parts stop once the HTTP server has finished its
	// handlers, not with it: a Slack or Discord callback the server is
	// still reading hands its work (recording the answer, after the ack)
	// to its surface, and a surface that had already drained would run
	// it unwaited, against a Redis client about to close: an acked
	// answer lost.
	served := make(chan struct{})
	g.add(func(ctx context.Context) error {
		defer close(served)
		errc := make(chan error, 1)
		go func() { errc <- a.srv.Serve(a.ln) }()
		select {
		case err := <-errc:
			return fmt.Errorf("http server: %w", err)
		case <-ctx.Done():
		}
		if a.mcp != nil {
			// Before the listener closes: the sessions' questions are
			// withdrawn through it, and their held POSTs end.
			a.mcp.Close()
		}
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.srv.Shutdown(shutdown); err != nil {
			return fmt.Errorf("http server: requests still running 10 s after the stop were cut off: %w", err)
		}
		return nil
	})
	g.add(a.store.Run)
	g.add(func(ctx context.Context) error {
		return a.store.RunSweeper(ctx, a.cfg.Store.SweepInterval.D(), a.dispatch.Expired)
	})
	g.add(func(ctx context.Context) error {
		return a.store.RunFinisher(ctx, a.cfg.Store.SweepInterval.D(), a.dispatch.Finished)
	})
	g.add(func(ctx context.Context) error {
		return a.dispatch.RunReposter(ctx, pending.PostingLease/2)
	})
	if a.embedded != nil {
		g.add(a.embedded.Run)
	}
	// Told to stop (SIGTERM), or with a part stopped, the replica says so
	// at once: what follows (held calls answering, posts in flight
	// finishing) may take a while, and without the line a replica stopped
	// in order can't be told from one killed. A part that failed returned
	// first, so its error is the group's.
	g.add(func(ctx context.Context) error {
		<-ctx.Done()
		a.log.Info("stopping: held calls answer now, posts in flight finish first", "addr", a.Addr())
		return nil
	})
	for _, p := range a.parts {
		g.add(func(ctx context.Context) error {
			pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
			defer stop()
			go func() {
				select {
				case <-served:
				case <-pctx.Done():
				}
				stop()
			}()
			return p(pctx)
		})
	}
	a.log.Info("askbridge listening", "addr", a.Addr(), "open_api", a.cfg.OpenAPI())
	a.logInbox()
	err := g.run(ctx)
	// A create whose caller went with the HTTP server still posts and
	// records its messages; Redis must stay open for it.
	drain, cancel := context.WithTimeout(context.Background(), pending.PostingLease)
	a.dispatch.Drain(drain)
	cancel()
	a.Close()
	if err == nil {
		a.log.Info("askbridge stopped", "addr", a.Addr())
	}
	return err
}

// logInbox says where the web inbox is. With no API tokens it prints a
// one-time sign-in link, so the quick start ends in a page where a
// question can be answered. The link is written whatever log.level: it
// is an INFO line, but the way into the inbox, and log.level: warn must
// not hide it (bridge signin-link prints another, but only to someone who
// knows of it).
func (a *App) logInbox() {
	if link := a.web.SignInLink(a.inboxBase()); link != "" {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "web inbox: open this one-time sign-in link in a browser to answer questions (bridge signin-link prints another)", 0)
		r.AddAttrs(slog.String("url", link))
		// The handler, not the logger: Logger.Log drops a record below
		// the handler's level, Handle writes it.
		_ = a.log.Handler().Handle(context.Background(), r)
		return
	}
	a.log.Info("web inbox: sign in with an API token that has the answer scope", "url", a.inboxBase()+"/")
}

// inboxBase is the URL people reach the web inbox at.
func (a *App) inboxBase() string {
	if a.cfg.BaseURL != "" {
		return a.cfg.PublicURL()
	}
	return a.URL()
}

// Close releases what New acquired. Run calls it when it ends.
func (a *App) Close() {
	a.closed.Do(func() {
		if a.srv != nil {
			a.srv.Close()
		} else if a.ln != nil {
			a.ln.Close()
		}
		if a.rdb != nil {
			a.rdb.Close()
		}
		if a.embedded != nil {
			a.embedded.Close()
		}
		if a.unlog != nil {
			a.unlog()
		}
	})
}

// group runs functions until the first returns, then cancels the rest and
// waits for them: when one part stops, all stop.
type group struct{ fns []func(context.Context) error }

func (g *group) add(f func(context.Context) error) { g.fns = append(g.fns, f) }

func (g *group) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, f := range g.fns {
		wg.Go(func() {
			// The first error is the group's, whichever part returned
			// first: a part that stops in order returns nil, and must not
			// hide one that failed while stopping (an HTTP shutdown that
			// ran out with handlers still going).
			if err := f(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.Canceled) {
				once.Do(func() { first = err })
			}
			cancel()
		})
	}
	wg.Wait()
	return first
}

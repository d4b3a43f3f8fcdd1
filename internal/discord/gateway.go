package discord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/askbridge/askbridge/internal/surface"
)

// gatewayLease names the lease of the one replica that holds the gateway:
// Discord delivers each interaction to every session of a bot, so with
// several replicas connected each click would be handled several times.
const gatewayLease = "discord-gateway"

// gateway holds the gateway while this replica holds the lease, renewing
// it every third of its length, until ctx ends. A replica that loses the
// lease closes its session: told so by Redis, or once it could not renew
// it in time (another replica may take it then, and Discord would deliver
// each interaction to both). One that stops gives the lease up so another
// takes over at once.
func (h *Interactions) gateway(ctx context.Context) error {
	var b [8]byte
	rand.Read(b[:])
	holder := hex.EncodeToString(b[:])
	ttl := h.s.opt.LeaseTTL
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	var sess *gatewaySession
	var renewed time.Time // when the last renewal that held was sent
	defer func() {
		if sess != nil {
			_ = sess.Close()
		}
		rel, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := h.s.store.ReleaseLease(rel, gatewayLease, holder); err != nil {
			h.log.Warn("giving up the gateway lease failed", "err", err)
		}
	}()
	for {
		// Within a third of the lease: a Redis that takes the command and
		// never answers (packets dropped) must not hold the check below
		// past the lease. (go-redis reads past a context's deadline until
		// its ReadTimeout, 3 s by default, so a renewal can take a third of
		// the lease and 3 s; with the 30 s lease that still disconnects
		// before the lease passes.)
		sent := time.Now()
		lctx, cancel := context.WithTimeout(ctx, ttl/3)
		ok, err := h.s.store.Lease(lctx, gatewayLease, holder, ttl)
		cancel()
		if err == nil && ok {
			renewed = sent
		}
		switch {
		case err != nil && ctx.Err() == nil:
			h.log.Warn("renewing the gateway lease failed", "err", err)
			// The next try comes a third of the lease from now, too late if
			// the lease has passed by then.
			if sess != nil && time.Since(renewed)+ttl/3 >= ttl {
				h.log.Warn("the gateway lease could not be renewed in time; disconnecting until it is")
				_ = sess.Close()
				sess = nil
			}
		case ok && sess == nil:
			if sess, err = h.openGateway(ctx); tokenRefused(err) {
				// Retrying would not help, and would hide it in the log.
				return errors.New("Discord refused discord.bot_token (gateway: authentication failed): " +
					"copy the bot's token again, or reset it (Developer Portal → your app → Bot → Reset Token)")
			} else if err != nil {
				if ctx.Err() == nil { // else cut short by the stop
					h.log.Warn("opening the discord gateway failed; retrying", "err", err)
				}
				sess = nil
			} else {
				h.log.Info("discord gateway connected; this replica takes interactions")
			}
		case err == nil && !ok && sess != nil:
			h.log.Warn("lost the gateway lease to another replica; disconnecting")
			_ = sess.Close()
			sess = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// tokenRefused reports whether err, from opening a gateway session, is
// Discord refusing the bot token: the gateway closes with 4004
// (Authentication failed) after the identify, or a REST call answers 401.
func tokenRefused(err error) bool {
	var ce *websocket.CloseError
	var re *discordgo.RESTError
	return errors.As(err, &ce) && ce.Code == 4004 ||
		errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized
}

// openGateway connects a gateway session whose interactions go to the
// same handler as the endpoint's, decoded from the raw event. Its
// handshake is cut when ctx ends.
func (h *Interactions) openGateway(ctx context.Context) (*gatewaySession, error) {
	sess, err := newSession(h.s.cfg, h.s.api.Client)
	if err != nil {
		return nil, err
	}
	sess.Client = h.s.api.Client
	// discordgo reopens a session that dropped by itself (resuming it),
	// saying so only through these events. Handled in turn, not each in
	// a goroutine of its own, so that a drop and the reconnect after it
	// reach the metrics in the order they happened.
	sess.SyncEvents = true
	g := &gatewaySession{Session: sess, conn: h.s.conn, within: h.s.opt.GatewayHandshake}
	// Every connection of the session, discordgo's reconnections too, is
	// dialled through g, which bounds its handshake (HandshakeTimeout
	// bounds the HTTP upgrade alone, and discordgo's is 45 s).
	sess.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: g.within, NetDialContext: g.dial}
	sess.AddHandler(func(*discordgo.Session, *discordgo.Connect) {
		// Open says Connect once READY came: the connection is up, for
		// as long as the session keeps it.
		g.ready()
		if g.closed.Load() {
			// Reopened by discordgo's reconnect loop, which Close does not
			// stop, after this replica closed it (it lost the lease, or is
			// stopping). Open holds the session's lock while it runs this.
			go sess.Close()
			return
		}
		h.s.conn.Up()
	})
	sess.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) {
		if !g.closed.Load() {
			h.s.conn.Down()
		}
	})
	sess.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		// One that came over a session closed and reopened behind our
		// back is the lease holder's to handle.
		if e.Type == "INTERACTION_CREATE" && !g.closed.Load() {
			raw := append([]byte(nil), e.RawData...)
			h.work.Go(func(ctx context.Context) { h.fromGateway(ctx, raw) })
		}
	})
	// A replica that stops while the gateway stalls has no session yet to
	// close: Open is to fail now, not once g.within has passed. (Never
	// undone: a session whose Open failed is dropped, and one that opened
	// all the same is closed, ctx having ended.)
	stop := context.AfterFunc(ctx, func() { g.abandon() })
	err = sess.Open()
	stop()
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = h.s.shown(ue.URL) // GET /gateway, sent to discord.api_url
		}
		return nil, fmt.Errorf("discord gateway: %w", err)
	}
	return g, nil
}

// gatewaySession is a gateway session of this replica's. discordgo reopens
// a session that dropped by itself, in a loop of its own that Close does
// not stop: one this replica closed may come back while the loop retries,
// a session nothing owns beside the new lease holder's. Once closed, its
// handlers close it again whenever it reconnects, and take nothing from it.
//
// discordgo reads the gateway's HELLO and READY with no deadline, holding
// the session's lock, which Close waits for: a gateway that took the
// connection and said nothing held Open, and Close after it, for good. So
// every connection is dialled through dial, and its handshake, from
// dialling to READY, is cut once within has passed, or when abandoned.
type gatewaySession struct {
	*discordgo.Session
	conn   *surface.Connection
	closed atomic.Bool
	within time.Duration // a handshake's time

	mu sync.Mutex
	// last is the handshake of the connection dialled last: Open, which
	// dials, runs one at a time, and Connect ends it.
	last *handshake
	// While abandoned > 0, handshakes are cut: the one under way and any
	// that begins.
	abandoned int
}

var (
	errHandshakeStalled   = errors.New("gateway handshake stalled")
	errHandshakeAbandoned = errors.New("gateway handshake abandoned: the session is closing")
)

// Close closes the session for good. A reconnection of discordgo's under
// way is cut first: Close waits for the session's lock, which its Open
// holds.
func (g *gatewaySession) Close() error {
	g.closed.Store(true)
	undo := g.abandon()
	err := g.Session.Close()
	// Reconnections after this one are left to succeed, when the Connect
	// handler closes them again: that ends discordgo's loop, which would
	// otherwise go on retrying for as long as the process runs.
	undo()
	g.conn.Down() // its Disconnect no longer says so
	return err
}

// abandon cuts the handshake under way, and any that begins until undo
// is called.
func (g *gatewaySession) abandon() (undo func()) {
	g.mu.Lock()
	g.abandoned++
	hs := g.last
	g.mu.Unlock()
	if hs != nil {
		hs.cut(errHandshakeAbandoned)
	}
	return func() {
		g.mu.Lock()
		g.abandoned--
		g.mu.Unlock()
	}
}

// ready ends the handshake of the connection that came up: it lasts
// from now on as long as the session keeps it, with no deadline.
func (g *gatewaySession) ready() {
	g.mu.Lock()
	hs := g.last
	g.mu.Unlock()
	if hs != nil {
		hs.end()
	}
}

// dial is the NetDialContext of the session's websocket dialer: it
// starts a handshake, cut within g.within unless it ends before.
func (g *gatewaySession) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hs := &handshake{cancel: cancel}
	hs.timer = time.AfterFunc(g.within, func() {
		hs.cut(fmt.Errorf("%w: not READY within %s of dialling", errHandshakeStalled, g.within))
	})
	g.mu.Lock()
	g.last = hs
	abandoned := g.abandoned > 0
	g.mu.Unlock()
	if abandoned {
		hs.cut(errHandshakeAbandoned)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	return hs.dialled(c, err)
}

// handshake is a gateway connection's way from dialling to READY.
type handshake struct {
	cancel context.CancelCauseFunc // the dial's
	timer  *time.Timer             // cuts it

	mu   sync.Mutex
	conn net.Conn // once dialled
	over bool     // cut or ended
	err  error    // why it was cut
}

// cut ends the handshake with err: its dial fails, or its connection is
// closed and its reads and writes fail with err.
func (hs *handshake) cut(err error) {
	hs.mu.Lock()
	if hs.over {
		hs.mu.Unlock()
		return
	}
	hs.over, hs.err = true, err
	c := hs.conn
	hs.mu.Unlock()
	hs.cancel(err)
	if c != nil {
		c.Close()
	}
}

// end ends the handshake uncut: the connection came up, or was closed.
func (hs *handshake) end() {
	hs.mu.Lock()
	hs.over = true
	hs.mu.Unlock()
	hs.timer.Stop()
}

// failed is why the handshake was cut; nil if it was not.
func (hs *handshake) failed() error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.err
}

// dialled takes the dial's outcome: the connection, unless the handshake
// was cut meanwhile.
func (hs *handshake) dialled(c net.Conn, err error) (net.Conn, error) {
	hs.mu.Lock()
	cut := hs.err
	if err == nil && cut == nil {
		hs.conn = c
	}
	hs.mu.Unlock()
	switch {
	case cut != nil:
		if err == nil {
			c.Close()
		}
		hs.end()
		return nil, cut
	case err != nil:
		hs.end()
		return nil, err
	}
	return &handshakeConn{Conn: c, hs: hs}, nil
}

// handshakeConn is a gateway connection: once its handshake was cut, its
// reads and writes fail saying why, rather than with a closed
// connection's error.
type handshakeConn struct {
	net.Conn
	hs *handshake
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		if cut := c.hs.failed(); cut != nil {
			err = cut
		}
	}
	return n, err
}

func (c *handshakeConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		if cut := c.hs.failed(); cut != nil {
			err = cut
		}
	}
	return n, err
}

// Close closes the connection, and ends its handshake if it is under way.
func (c *handshakeConn) Close() error {
	c.hs.end()
	return c.Conn.Close()
}

// gatewayCallback is the least of the ack budget a gateway interaction's
// callback keeps for itself.
const gatewayCallback = 750 * time.Millisecond

// gatewayDeadlines splits the ack budget of a gateway interaction received
// at received: Discord's 3 s run from when it sent the event, and the
// response must reach it through a second call, so the handler stops by
// handleBy and the callback by answerBy, together within the budget.
func gatewayDeadlines(received time.Time) (handleBy, answerBy time.Time) {
	answerBy = received.Add(surface.AckBudget)
	return answerBy.Add(-gatewayCallback), answerBy
}

// fromGateway handles an interaction from the gateway and sends its
// response through the callback endpoint.
func (h *Interactions) fromGateway(ctx context.Context, raw []byte) {
	var in interaction
	if err := json.Unmarshal(raw, &in); err != nil || in.ID == "" || in.Token == "" {
		return
	}
	handleBy, answerBy := gatewayDeadlines(time.Now())
	hctx, cancel := context.WithDeadline(ctx, handleBy)
	resp := h.handle(hctx, &in)
	cancel()
	ctx, cancel = context.WithDeadline(ctx, answerBy)
	defer cancel()
	body, err := json.Marshal(resp)
	if err == nil {
		err = h.s.call(ctx, "interaction callback", func(opts ...discordgo.RequestOption) error {
			// The interaction is its callback's bucket (Discord limits it
			// alone, and not globally), taken from a limiter of its own:
			// discordgo's keeps every bucket it makes, one per click in
			// the session's.
			endpoint := discordgo.EndpointInteractionResponse(in.ID, in.Token)
			bucket := discordgo.NewRatelimiter().LockBucket(discordgo.EndpointInteractionResponse(in.ID, ""))
			_, err := h.s.api.RequestWithLockedBucket(http.MethodPost, endpoint, "application/json", body, bucket, 0, opts...)
			return err
		})
	}
	if err != nil {
		h.log.Warn("answering a gateway interaction failed", "err", err)
	}
	resp.delivered(err)
}

// Package discord is askbridge's Discord surface: it posts every request as
// a message with components (buttons, selects, modals) within Discord's
// limits, takes the clicks and modal submissions back over the signed
// Interactions Endpoint URL or the gateway, and edits every message when its
// request ends.
//
// Requests go out through discordgo's REST client with its own 429 and 502
// retries turned off: every call runs under surface.Retry, the policy the
// Slack surface uses too. Interactions are decoded by this package, not by
// discordgo, so that modal components discordgo does not know (Label, type
// 18) are read as well.
package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// surfaceName is the name of this surface in routes, posts and responders.
const surfaceName = "discord"

// Options tune a Surface beyond its config. The zero value of every field
// has a default.
type Options struct {
	Store      *pending.Store // reads requests on callbacks; required
	Logger     *slog.Logger
	Retry      surface.Retry
	HTTPClient *http.Client     // default: surface.HTTPClient(); its Transport is wrapped
	Now        func() time.Time // default time.Now
	// Links gives the signed web links of requests, for an "Open in
	// browser" button; nil: no button.
	Links surface.Links
	// LeaseTTL is how long the gateway lease lasts without renewal; the
	// holder renews it every third of that. Default 30 s.
	LeaseTTL time.Duration
	// GatewayHandshake is how long a gateway connection may take from
	// dialling to READY before it is given up. Default 10 s, the default
	// lease's renewal period: a stalled gateway holds up one at most.
	GatewayHandshake time.Duration
	// Registry is where the gateway's connection metrics go, with
	// discord.gateway; nil: nowhere.
	Registry prometheus.Registerer
}

// Surface posts requests to Discord and edits their messages when they
// end. It implements dispatch.Surface.
type Surface struct {
	cfg   *config.Discord
	api   *discordgo.Session // REST only; the gateway opens sessions of its own
	store *pending.Store
	retry surface.Retry
	log   *slog.Logger
	now   func() time.Time
	opt   Options
	conn  *surface.Connection // the gateway's, with discord.gateway; else nil

	// inPlace is how a click's own message is edited in the interaction
	// response (UPDATE_MESSAGE) instead of through the REST API.
	inPlace *inPlace

	targets map[string]*config.DiscordTarget   // by target key, "route/index"
	routes  map[string][]*config.DiscordTarget // by route name
}

// New builds the Discord surface of cfg: its discord: section and the
// Discord targets of its routes.
func New(cfg *config.Config, opt Options) (*Surface, error) {
	dc := cfg.Discord
	switch {
	case dc == nil:
		return nil, errors.New("discord: the config has no discord: section")
	case dc.BotToken.Reveal() == "":
		return nil, errors.New("discord.bot_token: required")
	case dc.PublicKey == "" && !dc.Gateway:
		return nil, errors.New("discord: set public_key (Interactions Endpoint URL) or gateway: true")
	case opt.Store == nil:
		return nil, errors.New("discord: no store")
	}
	if _, err := publicKey(dc.PublicKey); dc.PublicKey != "" && err != nil {
		return nil, err
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = surface.HTTPClient()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = 30 * time.Second
	}
	if opt.GatewayHandshake <= 0 {
		opt.GatewayHandshake = 10 * time.Second
	}
	api, err := newSession(dc, opt.HTTPClient)
	if err != nil {
		return nil, err
	}
	s := &Surface{
		cfg:     dc,
		api:     api,
		store:   opt.Store,
		retry:   opt.Retry,
		log:     opt.Logger.With("surface", surfaceName),
		now:     opt.Now,
		opt:     opt,
		inPlace: newInPlace(),
		targets: map[string]*config.DiscordTarget{},
		routes:  map[string][]*config.DiscordTarget{},
	}
	if dc.Gateway {
		s.conn = surface.NewConnection(opt.Registry, surfaceName)
	}
	for _, r := range cfg.Routes {
		for i, t := range r.Targets {
			if t.Discord == nil {
				continue
			}
			s.targets[dispatch.TargetKey(r.Name, i)] = t.Discord
			s.routes[r.Name] = append(s.routes[r.Name], t.Discord)
		}
	}
	return s, nil
}

// newSession returns a discordgo session that talks to discord.api_url
// and leaves retrying to us.
func newSession(dc *config.Discord, client *http.Client) (*discordgo.Session, error) {
	base, err := url.Parse(dc.APIURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, errors.New("discord.api_url must be an absolute URL")
	}
	api, err := discordgo.New("Bot " + dc.BotToken.Reveal())
	if err != nil {
		return nil, errors.New("discord: creating the client failed")
	}
	c := *client
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &rewrite{from: discordgo.EndpointAPI, to: base.String(), next: next}
	api.Client = &c
	api.ShouldRetryOnRateLimit = false // surface.Retry waits Retry-After instead
	api.MaxRestRetries = 0             // and retries 5xx with backoff
	api.Identify.Intents = discordgo.IntentsNone
	api.LogLevel = -1 // discordgo's own log lines may quote bodies and URLs
	return api, nil
}

// rewrite sends discordgo's requests, which it builds on its fixed
// EndpointAPI, to discord.api_url, and records each response's status for
// the retry policy (discordgo reports a 502 without it).
type rewrite struct {
	from, to string
	next     http.RoundTripper
}

func (t *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	if u := req.URL.String(); strings.HasPrefix(u, t.from) {
		nu, err := url.Parse(t.to + strings.TrimPrefix(u, t.from))
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.URL, req.Host = nu, nu.Host
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if rec, ok := req.Context().Value(statusKey{}).(*statusRecord); ok {
		rec.status = resp.StatusCode
		rec.retryAfter = surface.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	capBucketWait(resp.Header)
	return resp, nil
}

// maxBucketWait is the longest discordgo's rate limiter may hold a call
// back before sending it. It waits out a bucket's reset (the
// X-RateLimit-Reset-After of an answer that left the bucket no calls, or
// of a global 429) in a sleep no context ends, holding the bucket's lock,
// so every later call to the bucket queues behind it: after a 429 whose
// bucket resets in minutes, each post to that channel hung that long
// whatever its deadline, an agent's create among them. Capped, a call
// sent too early gets a 429, whose Retry-After surface.Retry waits out
// within the call's deadline, or turns down past surface.Retry.MaxWait.
// Discord's message buckets (5 calls in 5 s) reset within the cap, so
// their calls are still spaced out before they are sent.
const maxBucketWait = 5 * time.Second

// capBucketWait caps the bucket reset an answer's headers tell
// discordgo's rate limiter to wait for at maxBucketWait. It drops
// X-RateLimit-Reset, the absolute time, which discordgo reads only when
// X-RateLimit-Reset-After is missing.
func capBucketWait(h http.Header) {
	h.Del("X-RateLimit-Reset")
	v := h.Get("X-RateLimit-Reset-After")
	if v == "" {
		return
	}
	if secs, err := strconv.ParseFloat(v, 64); err != nil || secs > maxBucketWait.Seconds() || math.IsNaN(secs) {
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(maxBucketWait.Seconds(), 'f', -1, 64))
	}
}

type statusKey struct{}

// statusRecord is the status of the last response of one call.
type statusRecord struct {
	status     int
	retryAfter time.Duration
}

// apiError is a failed Discord call as the retry policy sees it: the
// HTTP status and Retry-After (as a *surface.HTTPError), and the cause.
type apiError struct {
	http  *surface.HTTPError
	cause error
}

func (e *apiError) Error() string   { return e.cause.Error() }
func (e *apiError) Unwrap() []error { return []error{e.http, e.cause} }

// call runs one REST call under the retry policy. f must pass the
// options it gets to discordgo. Its error names the call and never holds
// a token: interaction tokens travel in URL paths, so the URL a transport
// error or a rate-limit error quotes is cut to its host.
func (s *Surface) call(ctx context.Context, name string, f func(opts ...discordgo.RequestOption) error) error {
	return s.callWith(ctx, s.retry, name, f)
}

// callWith is call under the retry policy r.
func (s *Surface) callWith(ctx context.Context, r surface.Retry, name string, f func(opts ...discordgo.RequestOption) error) error {
	err := r.Do(ctx, func(ctx context.Context) error {
		rec := &statusRecord{}
		ctx = context.WithValue(ctx, statusKey{}, rec)
		err := f(discordgo.WithContext(ctx))
		if err == nil {
			return nil
		}
		// Cut before the policy quotes it: its wrapping error ("gave up
		// after 3 attempts: ...") holds the text, not the error.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = s.shown(ue.URL)
		}
		var rl *discordgo.RateLimitError
		if errors.As(err, &rl) && rl.RateLimit != nil {
			rl.URL = s.shown(rl.URL) // its Error() quotes the URL
			if rl.TooManyRequests != nil && rl.RetryAfter > rec.retryAfter {
				rec.status, rec.retryAfter = http.StatusTooManyRequests, rl.RetryAfter
			}
		}
		if rec.status != 0 && (rec.status < 200 || rec.status > 299) {
			return &apiError{http: &surface.HTTPError{Method: name, Status: rec.status, RetryAfter: rec.retryAfter}, cause: err}
		}
		return err
	})
	if err == nil {
		return nil
	}
	if botTokenRefused(err) {
		// A 401 alone leaves the operator to guess which of the keys
		// (bot_token, public_key, application_id) is wrong.
		return fmt.Errorf("discord %s: %w (Discord refused discord.bot_token: copy the bot's token again, or reset it: Developer Portal → your app → Bot → Reset Token)", name, err)
	}
	return fmt.Errorf("discord %s: %w", name, err)
}

// botTokenRefused reports whether err is Discord refusing the bot token:
// a 401 with its generic code 0 ("401: Unauthorized"). A call on an
// interaction's token refused is told apart by its own code (50027,
// Invalid Webhook Token).
func botTokenRefused(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized &&
		(re.Message == nil || re.Message.Code == 0)
}

// shown is the URL of a call as an error quotes it: discordgo names its
// fixed EndpointAPI, which rewrite sent to discord.api_url (a proxy, in
// tests a fake), so the URL is given api_url's host, and cut to it.
func (s *Surface) shown(raw string) string {
	if rw, ok := s.api.Client.Transport.(*rewrite); ok {
		if rest, ok := strings.CutPrefix(raw, rw.from); ok {
			raw = rw.to + rest
		}
	}
	return hostOnly(raw)
}

// hostOnly cuts a URL to its scheme and host: the path of an interaction
// callback or webhook holds a token.
func hostOnly(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "…"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// mentions are the pings a message may make: none but the target's
// configured mention, a role, a user, or @here or @everyone (agent text
// never holds either: esc breaks every "@" it shows).
func mentions(mention string) *discordgo.MessageAllowedMentions {
	am := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	m := strings.TrimSpace(mention)
	if m == "@here" || m == "@everyone" {
		am.Parse = []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeEveryone}
	} else if sub := mentionRE.FindStringSubmatch(m); sub != nil {
		if sub[1] == "&" {
			am.Roles = []string{sub[2]}
		} else {
			am.Users = []string{sub[2]}
		}
	}
	return am
}

var mentionRE = regexp.MustCompile(`^<@([!&]?)(\d+)>$`)

// Post posts rec to the target's channel (into its session's thread with
// thread_by_session) and, when the request is too long for one message,
// the rest of its text as replies.
func (s *Surface) Post(ctx context.Context, rec *pending.Record, t dispatch.Target) ([]pending.Post, error) {
	tc := t.Config.Discord
	if tc == nil {
		return nil, fmt.Errorf("request %s: target %s has no discord section", rec.ID, t.Key)
	}
	log := s.log.With("request_id", rec.ID, "channel", tc.Channel)
	m := s.render(rec, tc)
	var thread, session string
	if tc.ThreadBySession {
		session = surface.SessionKey(surfaceName, rec, tc.Channel)
	}
	if session != "" {
		var err error
		if thread, err = s.store.Thread(ctx, session); err != nil {
			log.Warn("reading the session's thread failed; posting in the channel", "err", err)
		}
	}
	channel := tc.Channel
	if thread != "" {
		channel = thread
	}
	send := &discordgo.MessageSend{
		Content:         m.content,
		Embeds:          m.embeds,
		Components:      m.components,
		AllowedMentions: mentions(tc.Mention),
	}
	msg, err := s.create(ctx, channel, send, nonceOf(rec, t.Key, channel, 0))
	if err != nil && thread != "" && threadGone(err) {
		// Kept, a dead thread would fail every request of the session
		// until its record expires: forget it and start over as a new
		// session does.
		log.Warn("the session's thread is gone; posting in the channel and starting a new thread", "thread", thread, "err", err)
		if err := s.store.ForgetThread(ctx, session, thread); err != nil {
			log.Warn("forgetting the session's thread failed", "err", err)
		}
		thread, channel = "", tc.Channel
		msg, err = s.create(ctx, channel, send, nonceOf(rec, t.Key, channel, 0))
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", rec.ID, err)
	}
	bare := dropped(send.Embeds, msg)
	if bare {
		// Discord drops the embeds of a bot that lacks Embed Links, and
		// says so only in the message it answers with. The message is
		// edited to hold the request's text in its content; deleted and
		// posted again, it would be a create that a retry's nonce answers
		// with the first message.
		log.Warn("Discord posted the request without its embeds, which hold its text: the bot lacks Embed Links in the channel; its text is shown in the message's content instead, cut to 2000 characters, until the bot is let Embed Links there")
		b := m.bare()
		edit := &discordgo.MessageEdit{ID: msg.ID, Channel: channel, Content: &b.content, Embeds: &b.embeds, Components: &b.components, AllowedMentions: send.AllowedMentions}
		if _, err := s.editMessage(ctx, edit); err != nil {
			log.Warn("editing the request's message to show its text without embeds failed", "err", err)
		}
	}
	replyIn, ref := channel, &discordgo.MessageReference{MessageID: msg.ID, ChannelID: channel}
	if session != "" && thread == "" {
		if th, err := s.startThread(ctx, channel, msg.ID, rec); err != nil {
			log.Warn("starting the session's thread failed", "err", err)
		} else if got, err := s.store.SetThread(ctx, session, th); err != nil {
			log.Warn("recording the session's thread failed", "err", err)
		} else if got == th {
			replyIn, ref = th, nil
		}
	}
	for i, more := range m.more {
		if bare {
			// The messages after it would lose their embeds too: the
			// bare message says where the rest is.
			break
		}
		_, err := s.create(ctx, replyIn, &discordgo.MessageSend{
			Content:         fmt.Sprintf("Continued (%d of %d)", i+1, len(m.more)),
			Embeds:          []*discordgo.MessageEmbed{more},
			AllowedMentions: mentions(""),
			Reference:       ref,
		}, nonceOf(rec, t.Key, replyIn, i+1))
		if err != nil {
			// The question and its controls are posted; what is missing is
			// the tail of a long text.
			log.Warn("posting the rest of a long request failed", "err", err)
			break
		}
	}
	return []pending.Post{{Surface: surfaceName, Channel: channel, MessageID: msg.ID, Thread: thread, PostedAt: s.now().UTC(), Bare: bare}}, nil
}

// render renders rec, live, as posted to the target tc: under its
// mention, and on a bridge with a public URL with an "Open in browser"
// button, a link, or, for a target that limits its responders, one that
// hands a personal link on a tap.
func (s *Surface) render(rec *pending.Record, tc *config.DiscordTarget) message {
	m := render(rec, tc.Mention, true)
	switch {
	case s.opt.Links != nil && linkable(tc):
		m.addLink(s.opt.Links.For(rec))
	case s.opt.Links != nil:
		m.addLinkRequest(rec)
	}
	return m
}

// dropped reports whether Discord answered a create or an edit that
// sent embeds with a message that has none: it drops the embeds of a bot
// that lacks Embed Links in the channel, without an error.
func dropped(sent []*discordgo.MessageEmbed, got *discordgo.Message) bool {
	return len(sent) > 0 && got != nil && len(got.Embeds) == 0
}

// editMessage makes edit and returns the message as Discord has it then.
func (s *Surface) editMessage(ctx context.Context, edit *discordgo.MessageEdit) (*discordgo.Message, error) {
	var got *discordgo.Message
	err := s.call(ctx, "edit message", func(opts ...discordgo.RequestOption) (err error) {
		got, err = s.api.ChannelMessageEditComplex(edit, opts...)
		return err
	})
	return got, err
}

// messageCreate is a message create with a nonce, which discordgo's
// MessageSend has no field for. With enforce_nonce, Discord answers a
// create whose nonce the bot used within the last few minutes with the
// message it posted then, instead of posting another.
type messageCreate struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce"`
	EnforceNonce bool   `json:"enforce_nonce"`
}

// create posts one message to channel, with nonce: a create Discord
// applied but answered with a 5xx, or not at all, is retried, and the
// retry must not post the message twice (the copy would never be
// recorded, so never edited, and keep live controls).
func (s *Surface) create(ctx context.Context, channel string, send *discordgo.MessageSend, nonce string) (*discordgo.Message, error) {
	body := &messageCreate{MessageSend: send, Nonce: nonce, EnforceNonce: true}
	endpoint := discordgo.EndpointChannelMessages(channel)
	var msg *discordgo.Message
	err := s.call(ctx, "create message", func(opts ...discordgo.RequestOption) error {
		raw, err := s.api.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, opts...)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &msg)
	})
	if err == nil && (msg == nil || msg.ID == "") {
		err = errors.New("discord create message: the answer names no message")
	}
	return msg, err
}

// nonceOf is the nonce of part of a request's post to one target in one
// channel (part 0 the question, then its continuations): the same on
// every try of that message, a replica's repost after a crash included,
// and different for any other. The request's hash is in it: a request
// discarded and created again under its id, asking something else, is
// another message, which Discord must not answer with the first one's.
// Discord takes up to 25 characters; the letters keep it from reading as
// a number.
func nonceOf(rec *pending.Record, targetKey, channel string, part int) string {
	sum := sha256.Sum256([]byte(rec.ID + "\x00" + rec.Hash + "\x00" + targetKey + "\x00" + channel + "\x00" + strconv.Itoa(part)))
	return "ab" + hex.EncodeToString(sum[:])[:23]
}

// threadGone reports whether a post into a session's thread failed for
// good because of the thread: it was deleted (404, 10003 Unknown
// Channel), a moderator locked it (50083 Thread is archived, 160005
// Thread is locked), or the bot may no longer post in it (50001 Missing
// Access; 50013 Missing Permissions, as when Send Messages in Threads is
// taken away while Send Messages, all the channel needs, is not).
func threadGone(err error) bool {
	// A 404 with or without Discord's code: the route's one object is
	// the channel.
	return refusedWith(err, discordgo.ErrCodeUnknownChannel, discordgo.ErrCodePerformedOperationOnArchivedThread,
		discordgo.ErrCodeThreadIsLocked, discordgo.ErrCodeMissingAccess, discordgo.ErrCodeMissingPermissions)
}

// refusedWith reports whether Discord refused a call with 404 or with one
// of codes.
func refusedWith(err error, codes ...int) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) {
		return false
	}
	if re.Response != nil && re.Response.StatusCode == http.StatusNotFound {
		return true
	}
	return re.Message != nil && slices.Contains(codes, re.Message.Code)
}

// alreadyStarted reports whether Discord refused a thread's start because
// the message has one (400, 160004). The same code in a 5xx's body is not
// Discord's refusal: whether the thread exists is unknown.
func alreadyStarted(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusBadRequest &&
		re.Message != nil && re.Message.Code == discordgo.ErrCodeThreadAlreadyCreatedForThisMessage
}

// startThread starts the thread of a session from its first message.
func (s *Surface) startThread(ctx context.Context, channel, msgID string, rec *pending.Record) (string, error) {
	var th *discordgo.Channel
	err := s.call(ctx, "start thread", func(opts ...discordgo.RequestOption) error {
		// The channel is the call's bucket, as Discord limits it (the
		// route's top-level resource): discordgo's MessageThreadStartComplex
		// takes the message's, and its limiter keeps every bucket it
		// makes, one a session.
		raw, err := s.api.RequestWithBucketID(http.MethodPost, discordgo.EndpointChannelMessageThread(channel, msgID),
			&discordgo.ThreadStart{Name: threadName(rec), AutoArchiveDuration: 10080}, discordgo.EndpointChannelMessageThread(channel, ""), opts...)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &th)
	})
	if alreadyStarted(err) {
		// A try that Discord carried out but answered with a 5xx, or
		// not at all: the retry finds the thread there, and a thread
		// started from a message shares its id.
		return msgID, nil
	}
	if err == nil && (th == nil || th.ID == "") {
		err = errors.New("discord start thread: the answer names no thread")
	}
	if err != nil {
		return "", err
	}
	return th.ID, nil
}

// threadName names the thread of rec's session: who asks, and the session.
func threadName(rec *pending.Record) string {
	return clean(surface.OneLine(surface.Asker(rec.Caller)+" · "+rec.Caller.Session), 100)
}

// Finish edits a message of an ended request: the request stays readable,
// its controls go, and a line says how it ended. A message whose click is
// being answered in place gets the outcome in that answer instead.
func (s *Surface) Finish(ctx context.Context, rec *pending.Record, p pending.Post) error {
	if rec.Status == seam.StatusPending {
		return nil
	}
	if sent := s.inPlace.deliver(p.MessageID, rec); sent != nil {
		// The click's response edits the message, if it reaches Discord:
		// past Discord's 3 s, or a gateway callback refused, it does not,
		// and the message is edited here instead (twice does no harm).
		t := time.NewTimer(inPlaceWait)
		defer t.Stop()
		select {
		case err := <-sent:
			if err == nil {
				return nil
			}
			s.log.Info("a click's response did not reach Discord; editing its message", "request_id", rec.ID, "err", err)
		case <-t.C:
			s.log.Info("a click's response was not confirmed; editing its message", "request_id", rec.ID)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Ended, the message loses its controls, its Open in browser button
	// too: cut where Discord drops its embeds (bare), it says the whole
	// request is in the web inbox, where it stays, not behind a button
	// that is gone.
	m := render(rec, "", false)
	if p.Bare {
		// Posted where Discord drops the bot's embeds: the outcome goes
		// above the request's text, in the content, in one edit. Sent
		// with its embeds, the message would show its outcome above no
		// request until a second edit put the text back.
		m = m.bare()
	}
	edit := &discordgo.MessageEdit{
		ID:              p.MessageID,
		Channel:         p.Channel,
		Content:         &m.content,
		Embeds:          &m.embeds,
		Components:      &m.components,
		AllowedMentions: mentions(""),
	}
	editMessage := func() error {
		got, err := s.editMessage(ctx, edit)
		if err == nil && dropped(*edit.Embeds, got) {
			// Its channel drops the bot's embeds, which its post did not
			// (the bot lost Embed Links since, or the post was recorded
			// before posts said so): the outcome would show above no
			// request. Edited again, the message holds the request's text
			// in its content. Only this first sight of it costs two edits.
			bare := m.bare()
			edit.Content, edit.Embeds = &bare.content, &bare.embeds
			_, err = s.editMessage(ctx, edit)
		}
		return err
	}
	err := editMessage()
	// Its thread was closed (by a person, or by Discord after a week
	// without a message): one that is not locked can be opened again,
	// which any member who may post there can do, the message edited, and
	// the thread closed again, as it was found. Left, the message would
	// keep its buttons. A locked thread stays shut to a bot without Manage
	// Threads. Another edit in the same thread may close it between this
	// one's opening and its edit: it is opened again, a few times.
	for try := 0; archived(err) && try < maxThreadOpens; try++ {
		opened, oerr := s.openThread(ctx, p.Channel)
		if oerr != nil {
			s.log.Info("the thread of an ended request's message is archived and could not be opened", "request_id", rec.ID, "thread", p.Channel, "err", oerr)
			break
		}
		if locked(opened) {
			// Opened by its creator, the bot (Discord's Threads topic
			// allows it), a locked thread still refuses the edit: it is
			// closed again, as it was found.
			s.closeThread(ctx, rec, p.Channel, opened)
			break
		}
		s.log.Info("opened the archived thread of an ended request's message to edit it", "request_id", rec.ID, "thread", p.Channel)
		if err = editMessage(); err == nil {
			s.closeThread(ctx, rec, p.Channel, opened)
		}
	}
	if err != nil && uneditable(err) {
		// Retrying would not help: a finisher would try for an hour.
		s.log.Info("a message of an ended request cannot be edited; leaving it", "request_id", rec.ID, "message_id", p.MessageID, "err", err)
		return nil
	}
	return err
}

// archived reports whether Discord refused a call because its thread is
// archived (400, 50083): closed, or locked (which archives it too).
func archived(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodePerformedOperationOnArchivedThread
}

// locked reports whether ch is a thread a moderator locked.
func locked(ch *discordgo.Channel) bool {
	return ch != nil && ch.ThreadMetadata != nil && ch.ThreadMetadata.Locked
}

// maxThreadOpens bounds how many times Finish opens an archived thread
// to edit one message.
const maxThreadOpens = 3

// openThread unarchives thread and returns it as Discord then has it.
func (s *Surface) openThread(ctx context.Context, thread string) (*discordgo.Channel, error) {
	open := false
	var ch *discordgo.Channel
	err := s.call(ctx, "open thread", func(opts ...discordgo.RequestOption) (err error) {
		ch, err = s.api.ChannelEditComplex(thread, &discordgo.ChannelEdit{Archived: &open}, opts...)
		return err
	})
	return ch, err
}

// closeThread archives thread again after Finish opened it (opened is the
// thread as its opening left it) and edited a message in it, unless it
// has moved since: someone wrote in it (which opens a thread too), or it
// was closed, or closed and opened again. A person is using it then, and
// it stays as they left it. The bot started the thread, which lets it
// close it without Manage Threads; should Discord refuse, it stays open.
func (s *Surface) closeThread(ctx context.Context, rec *pending.Record, thread string, opened *discordgo.Channel) {
	var now *discordgo.Channel
	err := s.call(ctx, "read thread", func(opts ...discordgo.RequestOption) (err error) {
		now, err = s.api.Channel(thread, opts...)
		return err
	})
	if err != nil {
		s.log.Info("the thread opened to edit an ended request's message could not be read, and is left open", "request_id", rec.ID, "thread", thread, "err", err)
		return
	}
	if moved(opened, now) {
		s.log.Info("the thread opened to edit an ended request's message was used since, and is left as it is", "request_id", rec.ID, "thread", thread)
		return
	}
	shut := true
	err = s.call(ctx, "close thread", func(opts ...discordgo.RequestOption) error {
		_, err := s.api.ChannelEditComplex(thread, &discordgo.ChannelEdit{Archived: &shut}, opts...)
		return err
	})
	switch {
	case archived(err):
		// Another edit in it closed it first.
	case err != nil:
		s.log.Info("the thread opened to edit an ended request's message could not be closed again", "request_id", rec.ID, "thread", thread, "err", err)
	}
}

// moved reports whether a thread changed between two readings, was and
// now, in a way that says someone used it: a message was posted, or its
// archive status changed (a status changed twice shows in its timestamp),
// or it is closed already. A reading without the thread's metadata counts
// as moved.
func moved(was, now *discordgo.Channel) bool {
	if was == nil || now == nil || was.ThreadMetadata == nil || now.ThreadMetadata == nil {
		return true
	}
	return now.ThreadMetadata.Archived || now.LastMessageID != was.LastMessageID ||
		!now.ThreadMetadata.ArchiveTimestamp.Equal(was.ThreadMetadata.ArchiveTimestamp)
}

// uneditable reports whether an edit failed because the message can never
// be edited: it or its channel was deleted (404: 10008 Unknown Message,
// 10003 Unknown Channel), or its thread was locked or archived (50083,
// 160005). A deleted message shows nobody a live button; retrying the
// others would fail for as long as the finisher tries.
func uneditable(err error) bool {
	return refusedWith(err, discordgo.ErrCodeUnknownMessage, discordgo.ErrCodeUnknownChannel,
		discordgo.ErrCodePerformedOperationOnArchivedThread, discordgo.ErrCodeThreadIsLocked)
}

// target is the configured target a message of rec was posted to: the
// post's recorded target while it still posts to that channel, else (a
// click that beat the recording, an ephemeral message in the same
// channel, or routes edited since: the recorded key may name another
// target now) the route's target in that channel or thread. parent is
// the channel holding the thread channel is, if it is one: a request's
// message in a session's thread can be clicked before its post is
// recorded (Post is still posting the continuations of a long text), and
// only Discord's word tells which target's channel that thread is in. Of
// targets that disagree on who may answer there, it is none (see below).
func (s *Surface) target(rec *pending.Record, channel, parent, msgID string) *config.DiscordTarget {
	here := func(t *config.DiscordTarget) bool {
		return t.Channel == channel || (parent != "" && t.Channel == parent)
	}
	if p, ok := rec.PostOf(surfaceName, "", msgID); ok {
		if t, ok := s.targets[p.Target]; ok && here(t) {
			return t
		}
	}
	// Not listed: any target that posts where the message is may have
	// posted it. When those disagree on who may answer, it is nil: taking
	// the first would let anyone answer a restricted target's message
	// when the first is open.
	var found *config.DiscordTarget
	consider := func(t *config.DiscordTarget) bool {
		switch {
		case found == nil:
			found = t
		case !slices.Equal(found.Responders.Users, t.Responders.Users) || !slices.Equal(found.Responders.Roles, t.Responders.Roles):
			return false
		}
		return true
	}
	for _, p := range rec.Posts {
		if p.Surface == surfaceName && (p.Channel == channel || p.Thread == channel) {
			if t, ok := s.targets[p.Target]; ok && here(t) && !consider(t) {
				return nil
			}
		}
	}
	for _, t := range s.routes[rec.Route] {
		if here(t) && !consider(t) {
			return nil
		}
	}
	return found
}

// linkable reports whether a target's messages may carry the signed
// "Open in browser" link. The link lets whoever holds it answer, and the
// whole channel sees it: a target that limits its responders gets a
// button that hands each of them a personal link instead.
func linkable(tc *config.DiscordTarget) bool {
	return len(tc.Responders.Users) == 0 && len(tc.Responders.Roles) == 0
}

// Package slack is askbridge's Slack surface: it posts every request as a
// Block Kit message answerable in a tap or two from desktop or phone,
// takes the clicks and modal submissions back over the signed Request URL
// or Socket Mode, and edits every message when its request ends.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// surfaceName is the name of this surface in routes, posts and responders.
const surfaceName = "slack"

// Options tune a Surface beyond its config. The zero value of every field
// has a default.
type Options struct {
	Store      *pending.Store // reads requests on callbacks; required
	Logger     *slog.Logger
	Retry      surface.Retry
	HTTPClient *http.Client     // default: surface.HTTPClient()
	GroupTTL   time.Duration    // how long user group members are cached; default 5 min
	Now        func() time.Time // default time.Now
	Links      surface.Links    // the signed web links of requests; nil: no "Open in browser" button
	// Registry is where Socket Mode's connection metrics go, with
	// slack.app_token; nil: nowhere.
	Registry prometheus.Registerer
}

// Surface posts requests to Slack and edits their messages when they end.
// It implements dispatch.Surface.
type Surface struct {
	cfg    *config.Slack
	api    *slackapi.Client
	apiURL string       // with a trailing slash, for chatCall
	http   *http.Client // for chatCall
	store  *pending.Store
	retry  surface.Retry
	log    *slog.Logger
	now    func() time.Time
	who    *responders
	links  surface.Links
	conn   *surface.Connection // Socket Mode's, with slack.app_token; else nil

	targets map[string]*config.SlackTarget // by target key, "route/index"
	routes  map[string][]string            // the keys of each route's targets, by route name
	// mixed are the channels that targets with different responders
	// post to: there a click's carried target key is not enough to
	// decide who may answer (see Interactions.quick).
	mixed map[string]bool

	botID atomic.Pointer[string] // the app's bot, from auth.test once a lookup needs it (ownBot)
	// convs are the conversation ids that targets configured by a
	// person's id or a channel's name posted to, by configured channel
	// (see conversation).
	convs sync.Map
}

// ownBot returns the bot id of the bridge's token, asking Slack
// (auth.test) until it once answers: a message found in a conversation's
// history is the bridge's only when its bot posted it; another app may
// copy its blocks. It is asked from within a post's tries, once each
// (their retries are the post's), and two lookups at once may both ask.
func (s *Surface) ownBot(ctx context.Context) (string, error) {
	if id := s.botID.Load(); id != nil {
		return *id, nil
	}
	who, err := s.api.AuthTestContext(ctx)
	switch {
	case err != nil:
		return "", fmt.Errorf("slack auth.test: %w", err)
	case who.BotID == "":
		return "", errors.New("slack auth.test: the token is not a bot's (no bot_id)")
	}
	s.botID.Store(&who.BotID)
	return who.BotID, nil
}

// New builds the Slack surface of cfg: its slack: section and the Slack
// targets of its routes.
func New(cfg *config.Config, opt Options) (*Surface, error) {
	sc := cfg.Slack
	switch {
	case sc == nil:
		return nil, errors.New("slack: the config has no slack: section")
	case sc.BotToken.Reveal() == "":
		return nil, errors.New("slack.bot_token: required")
	case sc.SigningSecret.Reveal() == "" && sc.AppToken.Reveal() == "":
		return nil, errors.New("slack: set signing_secret (Request URL) or app_token (Socket Mode)")
	case opt.Store == nil:
		return nil, errors.New("slack: no store")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = surface.HTTPClient()
	}
	if opt.GroupTTL <= 0 {
		opt.GroupTTL = 5 * time.Minute
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	apiOpts := []slackapi.Option{slackapi.OptionHTTPClient(opt.HTTPClient)}
	if sc.APIURL != "" {
		apiOpts = append(apiOpts, slackapi.OptionAPIURL(withSlash(sc.APIURL)))
	}
	if tok := sc.AppToken.Reveal(); tok != "" {
		apiOpts = append(apiOpts, slackapi.OptionAppLevelToken(tok))
	}
	apiURL := config.DefaultSlackAPIURL
	if sc.APIURL != "" {
		apiURL = withSlash(sc.APIURL)
	}
	s := &Surface{
		cfg:     sc,
		api:     slackapi.New(sc.BotToken.Reveal(), apiOpts...),
		apiURL:  apiURL,
		http:    opt.HTTPClient,
		store:   opt.Store,
		retry:   opt.Retry,
		log:     opt.Logger.With("surface", surfaceName),
		now:     opt.Now,
		links:   opt.Links,
		targets: map[string]*config.SlackTarget{},
		routes:  map[string][]string{},
		mixed:   map[string]bool{},
	}
	s.who = newResponders(s.groupMembers, opt.GroupTTL, opt.Now)
	if sc.AppToken.Reveal() != "" {
		s.conn = surface.NewConnection(opt.Registry, surfaceName)
	}
	first := map[string]*config.SlackTarget{} // by channel
	for _, r := range cfg.Routes {
		for i, t := range r.Targets {
			if t.Slack == nil {
				continue
			}
			s.targets[dispatch.TargetKey(r.Name, i)] = t.Slack
			s.routes[r.Name] = append(s.routes[r.Name], dispatch.TargetKey(r.Name, i))
			if f, ok := first[t.Slack.Channel]; !ok {
				first[t.Slack.Channel] = t.Slack
			} else if !slices.Equal(f.Responders.Users, t.Slack.Responders.Users) || !slices.Equal(f.Responders.Groups, t.Slack.Responders.Groups) {
				s.mixed[t.Slack.Channel] = true
			}
		}
	}
	return s, nil
}

func withSlash(u string) string {
	if u != "" && u[len(u)-1] != '/' {
		return u + "/"
	}
	return u
}

// call runs one Web API call under the retry policy. Its error names the
// method and never holds a token: slack-go sends tokens in headers and
// bodies, and a transport error's URL loses its query to be sure.
func (s *Surface) call(ctx context.Context, method string, f func(context.Context) error) error {
	err := s.retry.Do(ctx, func(ctx context.Context) error {
		err := f(ctx)
		// Cut before the policy quotes it: its wrapping error ("gave up
		// after 5 attempts: ...") holds the text, not the error.
		var ue *url.Error
		if errors.As(err, &ue) {
			if u, perr := url.Parse(ue.URL); perr == nil {
				u.RawQuery, u.User = "", nil
				ue.URL = u.String()
			}
		}
		return err
	})
	if err == nil {
		return nil
	}
	return fmt.Errorf("slack %s: %w", method, withNeeded(err))
}

// lookFor is findPosts, looking again once after a 429 if Slack's
// Retry-After leaves ctx room to post after it (lookupRoom): for an app
// outside Slack's Marketplace conversations.history takes one call a
// minute, about what a post has in all. A wait that does not fit is an
// error: the post is tried again, since a message posted twice, the second
// recorded, beats one unrecorded and the request refused.
func (s *Surface) lookFor(ctx context.Context, channel, thread string, since time.Time, rec *pending.Record) ([]string, error) {
	found, err := s.findPosts(ctx, channel, thread, since, rec.ID, rec.Hash)
	status, wait := surface.StatusOf(err)
	if status != http.StatusTooManyRequests {
		return found, err
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait+lookupRoom {
		return nil, fmt.Errorf("%w (waiting %s would leave no time to post)", err, wait)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(max(wait, time.Second)):
	}
	return s.findPosts(ctx, channel, thread, since, rec.ID, rec.Hash)
}

// lookupRoom is what a post needs after a lookup's wait: a post's time.
const lookupRoom = 15 * time.Second

func (s *Surface) groupMembers(ctx context.Context, group string) ([]string, error) {
	var users []string
	err := s.call(ctx, "usergroups.users.list", func(ctx context.Context) (err error) {
		users, err = s.api.GetUserGroupMembersContext(ctx, group)
		return err
	})
	return users, err
}

// Post posts rec to the target's channel (into its session's thread with
// thread_by_session) and, when the request is too long for one message,
// the rest of its text as replies in the thread.
func (s *Surface) Post(ctx context.Context, rec *pending.Record, t dispatch.Target) ([]pending.Post, error) {
	tc := t.Config.Slack
	if tc == nil {
		return nil, fmt.Errorf("request %s: target %s has no slack section", rec.ID, t.Key)
	}
	// Narrowed only to log: With formats its attributes at once, and a
	// post seldom logs.
	log := func() *slog.Logger { return s.log.With("request_id", rec.ID, "channel", tc.Channel) }
	build := func(renderer func(*pending.Record, string, bool) message) message {
		m := renderer(rec, tc.Mention, true)
		m.carry(rec, t.Key)
		m.wholeIn(elsewhere(rec.ID, s.links != nil))
		switch {
		case s.links != nil && linkable(tc):
			m.addLink(s.links.For(rec))
		case s.links != nil:
			m.addLinkRequest(rec)
		}
		return m
	}
	m := build(render)
	var thread, session string
	if tc.ThreadBySession {
		session = surface.SessionKey(surfaceName, rec, tc.Channel)
	}
	if session != "" {
		var err error
		if thread, err = s.store.Thread(ctx, session); err != nil {
			log().Warn("reading the session's thread failed; posting at the top level", "err", err)
		}
	}
	var channel, ts string
	// maybe is when the first attempt began whose failure may have come
	// after Slack posted the message: Slack has no idempotency key, so
	// before trying again the bridge looks for that message, lest it be
	// posted twice, the first copy unrecorded and never edited. It looks
	// in the conversation Slack posts to, whose id a target configured
	// by a person's id (their DM with the app) or by a channel's name
	// learns from a post's answer; unknown yet, it looks once the post
	// made again has answered (sweep). looked says it did look first.
	var maybe time.Time
	var looked bool
	post := func() error {
		return s.call(ctx, "chat.postMessage", func(ctx context.Context) (err error) {
			if in := s.conversation(tc.Channel); !maybe.IsZero() && in != "" {
				looked = true
				found, err := s.lookFor(ctx, in, thread, maybe, rec)
				switch {
				case err != nil:
					log().Warn("Slack failed a post that it may have made; looking for the message failed, so it is posted again and may show twice", "err", err)
				case len(found) > 0:
					log().Warn("Slack failed a post that it had made; the message is kept, not posted again", "ts", found[0])
					channel, ts = in, found[0]
					return nil
				}
			}
			began := s.now()
			// A session's later request goes into its thread, where Slack
			// tells only those who follow it: also in the channel, unless
			// the target's mention calls people to it.
			channel, ts, err = s.postMessage(ctx, tc.Channel, chatMessage{text: m.text, blocks: m.blocks, thread: thread, broadcast: tc.Mention == ""})
			if err == nil {
				s.learnConversation(tc.Channel, channel)
			}
			if surface.MayHaveApplied(err) && maybe.IsZero() {
				// A minute early: Slack's clock, which dates the message,
				// may be behind this one.
				maybe, looked = began.Add(-time.Minute), false
			}
			return err
		})
	}
	err := post()
	if err != nil && thread != "" && threadGone(err) {
		// Kept, a thread whose parent was deleted would fail every request
		// of the session until its record expires: forget it and start
		// over as a new session does.
		log().Warn("the session's thread is gone; posting in the channel and starting a new thread", "thread", thread, "err", err)
		if err := s.store.ForgetThread(ctx, session, thread); err != nil {
			log().Warn("forgetting the session's thread failed", "err", err)
		}
		thread = ""
		err = post()
	}
	short := false
	if refusedWith(err, "msg_blocks_too_long") {
		// Slack's limit on a message's text, all blocks together, is not
		// documented and counts more than the text (messageBudget). The
		// refused post posted nothing.
		log().Warn("Slack refused the message as too long (msg_blocks_too_long); posting it shorter, the rest in its thread")
		m = build(renderShort)
		err = post()
		short = true
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", rec.ID, err)
	}
	posts := []pending.Post{{Surface: surfaceName, Channel: channel, MessageID: ts, Thread: thread}}
	if !maybe.IsZero() && !looked {
		// Posted again without a look first: the conversation's id came
		// with this post's answer.
		posts = s.sweep(ctx, log(), rec, channel, thread, maybe, ts)
		ts = posts[0].MessageID
	}
	if session != "" && thread == "" {
		// Two first requests of a session posted at once may both start a
		// thread; the first recorded is the session's from then on.
		if _, err := s.store.SetThread(ctx, session, ts); err != nil {
			log().Warn("recording the session's thread failed", "err", err)
		}
	}
	root := thread
	if root == "" {
		root = ts
	}
	for i, reply := range m.replies {
		text := fmt.Sprintf("Continued (%d of %d)", i+1, len(m.replies))
		err := s.call(ctx, "chat.postMessage", func(ctx context.Context) error {
			_, _, err := s.postMessage(ctx, channel, chatMessage{text: text, blocks: reply, thread: root})
			return err
		})
		if err != nil {
			// The question and its controls are posted; what is missing is
			// the tail of a long text, and the message says it is in the thread.
			log().Warn("posting the rest of a long request in its thread failed", "err", err)
			break
		}
	}
	for i := range posts {
		posts[i].PostedAt = s.now().UTC()
		posts[i].Short = short // its thread holds what the short message had no room for
		posts[i].To = tc.Channel
	}
	return posts, nil
}

// sweep looks in channel (in thread) for the copies of rec posted since
// since, ts, just posted, among them: a post Slack failed after it had
// made it, then made again without looking first, for want of the
// conversation's id. The oldest copy is kept and the others deleted, ts
// among them, so that the request shows once; it returns the copies kept,
// the oldest first: with a copy Slack would not delete, each of them,
// every one to be edited when the request ends. A look that fails keeps
// ts alone, and the copy it did not find is left to a click (Interactions
// records a message it does not list when someone clicks it).
func (s *Surface) sweep(ctx context.Context, log *slog.Logger, rec *pending.Record, channel, thread string, since time.Time, ts string) []pending.Post {
	keep := []pending.Post{{Surface: surfaceName, Channel: channel, MessageID: ts, Thread: thread}}
	found, err := s.lookFor(ctx, channel, thread, since, rec)
	if err != nil {
		log.Warn("Slack failed a post that it may have made, and it was posted again; looking for the first copy failed, so the request may show twice", "err", err)
		return keep
	}
	if !slices.Contains(found, ts) {
		found = append(found, ts)
	}
	if len(found) == 1 {
		return keep
	}
	slices.Sort(found) // a ts is the time of its message, fixed width: the oldest first
	keep = keep[:0]
	for i, copyTS := range found {
		p := pending.Post{Surface: surfaceName, Channel: channel, MessageID: copyTS, Thread: thread}
		if i == 0 {
			keep = append(keep, p)
			continue
		}
		err := s.call(ctx, "chat.delete", func(ctx context.Context) error {
			_, _, err := s.api.DeleteMessageContext(ctx, channel, copyTS)
			return err
		})
		switch {
		case err == nil || refusedWith(err, "message_not_found"):
			log.Warn("Slack failed a post that it had made, and it was posted again; the later copy is deleted", "kept", found[0], "deleted", copyTS)
		default:
			log.Warn("Slack failed a post that it had made, and it was posted again; deleting the later copy failed, so both are kept and edited when the request ends", "ts", copyTS, "err", err)
			keep = append(keep, p)
		}
	}
	return keep
}

// conversation returns the id of the conversation a target's channel
// posts to: the channel itself when it is a conversation's id, else (a
// person's id, whose DM with the app has an id of its own, or a channel's
// name) the id Slack answered a post there with, "" before this replica
// has posted there.
func (s *Surface) conversation(channel string) string {
	if (&config.SlackTarget{Channel: channel}).ByConversationID() {
		return channel
	}
	if id, ok := s.convs.Load(channel); ok {
		return id.(string)
	}
	return ""
}

// learnConversation remembers that a post to a target's channel went to
// conversation id.
func (s *Surface) learnConversation(channel, id string) {
	if channel != id && id != "" {
		s.convs.Store(channel, id)
	}
}

// Finish edits a message of an ended request: the request stays readable,
// its controls go, and a line says how it ended.
func (s *Surface) Finish(ctx context.Context, rec *pending.Record, p pending.Post) error {
	if rec.Status == seam.StatusPending {
		return nil
	}
	// The target's mention, which the message was posted with: its edit
	// cuts the text where the post did.
	var mention string
	if tc, ok := s.targets[p.Target]; ok {
		mention = tc.Mention
	}
	m := render(rec, mention, false)
	if p.Short {
		// Posted short, the rest in its thread: edited, it keeps that
		// text, though Slack may take it whole now (its limit is not
		// exact). Whole, it would show again text its thread holds, and
		// count what continues from the longer cut.
		m = renderShort(rec, mention, false)
	}
	update := func() error {
		return s.call(ctx, "chat.update", func(ctx context.Context) error {
			return s.updateMessage(ctx, p.Channel, p.MessageID, chatMessage{text: m.text, blocks: m.blocks})
		})
	}
	err := update()
	if refusedWith(err, "msg_blocks_too_long") {
		// The status line, which replaced the controls, made it too long:
		// shorter, it keeps the text as posted, which the thread goes on
		// from. (Edited short at once, a message posted whole would lose
		// the text between the two cuts: in neither message nor thread.)
		m = renderBrief(rec, mention, p.Short)
		err = update()
	}
	if refusedWith(err, "msg_blocks_too_long") && !p.Short {
		// As Post: a message posted short ends about as long as the one
		// Slack refused, rendered whole. Its thread holds the rest already.
		// (A post recorded before posts said they went out short.)
		m = renderShort(rec, mention, false)
		err = update()
	}
	if err != nil && uneditable(err) {
		// Retrying would not help: a finisher would try for an hour.
		s.log.Info("a message of an ended request cannot be edited; leaving it", "request_id", rec.ID, "ts", p.MessageID, "err", err)
		return nil
	}
	return err
}

// uneditable reports whether chat.update failed because the message can
// never be edited: a person deleted it (message_not_found), its channel
// was deleted or archived (channel_not_found, is_archived), the bot may
// not edit it (cant_update_message: another token posted it, say), or the
// workspace allows no edits that late (edit_window_closed).
func uneditable(err error) bool {
	return refusedWith(err, "message_not_found", "channel_not_found", "is_archived", "cant_update_message", "edit_window_closed")
}

// refusedWith reports whether Slack refused a call with one of codes
// ({"ok":false,"error":code}).
func refusedWith(err error, codes ...string) bool {
	var se slackapi.SlackErrorResponse
	return errors.As(err, &se) && slices.Contains(codes, se.Err)
}

// formRefused reports whether views.open failed for the form itself, or
// for the app (its token, its workspace), rather than for want of time:
// another click would send the same form and be refused the same way.
// Time ran out when the click's trigger_id expired (it lives 3 s), which
// Slack reports as expired_trigger_id, or as invalid_arguments whose
// messages say that /trigger_id expired; or when the call timed out, or
// Slack stayed busy (5xx, internal_error, rate limits) through the
// retries. Slack refuses a view with invalid_arguments naming its faults
// ("[ERROR] ... [json-pointer:/view/...]"), or view_too_large (past 250
// kB), and a trigger_id not of its format with invalid_trigger_id.
func formRefused(err error) bool {
	status, _ := surface.StatusOf(err)
	var se slackapi.SlackErrorResponse
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		return false
	case !errors.As(err, &se):
		return status >= 400 // an HTTP refusal of Slack's, not a timeout or a lost connection
	case se.Err == "expired_trigger_id":
		return false
	case se.Err == "invalid_arguments":
		return !triggerExpired(se.ResponseMetadata.Messages)
	}
	return true
}

// triggerExpired reports whether Slack's messages of an invalid_arguments
// all say that the call's trigger_id expired ("`trigger_id` expired
// [json-pointer:/trigger_id]").
func triggerExpired(messages []string) bool {
	for _, m := range messages {
		if !strings.Contains(m, "[json-pointer:/trigger_id]") || !strings.Contains(m, "expired") {
			return false
		}
	}
	return len(messages) > 0
}

// slackMessages is what Slack said of a refused call beside its error
// code (response_metadata.messages): the faults it found in a view or
// blocks. They name the call's arguments, never its token.
func slackMessages(err error) []string {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		return se.ResponseMetadata.Messages
	}
	return nil
}

// threadGone reports whether a post into a session's thread failed
// because the thread's parent message is gone: deleted before anyone
// replied (a parent with replies stays, as "This message was deleted").
// Slack's error for it is reported as thread_not_found, as
// invalid_thread_ts and as message_not_found; each means the post can't go
// in that thread.
func threadGone(err error) bool {
	return refusedWith(err, "thread_not_found", "invalid_thread_ts", "message_not_found")
}

// tell tells user, and only user, something about the message they
// clicked: through the click's response_url when it has one, else with
// chat.postEphemeral. A response_url reaches whoever clicked wherever they
// clicked; chat.postEphemeral refuses anyone not in the channel
// (user_not_in_channel) and counts against the Web API's rate limits,
// which the edits of answered messages need.
func (s *Surface) tell(ctx context.Context, responseURL, channel, thread, user, text string) error {
	if s.hooked(responseURL) {
		err := s.respond(ctx, responseURL, text)
		if err == nil {
			return nil
		}
		s.log.Info("a response_url failed; telling through chat.postEphemeral", "err", err)
	}
	return s.ephemeral(ctx, channel, thread, user, text)
}

// hooked reports whether u is a response_url the bridge posts to: on
// Slack's hooks host (commercial or GovSlack), or at the configured API
// URL's origin (a proxy, or a fake in tests). The payload that carried it
// was signed, but the bridge's HTTP client goes nowhere else on its say.
func (s *Surface) hooked(u string) bool {
	if u == "" {
		return false
	}
	ru, err := url.Parse(u)
	if err != nil || ru.User != nil {
		return false
	}
	if ru.Scheme == "https" && (ru.Host == "hooks.slack.com" || ru.Host == "hooks.slack-gov.com") {
		return true
	}
	api, err := url.Parse(s.apiURL)
	return err == nil && ru.Scheme == api.Scheme && ru.Host == api.Host
}

// respond posts text to a response_url as an ephemeral reply, leaving the
// message clicked as it is. A response_url is good for 30 minutes and five
// posts, and anyone holding it can post to the channel: it never goes into
// an error or a log.
func (s *Surface) respond(ctx context.Context, responseURL, text string) error {
	body, err := json.Marshal(struct {
		ResponseType    string `json:"response_type"`
		ReplaceOriginal bool   `json:"replace_original"`
		Text            string `json:"text"`
	}{"ephemeral", false, text})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		return errors.New("response_url: not a URL")
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := s.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("response_url: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("response_url: %s", resp.Status)
	}
	return nil
}

// ephemeral tells user, and only user, something in channel.
func (s *Surface) ephemeral(ctx context.Context, channel, thread, user, text string) error {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread))
	}
	return s.call(ctx, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := s.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
}

// target is the configured target a message of rec was posted to, and
// its key: the post's recorded target while it still posts to that
// channel, else (a click that beat the recording, a message whose
// recording failed or whose post Slack answered with an error, or routes
// edited since: the recorded key may name another target now) the
// route's Slack target that posts to that channel, user having clicked
// there (see postsTo). When several of the route's targets post to the
// channel with different responders, an unrecorded message can't say
// which posted it, and it is nil: taking the first would let anyone
// answer a restricted target's message when the first is open.
func (s *Surface) target(rec *pending.Record, channel, ts, user string) (string, *config.SlackTarget) {
	if channel == "" {
		// No conversation (a modal's origin that names none): PostOf
		// would match rec's message in any, a DM's too, by its ts
		// alone, and postsTo a target configured by a person's id or a
		// channel's name whose conversation this replica has not
		// learned (conversation gives "").
		return "", nil
	}
	if p, ok := rec.PostOf(surfaceName, channel, ts); ok {
		key := p.Target
		if t := s.targets[key]; p.To != "" && (t == nil || t.Channel != p.To) {
			// Routes edited since it was posted gave its key to another
			// target (one added in front of it, say): the one that
			// posted it is the route's target configured as it was.
			key = s.configured(rec.Route, p.To)
		}
		// A target configured by a channel's name, or by a user (a DM),
		// posts where Slack says: its channel can't be compared.
		if t, ok := s.targets[key]; ok && (t.Channel == channel || !t.ByConversationID()) {
			return key, t
		}
	}
	var found string
	for _, key := range s.routes[rec.Route] {
		t, first := s.targets[key], s.targets[found]
		switch {
		case !s.postsTo(t, channel, user):
		case found == "":
			found = key
		case !slices.Equal(first.Responders.Users, t.Responders.Users) || !slices.Equal(first.Responders.Groups, t.Responders.Groups):
			return "", nil
		}
	}
	if found == "" {
		return "", nil
	}
	return found, s.targets[found]
}

// configured returns the key of route's target configured with channel
// (a route names a channel once), or "".
func (s *Surface) configured(route, channel string) string {
	for _, key := range s.routes[route] {
		if s.targets[key].Channel == channel {
			return key
		}
	}
	return ""
}

// channelOf is the channel target key is configured with, or "".
func (s *Surface) channelOf(key string) string {
	if t, ok := s.targets[key]; ok {
		return t.Channel
	}
	return ""
}

// postsTo reports whether target t posts to conversation channel, where
// user clicked. A target configured by a person's id posts to their DM
// with the app (D…), where nobody else can click; one configured by a
// channel's name posts where Slack said when this replica posted there.
func (s *Surface) postsTo(t *config.SlackTarget, channel, user string) bool {
	switch {
	case t.Channel == channel:
		return true
	case t.ByConversationID():
		return false
	case person(t.Channel) && strings.HasPrefix(channel, "D") && t.Channel == user:
		return true
	}
	return s.conversation(t.Channel) == channel
}

// linkable reports whether a target's messages may carry the signed
// "Open in browser" link. The link lets whoever holds it answer, and the
// whole channel sees it: a target that limits its responders gets a
// button that hands each of them a personal link instead.
func linkable(tc *config.SlackTarget) bool {
	return len(tc.Responders.Users) == 0 && len(tc.Responders.Groups) == 0
}

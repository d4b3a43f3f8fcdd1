package discord

// This file is the test kit shared by the package's tests and its external
// end-to-end tests: a fake Discord REST API and signed interactions built
// the way Discord sends them.

import (
	"cmp"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// FakeDiscord is a fake Discord REST API (v10 paths): it creates and edits
// channel messages, starts threads and takes interaction callbacks like
// Discord does (JSON in, the message out; 400 Invalid Form Body for a
// message or response beyond Discord's limits, see InvalidMessage, its
// errors nested by field as Discord nests them, see FormErrors, and 400
// Cannot send an empty message (50006) for one that shows nothing, and
// 400 Invalid Form Body for a thread's start Discord refuses, see
// InvalidThreadStart; 404
// Unknown Message for an edit or delete of a message it did not post in
// that channel; 400 already acknowledged for a second response to an
// interaction's token, by callback or after Acknowledge or Respond; 400
// Invalid Form Body for a callback whose type the interaction, dispatched
// over its gateway, does not take (RefusedResponse); 404 Unknown Webhook for a follow-up or an edit of the
// original response before the interaction was answered, or on a token
// it does not know; 429 with Retry-After and a retry_after body on demand,
// with a route's bucket headers (X-RateLimit-Remaining 0, -Reset-After,
// -Scope) or the global limit's;
// Discord's JSON errors for threads that were deleted or locked; the
// earlier message for a create that repeats a nonce with enforce_nonce)
// and records every call.
type FakeDiscord struct {
	URL   string // the API base URL, with its final /
	Token string // the bot token it accepts

	GatewayURL string // what GET /gateway answers; set by StartGateway

	// App is what GET /applications/@me answers: by default an
	// application with FakeAppID, PublicKeyHex and no Interactions
	// Endpoint URL.
	App FakeApp

	// Guild is the server the fake's channels are in, as GET
	// /guilds/{FakeGuildID} and GET /guilds/{FakeGuildID}/members/{FakeBotID}
	// answer: by default as a bot invited with docs/discord.md's link
	// finds it (FakeGuild).
	Guild FakeGuild

	// CreatorOpensLocked lets the bot open (unarchive) and close a locked
	// thread it started, as Discord's Threads topic says a thread's
	// creator may; its Modify Channel reference says only Manage Threads
	// may, which the fake follows by default. Posts and edits in a
	// locked thread fail either way.
	CreatorOpensLocked bool

	t     testing.TB
	srv   *httptest.Server
	mu    sync.Mutex
	calls []FakeCall
	fails map[string][]FakeFail
	next  int64
	wake  chan struct{}

	threads  map[string]*fakeThread // the threads it started, by id
	holds    []*fakeHold
	posted   []FakeCall                // the creates that posted a message
	nonces   map[string]map[string]any // the message posted with a nonce, by author and nonce
	chans    map[string]fakeChannel    // what GET /channels/{id} answers, by id
	noEmbeds map[string]bool           // the channels where the bot lacks Embed Links (DenyEmbeds)
	acked    map[string]bool           // the interactions a callback answered, by id
	tokens   map[string]bool           // the interaction tokens answered (by callback, Acknowledge or Respond)
	sent     map[string]map[string]any // the interactions dispatched over the gateway or answered through Respond, by id
	clock    int                       // see tick
}

// FakeAppID is the fake's application id.
const FakeAppID = "1200000000000000001"

// FakeApp is the application the fake's bot belongs to.
type FakeApp struct {
	ID              string
	VerifyKey       string // hex Ed25519 public key
	InteractionsURL string // its Interactions Endpoint URL; "" for none
}

// FakeGuildID is the server the fake's channels are in; FakeBotID its
// bot user, who GET /users/@me is.
const (
	FakeGuildID = "1200000000000000003"
	FakeBotID   = "1200000000000000002"
	// FakeBotRoleID is the role Discord made for the bot as it joined,
	// holding the invite link's permissions.
	FakeBotRoleID = "1200000000000000004"
)

// FakeGuild is the fake's server.
type FakeGuild struct {
	OwnerID  string     // not the bot, by default
	Roles    []FakeRole // the first is @everyone, whose id is FakeGuildID
	BotRoles []string   // the bot member's roles: by default FakeBotRoleID
	// BotTimedOutUntil is the bot member's communication_disabled_until:
	// when a moderator's timeout of it ends (or ended); zero for none.
	BotTimedOutUntil time.Time
}

// FakeRole is a role of the fake's server. Permissions are Discord's
// bits, sent as a string of decimal digits as Discord does.
type FakeRole struct {
	ID, Name    string
	Permissions int64
	Mentionable bool
	botOf       string // the bot a managed role belongs to
}

// defaultGuild is a server whose @everyone may view channels, read their
// history, send messages, add reactions and connect and speak in voice,
// but not mention everyone, and where the bot has the role the invite
// link's permissions (309237730304) made for it.
func defaultGuild() FakeGuild {
	const everyone = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages | discordgo.PermissionReadMessageHistory |
		discordgo.PermissionAddReactions | discordgo.PermissionVoiceConnect | discordgo.PermissionVoiceSpeak
	return FakeGuild{
		OwnerID: "1000000000000000099",
		Roles: []FakeRole{
			{ID: FakeGuildID, Name: "@everyone", Permissions: everyone},
			{ID: FakeBotRoleID, Name: "askbridge", Permissions: 309237730304, botOf: FakeBotID},
		},
		BotRoles: []string{FakeBotRoleID},
	}
}

// FakeOverwrite is a channel's permission overwrite: Type 0 for a role
// (@everyone's id is the server's), 1 for a member.
type FakeOverwrite struct {
	ID          string
	Type        int
	Allow, Deny int64
}

// fakeChannel is a channel as GET /channels/{id} answers for the bot.
type fakeChannel struct {
	name       string
	hidden     bool // in a server the bot is not in, or not allowed to view
	typ        int  // Discord's channel type: 0 a text channel
	overwrites []FakeOverwrite
}

// SetOverwrites gives the channel id, set before, its permission
// overwrites, as GET /channels/{id} answers them.
func (f *FakeDiscord) SetOverwrites(id string, ows ...FakeOverwrite) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.chans[id]
	ch.overwrites = ows
	f.chans[id] = ch
}

// SetChannel makes GET /channels/{id} answer with a text channel named
// name, or, when the bot may not view it, GET and posting answer 403
// Missing Access. GET of any other id is 404 Unknown Channel.
func (f *FakeDiscord) SetChannel(id, name string, visible bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chans[id] = fakeChannel{name: name, hidden: !visible}
}

// SetChannelType makes the channel id a visible one of Discord's channel
// type typ (4 a category, 15 a forum, ...).
func (f *FakeDiscord) SetChannelType(id, name string, typ int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chans[id] = fakeChannel{name: name, typ: typ}
}

// DenyEmbeds takes Embed Links from the bot in channel id (and its
// threads), as a channel's permission overwrite may. Discord then posts
// and edits its messages without their embeds, and answers with the
// message as it keeps it ("embeds": []); a message that would be left with
// no content is refused, 403 Missing Permissions. Responses to
// interactions keep their embeds: an app may always Embed Links in them
// (discord-api-docs#5316).
func (f *FakeDiscord) DenyEmbeds(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noEmbeds == nil {
		f.noEmbeds = map[string]bool{}
	}
	f.noEmbeds[id] = true
}

// fakeHold holds the first call it matches until released.
type fakeHold struct {
	kind    string
	match   func(FakeCall) bool
	taken   bool
	arrived chan struct{}
	release chan struct{}
}

// fakeThread is a thread as the fake knows it: the channel it is in,
// what a moderator did to it, when its archive status last changed (its
// thread_metadata.archive_timestamp) and its last message; for one set
// with SetThread, its name, who started it, whether it is private and
// whether the bot is in it (the bot is in those it started).
type fakeThread struct {
	parent                    string
	deleted, locked, archived bool
	stamp                     time.Time
	lastMessage               string
	name, owner               string
	private, joined           bool
}

// FakeThread is a thread a person started, for SetThread.
type FakeThread struct {
	Name   string
	Parent string // the text channel it is in, set with SetChannel
	// Private makes it a private thread (type 12), which Discord shows
	// only to its members and to those who may Manage Threads in its
	// channel: to anyone else GET /channels/{id} answers 403 Missing
	// Access (Discord's Threads topic, Permissions).
	Private bool
	Joined  bool // the bot is a member of it
	// Archived and Locked are its thread_metadata's: a moderator's lock
	// keeps a bot without Manage Threads from posting or editing there.
	Archived, Locked bool
}

// SetThread makes id a thread started by a person in th.Parent, as GET
// /channels/{id} answers it: a channel object of type 11 (12 when
// private) with parent_id, thread_metadata and, when the bot is a member,
// its thread member (Get Channel: "If the channel is a thread, a thread
// member object is included"). A thread takes its channel's permissions;
// the bot sees it only where it may View Channel there.
func (f *FakeDiscord) SetThread(id string, th FakeThread) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threads[id] = &fakeThread{parent: th.Parent, name: th.Name, owner: "1000000000000000042", private: th.Private, joined: th.Joined,
		archived: th.Archived, locked: th.Locked, stamp: f.tick()}
}

// setArchived archives or opens th at now, as Discord does: the archive
// timestamp moves only when the status changes.
func (th *fakeThread) setArchived(archived bool, now time.Time) {
	if th.archived != archived {
		th.archived, th.stamp = archived, now
	}
}

// tick is the fake's clock for threads' archive timestamps: a second
// later on every call, so that two changes never share a timestamp.
// Call with f.mu held.
func (f *FakeDiscord) tick() time.Time {
	f.clock++
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(f.clock) * time.Second)
}

// FakeCall is one call the fake answered. Kind is "create", "edit", "delete",
// "thread", "callback", "followup" or "original" (Edit Original Interaction
// Response: after a DEFERRED_UPDATE_MESSAGE, the edit of the message the
// component was on).
type FakeCall struct {
	Kind      string
	Channel   string
	Parent    string         // the channel holding Channel, when Channel is a thread the fake started
	MessageID string         // the message created or edited
	Body      map[string]any // the JSON sent
	Status    int
	Guild     string // the server a "guild" or "member" read names; User, the member
	User      string

	app, token string // a follow-up's application and interaction token; a callback's token
}

// FakeFail is a failure the fake answers a call with instead of success.
type FakeFail struct {
	Status     int
	RetryAfter float64 // seconds, for a 429
	Global     bool    // a 429 of the global rate limit: X-RateLimit-Global, and no bucket headers
	// Scope is a route's 429's X-RateLimit-Scope: "user" (the default),
	// or "shared" for a resource's limit shared by every bot.
	Scope   string
	Code    int    // Discord's JSON error code; 0 when unset
	Message string // its message; default "Internal Server Error"
	// Applied: Discord carried the call out before the failure, as when
	// a proxy in front of it answers 502 for a create that went through.
	Applied bool
	// Drop closes the connection without an answer, as a proxy or the
	// network may once the call is in (after carrying it out, with
	// Applied). The call is recorded with Status 0.
	Drop bool
	// Pass lets the call through, answered as usual: to fail a later
	// call of its kind.
	Pass bool
}

// NewFakeDiscord starts a fake that accepts token and stops with t.
func NewFakeDiscord(t testing.TB, token string) *FakeDiscord {
	f := &FakeDiscord{Token: token, t: t, fails: map[string][]FakeFail{}, next: 1300000000000000000, wake: make(chan struct{}),
		threads: map[string]*fakeThread{}, nonces: map[string]map[string]any{}, chans: map[string]fakeChannel{}, acked: map[string]bool{}, tokens: map[string]bool{}, sent: map[string]map[string]any{},
		App: FakeApp{ID: FakeAppID, VerifyKey: PublicKeyHex()}, Guild: defaultGuild()}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	f.URL = f.srv.URL + "/api/v10/"
	return f
}

// Acknowledge records that the interaction of token was answered, as an
// HTTP response to an Interactions Endpoint URL answers it, out of the
// fake's sight: follow-ups on token are taken from then on.
func (f *FakeDiscord) Acknowledge(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[token] = true
}

// Respond checks resp, the response to interaction that a bridge gave
// over the Interactions Endpoint URL (its HTTP answer, which Discord takes
// as the response), as Discord does, and returns what Discord would
// refuse in it: what InvalidResponse finds, a response type the
// interaction does not take (RefusedResponse), a second response to the
// interaction's token. The token is answered from then on: follow-ups
// and edits of the response are taken on it.
func (f *FakeDiscord) Respond(interaction, resp map[string]any) []string {
	bad := InvalidResponse(wire(resp))
	if why := RefusedResponse(interaction, resp); why != "" {
		bad = append(bad, why)
	}
	token, _ := interaction["token"].(string)
	id, _ := interaction["id"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[id] = wire(interaction)
	if f.tokens[token] {
		bad = append(bad, "Interaction has already been acknowledged (40060)")
	}
	f.tokens[token] = true
	return bad
}

// RefusedResponse is why Discord refuses resp, by its type, as the
// response to interaction (400 Invalid Form Body, "type: Value must be
// one of {...}"), or "": anything but a PONG (1) to a PING, a PONG to
// anything else, a MODAL (9) to a MODAL_SUBMIT, an UPDATE_MESSAGE (7) or
// DEFERRED_UPDATE_MESSAGE (6) to an interaction without a message (a
// slash command, a form no component opened). (docs: developers/interactions/receiving-and-responding.mdx,
// Interaction Callback Type: 6 and 7 "only valid for component-based
// interactions", 9 "not available for MODAL_SUBMIT and PING"; a form a
// component opened takes 6 and 7 too, twilight-rs/twilight#1697,
// discord-api-docs#8612; the answer's shape, Rapptz/discord.py#9187.)
func RefusedResponse(interaction, resp map[string]any) string {
	interaction, resp = wire(interaction), wire(resp)
	typ, _ := resp["type"].(float64)
	it, _ := interaction["type"].(float64)
	_, onMessage := interaction["message"].(map[string]any)
	var takes string
	switch it {
	case typePing:
		takes = "{1}"
	case typeModalSubmit:
		takes = "{4, 5, 10}"
		if onMessage {
			takes = "{4, 5, 6, 7, 10}"
		}
	case typeComponent:
		takes = "{4, 5, 9, 10, 12}"
		if onMessage {
			takes = "{4, 5, 6, 7, 9, 10, 12}"
		}
	default:
		takes = "{4, 5, 9, 10, 12}"
	}
	if !slices.Contains(strings.Split(strings.Trim(takes, "{}"), ", "), strconv.FormatFloat(typ, 'f', -1, 64)) {
		return fmt.Sprintf("type: Value must be one of %s (a response of type %v to an interaction of type %v)", takes, typ, it)
	}
	return ""
}

// wire is v as JSON carries it: numbers float64.
func wire(v map[string]any) map[string]any {
	raw, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

// dispatched records interaction, sent over the gateway, so that its
// callback is checked against it.
func (f *FakeDiscord) dispatched(interaction map[string]any) {
	in := wire(interaction)
	id, _ := in["id"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[id] = in
}

// FailNext makes the next calls of kind fail, in order.
func (f *FakeDiscord) FailNext(kind string, fails ...FakeFail) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[kind] = append(f.fails[kind], fails...)
}

// DeleteThread deletes a thread the fake started, as a moderator does:
// posts and edits in it then fail with 404 Unknown Channel (10003).
func (f *FakeDiscord) DeleteThread(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threads[id].deleted = true
}

// LockThread locks and archives a thread the fake started, as a
// moderator does: a bot without Manage Threads can then neither post in
// it nor edit its messages (400 Thread is archived, 50083).
func (f *FakeDiscord) LockThread(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threads[id].locked = true
	f.threads[id].setArchived(true, f.tick())
}

// ArchiveThread archives (closes) a thread the fake started, as a person
// does or as Discord does after a week without a message: edits of its
// messages then fail (400 Thread is archived, 50083) until it is opened
// again, by a message sent in it or by PATCH archived false (which a bot
// may do while the thread is not locked; a locked one only with Manage
// Threads). The bot, which started the thread, may close it again (PATCH
// archived true), as a thread's creator may.
func (f *FakeDiscord) ArchiveThread(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threads[id].setArchived(true, f.tick())
}

// PostInThread is a person's message in a thread the fake started, which
// opens it if it was archived and not locked, as Discord does.
func (f *FakeDiscord) PostInThread(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	th := f.threads[id]
	if th.locked {
		f.t.Fatalf("a person without Manage Threads can't post in locked thread %s", id)
	}
	th.setArchived(false, f.tick())
	f.next++
	th.lastMessage = strconv.FormatInt(f.next, 10)
}

// ThreadArchived reports whether a thread the fake started is archived.
func (f *FakeDiscord) ThreadArchived(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.threads[id].archived
}

// Hold holds the first call of kind from now on that match accepts (nil:
// any) until release is called, as Discord holds a create that waits on
// its channel's rate limit: Discord has not answered it yet. held is
// closed when that call arrives.
func (f *FakeDiscord) Hold(kind string, match func(FakeCall) bool) (held <-chan struct{}, release func()) {
	h := &fakeHold{kind: kind, match: match, arrived: make(chan struct{}), release: make(chan struct{})}
	f.mu.Lock()
	f.holds = append(f.holds, h)
	f.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(h.release) }) }
	f.t.Cleanup(release) // before the server closes: it waits for held calls
	return h.arrived, release
}

// hold waits while a hold takes c.
func (f *FakeDiscord) hold(r *http.Request, c FakeCall) {
	f.mu.Lock()
	var h *fakeHold
	for _, x := range f.holds {
		if !x.taken && x.kind == c.Kind && (x.match == nil || x.match(c)) {
			h, x.taken = x, true
			break
		}
	}
	f.mu.Unlock()
	if h == nil {
		return
	}
	close(h.arrived)
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
}

// Calls returns the successful calls of kind so far ("" for all).
func (f *FakeDiscord) Calls(kind string) []FakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FakeCall
	for _, c := range f.calls {
		if (kind == "" || c.Kind == kind) && c.Status < 300 {
			out = append(out, c)
		}
	}
	return out
}

// Posted returns the creates that posted a message, in order: one per
// message in the fake's channels, whatever the create was answered.
func (f *FakeDiscord) Posted() []FakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FakeCall(nil), f.posted...)
}

// AllCalls returns every call of kind, failed ones included.
func (f *FakeDiscord) AllCalls(kind string) []FakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FakeCall
	for _, c := range f.calls {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until kind has succeeded n times and returns those
// calls. It wakes on every call; it never sleeps.
func (f *FakeDiscord) WaitCalls(t testing.TB, kind string, n int) []FakeCall {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		wake := f.wake
		f.mu.Unlock()
		if got := f.Calls(kind); len(got) >= n {
			return got
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d %s calls; have %d", n, kind, len(f.Calls(kind)))
		}
	}
}

func (f *FakeDiscord) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	path := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v10/"), "/"), "/")
	c := FakeCall{Body: body}
	switch {
	case r.Method == http.MethodPost && len(path) == 3 && path[0] == "channels" && path[2] == "messages":
		c.Kind, c.Channel = "create", path[1]
	case r.Method == http.MethodPatch && len(path) == 4 && path[0] == "channels" && path[2] == "messages":
		c.Kind, c.Channel, c.MessageID = "edit", path[1], path[3]
	case r.Method == http.MethodPost && len(path) == 5 && path[0] == "channels" && path[4] == "threads":
		c.Kind, c.Channel, c.MessageID = "thread", path[1], path[3]
	case r.Method == http.MethodPost && len(path) == 4 && path[0] == "interactions" && path[3] == "callback":
		c.Kind, c.MessageID, c.token = "callback", path[1], path[2] // MessageID: the interaction's id
	case r.Method == http.MethodPost && len(path) == 3 && path[0] == "webhooks":
		c.Kind, c.app, c.token = "followup", path[1], path[2]
	case r.Method == http.MethodPatch && len(path) == 5 && path[0] == "webhooks" && path[3] == "messages" && path[4] == "@original":
		c.Kind, c.app, c.token = "original", path[1], path[2]
	case r.Method == http.MethodDelete && len(path) == 4 && path[0] == "channels" && path[2] == "messages":
		c.Kind, c.Channel, c.MessageID = "delete", path[1], path[3]
	case r.Method == http.MethodGet && len(path) == 2 && path[0] == "users" && path[1] == "@me":
		c.Kind = "me"
	case r.Method == http.MethodGet && len(path) == 2 && path[0] == "applications" && path[1] == "@me":
		c.Kind = "app"
	case r.Method == http.MethodGet && len(path) == 2 && path[0] == "channels":
		c.Kind, c.Channel = "channel", path[1]
	case r.Method == http.MethodGet && len(path) == 2 && path[0] == "guilds":
		c.Kind, c.Guild = "guild", path[1]
	case r.Method == http.MethodGet && len(path) == 4 && path[0] == "guilds" && path[2] == "members":
		c.Kind, c.Guild, c.User = "member", path[1], path[3]
	case r.Method == http.MethodPatch && len(path) == 2 && path[0] == "channels":
		c.Kind, c.Channel = "modify channel", path[1]
	case r.Method == http.MethodGet && path[0] == "gateway" && f.GatewayURL != "":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"url": %q, "shards": 1}`, f.GatewayURL)
		return
	default:
		http.Error(w, `{"message": "404: Not Found", "code": 0}`, http.StatusNotFound)
		return
	}
	f.mu.Lock()
	if th := f.threads[c.Channel]; th != nil {
		c.Parent = th.parent
	}
	f.mu.Unlock()
	f.hold(r, c)
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bot "+f.Token {
		c.Status = http.StatusUnauthorized
		f.record(c)
		w.WriteHeader(c.Status)
		io.WriteString(w, `{"message": "401: Unauthorized", "code": 0}`)
		return
	}
	f.mu.Lock()
	var fail *FakeFail
	if q := f.fails[c.Kind]; len(q) > 0 {
		fail, f.fails[c.Kind] = &q[0], q[1:]
		if fail.Pass {
			fail = nil
		}
	}
	if ch, ok := f.chans[c.Channel]; fail == nil && ok && ch.hidden && c.Kind == "create" {
		fail = &FakeFail{Status: http.StatusForbidden, Code: 50001, Message: "Missing Access"}
	}
	if fail == nil && (c.Kind == "edit" || c.Kind == "delete") && !f.postedIn(c.Channel, c.MessageID) {
		// Discord knows a message only in the channel (or thread) it is in.
		fail = &FakeFail{Status: http.StatusNotFound, Code: 10008, Message: "Unknown Message"}
	}
	if fail == nil && c.Kind == "thread" && f.threads[c.MessageID] != nil {
		fail = &FakeFail{Status: http.StatusBadRequest, Code: 160004, Message: "A thread has already been created for this message"}
	}
	if th := f.threads[c.Channel]; fail == nil && th != nil && (c.Kind == "create" || c.Kind == "edit") {
		switch {
		case th.deleted:
			fail = &FakeFail{Status: http.StatusNotFound, Code: 10003, Message: "Unknown Channel"}
		case th.locked, th.archived && c.Kind == "edit":
			fail = &FakeFail{Status: http.StatusBadRequest, Code: 50083, Message: "Thread is archived"}
		case th.archived:
			// A message sent in an archived thread opens it again,
			// unless a moderator locked it (Discord's Threads topic).
			th.setArchived(false, f.tick())
		}
	}
	if in := c.Channel; fail == nil && (c.Kind == "create" || c.Kind == "edit") && body["embeds"] != nil {
		if th := f.threads[in]; th != nil {
			in = th.parent // a thread takes its channel's permissions
		}
		if f.noEmbeds[in] {
			if content, _ := body["content"].(string); content == "" {
				fail = &FakeFail{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions"}
			} else {
				body["embeds"] = []any{}
			}
		}
	}
	if th := f.threads[c.Channel]; fail == nil && c.Kind == "modify channel" {
		switch {
		case th == nil || th.deleted:
			fail = &FakeFail{Status: http.StatusNotFound, Code: 10003, Message: "Unknown Channel"}
		case (body["archived"] != false && body["archived"] != true) || len(body) != 1:
			fail = &FakeFail{Status: http.StatusBadRequest, Code: 50035, Message: "Invalid Form Body (the fake opens and closes threads, nothing else)"}
		case th.locked && !f.CreatorOpensLocked: // only Manage Threads opens a locked thread
			fail = &FakeFail{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions"}
		case body["archived"] == true && th.archived:
			// A thread's settings change only while it is open, or in the
			// request that opens it.
			fail = &FakeFail{Status: http.StatusBadRequest, Code: 50083, Message: "Thread is archived"}
		default:
			// The bot started the thread: it may close it without
			// Manage Threads, as a thread's creator may.
			th.setArchived(body["archived"] == true, f.tick())
		}
	}
	f.next++
	id := strconv.FormatInt(f.next, 10)
	f.mu.Unlock()
	if fail != nil && fail.Applied {
		c.MessageID, _ = f.apply(c, r.Header.Get("Authorization"), id)
	}
	if fail != nil && fail.Drop {
		c.Status = 0
		f.record(c)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	if fail != nil {
		c.Status = fail.Status
		f.record(c)
		if fail.Status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.FormatFloat(fail.RetryAfter, 'f', -1, 64))
			if fail.Global {
				w.Header().Set("X-RateLimit-Global", "true")
				w.Header().Set("X-RateLimit-Scope", "global")
			} else {
				// A route's limit: its bucket, left no calls until it resets.
				w.Header().Set("X-RateLimit-Limit", "5")
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.Header().Set("X-RateLimit-Reset", strconv.FormatFloat(float64(time.Now().UnixMilli())/1000+fail.RetryAfter, 'f', 3, 64))
				w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(fail.RetryAfter, 'f', -1, 64))
				w.Header().Set("X-RateLimit-Bucket", "fakebucket"+c.Kind)
				w.Header().Set("X-RateLimit-Scope", cmp.Or(fail.Scope, "user"))
			}
			w.WriteHeader(c.Status)
			fmt.Fprintf(w, `{"message": "You are being rate limited.", "retry_after": %g, "global": %t}`, fail.RetryAfter, fail.Global)
			return
		}
		msg := fail.Message
		if msg == "" {
			msg = "Internal Server Error"
		}
		w.WriteHeader(c.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": fail.Code})
		return
	}
	c.Status = http.StatusOK
	var invalid []string
	switch c.Kind {
	case "create", "edit", "followup", "original":
		invalid = InvalidMessage(body, c.Kind == "create" || c.Kind == "followup")
	case "callback":
		invalid = InvalidResponse(body)
	case "thread":
		invalid = InvalidThreadStart(body)
	}
	if len(invalid) > 0 {
		// Discord names every bad field in "errors", nested by its path.
		c.Status = http.StatusBadRequest
		f.record(c)
		w.WriteHeader(c.Status)
		_ = json.NewEncoder(w).Encode(formError(invalid))
		return
	}
	if out, status := f.read(c); status != 0 {
		c.Status = status
		f.record(c)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	if c.Kind == "followup" || c.Kind == "original" {
		// A follow-up, or an edit of the response's message, needs the
		// interaction answered first, and the token of this application.
		f.mu.Lock()
		known := f.tokens[c.token] && c.app == f.App.ID
		f.mu.Unlock()
		if !known {
			c.Status = http.StatusNotFound
			f.record(c)
			w.WriteHeader(c.Status)
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "Unknown Webhook", "code": 10015})
			return
		}
	}
	if c.Kind == "callback" {
		// An interaction takes a response of a type that fits it, on its
		// own token: a callback for an interaction Discord never sent is
		// 404 Unknown interaction (the fake refuses another's token so too).
		f.mu.Lock()
		in, known := f.sent[c.MessageID]
		f.mu.Unlock()
		if token, _ := in["token"].(string); !known || token != c.token {
			c.Status = http.StatusNotFound
			f.record(c)
			w.WriteHeader(c.Status)
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "Unknown interaction", "code": 10062})
			return
		}
		if why := RefusedResponse(in, body); why != "" {
			c.Status = http.StatusBadRequest
			f.record(c)
			w.WriteHeader(c.Status)
			_ = json.NewEncoder(w).Encode(formError([]string{why}))
			return
		}
	}
	if c.Kind == "callback" {
		// An interaction takes one response; later ones are refused.
		f.mu.Lock()
		again := f.acked[c.MessageID] || f.tokens[c.token]
		f.acked[c.MessageID] = true
		f.tokens[c.token] = true
		f.mu.Unlock()
		if again {
			c.Status = http.StatusBadRequest
			f.record(c)
			w.WriteHeader(c.Status)
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
			return
		}
	}
	if c.Kind == "followup" || c.Kind == "original" {
		if c.Kind == "followup" {
			c.MessageID = id
		}
		f.record(c)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": c.MessageID, "type": 0, "content": body["content"], "components": body["components"], "flags": body["flags"]})
		return
	}
	if c.Kind == "callback" || c.Kind == "delete" {
		c.Status = http.StatusNoContent
		f.record(c)
		w.WriteHeader(c.Status)
		return
	}
	var out map[string]any
	c.MessageID, out = f.apply(c, r.Header.Get("Authorization"), id)
	f.record(c)
	_ = json.NewEncoder(w).Encode(out)
}

// postedIn reports whether the fake posted message id in channel. Call
// with f.mu held.
func (f *FakeDiscord) postedIn(channel, id string) bool {
	for _, p := range f.posted {
		if p.Channel == channel && p.MessageID == id {
			return true
		}
	}
	return false
}

// read answers the GET calls c of kinds me, app, channel, guild and
// member as Discord does, with the HTTP status; status 0 for any other
// kind.
func (f *FakeDiscord) read(c FakeCall) (out map[string]any, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch c.Kind {
	case "me":
		return map[string]any{"id": FakeBotID, "username": "askbridge", "discriminator": "0", "global_name": nil,
			"avatar": nil, "bot": true, "flags": 0, "mfa_enabled": true, "verified": true}, http.StatusOK
	case "app":
		app := map[string]any{"id": f.App.ID, "name": "askbridge", "icon": nil, "description": "", "bot_public": false,
			"bot_require_code_grant": false, "verify_key": f.App.VerifyKey, "flags": 0,
			"bot": map[string]any{"id": "1200000000000000002", "username": "askbridge", "bot": true}}
		if f.App.InteractionsURL != "" {
			app["interactions_endpoint_url"] = f.App.InteractionsURL
		}
		return app, http.StatusOK
	case "channel":
		missingAccess := map[string]any{"message": "Missing Access", "code": 50001}
		if th := f.threads[c.Channel]; th != nil && !th.deleted {
			// A thread is seen where its channel is; a private one only
			// by its members and those who may Manage Threads.
			perms := f.botPerms(th.parent)
			if f.chans[th.parent].hidden || perms&discordgo.PermissionViewChannel == 0 ||
				th.private && !th.joined && perms&discordgo.PermissionManageThreads == 0 {
				return missingAccess, http.StatusForbidden
			}
			out := th.channel(c.Channel)
			if th.joined {
				out["member"] = map[string]any{"id": c.Channel, "user_id": FakeBotID, "join_timestamp": "2026-01-01T00:00:00.000000+00:00", "flags": 1}
			}
			return out, http.StatusOK
		}
		ch, ok := f.chans[c.Channel]
		switch {
		case !ok:
			return map[string]any{"message": "Unknown Channel", "code": 10003}, http.StatusNotFound
		case ch.hidden, f.botPerms(c.Channel)&discordgo.PermissionViewChannel == 0:
			return missingAccess, http.StatusForbidden
		}
		ows := []any{}
		for _, o := range ch.overwrites {
			ows = append(ows, map[string]any{"id": o.ID, "type": o.Type,
				"allow": strconv.FormatInt(o.Allow, 10), "deny": strconv.FormatInt(o.Deny, 10)})
		}
		return map[string]any{"id": c.Channel, "type": ch.typ, "guild_id": FakeGuildID, "name": ch.name,
			"position": 0, "permission_overwrites": ows, "nsfw": false, "parent_id": nil}, http.StatusOK
	case "guild", "member":
		if c.Guild != FakeGuildID {
			return map[string]any{"message": "Unknown Guild", "code": 10004}, http.StatusNotFound
		}
		if c.Kind == "member" {
			if c.User != FakeBotID {
				return map[string]any{"message": "Unknown Member", "code": 10007}, http.StatusNotFound
			}
			return f.botMember(), http.StatusOK
		}
		return f.guild(), http.StatusOK
	}
	return nil, 0
}

// botPerms is what the bot may do in channel id as Discord's Permissions
// topic computes it (compute_base_permissions, compute_overwrites): the
// server's owner and Administrator may do everything; else @everyone's
// and the bot's roles' permissions, less and plus the channel's
// overwrites for @everyone, then for the bot's roles, then for the bot.
// (A timeout takes neither View Channel nor Manage Threads' view of a
// thread: not counted.) Call with f.mu held.
func (f *FakeDiscord) botPerms(id string) int64 {
	g := f.Guild
	if g.OwnerID == FakeBotID {
		return ^int64(0)
	}
	var perms int64
	for _, r := range g.Roles {
		if r.ID == FakeGuildID || slices.Contains(g.BotRoles, r.ID) {
			perms |= r.Permissions
		}
	}
	if perms&discordgo.PermissionAdministrator != 0 {
		return ^int64(0)
	}
	for _, applies := range []func(FakeOverwrite) bool{
		func(o FakeOverwrite) bool { return o.Type == 0 && o.ID == FakeGuildID },
		func(o FakeOverwrite) bool { return o.Type == 0 && slices.Contains(g.BotRoles, o.ID) },
		func(o FakeOverwrite) bool { return o.Type == 1 && o.ID == FakeBotID },
	} {
		var allow, deny int64
		for _, o := range f.chans[id].overwrites {
			if applies(o) {
				allow, deny = allow|o.Allow, deny|o.Deny
			}
		}
		perms = perms&^deny | allow
	}
	return perms
}

// guild is the fake's server as GET /guilds/{id} answers it (Discord's
// Guild Resource: the guild object, its roles role objects).
func (f *FakeDiscord) guild() map[string]any {
	roles := []any{}
	for i, r := range f.Guild.Roles {
		role := map[string]any{"id": r.ID, "name": r.Name, "color": 0, "hoist": false, "icon": nil, "unicode_emoji": nil, "position": i,
			"permissions": strconv.FormatInt(r.Permissions, 10), "managed": r.botOf != "", "mentionable": r.Mentionable, "flags": 0}
		role["colors"] = map[string]any{"primary_color": 0, "secondary_color": nil, "tertiary_color": nil}
		if r.botOf != "" {
			role["tags"] = map[string]any{"bot_id": r.botOf}
		}
		roles = append(roles, role)
	}
	return map[string]any{"id": FakeGuildID, "name": "Acme", "icon": nil, "splash": nil, "discovery_splash": nil,
		"owner_id": f.Guild.OwnerID, "afk_channel_id": nil, "afk_timeout": 300, "widget_enabled": false,
		"verification_level": 1, "default_message_notifications": 1, "explicit_content_filter": 2,
		"roles": roles, "emojis": []any{}, "features": []any{}, "mfa_level": 0, "application_id": nil,
		"system_channel_id": nil, "system_channel_flags": 0, "rules_channel_id": nil, "max_presences": nil,
		"max_members": 500000, "vanity_url_code": nil, "description": nil, "banner": nil, "premium_tier": 0,
		"premium_subscription_count": 0, "preferred_locale": "en-US", "public_updates_channel_id": nil,
		"max_video_channel_users": 25, "max_stage_video_channel_users": 50, "nsfw_level": 0, "stickers": []any{},
		"premium_progress_bar_enabled": false, "safety_alerts_channel_id": nil, "incidents_data": nil}
}

// botMember is the bot's member of the fake's server as GET
// /guilds/{id}/members/{user.id} answers it (a guild member object).
func (f *FakeDiscord) botMember() map[string]any {
	roles := append([]string{}, f.Guild.BotRoles...)
	var until any
	if t := f.Guild.BotTimedOutUntil; !t.IsZero() {
		until = t.UTC().Format("2006-01-02T15:04:05.000000+00:00")
	}
	return map[string]any{
		"user": map[string]any{"id": FakeBotID, "username": "askbridge", "global_name": nil, "discriminator": "0",
			"avatar": nil, "bot": true, "public_flags": 0},
		"nick": nil, "avatar": nil, "banner": nil, "roles": roles, "joined_at": "2025-01-01T00:00:00.000000+00:00",
		"premium_since": nil, "deaf": false, "mute": false, "flags": 0, "pending": false,
		"communication_disabled_until": until}
}

// apply carries out c for author, id being a new id if it needs one, and
// returns the message it created or edited (or the thread's first
// message's id) and what Discord answers.
func (f *FakeDiscord) apply(c FakeCall, author, id string) (string, map[string]any) {
	body := c.Body
	switch c.Kind {
	case "create":
		f.mu.Lock()
		defer f.mu.Unlock()
		nonce, _ := body["nonce"].(string)
		key := author + "\x00" + nonce
		if earlier, ok := f.nonces[key]; ok && nonce != "" && body["enforce_nonce"] == true {
			return earlier["id"].(string), earlier
		}
		out := map[string]any{"id": id, "channel_id": c.Channel, "type": 0, "content": body["content"], "embeds": body["embeds"], "components": body["components"]}
		if nonce != "" {
			out["nonce"] = nonce
			f.nonces[key] = out
		}
		c.MessageID = id
		f.posted = append(f.posted, c)
		if th := f.threads[c.Channel]; th != nil {
			th.lastMessage = id
		}
		return id, out
	case "edit":
		return c.MessageID, map[string]any{"id": c.MessageID, "channel_id": c.Channel, "type": 0, "content": body["content"], "embeds": body["embeds"], "components": body["components"]}
	case "thread":
		// A thread started from a message shares the message's id.
		f.mu.Lock()
		f.threads[c.MessageID] = &fakeThread{parent: c.Channel, stamp: f.tick(), name: "thread", owner: FakeBotID, joined: true}
		f.mu.Unlock()
		return c.MessageID, map[string]any{"id": c.MessageID, "type": 11, "parent_id": c.Channel, "name": body["name"]}
	case "modify channel":
		f.mu.Lock()
		defer f.mu.Unlock()
		return c.Channel, f.threads[c.Channel].channel(c.Channel)
	}
	return c.MessageID, nil
}

// channel is thread id as Discord answers it, a channel object of type
// 11 (public thread) or 12 (private) with its thread_metadata.
func (th *fakeThread) channel(id string) map[string]any {
	var last any
	if th.lastMessage != "" {
		last = th.lastMessage
	}
	typ, meta := 11, map[string]any{"archived": th.archived, "locked": th.locked, "auto_archive_duration": 10080,
		"archive_timestamp": th.stamp.Format("2006-01-02T15:04:05.000000+00:00")}
	if th.private {
		typ, meta["invitable"] = 12, true
	}
	return map[string]any{"id": id, "type": typ, "guild_id": FakeGuildID, "parent_id": th.parent, "name": th.name,
		"owner_id": th.owner, "last_message_id": last, "rate_limit_per_user": 0, "flags": 0, "thread_metadata": meta}
}

func (f *FakeDiscord) record(c FakeCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	close(f.wake)
	f.wake = make(chan struct{})
}

// SigningKey is the application's Ed25519 key pair in tests.
var SigningKey = ed25519.NewKeyFromSeed([]byte("askbridge-discord-test-seed-0032"))

// PublicKeyHex is SigningKey's public half as discord.public_key takes it.
func PublicKeyHex() string { return hex.EncodeToString(SigningKey.Public().(ed25519.PublicKey)) }

// Sign returns the headers Discord sends with body at ts, signed by key.
func Sign(key ed25519.PrivateKey, ts time.Time, body []byte) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	sig := ed25519.Sign(key, append([]byte(stamp), body...))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	h.Set("X-Signature-Timestamp", stamp)
	return h
}

// Member is a guild member as interactions carry it.
func Member(id, name string, roles ...string) map[string]any {
	if roles == nil {
		roles = []string{}
	}
	return map[string]any{
		"user":        map[string]any{"id": id, "username": name, "global_name": name, "discriminator": "0", "avatar": nil, "public_flags": 0},
		"roles":       roles,
		"nick":        nil,
		"permissions": "2248473465835073",
		"joined_at":   "2025-01-01T00:00:00.000000+00:00",
		"deaf":        false,
		"mute":        false,
		"flags":       0,
	}
}

var interactionSeq atomic.Int64

// fakeCategory is the category the test channels are in.
const fakeCategory = "1200000000000000000"

func base(typ int, msg FakeCall, member map[string]any, data map[string]any) map[string]any {
	// The partial channel Discord sends: a thread names the channel it is
	// in; any other channel, its category.
	ch := map[string]any{"id": msg.Channel, "type": 0, "parent_id": fakeCategory}
	if msg.Parent != "" {
		ch = map[string]any{"id": msg.Channel, "type": 11, "parent_id": msg.Parent}
	}
	flags, _ := msg.Body["flags"].(float64) // an ephemeral message's 64
	return map[string]any{
		"id":             strconv.FormatInt(1400000000000000000+interactionSeq.Add(1), 10),
		"application_id": FakeAppID,
		"type":           typ,
		"token":          "aW50ZXJhY3Rpb246SECRET-INTERACTION-TOKEN-" + strconv.FormatInt(interactionSeq.Add(1), 10),
		"version":        1,
		"guild_id":       "1000000000000000001",
		"channel_id":     msg.Channel,
		"channel":        ch,
		"member":         member,
		"message": map[string]any{
			"id": msg.MessageID, "channel_id": msg.Channel, "type": 0, "flags": flags,
			"content": msg.Body["content"], "embeds": msg.Body["embeds"], "components": msg.Body["components"],
			"author": map[string]any{"id": "1100000000000000001", "username": "askbridge", "bot": true},
		},
		"data":            data,
		"locale":          "en-US",
		"guild_locale":    "en-US",
		"app_permissions": "2248473465835073",
		"entitlements":    []any{},
	}
}

// Click is a MESSAGE_COMPONENT interaction on msg: a button (values nil)
// or a string select.
func Click(msg FakeCall, member map[string]any, customID string, values []string) map[string]any {
	data := map[string]any{"custom_id": customID, "component_type": 2}
	if values != nil {
		data["component_type"] = 3
		data["values"] = values
	}
	return base(3, msg, member, data)
}

// Reply is the message an interaction response of type 4 (CHANNEL_MESSAGE_WITH_SOURCE)
// with data posted in msg's channel, ephemeral when its flags say so, as
// a click on it carries it.
func Reply(msg FakeCall, data map[string]any) FakeCall {
	return FakeCall{Kind: "reply", Channel: msg.Channel, Parent: msg.Parent,
		MessageID: strconv.FormatInt(1450000000000000000+interactionSeq.Add(1), 10), Body: data}
}

// Submit is a MODAL_SUBMIT interaction of a modal opened from msg.
func Submit(msg FakeCall, member map[string]any, customID string, components ...any) map[string]any {
	return base(5, msg, member, map[string]any{"custom_id": customID, "components": components})
}

// Ping is Discord's PING.
func Ping() map[string]any {
	n := strconv.FormatInt(interactionSeq.Add(1), 10)
	return map[string]any{"id": "14" + n, "application_id": FakeAppID, "type": 1, "token": "aW50ZXJhY3Rpb246SECRET-PING-TOKEN-" + n, "version": 1}
}

// TextRow is a classic submitted text input, in its action row.
func TextRow(customID, value string) any {
	return map[string]any{"type": 1, "id": 1, "components": []any{map[string]any{"type": 4, "id": 2, "custom_id": customID, "value": value}}}
}

// LabelText is a text input submitted inside a Label (type 18).
func LabelText(customID, value string) any {
	return map[string]any{"type": 18, "id": 1, "component": map[string]any{"type": 4, "id": 2, "custom_id": customID, "value": value}}
}

// LabelSelect is a string select submitted inside a Label (type 18).
func LabelSelect(customID string, values ...string) any {
	if values == nil {
		values = []string{}
	}
	return map[string]any{"type": 18, "id": 1, "component": map[string]any{"type": 3, "id": 2, "custom_id": customID, "values": values}}
}

// Fill is what Discord sends when a person submits the modal whose data
// is modal, having chosen or typed picks (by custom_id): each component as
// the modal showed it, in its order, a text input with its text ("" where
// none), a select or checkbox group with its values, a radio group with
// its one value or null, a Text Display with its id only. A field without
// a pick sends what the modal filled it with: a text input's value, the
// options chosen by default; a pick of nothing ({} or "") empties it. A
// pick the modal has no field for, two for a radio group, or text longer
// than its text input's max_length (in code points, as Discord counts it)
// fails t: no person could send it.
func Fill(t testing.TB, modal map[string]any, picks map[string][]string) []any {
	t.Helper()
	used := map[string]bool{}
	input := func(c map[string]any, id int) map[string]any {
		cid, _ := c["custom_id"].(string)
		got, ok := picks[cid]
		used[cid] = ok
		if !ok {
			got = prefilled(c)
		}
		out := map[string]any{"type": c["type"], "id": id, "custom_id": cid}
		switch c["type"] {
		case float64(4):
			out["value"] = strings.Join(got, "")
			maxL := 4000
			if v, ok := c["max_length"].(float64); ok {
				maxL = int(v)
			}
			if n := runes(out["value"].(string)); n > maxL {
				t.Fatalf("%d characters typed in text input %s, which takes %d", n, cid, maxL)
			}
		case float64(21):
			if len(got) > 1 {
				t.Fatalf("%d picks in radio group %s", len(got), cid)
			}
			out["value"] = nil
			if len(got) == 1 {
				out["value"] = got[0]
			}
		default:
			out["values"] = append([]string{}, got...)
		}
		return out
	}
	var out []any
	cs, _ := modal["components"].([]any)
	for i, c := range cs {
		m, _ := c.(map[string]any)
		id := 2*i + 1
		switch m["type"] {
		case float64(18):
			inner, _ := m["component"].(map[string]any)
			out = append(out, map[string]any{"type": 18, "id": id, "component": input(inner, id+1)})
		case float64(1):
			row, _ := m["components"].([]any)
			inner, _ := row[0].(map[string]any)
			out = append(out, map[string]any{"type": 1, "id": id, "components": []any{input(inner, id+1)}})
		default:
			out = append(out, map[string]any{"type": m["type"], "id": id})
		}
	}
	for cid := range picks {
		if !used[cid] {
			t.Fatalf("the modal has no field %s: %v", cid, modal)
		}
	}
	return out
}

// prefilled is what a modal's input c holds before the person touches it:
// a text input's value, the options chosen by default.
func prefilled(c map[string]any) []string {
	if c["type"] == float64(4) {
		if v, _ := c["value"].(string); v != "" {
			return []string{v}
		}
		return nil
	}
	var out []string
	opts, _ := c["options"].([]any)
	for _, o := range opts {
		if m, _ := o.(map[string]any); m["default"] == true {
			v, _ := m["value"].(string)
			out = append(out, v)
		}
	}
	return out
}

// Components returns the components of a created or edited message, and
// of an interaction response's data, flattened: rows and their children.
func Components(body map[string]any) []map[string]any {
	var out []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			out = append(out, v)
			walk(v["components"])
			if c, ok := v["component"]; ok {
				walk(c)
			}
		}
	}
	walk(body["components"])
	return out
}

// Find returns the component whose custom_id starts with prefix.
func Find(body map[string]any, prefix string) map[string]any {
	for _, c := range Components(body) {
		if id, _ := c["custom_id"].(string); strings.HasPrefix(id, prefix) {
			return c
		}
	}
	return nil
}

// Text is all text of a message body: its content and its embeds.
func Text(body map[string]any) string {
	var s strings.Builder
	if c, ok := body["content"].(string); ok {
		s.WriteString(c + "\n")
	}
	if es, ok := body["embeds"].([]any); ok {
		for _, e := range es {
			m, _ := e.(map[string]any)
			fmt.Fprintf(&s, "%v\n%v\n", m["title"], m["description"])
		}
	}
	return s.String()
}

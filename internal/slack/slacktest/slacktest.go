// Package slacktest is a fake Slack for tests and for `bridge bench`: a
// Slack Web API that accepts what Slack accepts, a Socket Mode endpoint,
// and interaction payloads signed and shaped the way Slack sends them.
package slacktest

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// FakeSlack is a fake Slack Web API: it answers chat.postMessage,
// chat.update, chat.postEphemeral, views.open, views.update and
// usergroups.users.list like Slack does (form or JSON bodies in,
// {"ok":...} out, HTTP 429 with Retry-After and {"ok":false,"error":
// "ratelimited"} on demand, not_authed without a token, invalid_auth with
// another, missing_scope naming the scope a method needs and the token
// lacks; views.open refuses a trigger_id not of Slack's form or used
// before, and a view over Block Kit's limits or 250 kB) and records every
// call. It also takes the posts to the response_url of the clicks Click
// makes on its messages, recorded as calls of method "response_url".
type FakeSlack struct {
	URL   string // the API base URL, with its final /
	Token string // the bot token it accepts
	// Scopes are the token's, as every answer to it lists them in
	// X-OAuth-Scopes; by default those of deploy/slack-app-manifest.yaml.
	Scopes string
	// blocksTextLimit is the most text a message's blocks may hold
	// together, past which a post or an edit is refused with
	// msg_blocks_too_long. Slack documents none; its staff put it at
	// 12,000 characters "with a buffer for block containers", and
	// messages have been refused from 11,341 (slackapi/bolt-js#2509,
	// #2867). 0 is 12,000; SetBlocksTextLimit changes it.
	blocksTextLimit int

	srv    *httptest.Server
	socket *FakeSocket
	used   map[string]int  // posts to each response_url
	gone   map[string]bool // ts of messages a person deleted
	// triggers are the trigger_ids views.open has exchanged for a view
	triggers map[string]bool
	views    map[string]string // each opened view's hash, by view id: views.update names one
	mu       sync.Mutex
	calls    []FakeCall
	fails    map[string][]FakeFail
	groups   map[string][]string
	chans    map[string]FakeChannel
	next     int
	wake     chan struct{}  // closed and replaced on every call
	hook     func(FakeCall) // set by Observe; then calls are not kept
	holds    map[string][]*FakeHold
	// posted are the messages posted in each conversation, oldest first,
	// as conversations.history and conversations.replies list them, and
	// byTS the same messages by ts.
	posted map[string][]map[string]any
	byTS   map[string]map[string]any
}

// TB is the part of testing.TB the kit uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// FakeCall is one call the fake answered.
type FakeCall struct {
	Method      string
	ContentType string         // the request's Content-Type
	Form        url.Values     // a form-encoded call's fields
	JSON        map[string]any // a JSON call's body
	Body        string         // a JSON call's body as sent
	Status      int            // the HTTP status it answered
	OK          bool           // whether it answered ok:true
	TS          string         // the ts of the message a successful post made
	User        string         // a response_url's: who clicked (Slack tells them, and only them, an ephemeral reply)
	URL         string         // a response_url's: the URL posted to, the response_url of the click Click made

	TokenInForm bool // the token came as a form field, not in the Authorization header

	server string // the fake's URL, for the response_url of clicks on a posted message
}

// FakeFail is a failure the fake answers a call with instead of success.
type FakeFail struct {
	Status     int    // HTTP status; 0 means 200 with ok:false
	RetryAfter string // Retry-After header of a 429
	Error      string // the ok:false error
	// Messages, with Error, are Slack's words on it, as its answer
	// carries them in response_metadata.messages: what invalid_arguments
	// found wrong ("`trigger_id` expired [json-pointer:/trigger_id]").
	Messages []string
	// Applied carries the call out before answering with the failure, as
	// Slack's internal_error and fatal_error may ("It's possible some
	// aspect of the operation succeeded before the error was raised").
	Applied bool
	// AppliedBy, with Applied, makes the message carried out another
	// app's: its bot_id, as if that app had copied the request's blocks.
	AppliedBy string
	// Drop closes the connection without an answer, as a proxy or the
	// network may once the call is in; with Applied, after carrying it
	// out. The call is recorded with Status 0.
	Drop bool
}

// answer is the ok:false answer of f.
func (f *FakeFail) answer() map[string]any {
	if len(f.Messages) > 0 {
		return refusal(f.Error, f.Messages)
	}
	return failure(f.Error)
}

// NewFakeSlack starts a fake that accepts token and stops with t.
func NewFakeSlack(t TB, token string) *FakeSlack {
	f := NewServer(token)
	t.Cleanup(f.Close)
	return f
}

// NewServer starts a fake that accepts token; Close stops it.
func NewServer(token string) *FakeSlack {
	f := &FakeSlack{Token: token, Scopes: "chat:write,usergroups:read,channels:history,groups:history", fails: map[string][]FakeFail{}, groups: map[string][]string{}, chans: map[string]FakeChannel{}, used: map[string]int{}, gone: map[string]bool{}, triggers: map[string]bool{}, views: map[string]string{}, wake: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL + "/api/"
	return f
}

// Close stops the fake and waits for the calls in flight.
func (f *FakeSlack) Close() { f.srv.Close() }

// Observe has fn called with every call the fake answers from then on,
// after its answer is written, and stops the fake keeping calls and the
// messages posted: a long bench would keep them all. Calls and WaitFor
// then see none, nor do Messages and conversations.history.
func (f *FakeSlack) Observe(fn func(FakeCall)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = fn
}

// FailNext makes the next calls of method fail, in order.
func (f *FakeSlack) FailNext(method string, fails ...FakeFail) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[method] = append(f.fails[method], fails...)
}

// FakeHold holds one call unanswered until released (see Hold).
type FakeHold struct {
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

// Hold makes the next call of method wait, unanswered, until Release (or
// until its caller gives up on it); then it is answered as usual.
func (f *FakeSlack) Hold(method string) *FakeHold {
	h := &FakeHold{arrived: make(chan struct{}), release: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holds == nil {
		f.holds = map[string][]*FakeHold{}
	}
	f.holds[method] = append(f.holds[method], h)
	return h
}

// Arrived is closed once the held call has come in.
func (h *FakeHold) Arrived() <-chan struct{} { return h.arrived }

// Release lets the held call be answered.
func (h *FakeHold) Release() { h.once.Do(func() { close(h.release) }) }

func (f *FakeSlack) hold(method string, r *http.Request) {
	f.mu.Lock()
	var h *FakeHold
	if q := f.holds[method]; len(q) > 0 {
		h, f.holds[method] = q[0], q[1:]
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

// DeleteMessage deletes the message ts as a person would: editing it then
// fails with message_not_found and, as it had no replies, so does posting
// in its thread (thread_not_found).
func (f *FakeSlack) DeleteMessage(ts string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[ts] = true
}

// SetGroup sets the members usergroups.users.list returns for group.
func (f *FakeSlack) SetGroup(group string, users ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[group] = users
}

// FakeChannel is a conversation as conversations.info describes it: a
// public channel, a private one, a group DM (GroupDM), or, when its id is
// a D…, the bot's DM with a person.
type FakeChannel struct {
	Name     string
	Member   bool // the bot is in it
	Private  bool
	GroupDM  bool // a group DM (an mpim): private, with no name of its own
	Archived bool
}

// SetChannel makes conversations.info describe channel id as c (it
// answers channel_not_found for any other), and chat.postMessage and
// chat.postEphemeral refuse to post there unless the bot is in it
// (not_in_channel) and it is not archived (is_archived).
func (f *FakeSlack) SetChannel(id string, c FakeChannel) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chans[id] = c
}

// SetBlocksTextLimit sets the most text a message's blocks may hold
// together (see blocksTextLimit): a lower one stands for Slack counting
// more than text, as it does.
func (f *FakeSlack) SetBlocksTextLimit(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocksTextLimit = n
}

// Calls returns the calls of method so far ("" for all).
func (f *FakeSlack) Calls(method string) []FakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FakeCall
	for _, c := range f.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitFor waits until ok holds for the calls so far, failing t after
// timeout. It wakes on every call; it never sleeps.
func (f *FakeSlack) WaitFor(t TB, what string, timeout time.Duration, ok func(calls []FakeCall) bool) []FakeCall {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		calls := append([]FakeCall(nil), f.calls...)
		wake := f.wake
		f.mu.Unlock()
		if ok(calls) {
			return calls
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s; calls: %s", timeout, what, methods(calls))
		}
	}
}

// WaitCalls waits until method has been answered ok n times and returns
// those calls.
func (f *FakeSlack) WaitCalls(t TB, method string, n int) []FakeCall {
	t.Helper()
	var got []FakeCall
	f.WaitFor(t, fmt.Sprintf("%d ok %s calls", n, method), 10*time.Second, func(calls []FakeCall) bool {
		got = got[:0]
		for _, c := range calls {
			if c.Method == method && c.OK {
				got = append(got, c)
			}
		}
		return len(got) >= n
	})
	return got
}

func methods(calls []FakeCall) string {
	var s []string
	for _, c := range calls {
		s = append(s, fmt.Sprintf("%s(%d,ok=%v)", c.Method, c.Status, c.OK))
	}
	return strings.Join(s, " ")
}

func (f *FakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/socket" && f.socket != nil {
		f.socket.serve(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, actionsPath) {
		f.respond(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	f.hold(method, r)
	call := FakeCall{Method: method, Status: http.StatusOK, ContentType: r.Header.Get("Content-Type"), server: f.srv.URL}
	body, _ := io.ReadAll(r.Body)
	// A JSON body can't carry the token: Slack reads it from the
	// Authorization header only.
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	badJSON := false
	if strings.HasPrefix(call.ContentType, "application/json") {
		badJSON = json.Unmarshal(body, &call.JSON) != nil || call.JSON == nil
		call.Body = string(body)
	} else {
		call.Form, _ = url.ParseQuery(string(body))
		if tok := call.Form.Get("token"); tok != "" {
			token, call.TokenInForm = tok, true
		}
		call.Form.Del("token") // never keep a token where a failing test would print it
	}

	f.mu.Lock()
	var fail *FakeFail
	if q := f.fails[method]; len(q) > 0 {
		fail, f.fails[method] = &q[0], q[1:]
	}
	var resp any
	switch {
	case method == "apps.connections.open":
		if f.socket == nil || token != f.socket.appToken {
			resp = failure("invalid_auth")
		} else if err := f.socket.refused(); err != "" {
			resp = failure(err)
		} else {
			resp = map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/socket"}
			call.OK = true
		}
	case badJSON:
		resp = failure("invalid_json")
	case token == "":
		resp = failure("not_authed")
	case token != f.Token:
		resp = failure("invalid_auth")
	case fail != nil && fail.Applied:
		if ans, ok := f.answer(&call); ok && fail.AppliedBy != "" {
			if msg, _ := ans.(chatAnswer); msg.Message != nil {
				msg.Message["bot_id"] = fail.AppliedBy
			}
		}
		if call.Status = cmp.Or(fail.Status, http.StatusOK); call.Status == http.StatusOK {
			resp = fail.answer()
		}
	case fail != nil && fail.Drop:
	case fail != nil && fail.Status != 0:
		call.Status = fail.Status
	case fail != nil:
		resp = fail.answer()
	default:
		resp, call.OK = f.answer(&call)
	}
	if fail != nil && fail.Drop {
		call.Status, call.OK = 0, false
	}
	hook := f.keep(call)
	f.mu.Unlock()
	if hook != nil {
		defer hook(call)
	}
	if fail != nil && fail.Drop {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
		return
	}

	if call.Status == http.StatusTooManyRequests {
		// As Slack answers a rate limit: 429, Retry-After in seconds, and
		// a body of its own kind.
		if fail.RetryAfter != "" {
			w.Header().Set("Retry-After", fail.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(call.Status)
		_ = json.NewEncoder(w).Encode(failure("ratelimited"))
		return
	}
	if call.Status != http.StatusOK {
		http.Error(w, http.StatusText(call.Status), call.Status)
		return
	}
	if token == f.Token {
		w.Header().Set("X-OAuth-Scopes", f.Scopes)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// keep records call, or returns the hook that takes calls instead (see
// Observe) for the caller to run once f.mu, which it holds, is released.
func (f *FakeSlack) keep(call FakeCall) func(FakeCall) {
	if f.hook != nil {
		return f.hook
	}
	f.calls = append(f.calls, call)
	close(f.wake)
	f.wake = make(chan struct{})
	return nil
}

// actionsPath is where the fake's response_urls live, as Slack's live at
// https://hooks.slack.com/actions/: /actions/{team}/{user}/{n}. The user
// is in the path so that the fake knows whom a reply goes to.
const actionsPath = "/actions/"

// maxResponses is how many posts Slack takes on one response_url.
const maxResponses = 5

// respond takes a post to a response_url: a JSON message (text or
// blocks) that replaces the message clicked, deletes it, or (with
// response_type ephemeral and replace_original false) goes to the person
// who clicked only. No token: the URL is the credential.
func (f *FakeSlack) respond(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, actionsPath), "/")
	call := FakeCall{Method: "response_url", Status: http.StatusOK, ContentType: r.Header.Get("Content-Type"), URL: f.srv.URL + r.URL.Path}
	body, _ := io.ReadAll(r.Body)
	call.Body = string(body)
	status, answer := http.StatusOK, `{"ok":true}`
	f.mu.Lock()
	var fail *FakeFail
	if q := f.fails[call.Method]; len(q) > 0 {
		fail, f.fails[call.Method] = &q[0], q[1:]
	}
	switch {
	case fail != nil:
		status, answer = cmp.Or(fail.Status, http.StatusNotFound), cmp.Or(fail.Error, "expired_url")
	case r.Method != http.MethodPost || len(parts) != 3:
		status, answer = http.StatusNotFound, "no_such_url"
	case f.used[r.URL.Path] >= maxResponses:
		status, answer = http.StatusNotFound, "used_url"
	case !strings.HasPrefix(call.ContentType, "application/json") || json.Unmarshal(body, &call.JSON) != nil || call.JSON == nil:
		status, answer = http.StatusBadRequest, "invalid_payload"
	case call.JSON["text"] == nil && call.JSON["blocks"] == nil && call.JSON["delete_original"] != true:
		status, answer = http.StatusBadRequest, "no_text"
	default:
		f.used[r.URL.Path]++
		call.User, call.OK = parts[1], true
	}
	call.Status = status
	if fail != nil && fail.Drop {
		call.Status, call.OK = 0, false
	}
	hook := f.keep(call)
	f.mu.Unlock()
	if hook != nil {
		defer hook(call)
	}
	if fail != nil && fail.Drop {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
		return
	}
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

// Ephemeral reports what a call told whom, and only them: a
// chat.postEphemeral, or an ephemeral reply on a response_url that left the
// message clicked as it was.
func (c FakeCall) Ephemeral() (user, text string, ok bool) {
	switch {
	case !c.OK:
		return "", "", false
	case c.Method == "chat.postEphemeral":
		return c.Field("user"), c.Field("text"), true
	case c.Method == "response_url" && c.JSON["response_type"] == "ephemeral" && c.JSON["replace_original"] == false:
		text, _ := c.JSON["text"].(string)
		return c.User, text, true
	}
	return "", "", false
}

// chatAnswer is chat.postMessage's and chat.update's answer, its keys in
// the order Slack sends them.
type chatAnswer struct {
	OK      bool           `json:"ok"`
	Channel string         `json:"channel"`
	TS      string         `json:"ts"`
	Text    string         `json:"text,omitempty"` // chat.update's
	Message map[string]any `json:"message"`
}

// isUser says whether channel is a user's id, which chat.postMessage
// takes as the channel of a DM.
func isUser(channel string) bool {
	return strings.HasPrefix(channel, "U") || strings.HasPrefix(channel, "W")
}

func failure(err string) map[string]any { return map[string]any{"ok": false, "error": err} }

// tooLong reports whether blocks hold more text than BlocksTextLimit: the
// "text" of every text object in them, options' included.
func (f *FakeSlack) tooLong(blocks any) bool {
	limit := cmp.Or(f.blocksTextLimit, 12000)
	var count func(v any) int
	count = func(v any) int {
		n := 0
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				n += count(e)
			}
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "text" {
					n += length(s)
				} else {
					n += count(e)
				}
			}
		}
		return n
	}
	return count(blocks) > limit
}

// answer answers a successful call, and says whether it answered ok; f.mu
// is held.
func (f *FakeSlack) answer(c *FakeCall) (any, bool) {
	if strings.HasPrefix(c.Method, "chat.") && !f.granted("chat:write") {
		// Slack refuses a token without the method's scope before it
		// looks at anything else, naming the scope it needs.
		return missingScope("chat:write", f.Scopes), false
	}
	switch c.Method {
	case "chat.postMessage":
		ch := c.Field("channel")
		if ch == "" || !c.has("blocks") && c.Field("text") == "" {
			return failure("no_text"), false
		}
		if known, ok := f.chans[ch]; ok && known.Archived {
			return failure("is_archived"), false
		} else if ok && !known.Member {
			return failure("not_in_channel"), false
		}
		if errs := messageErrors(c.rawBlocks()); len(errs) > 0 {
			return refusal("invalid_blocks", errs), false
		}
		if f.tooLong(c.rawBlocks()) {
			return failure("msg_blocks_too_long"), false
		}
		if f.gone[c.Field("thread_ts")] {
			return failure("thread_not_found"), false
		}
		f.next++
		c.TS = f.stamp()
		msg := f.echo(c, c.TS)
		if th := c.Field("thread_ts"); th != "" {
			msg["thread_ts"] = th
			if c.Field("reply_broadcast") == "true" {
				msg["subtype"] = "thread_broadcast" // also shown in the channel
			}
		}
		if isUser(ch) {
			// Slack posts in the app's DM with the person, and answers
			// with that conversation's id.
			ch = "D" + ch[1:]
		}
		if f.hook == nil {
			if f.posted == nil {
				f.posted, f.byTS = map[string][]map[string]any{}, map[string]map[string]any{}
			}
			f.posted[ch] = append(f.posted[ch], msg)
			f.byTS[c.TS] = msg
		}
		return chatAnswer{OK: true, Channel: ch, TS: c.TS, Message: msg}, true
	case "chat.update":
		ts := c.Field("ts")
		if ts == "" || f.gone[ts] {
			return failure("message_not_found"), false
		}
		// chat.update takes a conversation's id; a person's is refused
		// ("For direct messages, ensure that this value is a DM ID").
		if ch := c.Field("channel"); ch == "" || isUser(ch) {
			return failure("channel_not_found"), false
		}
		if errs := messageErrors(c.rawBlocks()); len(errs) > 0 {
			return refusal("invalid_blocks", errs), false
		}
		if f.tooLong(c.rawBlocks()) {
			return failure("msg_blocks_too_long"), false
		}
		f.next++
		msg := f.echo(c, ts)
		text := c.Field("text")
		if c.Field("parse") != "none" {
			// parse "Defaults to client, unlike chat.postMessage": the
			// text's markup is stored escaped, "<url|label>" as
			// "&lt;url|label&gt;" (its & left as it is), and shows as
			// typed (shaharia-lab/slackcli#106, seen on a workspace).
			text = clientParse.Replace(text)
			msg["text"] = text
		}
		if m := f.byTS[ts]; m != nil && !c.has("blocks") {
			// "If you don't include this field, the message's previous
			// blocks will be retained": an edit of the text alone keeps
			// every button.
			msg["blocks"] = m["blocks"]
		}
		msg["edited"] = map[string]any{"user": fakeBotID, "ts": f.stamp()}
		if m := f.byTS[ts]; m != nil {
			m["text"], m["blocks"], m["edited"] = msg["text"], msg["blocks"], msg["edited"]
		}
		return chatAnswer{OK: true, Channel: c.Field("channel"), TS: ts, Text: text, Message: msg}, true
	case "chat.delete":
		ts := c.Field("ts")
		if ts == "" || f.gone[ts] {
			return failure("message_not_found"), false
		}
		if isUser(c.Field("channel")) { // chat.delete takes a conversation's id, not a person's
			return failure("channel_not_found"), false
		}
		if f.hook == nil && !slices.ContainsFunc(f.posted[c.Field("channel")], func(m map[string]any) bool { return m["ts"] == ts }) {
			return failure("message_not_found"), false
		}
		f.gone[ts] = true
		return map[string]any{"ok": true, "channel": c.Field("channel"), "ts": ts}, true
	case "chat.postEphemeral":
		if c.Field("user") == "" {
			return failure("user_not_in_channel"), false
		}
		if !c.has("blocks") && c.Field("text") == "" {
			return failure("no_text"), false
		}
		// Slack refuses an ephemeral where the bot may not post, as it
		// refuses a post there.
		if known, ok := f.chans[c.Field("channel")]; ok && known.Archived {
			return failure("is_archived"), false
		} else if ok && !known.Member {
			return failure("not_in_channel"), false
		}
		if errs := messageErrors(c.rawBlocks()); len(errs) > 0 {
			return refusal("invalid_blocks", errs), false
		}
		f.next++
		return map[string]any{"ok": true, "message_ts": f.stamp()}, true
	case "views.open", "views.update":
		if c.Method == "views.open" {
			// A trigger_id opens one view: Slack refuses it again with
			// exchanged_trigger_id ("The trigger_id was already exchanged
			// in a previous call").
			switch trigger := c.Field("trigger_id"); {
			case !triggerFormat.MatchString(trigger):
				// "The trigger_id is invalid. The expected format for the
				// trigger_id argument is "132456.7890123.abcdef"."
				return failure("invalid_trigger_id"), false
			case f.triggers[trigger]:
				return failure("exchanged_trigger_id"), false
			default:
				f.triggers[trigger] = true
			}
		}
		id := "V" + strconv.Itoa(f.next+1)
		if c.Method == "views.update" {
			// "Exactly one of these arguments is required to identify
			// the view": view_id (views.open's answer) or external_id;
			// a hash sent must be the view's current one (hash_conflict).
			id = c.Field("view_id")
			hash, known := f.views[id]
			switch {
			case (id == "") == (c.Field("external_id") == ""):
				return refusal("invalid_arguments", []string{"[ERROR] exactly one of view_id and external_id is required"}), false
			case id == "":
				return failure("not_found"), false // the bridge sets no external_id: no view has one
			case !known:
				return failure("not_found"), false
			case c.Field("hash") != "" && c.Field("hash") != hash:
				return failure("hash_conflict"), false
			}
		}
		if errs := viewErrors(c.JSON["view"]); len(errs) > 0 {
			return refusal("invalid_arguments", errs), false
		}
		if c.viewSize() > maxViewBytes {
			return failure("view_too_large"), false
		}
		view, _ := c.JSON["view"].(map[string]any)
		f.next++
		out := map[string]any{"id": id, "hash": fmt.Sprintf("1700000300.%06d", f.next)}
		for k, v := range view {
			out[k] = v
		}
		f.views[id] = out["hash"].(string)
		return map[string]any{"ok": true, "view": out}, true
	case "auth.test":
		return map[string]any{"ok": true, "url": "https://fake-workspace.slack.com/", "team": "Fake Workspace",
			"user": "askbridge", "team_id": "T0FAKETEAM", "user_id": fakeBotUID, "bot_id": fakeBotID, "is_enterprise_install": false}, true
	case "conversations.info":
		id := c.Field("channel")
		ch, ok := f.chans[id]
		if !ok {
			return failure("channel_not_found"), false
		}
		// Reading a conversation takes its kind's scope (channels:read,
		// groups:read, im:read, mpim:read), as reading its history does.
		if need := f.scopeOf(id, "read"); !f.granted(need) {
			return missingScope(need, f.Scopes), false
		}
		if strings.HasPrefix(id, "D") {
			return map[string]any{"ok": true, "channel": map[string]any{
				"id": id, "is_im": true, "user": "U" + id[1:], "is_archived": false, "is_org_shared": false,
				"created": 1700000000, "is_user_deleted": false, "priority": 0,
			}}, true
		}
		private := ch.Private || ch.GroupDM
		return map[string]any{"ok": true, "channel": map[string]any{
			"id": id, "name": ch.Name, "is_channel": !private, "is_group": false, "is_im": false, "is_mpim": ch.GroupDM,
			"is_private": private, "is_archived": ch.Archived, "is_general": false, "is_member": ch.Member,
			"created": 1700000000, "creator": "U0CREATOR1", "name_normalized": ch.Name,
		}}, true
	case "conversations.history", "conversations.replies":
		return f.history(c)
	case "usergroups.users.list":
		if !f.granted("usergroups:read") {
			return missingScope("usergroups:read", f.Scopes), false
		}
		users, ok := f.groups[c.Field("usergroup")]
		if !ok {
			return failure("no_such_subteam"), false
		}
		if users == nil {
			users = []string{} // Slack sends an empty group's members as [], not null
		}
		return map[string]any{"ok": true, "users": users}, true
	}
	return failure("unknown_method"), false
}

// stamp is the ts of the fake's latest message, f.next: as Slack's, the
// time it was posted, in seconds, and a part that tells it from the others
// of that second. f.mu is held.
func (f *FakeSlack) stamp() string {
	return fmt.Sprintf("%d.%06d", time.Now().Unix(), f.next%1_000_000)
}

// history answers conversations.history (the channel's messages, newest
// first, not those in threads) and conversations.replies (a thread's parent,
// then its replies, oldest first), from oldest (inclusive or not) on, at
// most limit of them (Slack's default and, for apps outside its
// Marketplace, its most: 15). f.mu is held.
func (f *FakeSlack) history(c *FakeCall) (any, bool) {
	ch := c.Field("channel")
	// Slack refuses a token without the scope of the conversation's kind
	// before it looks at the conversation, naming the scope it lacks.
	if need := f.scopeOf(ch, "history"); !f.granted(need) {
		return missingScope(need, f.Scopes), false
	}
	if known, ok := f.chans[ch]; ok && !known.Member {
		return failure("not_in_channel"), false
	}
	if ch == "" || isUser(ch) || len(f.posted[ch]) == 0 && !f.known(ch) {
		return failure("channel_not_found"), false
	}
	limit, err := strconv.Atoi(cmp.Or(c.Field("limit"), "15"))
	if err != nil || limit < 1 {
		return failure("invalid_limit"), false
	}
	limit = min(limit, 15)
	oldest, inclusive := c.Field("oldest"), c.Field("inclusive") == "true" || c.Field("inclusive") == "1"
	after := func(ts string) bool { return ts > oldest || inclusive && ts == oldest }
	thread := c.Field("ts")
	if c.Method == "conversations.replies" && thread == "" {
		return failure("thread_not_found"), false
	}
	var out []map[string]any
	for _, m := range f.posted[ch] {
		ts, _ := m["ts"].(string)
		th, _ := m["thread_ts"].(string)
		switch {
		case f.gone[ts] || !after(ts):
		case c.Method == "conversations.history" && (th == "" || th == ts):
			out = append([]map[string]any{m}, out...) // newest first
		case c.Method == "conversations.replies" && (ts == thread || th == thread):
			out = append(out, m)
		}
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	if out == nil {
		out = []map[string]any{}
	}
	if c.Method == "conversations.replies" {
		return map[string]any{"ok": true, "messages": out, "has_more": more}, true
	}
	return map[string]any{"ok": true, "messages": out, "has_more": more, "pin_count": 0, "channel_actions_ts": nil, "channel_actions_count": 0}, true
}

// scopeOf returns the scope that lets a bot token do what ("read",
// "history") in conversation id: each kind of conversation has its own,
// a public channel's channels:…, a private one's groups:…, a group DM's
// mpim:… and a DM's (D…) im:…. f.mu is held.
func (f *FakeSlack) scopeOf(id, what string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "im:" + what
	case f.chans[id].GroupDM:
		return "mpim:" + what
	case f.chans[id].Private:
		return "groups:" + what
	}
	return "channels:" + what
}

// granted reports whether the token has scope. f.mu is held.
func (f *FakeSlack) granted(scope string) bool {
	return slices.Contains(strings.Split(f.Scopes, ","), scope)
}

// missingScope is Slack's refusal of a call the token lacks a scope for.
func missingScope(needed, provided string) map[string]any {
	return map[string]any{"ok": false, "error": "missing_scope", "needed": needed, "provided": provided}
}

// known reports whether channel is one the fake knows of; any "C" one is,
// as chat.postMessage posts in any. f.mu is held.
func (f *FakeSlack) known(channel string) bool {
	_, ok := f.chans[channel]
	return ok || strings.HasPrefix(channel, "C")
}

// Messages returns the messages in channel that were posted and not
// deleted, as conversations.history holds them: each call carried out,
// whatever it was answered. Each is a copy, as it is now: an edit
// replaces the fake's own as the caller reads it.
func (f *FakeSlack) Messages(channel string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, m := range f.posted[channel] {
		if ts, _ := m["ts"].(string); !f.gone[ts] {
			out = append(out, maps.Clone(m))
		}
	}
	return out
}

// Field is the named argument of a call, from its form or its JSON body: a
// JSON string as it is, any other JSON value as JSON.
func (c FakeCall) Field(name string) string {
	if c.JSON == nil {
		return c.Form.Get(name)
	}
	switch v := c.JSON[name].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// has reports whether a call has the named argument.
func (c FakeCall) has(name string) bool {
	if c.JSON == nil {
		return c.Form.Has(name)
	}
	return c.JSON[name] != nil
}

// The bot the fake posts as.
const (
	fakeBotID  = "B0FAKEBOT1"
	fakeBotUID = "U0FAKEBOT1"
)

// echo is the message as chat.postMessage and chat.update answer with it:
// Slack sends the whole message back, blocks (each with a block_id) and the
// bot's profile included. f.mu is held.
func (f *FakeSlack) echo(c *FakeCall, ts string) map[string]any {
	blocks := c.Blocks()
	for i, b := range blocks {
		if b["block_id"] == nil {
			b["block_id"] = fmt.Sprintf("b%d%d", f.next, i)
		}
	}
	return map[string]any{
		"bot_id": fakeBotID, "type": "message", "text": c.Field("text"), "user": fakeBotUID,
		"ts": ts, "app_id": "A0001", "team": "T0001", "blocks": blocks,
		"bot_profile": map[string]any{
			"id": fakeBotID, "app_id": "A0001", "name": "askbridge", "deleted": false, "updated": 1700000000, "team_id": "T0001",
			"icons": map[string]any{
				"image_36": "https://a.slack-edge.com/80588/img/plugins/app/bot_36.png",
				"image_48": "https://a.slack-edge.com/80588/img/plugins/app/bot_48.png",
				"image_72": "https://a.slack-edge.com/80588/img/plugins/app/service_72.png",
			},
		},
	}
}

// Blocks returns the blocks a call sent: a message's, or a view's.
func (c FakeCall) Blocks() []map[string]any {
	var raw any
	switch {
	case c.Form.Get("blocks") != "":
		_ = json.Unmarshal([]byte(c.Form.Get("blocks")), &raw)
	case c.JSON != nil:
		raw = c.JSON["blocks"]
		if v, ok := c.JSON["view"].(map[string]any); ok {
			raw = v["blocks"]
		}
	}
	var out []map[string]any
	list, _ := raw.([]any)
	for _, b := range list {
		if m, ok := b.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// rawBlocks is the blocks argument of a chat.* call as sent, nil when it
// has none.
func (c FakeCall) rawBlocks() any {
	if c.JSON != nil {
		return c.JSON["blocks"]
	}
	if !c.Form.Has("blocks") {
		return nil
	}
	var raw any
	if json.Unmarshal([]byte(c.Form.Get("blocks")), &raw) != nil {
		return "not JSON"
	}
	return raw
}

// clientParse is how chat.update's default parse, client, stores a
// message's text.
var clientParse = strings.NewReplacer("<", "&lt;", ">", "&gt;")

// triggerFormat is the form of a trigger_id Slack takes: 132456.7890123.abcdef.
var triggerFormat = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9a-f]+$`)

// maxViewBytes is the largest view Slack opens or updates: "Error
// returned if the provided view is greater than 250kb" (view_too_large),
// read here as 250,000 bytes of its JSON, the lesser reading.
const maxViewBytes = 250_000

// viewSize is the size of the view a views.* call sent, in bytes of JSON
// as sent.
func (c FakeCall) viewSize() int {
	if c.JSON == nil {
		return len(c.Form.Get("view"))
	}
	var body struct {
		View json.RawMessage `json:"view"`
	}
	_ = json.Unmarshal([]byte(c.Body), &body)
	return len(body.View)
}

// View returns the view a views.open or views.update call sent.
func (c FakeCall) View() map[string]any {
	v, _ := c.JSON["view"].(map[string]any)
	return v
}

// Action returns the element of the call's blocks whose action_id starts
// with prefix, and its block's id ("" when the block has none).
func (c FakeCall) Action(prefix string) (element map[string]any, blockID string) {
	for _, b := range c.Blocks() {
		els, _ := b["elements"].([]any)
		for _, e := range els {
			el, _ := e.(map[string]any)
			if id, _ := el["action_id"].(string); strings.HasPrefix(id, prefix) {
				bid, _ := b["block_id"].(string)
				return el, bid
			}
		}
	}
	return nil, ""
}

// Text is all the text of a call's message: its fallback and every "text"
// in its blocks.
func (c FakeCall) Text() string {
	var s strings.Builder
	s.WriteString(c.Field("text"))
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if t, ok := x.(string); ok && k == "text" {
					s.WriteString("\n" + t)
				} else {
					walk(x)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, b := range c.Blocks() {
		walk(b)
	}
	return s.String()
}

// Sign returns the headers Slack signs a request body with at ts.
func Sign(secret string, ts time.Time, body string) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", stamp, body)
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Set("X-Slack-Request-Timestamp", stamp)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// FormBody is an interaction payload as Slack posts it: payload=<JSON>.
func FormBody(payload any) string {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	return url.Values{"payload": {string(b)}}.Encode()
}

// SlackUser is a user as interaction payloads carry it.
func SlackUser(id, name string) map[string]any {
	return map[string]any{"id": id, "username": name, "name": name, "team_id": "T0001"}
}

// BlockActions is the block_actions payload of a click on the element of
// the posted message msg whose action_id starts with prefix. with, when
// not nil, adds to the action (a select's selected_option), and state is
// the message's input state.
func BlockActions(t TB, msg FakeCall, user map[string]any, prefix string, with map[string]any, state map[string]any) map[string]any {
	t.Helper()
	p, err := Click(msg, user, prefix, with, state)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// clicks numbers the clicks' response_urls and trigger_ids.
var clicks atomic.Int64

// Click is BlockActions with an error for a message that has no such
// control.
func Click(msg FakeCall, user map[string]any, prefix string, with map[string]any, state map[string]any) (map[string]any, error) {
	el, blockID := msg.Action(prefix)
	if el == nil {
		return nil, fmt.Errorf("the message has no control %q", prefix)
	}
	if blockID == "" {
		blockID = "Xy7pQ" // Slack names the blocks it gets unnamed
	}
	action := map[string]any{
		"type": el["type"], "action_id": el["action_id"], "block_id": blockID,
		"action_ts": "1700000100.000200",
	}
	if txt, ok := el["text"]; ok {
		action["text"] = txt
	}
	if v, ok := el["value"]; ok {
		action["value"] = v
	}
	for k, v := range with {
		action[k] = v
	}
	ch := msg.Field("channel")
	if isUser(ch) {
		ch = "D" + ch[1:] // the click comes from the DM Slack posted in, as its answer said
	}
	if state == nil {
		state = map[string]any{}
	}
	n := clicks.Add(1)
	respond := "https://hooks.slack.com/actions/T0001/1/abcdef"
	if msg.server != "" {
		id, _ := user["id"].(string)
		respond = fmt.Sprintf("%s%sT0001/%s/%d", msg.server, actionsPath, id, n)
	}
	container := map[string]any{"type": "message", "message_ts": msg.TS, "channel_id": ch, "is_ephemeral": false}
	message := map[string]any{"type": "message", "user": "UBOT", "ts": msg.TS, "text": msg.Field("text"), "blocks": msg.Blocks()}
	if th := msg.Field("thread_ts"); th != "" {
		container["thread_ts"] = th
		message["thread_ts"] = th
	}
	return map[string]any{
		"type":                  "block_actions",
		"user":                  user,
		"api_app_id":            "A0001",
		"token":                 "legacy-verification-token",
		"container":             container,
		"trigger_id":            fmt.Sprintf("1700000100.%06d.abcdef0123456789", n), // each click's own, good for one view
		"team":                  map[string]any{"id": "T0001", "domain": "acme"},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": ch, "name": "agents"},
		"message":               message,
		"state":                 map[string]any{"values": state},
		"response_url":          respond,
		"actions":               []any{action},
	}, nil
}

// ViewSubmission is the view_submission payload of submitting the view
// that views.open opened, with values as state.values.
func ViewSubmission(opened FakeCall, user map[string]any, values map[string]any) map[string]any {
	v := opened.View()
	view := map[string]any{
		"id": "V0001", "team_id": "T0001", "type": "modal", "blocks": v["blocks"],
		"private_metadata": v["private_metadata"], "callback_id": v["callback_id"],
		"state": map[string]any{"values": values}, "hash": "1700000100.abcdef",
		"title": v["title"], "close": v["close"], "submit": v["submit"],
		"clear_on_close": false, "notify_on_close": false, "previous_view_id": nil,
		"root_view_id": "V0001", "app_id": "A0001", "external_id": "", "app_installed_team_id": "T0001", "bot_id": "B0001",
	}
	return map[string]any{
		"type": "view_submission", "team": map[string]any{"id": "T0001", "domain": "acme"},
		"user": user, "api_app_id": "A0001", "token": "legacy-verification-token",
		"trigger_id": "1700000200.123456.abcdef", "view": view, "response_urls": []any{},
		"is_enterprise_install": false, "enterprise": nil,
	}
}

// TextValue is a plain_text_input's state in a view.
func TextValue(s string) map[string]any {
	return map[string]any{"v": map[string]any{"type": "plain_text_input", "value": s}}
}

// FakeSocket is the fake's Socket Mode endpoint: apps.connections.open
// with its app token hands out a WebSocket URL of its own, which greets
// with hello as Slack's does. Send delivers an envelope on the newest
// connection; every message the client writes (the acks) goes to Acks,
// with the number of the connection it came on. Refuse makes
// apps.connections.open answer ok:false, as Slack does for a revoked or
// wrong token.
type FakeSocket struct {
	appToken string
	// Acks are the messages the client wrote, in order.
	Acks chan map[string]any

	mu      sync.Mutex
	conns   []*fakeConn // every connection, in order; closed ones too
	wake    chan struct{}
	refusal string // apps.connections.open's ok:false error, if set
}

// fakeConn is one WebSocket connection of the fake's Socket Mode.
type fakeConn struct {
	n      int // 1 for the first
	ws     *websocket.Conn
	wmu    sync.Mutex // one writer at a time
	closed chan struct{}
}

// SocketMode turns on the fake's Socket Mode for appToken.
func (f *FakeSlack) SocketMode(appToken string) *FakeSocket {
	f.socket = &FakeSocket{appToken: appToken, Acks: make(chan map[string]any, 64), wake: make(chan struct{})}
	return f.socket
}

// Refuse makes apps.connections.open answer {"ok":false,"error":err} from
// then on ("" accepts the app token again).
func (s *FakeSocket) Refuse(err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusal = err
}

func (s *FakeSocket) refused() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusal
}

// WaitConnected waits until the n-th connection has been greeted and is
// still open; it fails t after 10 s.
func (s *FakeSocket) WaitConnected(t TB, n int) {
	t.Helper()
	s.live(t, n)
}

// live returns the newest open connection, once there have been at least
// n; it fails t after 10 s.
func (s *FakeSocket) live(t TB, n int) *fakeConn {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		var c *fakeConn
		if len(s.conns) >= n {
			c = s.conns[len(s.conns)-1]
		}
		wake := s.wake
		s.mu.Unlock()
		if c != nil {
			select {
			case <-c.closed:
			default:
				return c
			}
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("timed out waiting for Socket Mode connection %d", n)
		}
	}
}

func (s *FakeSocket) changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.wake)
	s.wake = make(chan struct{})
}

// Send delivers an envelope on the newest open connection, waiting up to
// 10 s for one.
func (s *FakeSocket) Send(t TB, envelope any) {
	t.Helper()
	c := s.live(t, 1)
	if err := c.write(envelope); err != nil {
		t.Fatalf("sending an envelope: %v", err)
	}
}

// Disconnect sends Slack's disconnect message on the newest connection,
// reason "refresh_requested", "warning" or "link_disabled"; Slack closes
// the connection some seconds later, the client is to reconnect.
func (s *FakeSocket) Disconnect(t TB, reason string) {
	t.Helper()
	c := s.live(t, 1)
	if err := c.write(map[string]any{"type": "disconnect", "reason": reason,
		"debug_info": map[string]any{"host": "applink-fake"}}); err != nil {
		t.Fatalf("sending disconnect: %v", err)
	}
}

func (c *fakeConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(v)
}

// Interactive is the envelope Slack sends an interaction payload in over
// Socket Mode.
func Interactive(envelopeID string, payload any) map[string]any {
	return map[string]any{"envelope_id": envelopeID, "type": "interactive", "payload": payload, "accepts_response_payload": false}
}

// WaitAck waits up to 3 s, Slack's limit, for the ack of envelopeID and
// returns it; acks of other envelopes met meanwhile are dropped.
func (s *FakeSocket) WaitAck(t TB, envelopeID string) map[string]any {
	t.Helper()
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case ack := <-s.Acks:
			if ack["envelope_id"] == envelopeID {
				return ack
			}
		case <-deadline.C:
			t.Fatalf("envelope %s was not acked within 3 s", envelopeID)
			return nil
		}
	}
}

func (s *FakeSocket) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	c := &fakeConn{ws: ws, closed: make(chan struct{})}
	if c.write(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "applink-fake", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": "A0001"}}) != nil {
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	c.n = len(s.conns)
	s.mu.Unlock()
	s.changed()
	defer s.changed()
	defer close(c.closed)
	for {
		var m map[string]any
		if ws.ReadJSON(&m) != nil {
			return
		}
		m["connection"] = c.n
		s.Acks <- m
	}
}

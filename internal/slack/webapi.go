package slack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/surface"
)

// The two calls every request makes, chat.postMessage and chat.update, go
// through chatCall rather than slack-go: Slack answers both with the whole
// message, blocks and bot profile included, and slack-go decodes all of it,
// each block through reflection, for the bridge to read two strings. With
// answers shaped as Slack's, that was a quarter of a replica's CPU under
// bridge bench. The request is JSON, which Slack recommends for methods
// that take blocks (slack-go sends a form, the blocks URL-encoded inside
// it), with the token in the Authorization header.

// chatMessage is what a posted or edited message says.
type chatMessage struct {
	text   string
	blocks []slackapi.Block
	thread string // thread_ts, to post into a thread
	// broadcast also shows the thread's reply in the channel (Slack's
	// "Also send to #channel"), where it is seen.
	broadcast bool
}

// chatRequest is the body of a chat.postMessage or chat.update call.
type chatRequest struct {
	Channel     string           `json:"channel"`
	TS          string           `json:"ts,omitempty"`        // chat.update: the message to replace
	ThreadTS    string           `json:"thread_ts,omitempty"` // chat.postMessage: the thread to post into
	Broadcast   bool             `json:"reply_broadcast,omitempty"`
	Text        string           `json:"text"`
	Parse       string           `json:"parse,omitempty"` // chat.update: "none", as chat.postMessage treats text
	Blocks      []slackapi.Block `json:"blocks,omitempty"`
	UnfurlLinks bool             `json:"unfurl_links"`
	UnfurlMedia bool             `json:"unfurl_media"`
}

// chatReply is the part of a chat.* answer the bridge reads.
type chatReply struct {
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	Needed   string `json:"needed"`   // missing_scope: the scope the method needs
	Provided string `json:"provided"` // missing_scope: the token's scopes
	Channel  string `json:"channel"`
	TS       string `json:"ts"`
	Meta     struct {
		Messages []string `json:"messages"`
	} `json:"response_metadata"`
}

// postMessage posts m to channel and returns where it went.
func (s *Surface) postMessage(ctx context.Context, channel string, m chatMessage) (ch, ts string, err error) {
	r, err := s.chatCall(ctx, "chat.postMessage", chatRequest{
		Channel: channel, ThreadTS: m.thread, Broadcast: m.broadcast && m.thread != "", Text: m.text, Blocks: m.blocks,
	})
	if err == nil && (r.Channel == "" || r.TS == "") {
		// Slack names every message it posts; without a ts it could
		// never be edited, and would keep its controls.
		err = errors.New(`reading the answer: "ok": true with no "channel" or "ts"`)
	}
	return r.Channel, r.TS, err
}

// updateMessage replaces the message ts in channel with m. Its text is
// parsed as chat.postMessage parses it (parse none): chat.update's parse
// "Defaults to client, unlike chat.postMessage", which stores the markup
// of the text escaped (a "<!date^…>" of the status line shown as typed;
// shaharia-lab/slackcli#106, #120), and a message edited without parse
// loses the mode it was posted with.
func (s *Surface) updateMessage(ctx context.Context, channel, ts string, m chatMessage) error {
	_, err := s.chatCall(ctx, "chat.update", chatRequest{Channel: channel, TS: ts, Text: m.text, Parse: "none", Blocks: m.blocks})
	return err
}

// scratchBufs hold the scratch buffers requests are encoded into, and
// clicks' payloads trimmed into (trimMessage): a message of blocks is
// kilobytes, and encoding into a fresh buffer grew it (and copied it) two
// or three times for each post and edit.
var scratchBufs = sync.Pool{New: func() any { return new([]byte) }}

// putScratch returns b, a scratch buffer grown from *scratch, to the pool.
func putScratch(scratch *[]byte, b []byte) {
	if cap(b) <= 256<<10 { // an outsized one is left to the GC
		*scratch = b
		scratchBufs.Put(scratch)
	}
}

// encodeChat returns body as JSON, in a slice of its own exactly as long:
// the request keeps it (a retry reads it again), so the scratch buffer it
// was encoded into can go back to the pool at once.
func encodeChat(body chatRequest) ([]byte, error) {
	scratch := scratchBufs.Get().(*[]byte)
	enc, err := body.appendJSON((*scratch)[:0])
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(enc)
	putScratch(scratch, enc)
	return out, nil
}

// chatCall makes one attempt at a chat.* method. Its errors are those
// surface.StatusOf classifies: *surface.HTTPError for an HTTP failure (429
// with its Retry-After), slackapi.SlackErrorResponse for {"ok": false}.
func (s *Surface) chatCall(ctx context.Context, method string, body chatRequest) (chatReply, error) {
	b, err := encodeChat(body)
	if err != nil {
		return chatReply{}, err
	}
	resp, err := s.send(ctx, method, "application/json; charset=utf-8", bytes.NewReader(b))
	if err != nil {
		return chatReply{}, err
	}
	defer func() {
		// Read to the end, so that the connection goes back to the pool:
		// readChatReply leaves the echoed message unread, which for a
		// message at Slack's limits is tens of kB.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}()
	r, err := readChatReply(resp.Body)
	if err != nil {
		return r, fmt.Errorf("reading the answer: %w", err)
	}
	return r, answerError(r.OK, r.Error, r.Needed, r.Provided, r.Meta.Messages)
}

// answerError is the error of a Slack answer that says its call failed,
// nil when ok: slackapi.SlackErrorResponse with what Slack said (the
// error code, missing_scope's needed and provided, response_metadata's
// messages, which say what it found wrong in a message or a view).
func answerError(ok bool, code, needed, provided string, messages []string) error {
	switch {
	case ok:
		return nil
	case code == "":
		// Slack names the error of every {"ok": false}: this answer is
		// not Slack's (a proxy's, or a wrong api_url's), and an error of
		// "" would be logged as nothing at all.
		return errors.New(`reading the answer: it has neither "ok": true nor an error code`)
	}
	return slackapi.SlackErrorResponse{Err: code, ResponseMetadata: slackapi.ResponseMetadata{Messages: messages},
		Needed: needed, Provided: provided}
}

// The views.* calls go through viewCall rather than slack-go, whose
// OpenViewContext and UpdateViewContext encode with json.Marshal: it
// writes each <, > and & as a 6-byte \u escape, and a form of agent text
// full of them (20 typed questions prefilled with "<&>") took 367 kB,
// past the 250 kB Slack opens a view to (view_too_large), where as they
// are it takes 67 kB. encodeJSON writes them as they are, which decode
// the same, and the answer form is measured as it encodes (jsonSize).

// viewRequest is the body of a views.open or views.update call.
type viewRequest struct {
	TriggerID string                    `json:"trigger_id,omitempty"` // views.open: the click's
	ViewID    string                    `json:"view_id,omitempty"`    // views.update: the view to replace
	View      slackapi.ModalViewRequest `json:"view"`
}

// viewReply is the part of a views.* answer the bridge reads; Slack
// answers with the whole view.
type viewReply struct {
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	Needed   string `json:"needed"`
	Provided string `json:"provided"`
	Meta     struct {
		Messages []string `json:"messages"`
	} `json:"response_metadata"`
	View struct {
		ID string `json:"id"`
	} `json:"view"`
}

// encodeJSON is v as the bridge sends it to Slack: encoding/json's, but
// for <, > and &, written as they are rather than as \u003c, \u003e and
// \u0026. An Encoder's SetEscapeHTML(false) is not enough: slack-go's
// blocks marshal themselves, with json.Marshal, and an Encoder takes a
// Marshaler's escapes as they are.
func encodeJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return unescapeHTML(b), nil
}

// unescapeHTML rewrites, in place, the \u003c, \u003e and \u0026 of b,
// JSON as encoding/json writes it, as <, > and &: the same JSON. Every
// escape is a backslash and what follows it, so an escaped backslash
// followed by "u0026" (the text \u0026 in a string) is read as the
// escape it is and kept.
func unescapeHTML(b []byte) []byte {
	out := b[:0] // never longer than what it has read
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			var c byte
			switch string(b[i+2 : i+6]) {
			case "003c":
				c = '<'
			case "003e":
				c = '>'
			case "0026":
				c = '&'
			}
			if c != 0 {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// openView opens view with the click's trigger and returns its id.
func (s *Surface) openView(ctx context.Context, trigger string, view slackapi.ModalViewRequest) (string, error) {
	return s.viewCall(ctx, "views.open", viewRequest{TriggerID: trigger, View: view})
}

// updateView replaces the view id with view.
func (s *Surface) updateView(ctx context.Context, id string, view slackapi.ModalViewRequest) error {
	_, err := s.viewCall(ctx, "views.update", viewRequest{ViewID: id, View: view})
	return err
}

// viewCall makes one attempt at a views.* method and returns the view's
// id. Its errors are those of chatCall: *surface.HTTPError for an HTTP
// failure, slackapi.SlackErrorResponse for {"ok": false}, with Slack's
// response_metadata.messages (what it found wrong in a view).
func (s *Surface) viewCall(ctx context.Context, method string, body viewRequest) (string, error) {
	b, err := encodeJSON(body)
	if err != nil {
		return "", err
	}
	resp, err := s.send(ctx, method, "application/json; charset=utf-8", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	defer func() {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // the connection back to the pool
		resp.Body.Close()
	}()
	var r viewReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&r); err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	if err := answerError(r.OK, r.Error, r.Needed, r.Provided, r.Meta.Messages); err != nil {
		return "", err
	}
	return r.View.ID, nil
}

// readChatReply reads a chat.* answer up to what the bridge needs. Slack
// sends "ok", "channel" and "ts" first and the whole message after them;
// once a successful answer's channel and ts are read, the message is left
// unread (chatCall drains it). An answer in any other order is read whole.
func readChatReply(r io.Reader) (chatReply, error) {
	var out chatReply
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return out, fmt.Errorf("not a JSON object (%v, %v)", tok, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out, err
		}
		var v any
		switch tok {
		case "ok":
			v = &out.OK
		case "error":
			v = &out.Error
		case "needed":
			v = &out.Needed
		case "provided":
			v = &out.Provided
		case "channel":
			v = &out.Channel
		case "ts":
			v = &out.TS
		case "response_metadata":
			v = &out.Meta
		default:
			v = new(json.RawMessage)
		}
		if err := dec.Decode(v); err != nil {
			return out, err
		}
		if out.OK && out.Channel != "" && out.TS != "" {
			return out, nil
		}
	}
	_, err := dec.Token() // the closing brace, or why there is none
	return out, err
}

// send makes one attempt at Web API method, body being of contentType,
// with the bot token, and returns Slack's answer if it is one
// (surface.CheckResponse); the caller closes its body.
func (s *Surface) send(ctx context.Context, method, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apiURL+method, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+s.cfg.BotToken.Reveal())
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	if err := surface.CheckResponse(resp); err != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // the connection back to the pool
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// findPosts returns the ts of every message of request id posted in
// channel (in thread, when not "") since since, as Slack lists them (the
// newest first in a channel, the oldest first in a thread), or none: the
// message of a chat.postMessage that Slack answered with an error after it
// had posted it (internal_error, fatal_error and 5xx may come after the
// post). It reads the conversation's history, which needs the scope of
// its kind: channels:history, groups:history for a private channel,
// im:history for a DM. A message is the request's when a control in it
// names id, in a block named for hash, the request's body (see carry),
// and the bridge's bot posted it (ownBot).
func (s *Surface) findPosts(ctx context.Context, channel, thread string, since time.Time, id, hash string) ([]string, error) {
	bot, err := s.ownBot(ctx)
	if err != nil {
		return nil, err
	}
	method := "conversations.history"
	form := url.Values{"channel": {channel}, "oldest": {fmt.Sprintf("%d.000000", since.Unix())}, "inclusive": {"true"}, "limit": {"15"}}
	if thread != "" {
		method = "conversations.replies"
		form.Set("ts", thread)
	}
	resp, err := s.send(ctx, method, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		OK       bool   `json:"ok"`
		Error    string `json:"error"`
		Needed   string `json:"needed"`
		Messages []struct {
			TS     string `json:"ts"`
			BotID  string `json:"bot_id"`
			Blocks []struct {
				BlockID  string `json:"block_id"`
				Elements []struct {
					ActionID string `json:"action_id"`
				} `json:"elements"`
			} `json:"blocks"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if !r.OK {
		return nil, withNeeded(slackapi.SlackErrorResponse{Err: cmp.Or(r.Error, "no error code"), Needed: r.Needed})
	}
	var found []string
messages:
	for _, m := range r.Messages {
		if m.BotID != bot {
			continue
		}
		for _, b := range m.Blocks {
			if hash != "" && !strings.HasPrefix(b.BlockID, blockPrefix+hash+":") {
				continue
			}
			for _, el := range b.Elements {
				if ref, err := surface.ParseRef(el.ActionID); err == nil && ref.ID == id {
					found = append(found, m.TS)
					continue messages
				}
			}
		}
	}
	return found, nil
}

// withNeeded is err saying what to do when Slack refused the call for
// the bot token: which scope to add for the token's want of it
// (missing_scope, with the scope in "needed"), or that the token itself
// is refused (invalid_auth, token_revoked, …; see botTokenFix): the code
// alone leaves the team to guess, and the agent (NO_PROVIDER) and the
// log see the error's text only.
func withNeeded(err error) error {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "missing_scope" && se.Needed != "" {
		return fmt.Errorf("%w (needs %s: add the scope under OAuth & Permissions and reinstall the app)", err, se.Needed)
	}
	if fix := botTokenFix(err); fix != "" {
		return fmt.Errorf("%w (slack.bot_token%s)", err, fix)
	}
	return err
}

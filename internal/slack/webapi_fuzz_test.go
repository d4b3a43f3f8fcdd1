package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/surface"
)

// FuzzChatReply checks readChatReply, which reads a chat.postMessage or
// chat.update answer only up to "ok", "channel" and "ts", and chatCall,
// which makes an error of what it read. For any body, with any of the
// statuses Slack or a proxy answers with:
//
//   - nothing panics;
//   - on a body that is a JSON object as Slack could send it, the fields
//     the bridge uses equal those json.Unmarshal reads into the same
//     struct (see likeSlack for where the two may differ);
//   - chatCall succeeds only on an answer that says ok (postMessage only
//     on one that also names the channel and ts), its error is
//     never empty, is the *surface.HTTPError of a non-2xx status, and
//     carries Slack's error code for {"ok":false}; and it never holds the
//     bot token unless Slack's own error code or messages quoted it.
func FuzzChatReply(f *testing.F) {
	rec := benchRecord()
	live := render(rec, "", true)
	blocks := must(json.Marshal(live.blocks))
	msg := `{"user":"U0FAKEBOT1","type":"message","ts":"1700000000.000100","bot_id":"B0FAKEBOT1","app_id":"A0001","text":` +
		string(must(json.Marshal(live.text))) + `,"team":"T0001","bot_profile":{"id":"B0FAKEBOT1","deleted":false,"name":"askbridge","updated":1700000000,"app_id":"A0001","icons":{"image_36":"https://a.slack-edge.com/80588/img/plugins/app/bot_36.png"},"team_id":"T0001"},"blocks":` +
		string(blocks) + `}`
	const ok, tooMany, badGateway, unavailable = 0, 1, 3, 4 // indexes into statuses
	for _, s := range []struct {
		status uint8
		body   string
	}{
		// chat.postMessage as Slack answers it: ok, channel and ts, then
		// the whole message, and a warning about the request after it.
		{ok, `{"ok":true,"channel":"C0AGENTS","ts":"1700000000.000100","message":` + msg +
			`,"warning":"superfluous_charset","response_metadata":{"warnings":["superfluous_charset"]}}`},
		// chat.update: the text comes before the message.
		{ok, `{"ok":true,"channel":"C0AGENTS","ts":"1700000000.000100","text":` + string(must(json.Marshal(live.text))) + `,"message":` + msg + `}`},
		// The same, cut off after ts, and in another order, read whole.
		{ok, `{"ok":true,"channel":"C0AGENTS","ts":"1700000000.000100","message":{"blocks":[{"type":"sect`},
		{ok, `{"message":` + msg + `,"ts":"1700000000.000100","warning":"missing_charset","ok":true,"channel":"C0AGENTS"}`},
		// Re-encoded with sorted keys, as a proxy that parses and
		// re-serialises JSON may send it; and failed in an order nothing
		// sends, after a channel and a ts.
		{ok, `{"channel":"C0AGENTS","message":` + msg + `,"ok":true,"response_metadata":{"warnings":["superfluous_charset"]},"ts":"1700000000.000100","warning":"superfluous_charset"}`},
		{ok, `{"channel":"C0AGENTS","ts":"1700000000.000100","ok":false,"error":"cant_update_message"}`},
		// Slack's refusals, HTTP 200 with {"ok":false}.
		{ok, `{"ok":false,"error":"invalid_blocks","errors":["must be more than 0 characters [json-pointer:/blocks/1/text/text]"],` +
			`"response_metadata":{"messages":["[ERROR] must be more than 0 characters [json-pointer:/blocks/1/text/text]"]}}`},
		{ok, `{"ok":false,"error":"invalid_arguments","warning":"missing_charset","response_metadata":{"messages":["[ERROR] missing required field: channel"],"warnings":["missing_charset"]}}`},
		{ok, `{"ok":false,"error":"msg_blocks_too_long"}`},
		{ok, `{"ok":false,"error":"not_in_channel"}`},
		{ok, `{"ok":false,"error":"channel_not_found"}`},
		{ok, `{"ok":false,"error":"message_not_found"}`},
		{ok, `{"ok":false,"error":"invalid_auth"}`},
		{ok, `{"ok":false,"error":"ratelimited"}`},
		{ok, `{"ok":false,"error":"internal_error"}`},
		{tooMany, `{"ok":false,"error":"ratelimited"}`},
		// A proxy in front of Slack, and one that echoes the request.
		{badGateway, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"},
		{ok, "<!DOCTYPE html><html><head><title>Access denied</title></head><body><p>Blocked by policy.</p><pre>Authorization: Bearer " + testToken + "</pre></body></html>"},
		{unavailable, "upstream connect error or disconnect/reset before headers. reset reason: connection failure"},
		{ok, ""},
		{ok, "\n"},
		{ok, `{}`},
		{ok, `{"ok":false}`},
		{ok, `{"ok":true}`},
		{ok, `{"ok":"true","channel":"C1","ts":"1.2"}`},
		{ok, `{"ok":true}`},
		{ok, `{"ok":true,"channel":"C1","ts":""}`},
		{ok, `{"OK":true,"Channel":"C1","TS":"1.2"}`},
		{ok, `{"ok":true,"channel":"C1","ts":"1.2","ts":"3.4"}`},
		{ok, `null`},
		{ok, `["ok"]`},
	} {
		f.Add(s.status, s.body)
	}
	var sent string // the Authorization header of the last request
	s := &Surface{cfg: &config.Slack{BotToken: testToken}, apiURL: "https://slack.test/api/", http: &http.Client{}}
	f.Fuzz(func(t *testing.T, sel uint8, body string) {
		status := statuses[int(sel)%len(statuses)]
		got, rerr := readChatReply(strings.NewReader(body))
		if rerr == nil && !validStart(body) {
			t.Fatalf("readChatReply(%.300q) = %+v; want an error, it is not a JSON object", body, got)
		}
		if raw := []byte(body); json.Valid(raw) && validStart(body) && likeSlack(raw) {
			var want chatReply
			uerr := json.Unmarshal(raw, &want)
			early := rerr == nil && got.OK && got.Channel != "" && got.TS != ""
			switch {
			case rerr != nil && uerr == nil:
				t.Fatalf("readChatReply(%.300s): %v; json.Unmarshal reads it", body, rerr)
			case rerr != nil: // a value of the wrong type: both refuse it
			case uerr != nil && !early:
				t.Fatalf("readChatReply(%.300s) = %+v; json.Unmarshal refuses it: %v", body, got, uerr)
			default:
				if got.OK != want.OK || got.Channel != want.Channel || got.TS != want.TS {
					t.Fatalf("readChatReply(%.300s) = %+v; json.Unmarshal reads %+v", body, got, want)
				}
				// error and response_metadata are used only when not ok,
				// and such an answer is read whole.
				if !early && (got.Error != want.Error || !slices.Equal(got.Meta.Messages, want.Meta.Messages)) {
					t.Fatalf("readChatReply(%.300s) = %+v; json.Unmarshal reads %+v", body, got, want)
				}
			}
		}

		// chatCall, answered with body and status.
		s.http.Transport = roundTrip(func(req *http.Request) (*http.Response, error) {
			sent = req.Header.Get("Authorization")
			io.Copy(io.Discard, req.Body)
			h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
			if status == http.StatusTooManyRequests {
				h.Set("Retry-After", "30") // as Slack's 429 has it
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
		})
		r, err := s.chatCall(context.Background(), "chat.postMessage", chatRequest{Channel: "C0AGENTS", Text: "hi"})
		if sent != "Bearer "+testToken {
			t.Fatalf("the request was sent with Authorization %q", sent)
		}
		if err != nil {
			quoted := strings.Contains(r.Error, testToken) || slices.ContainsFunc(r.Meta.Messages, func(m string) bool { return strings.Contains(m, testToken) })
			if msg := err.Error(); strings.Contains(msg, testToken) && !quoted {
				t.Fatalf("chatCall's error holds the bot token: %s", msg)
			}
			if err.Error() == "" {
				t.Fatalf("chatCall(%d %.300q) failed with an empty error (%#v)", status, body, err)
			}
		}
		var he *surface.HTTPError
		var se slackapi.SlackErrorResponse
		switch {
		case status/100 != 2:
			if !errors.As(err, &he) || he.Status != status {
				t.Fatalf("HTTP %d: chatCall's error is %#v; want an *surface.HTTPError", status, err)
			}
			if st, wait := surface.StatusOf(err); st != status || status == http.StatusTooManyRequests && wait != 30*time.Second {
				t.Fatalf("HTTP %d: StatusOf(%v) = %d, %s", status, err, st, wait)
			}
		case rerr != nil:
			if err == nil || !strings.Contains(err.Error(), rerr.Error()) {
				t.Fatalf("chatCall(%.300q) = %v; readChatReply: %v", body, err, rerr)
			}
		case !got.OK && got.Error != "":
			if !errors.As(err, &se) || se.Err != got.Error || !slices.Equal(se.ResponseMetadata.Messages, got.Meta.Messages) {
				t.Fatalf("chatCall(%.300q) = %#v; want Slack's error %q", body, err, got.Error)
			}
		case !got.OK:
			if err == nil {
				t.Fatalf("chatCall(%.300q) succeeded on an answer that is not ok", body)
			}
		default:
			if err != nil || r.Channel != got.Channel || r.TS != got.TS {
				t.Fatalf("chatCall(%.300q) = %+v, %v; readChatReply: %+v", body, r, err, got)
			}
			// A post is taken only with the message it names.
			ch, ts, err := s.postMessage(context.Background(), "C0AGENTS", chatMessage{text: "hi"})
			if named := got.Channel != "" && got.TS != ""; (err == nil) != named || named && (ch != got.Channel || ts != got.TS) {
				t.Fatalf("postMessage(%.300q) = %q, %q, %v; readChatReply: %+v", body, ch, ts, err, got)
			}
		}
	})
}

// statuses are the HTTP statuses FuzzChatReply answers with.
var statuses = []int{http.StatusOK, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusForbidden, http.StatusNotFound}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// validStart reports whether body starts, after white space, with the
// { of a JSON object.
func validStart(body string) bool {
	b := bytes.TrimLeft([]byte(body), " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// likeSlack reports whether json.Unmarshal is the measure of what
// readChatReply should read from raw, a valid JSON object. Where the two
// may differ, raw is not what Slack sends, nor what a proxy passes on
// (a proxy forwards Slack's bytes or sends its own page; it rewrites no
// keys):
//
//   - encoding/json matches keys without regard to case ("OK", "Ts", and
//     "tſ" with a long s, for "ts"); readChatReply reads Slack's exact
//     keys, which are all lower case;
//   - of a key given twice, encoding/json keeps the last, and
//     readChatReply, which stops once it has ok, channel and ts, may keep
//     the first; Slack gives each key once.
//
// So raw is like Slack's when each key of the object and of its
// response_metadata that matches one of chatReply's fields in any case
// is that field's exact name, and given once.
func likeSlack(raw []byte) bool {
	keys, vals := objectMembers(raw)
	if !exactOnce(keys, "ok", "error", "channel", "ts", "response_metadata") {
		return false
	}
	if i := slices.Index(keys, "response_metadata"); i >= 0 && validStart(string(vals[i])) {
		meta, _ := objectMembers(vals[i])
		return exactOnce(meta, "messages")
	}
	return true
}

// exactOnce reports whether every key of keys that equals one of names,
// ignoring case as encoding/json does, equals it exactly, and is the only
// one that does.
func exactOnce(keys []string, names ...string) bool {
	for _, name := range names {
		n := 0
		for _, k := range keys {
			if strings.EqualFold(k, name) {
				if k != name {
					return false
				}
				n++
			}
		}
		if n > 1 {
			return false
		}
	}
	return true
}

// objectMembers returns the keys and values of raw, a valid JSON object, in
// order.
func objectMembers(raw []byte) (keys []string, vals []json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys, vals
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return keys, vals
		}
		keys = append(keys, tok.(string))
		vals = append(vals, v)
	}
	return keys, vals
}

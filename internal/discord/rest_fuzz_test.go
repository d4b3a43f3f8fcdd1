package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// FuzzRESTAnswer answers the bridge's REST calls (a message create, an
// interaction callback) with fuzzed answers: a status, a Retry-After
// header, a 429's rate-limit headers and a body. However Discord (or a
// proxy before it) answers, the call ends as the retry policy says and its
// reading agrees with a full decode of the answer:
//
//   - a 2xx create succeeds exactly when the body decodes as a message
//     with an id, and then with that id; it is tried once; a thread's
//     start likewise with a channel, and a 400 with 160004 (started
//     already) is the thread of the message's id;
//   - a 429 is tried again after max(Retry-After, the body's retry_after),
//     or 1 s when neither says, and fails at once past 60 s;
//   - a 5xx is tried again after the backoff (create is idempotent by its
//     nonce); a failure to connect too;
//   - any other status fails at once, and threadGone, uneditable and the
//     follow-up's Unknown Webhook test agree with the status and the
//     body's code ({"code": 10003, "message": "Unknown Channel"});
//   - no error quotes the bot token or the interaction token.
//
// X-RateLimit-* are read by discordgo's own limiter, not by askbridge;
// Discord sends them well formed (a malformed one fails the call in
// discordgo), so they are fuzzed as numbers. A bucket header always says
// a call remains: with none left discordgo waits, really, until the reset.
func FuzzRESTAnswer(f *testing.F) {
	created := `{"id":"1100000000000000001","channel_id":"1100000000000000010","type":0,"content":"**Ada** asks","timestamp":"2026-03-01T12:00:00.000000+00:00","edited_timestamp":null,"flags":0,"author":{"id":"1200000000000000002","username":"askbridge","bot":true},"embeds":[{"title":"Deploy","description":"Ship it?","color":5793266,"type":"rich"}],"components":[{"type":1,"components":[{"type":2,"style":1,"label":"Yes","custom_id":"ab:pick:abcdefghijklmnop:0:0:0123abcd"}]}],"nonce":"ab0123456789abcdef0123456","mention_everyone":false,"mentions":[],"mention_roles":[],"pinned":false,"tts":false}`
	for _, s := range []struct {
		status            uint16
		retryAfter        string
		resetAfter        float64
		global, dialFails bool
		body              string
	}{
		{200, "", 0, false, false, created},
		{201, "", 0.25, false, false, `{"id":"1100000000000000002"}`},
		{200, "", 0, false, false, `{"id":""}`},
		{200, "", 0, false, false, `null`},
		{200, "", 0, false, false, `{"id":"1","timestamp":"yesterday"}`},
		{200, "", 0, false, false, `{"id":"1","components":[{"type":18}]}`},
		{204, "", 0, false, false, ``},
		{429, "1.5", 1.5, false, false, `{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}`},
		{429, "", 0, true, false, `{"message": "You are being rate limited.", "retry_after": 0.3, "global": true, "code": 0}`},
		{429, "30", 0, false, false, `{"message": "You are being rate limited.", "retry_after": 64.57, "global": false}`},
		{429, "Thu, 01 Jan 2026 00:00:10 GMT", 0, false, false, `<html><body>error code: 1015</body></html>`},
		{429, "-1", 0, false, false, `{"retry_after":"soon"}`},
		{404, "", 0, false, false, `{"message": "Unknown Channel", "code": 10003}`},
		{404, "", 0, false, false, `{"message": "404: Not Found", "code": 0}`},
		{404, "", 0, false, false, `{"message": "Unknown Webhook", "code": 10015}`},
		{403, "", 0, false, false, `{"message": "Missing Access", "code": 50001}`},
		{403, "", 0, false, false, `{"message": "Missing Permissions", "code": 50013}`},
		{400, "", 0, false, false, `{"message": "Thread is archived", "code": 50083}`},
		{400, "", 0, false, false, `{"message": "Thread is locked", "code": 160005}`},
		{400, "", 0, false, false, `{"message": "A thread has already been created for this message", "code": 160004}`},
		{400, "", 0, false, false, `{"message": "Invalid Form Body", "code": 50035, "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}}`},
		{400, "", 0, false, false, `{"message": "Interaction has already been acknowledged.", "code": 40060}`},
		{401, "", 0, false, false, `{"message": "401: Unauthorized", "code": 0}`},
		{400, "", 0, false, false, `{"code": 10003, "message": 5}`},
		{500, "", 0, false, false, `{"message": "500: Internal Server Error", "code": 0}`},
		{502, "", 0, false, false, `<html><head><title>502 Bad Gateway</title></head></html>`},
		{503, "5", 0, false, false, `upstream connect error or disconnect/reset before headers`},
		{200, "", 0, false, true, ``},
	} {
		f.Add(s.status, s.retryAfter, s.resetAfter, s.global, s.dialFails, []byte(s.body))
	}

	const (
		botToken = "MTEwMDAwMDAwMDAwMDAwMDAwMg.fuzz.bot-token-that-must-never-show"
		appToken = "aW50ZXJhY3Rpb246MTEwMDAwMDAwMDAwMDAwMDA5OTpmdXp6LXRva2Vu-never-shown"
	)
	f.Fuzz(func(t *testing.T, rawStatus uint16, retryAfter string, resetAfter float64, global, dialFails bool, body []byte) {
		// Discord answers a success with 200, 201 or 204 (discordgo takes
		// no other 2xx as one), and never redirects an API call.
		status := int(rawStatus)
		if status < 200 || status > 599 {
			status = 200 + status%400
		}
		switch {
		case status/100 == 3:
			status += 100
		case status/100 == 2 && status != http.StatusCreated && status != http.StatusNoContent:
			status = http.StatusOK
		}
		tr := &answers{status: status, body: body, dialFails: dialFails, header: http.Header{}}
		if retryAfter != "" {
			tr.header.Set("Retry-After", retryAfter)
		}
		if status == http.StatusTooManyRequests && global {
			tr.header.Set("X-RateLimit-Global", "true")
			tr.header.Set("X-RateLimit-Scope", "global")
		} else if !math.IsNaN(resetAfter) && resetAfter >= 0 && resetAfter <= 1e6 {
			tr.header.Set("X-RateLimit-Limit", "5")
			tr.header.Set("X-RateLimit-Remaining", "1")
			tr.header.Set("X-RateLimit-Reset-After", strconv.FormatFloat(resetAfter, 'f', -1, 64))
			tr.header.Set("X-RateLimit-Bucket", "abcd1234")
		}
		s, waits := fuzzSurface(t, botToken, tr)

		msg, err := s.create(context.Background(), "1100000000000000010", &discordgo.MessageSend{Content: "hi", AllowedMentions: mentions("")}, "ab0123456789abcdef0123456")
		checkCall(t, "create", tr, waits, err, false, botToken, appToken)
		if !dialFails && status/100 == 2 {
			var full *discordgo.Message
			ok := json.Unmarshal(body, &full) == nil && full != nil && full.ID != ""
			switch {
			case ok && err != nil:
				t.Fatalf("a %d answer holding message %q failed: %v", status, full.ID, err)
			case !ok && err == nil:
				t.Fatalf("a %d answer with no message (%q) was taken as message %q", status, body, msg.ID)
			case ok && msg.ID != full.ID:
				t.Fatalf("message %q was read as %q", full.ID, msg.ID)
			}
		}

		tr.calls, *waits = 0, nil
		th, err := s.startThread(context.Background(), "1100000000000000010", "1100000000000000001", &pending.Record{Caller: &seam.Caller{Name: "deploy-bot", Session: "run 42"}})
		var refusal struct {
			Code int `json:"code"`
		}
		if !dialFails && status == http.StatusBadRequest && json.Unmarshal(body, &refusal) == nil && refusal.Code == discordgo.ErrCodeThreadAlreadyCreatedForThisMessage {
			// Started by an earlier try: the thread has the message's id.
			if err != nil || th != "1100000000000000001" {
				t.Fatalf("a thread already started (%d %q) was read as %q, %v", status, body, th, err)
			}
		} else {
			checkCall(t, "thread", tr, waits, err, false, botToken, appToken)
		}
		if !dialFails && status/100 == 2 {
			var full *discordgo.Channel
			ok := json.Unmarshal(body, &full) == nil && full != nil && full.ID != ""
			switch {
			case ok && (err != nil || th != full.ID):
				t.Fatalf("a %d answer holding thread %q was read as %q, %v", status, full.ID, th, err)
			case !ok && err == nil:
				t.Fatalf("a %d answer with no thread (%q) was taken as thread %q", status, body, th)
			}
		}

		tr.calls, *waits = 0, nil
		err = s.call(context.Background(), "interaction callback", func(opts ...discordgo.RequestOption) error {
			endpoint := discordgo.EndpointInteractionResponse("1100000000000000099", appToken)
			_, err := s.api.RequestWithBucketID(http.MethodPost, endpoint, deferredUpdate(), discordgo.EndpointInteractionResponse("1100000000000000099", ""), opts...)
			return err
		})
		checkCall(t, "callback", tr, waits, err, false, botToken, appToken)
	})
}

// answers is a transport that answers every request alike, in memory.
type answers struct {
	status    int
	header    http.Header
	body      []byte
	dialFails bool

	mu    sync.Mutex
	calls int
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	if a.dialFails {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	}
	return &http.Response{
		StatusCode: a.status, Status: fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)), Request: req,
	}, nil
}

// fuzzSurface is a Surface whose REST calls go to tr, whose retry policy
// tries 3 times and records its waits instead of waiting.
func fuzzSurface(t *testing.T, token string, tr http.RoundTripper) (*Surface, *[]time.Duration) {
	t.Helper()
	dc := &config.Discord{APIURL: "https://discord.test/api/v10/"}
	dc.BotToken = config.Secret(token)
	api, err := newSession(dc, &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	waits := &[]time.Duration{}
	r := surface.Retry{Attempts: 3, Sleep: func(_ context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return nil
	}}
	return &Surface{cfg: dc, api: api, retry: r, now: time.Now, opt: Options{}}, waits
}

// checkCall checks how a call answered as tr answers ended: its attempts
// and waits, its error, and what refusedWith reads in it.
func checkCall(t *testing.T, name string, tr *answers, waits *[]time.Duration, err error, once bool, tokens ...string) {
	t.Helper()
	status := tr.status
	if tr.dialFails {
		status = 0
	}
	var want []time.Duration // the waits between attempts
	backoff := []time.Duration{500 * time.Millisecond, time.Second}
	switch {
	case status/100 == 2:
	case status == 0 || status >= 500:
		if status == 0 || !once {
			want = backoff
		}
	case status == http.StatusTooManyRequests:
		wait, ok := rateLimitWait(tr.header.Get("Retry-After"), tr.body)
		if !ok {
			want = *waits // an absurd retry_after: only bounded attempts are checked
			break
		}
		if wait <= time.Minute {
			want = []time.Duration{wait, wait}
		}
	}
	if !sameWaits(*waits, want) {
		t.Fatalf("%s answered %d: waits %v, want %v", name, status, *waits, want)
	}
	if tr.calls != len(*waits)+1 {
		t.Fatalf("%s answered %d: %d attempts after %d waits", name, status, tr.calls, len(*waits))
	}
	if status/100 == 2 && name == "callback" && err != nil {
		t.Fatalf("%s answered %d failed: %v", name, status, err)
	}
	if status/100 != 2 && err == nil {
		t.Fatalf("%s answered %d succeeded", name, status)
	}
	if err != nil {
		for _, tok := range tokens {
			if strings.Contains(err.Error(), tok) && !bytes.Contains(tr.body, []byte(tok)) {
				t.Fatalf("%s: the error quotes a token: %v", name, err)
			}
		}
		if !strings.Contains(err.Error(), "discord "+map[string]string{"create": "create message", "thread": "start thread", "callback": "interaction callback"}[name]) {
			t.Fatalf("%s: the error does not name the call: %v", name, err)
		}
	}

	// Discord's refusal: a 404, or the code of its error body, read in
	// full as Discord documents it ({"code": int, "message": string}). A
	// 5xx is none, but what its body says is not checked: Discord sends
	// none of those codes with one (and discordgo reads a 502's body not
	// at all, any other's as a refusal's).
	if status >= 500 {
		return
	}
	refused := func(codes ...int) bool {
		if status < 400 || status == http.StatusTooManyRequests {
			return false
		}
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		code := 0
		if json.Unmarshal(tr.body, &e) == nil {
			code = e.Code
		}
		return status == http.StatusNotFound || slices.Contains(codes, code)
	}
	if got, want := threadGone(err), refused(10003, 50083, 160005, 50001, 50013); got != want {
		t.Fatalf("%s answered %d %q: threadGone %v, want %v (%v)", name, status, tr.body, got, want, err)
	}
	if got, want := uneditable(err), refused(10008, 10003, 50083, 160005); got != want {
		t.Fatalf("%s answered %d %q: uneditable %v, want %v (%v)", name, status, tr.body, got, want, err)
	}
	if got, want := refusedWith(err, codeUnknownWebhook), refused(10015); got != want {
		t.Fatalf("%s answered %d %q: Unknown Webhook %v, want %v (%v)", name, status, tr.body, got, want, err)
	}
}

// rateLimitWait is what a 429 with the Retry-After header ra and body
// asks to wait: the longer of the two, 1 s when neither says. ok is false
// for a retry_after too large to be a duration.
func rateLimitWait(ra string, body []byte) (time.Duration, bool) {
	var header time.Duration
	ra = strings.TrimSpace(ra)
	if secs, err := strconv.ParseFloat(ra, 64); err == nil {
		if secs > 0 && secs <= 24*3600 {
			header = time.Duration(secs * float64(time.Second))
		}
	} else if at, err := http.ParseTime(ra); err == nil && at.After(time.Now()) {
		header = time.Until(at)
	}
	var b struct {
		Bucket     string  `json:"bucket"`
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
	}
	var fromBody time.Duration
	if json.Unmarshal(body, &b) == nil {
		if math.Abs(b.RetryAfter) > 1e9 {
			return 0, false
		}
		fromBody = time.Duration(b.RetryAfter * float64(time.Second)).Truncate(time.Millisecond)
	}
	wait := max(header, fromBody)
	if wait <= 0 {
		wait = time.Second
	}
	return wait, true
}

// sameWaits compares waits to 2 ms: Discord's retry_after is read to the
// millisecond, and an HTTP date against the clock.
func sameWaits(got, want []time.Duration) bool {
	return slices.EqualFunc(got, want, func(g, w time.Duration) bool { return (g - w).Abs() <= 2*time.Millisecond })
}

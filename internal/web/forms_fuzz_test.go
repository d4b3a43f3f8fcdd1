package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
	"github.com/askbridge/askbridge/internal/web"
)

const (
	formsAsk    = "agent-token-7f3c9e21b4"
	formsAnswer = "ada-token-7f3c9e21b4"
)

// The requests that fuzzed bodies answer: three questions that an answer
// can get right or wrong in each way (single-select, multi-select, typed);
// a lone single-select question, which the web alone refuses to answer
// with nothing; an approval.
const (
	formsQuestions = `{"questions":[
 {"id":"deploy","question":"Deploy v2.3 to prod?","options":[{"label":"Yes, ship it (Recommended)","description":"Rolls out in 10 minutes."},{"label":"No, wait"}]},
 {"id":"regions","question":"Which regions get the release?","multiSelect":true,"options":[{"label":"eu-west"},{"label":"us-east"},{"label":"ap-south"}]},
 {"id":"replicas","question":"How many replicas should prod run?","input":{"type":"integer","required":true}}]}`
	formsLone     = `{"questions":[{"id":"deploy","question":"Deploy v2.3 to prod?","options":[{"label":"Yes, ship it (Recommended)"},{"label":"No, wait"}]}]}`
	formsApproval = `{"tool_name":"kubectl_apply","display_reason":"Apply the **v2.3** manifests to prod-eu.","arguments":{"namespace":"prod-eu"}}`
)

// A fuzzed body goes to one of these, by the input's first byte: an
// inbox call on a request created for it, sent as the page sends it
// (with the session's CSRF token, or with the signed link of a request's
// page), or the sign-in form.
var formsTargets = []struct {
	kind, create string // the request the body answers
	action       string // the web's endpoint; "signin" for the sign-in form
	link         bool   // sent by signed link, not by session
}{
	{"question", formsQuestions, "answer", false},
	{"question", formsLone, "answer", true},
	{"approval", formsApproval, "decision", false},
	{"approval", formsApproval, "decision", true},
	{"question", formsQuestions, "dismiss", false},
	{"", "", "signin", false},
}

// formsAllowed is every status and code an inbox call may earn with a
// valid session or link on a pending request.
var formsAllowed = map[int][]string{
	http.StatusOK:                    nil,
	http.StatusBadRequest:            {"INVALID_REQUEST"},
	http.StatusRequestEntityTooLarge: {"TOO_LARGE"},
}

// FuzzForms posts arbitrary bodies to what the web inbox's pages post to,
// on a running replica: the answer, decision and dismiss calls, and the
// sign-in form.
//
// An inbox call earns a status and code of formsAllowed, as JSON with a
// message for an error, never a 5xx or a dropped connection. A refused
// call leaves its request pending; a taken one reads back through the API
// as the reply said, by the web's responder. The web reads bodies as the
// API does: the same body sent to the API for a twin request is refused
// with the same status, code and message, or taken and recorded the same
// (the web alone refuses to answer a lone question with nothing).
//
// The sign-in form signs in exactly when its token, as a form parser reads
// it, is the answer-scoped token: 303 to a working inbox; 403 for the
// ask-scoped one; 401 for anything else, a form too large included.
func FuzzForms(f *testing.F) {
	url, prefix := apptest.Redis(f)
	// Logged to nowhere: a fuzz target must not log through f.
	a := apptest.StartLogged(f, apptest.Config(f, inboxConfig, url, prefix), app.Options{}, slog.New(slog.DiscardHandler))
	base := a.URL()
	browser := formsBrowser()
	csrf := formsSignIn(f, browser, base, "token="+formsAnswer)
	if csrf == "" {
		f.Fatal("sign-in failed")
	}
	anon := &http.Client{Timeout: 10 * time.Second} // a request's page opened by its link
	var lone seam.Questions
	if err := json.Unmarshal([]byte(formsLone), &lone); err != nil {
		f.Fatal(err)
	}

	for _, s := range []struct {
		target byte
		body   string
	}{
		// What the page sends, and what it would send wrong.
		{0, `{"answers":[{"id":"deploy","selected":["No, wait"]},{"id":"regions","selected":["eu-west","ap-south"],"custom":"and sa-east"},{"id":"replicas","selected":[],"custom":"3"}]}`},
		{0, `{"answers":[{"id":"deploy","selected":["Yes, ship it (Recommended)"]},{"id":"regions","selected":[]},{"id":"replicas","selected":[],"custom":"three"}]}`},
		{0, `{"answers":[{"id":"deploy","selected":["No, wait","Yes, ship it (Recommended)"]},{"id":"replicas","custom":"2"}]}`},
		{0, `{"answers":[{"id":"deploy","custom":"  after the freeze  "},{"id":"replicas","custom":"-0"}]}`},
		{0, `{"answers":[{"id":"replicas","custom":"9223372036854775808"}]}`},
		{0, `{"answers":[{"id":"replicas","custom":" 42 "}],"answers":[]}`},
		{0, `{"answers":[{"id":"deploy","selcted":["No, wait"]}]}`},
		{0, `{"answers":[{"id":7}]}`},
		{0, `{"answers":[]}`},
		{0, `{}`},
		{0, ``},
		{1, `{"answers":[{"id":"deploy","selected":["No, wait"]}]}`},
		{1, `{"answers":[{"id":"deploy","selected":[],"custom":""}]}`},
		{1, `{"answers":[{"id":"deploy","selected":[],"custom":"  ship on Monday "}]}`},
		{1, `{"answers":[]}`},
		{2, `{"outcome":"allowed-once","note":"go"}`},
		{2, `{"outcome":"rejected","note":"not during the freeze"}`},
		{2, `{"outcome":"allowed-once"} {}`},
		{2, `null`},
		{3, `{"outcome":"allowed-always"}`},
		{3, `{"outcome":"maybe"}`},
		{4, `{}`},
		// The sign-in form, as browsers encode it, and worse.
		{5, "token=" + formsAnswer},
		{5, "token=+" + formsAnswer + "%0A"},
		{5, "token=" + formsAsk},
		{5, "token=nope"},
		{5, "token=%zz&token=" + formsAnswer},
		{5, "x=1;token=" + formsAnswer},
		{5, "token=" + formsAnswer + "&pad=" + strings.Repeat("x", 16<<10)},
		{5, ""},
	} {
		f.Add(s.target, s.body)
	}

	f.Fuzz(func(t *testing.T, target byte, body string) {
		tg := formsTargets[int(target)%len(formsTargets)]
		if tg.action == "signin" {
			formsCheckSignIn(t, base, body)
			return
		}
		id := formsCreate(t, base, tg.kind, tg.create)
		req := formsPost(base+"/web/requests/"+id+"/"+tg.action, "application/json", body)
		client, by := browser, map[string]any{"surface": "web", "user_id": "ada", "name": "ada"}
		if tg.link {
			rec, err := a.Store().Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := neturl.Parse(a.Web().Links().Path(rec))
			req.Header.Set("X-Askbridge-Link", web.LinkParams(u).Get("e")+"."+web.LinkParams(u).Get("s"))
			client, by = anon, map[string]any{"surface": "web", "user_id": "link", "name": "someone with the link"}
		} else {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		r := formsDo(t, client, req)
		if r.body == nil {
			t.Fatalf("%s: %d, not JSON: %.300s", tg.action, r.status, r.raw)
		}
		codes, ok := formsAllowed[r.status]
		switch {
		case !ok:
			t.Fatalf("%s: status %d: %.300s", tg.action, r.status, r.raw)
		case r.status >= 300 && (!slices.Contains(codes, r.code()) || r.message() == ""):
			t.Fatalf("%s: %d with code %q and message %q", tg.action, r.status, r.code(), r.message())
		case r.status == http.StatusOK:
			if html, _ := r.body["html"].(string); html == "" {
				t.Fatalf("%s: taken, with no outcome to show: %.300s", tg.action, r.raw)
			}
		}

		got := formsAPI(t, base, "GET", "/v1/"+tg.kind+"s/"+id, formsAsk, "")
		if r.status != http.StatusOK {
			if got.body["status"] != "pending" {
				t.Fatalf("refused with %d %s, yet the request is %v", r.status, r.code(), got.body["status"])
			}
		} else {
			want := "answered"
			if tg.action == "dismiss" {
				want = "dismissed"
			}
			if r.body["status"] != want || got.body["status"] != want {
				t.Fatalf("%s: the reply says %v, a read says %v, want %s", tg.action, r.body["status"], got.body["status"], want)
			}
			if !reflect.DeepEqual(got.body["answered_by"], by) {
				t.Fatalf("answered by %v, want %v", got.body["answered_by"], by)
			}
			if tg.create == formsLone {
				var a seam.Answer
				json.Unmarshal([]byte(formsJSON(got.body["answer"])), &a)
				if surface.EmptyAnswer(lone.Questions, a) {
					t.Fatalf("the web took an answer of nothing to a lone question: %s", formsJSON(got.body["answer"]))
				}
			}
		}
		if tg.action == "dismiss" {
			return
		}

		// The same body, sent to the API for a twin of the request.
		path, field := "/v1/questions/{id}/answer", "answer"
		if tg.kind == "approval" {
			path, field = "/v1/approvals/{id}/decision", "decision"
		}
		twin := formsAPI(t, base, "POST", strings.Replace(path, "{id}", formsCreate(t, base, tg.kind, tg.create), 1), formsAnswer, body)
		switch {
		case r.status == http.StatusOK:
			if twin.status != http.StatusOK || !reflect.DeepEqual(twin.body[field], got.body[field]) {
				t.Fatalf("the web took %s %s, the API answers %d %.300s", field, formsJSON(got.body[field]), twin.status, twin.raw)
			}
		case r.message() == surface.MsgChooseOrWrite:
			if twin.status != http.StatusOK {
				t.Fatalf("the web refused an empty answer, the API refused it otherwise: %d %.300s", twin.status, twin.raw)
			}
		case twin.status != r.status || twin.code() != r.code() || twin.message() != r.message():
			t.Fatalf("the web refused with %d %s %q, the API answers %d %.300s", r.status, r.code(), r.message(), twin.status, twin.raw)
		}
	})
}

// formsCheckSignIn posts form to the sign-in form and checks the outcome
// against the token as a form parser reads it.
func formsCheckSignIn(t *testing.T, base, form string) {
	t.Helper()
	want := http.StatusUnauthorized
	if len(form) <= 16<<10 { // the form's limit: past it, no field is read
		vs, _ := neturl.ParseQuery(form)
		switch strings.TrimSpace(vs.Get("token")) {
		case formsAnswer:
			want = http.StatusSeeOther
		case formsAsk:
			want = http.StatusForbidden
		}
	}
	c := formsBrowser()
	r := formsDo(t, c, formsPost(base+"/web/signin", "application/x-www-form-urlencoded", form))
	switch {
	case r.status != want:
		t.Fatalf("sign-in with %.300q: %d, want %d: %.300s", form, r.status, want, r.raw)
	case want == http.StatusSeeOther:
		if loc := r.header.Get("Location"); loc != "/" {
			t.Fatalf("signed in, sent to %q", loc)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		if page := formsDo(t, c, req); page.status != http.StatusOK || !strings.Contains(page.raw, `<meta name="csrf-token" content="`) {
			t.Fatalf("signed in, yet the inbox is %d:\n%.500s", page.status, page.raw)
		}
	case !strings.Contains(r.raw, `action="/web/signin"`):
		t.Fatalf("refused with %d, but not with the sign-in page:\n%.500s", r.status, r.raw)
	}
}

// formsBrowser is a client with a cookie jar that shows redirects rather
// than following them.
func formsBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// formsSignIn signs c in with form and returns the inbox's CSRF token, or
// "" if it did not sign in.
func formsSignIn(t testing.TB, c *http.Client, base, form string) string {
	t.Helper()
	if r := formsDo(t, c, formsPost(base+"/web/signin", "application/x-www-form-urlencoded", form)); r.status != http.StatusSeeOther {
		return ""
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	page := formsDo(t, c, req).raw
	const marker = `<meta name="csrf-token" content="`
	i := strings.Index(page, marker)
	if i < 0 {
		return ""
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

// formsPost is a POST as a browser's page makes it, from its own origin.
func formsPost(url, contentType, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return req
}

type formsReply struct {
	status int
	header http.Header
	raw    string
	body   map[string]any // the JSON object of raw, if it is one
}

func (r formsReply) errField(k string) string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e[k].(string)
	return s
}

func (r formsReply) code() string    { return r.errField("code") }
func (r formsReply) message() string { return r.errField("message") }

// formsDo sends req and reads the reply whole: an error is a dropped
// connection (a panic) or a hang.
func formsDo(t testing.TB, c *http.Client, req *http.Request) formsReply {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: the connection broke (a panic?) or hung: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: the reply broke off: %v", req.Method, req.URL.Path, err)
	}
	r := formsReply{status: res.StatusCode, header: res.Header, raw: string(raw)}
	json.Unmarshal(raw, &r.body)
	return r
}

// formsAPI calls the bridge's API with token.
func formsAPI(t *testing.T, base, method, path, token, body string) formsReply {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return formsDo(t, http.DefaultClient, req)
}

// formsCreate creates a request of kind and returns its id.
func formsCreate(t *testing.T, base, kind, body string) string {
	t.Helper()
	r := formsAPI(t, base, "POST", "/v1/"+kind+"s", formsAsk, body)
	id, _ := r.body["id"].(string)
	if r.status != http.StatusCreated || id == "" {
		t.Fatalf("create: %d %.300s", r.status, r.raw)
	}
	return id
}

func formsJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"maps"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

var deploy = seam.Question{ID: "deploy", Question: "Deploy to prod?", Options: []seam.Option{{Label: "Yes (Recommended)"}, {Label: "No"}}}

func TestSignIn(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)

	if status, page := b.page(t, c, "/"); status != 200 || !strings.Contains(page, `action="/web/signin"`) {
		t.Fatalf("signed out, / = %d without the sign-in form:\n%s", status, page)
	}
	for _, tc := range []struct {
		name, token string
		status      int
		says        string
	}{
		{"unknown token", "nope", http.StatusUnauthorized, "That token is not valid."},
		{"ask-only token", "agent-token-7f3c9e21b4", http.StatusForbidden, "lacks the answer scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.PostForm(b.srv.URL+"/web/signin", url.Values{"token": {tc.token}})
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d", res.StatusCode, tc.status)
			}
			if len(res.Cookies()) != 0 {
				t.Errorf("a refused sign-in set cookies: %v", res.Cookies())
			}
		})
	}

	t.Run("answer token", func(t *testing.T) {
		res, err := c.PostForm(b.srv.URL+"/web/signin", url.Values{"token": {" ada-token-7f3c9e21b4\n"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
			t.Fatalf("status %d, Location %q", res.StatusCode, res.Header.Get("Location"))
		}
		ck := res.Cookies()
		if len(ck) != 1 {
			t.Fatalf("cookies %v", ck)
		}
		k := ck[0]
		if k.Name != cookieName || !k.HttpOnly || k.SameSite != http.SameSiteStrictMode || k.Secure || k.Path != "/" {
			t.Errorf("cookie %+v: want %s, HttpOnly, SameSite=Strict, not Secure over http, path /", k, cookieName)
		}
		if strings.Contains(k.Value, "ada-token-7f3c9e21b4") {
			t.Errorf("the cookie holds the raw token: %s", k.Value)
		}
		status, page := b.page(t, c, "/")
		if status != 200 || !strings.Contains(page, `data-page="inbox"`) || !strings.Contains(page, ">ada<") {
			t.Fatalf("signed in, / = %d:\n%s", status, page)
		}
	})

	t.Run("Secure and __Host- over https", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/web/signin", strings.NewReader("token=ada-token-7f3c9e21b4"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-Proto", "https")
		res, err := b.browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		ck := res.Cookies()
		if len(ck) != 1 || ck[0].Name != secureCookieName || !ck[0].Secure || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
			t.Errorf("cookies over https: %+v", ck)
		}
	})

	t.Run("over https only the __Host- cookie counts", func(t *testing.T) {
		good := b.web.sessionValue(session{Name: "ada", Exp: b.clock.now().Add(time.Hour).Unix()})
		for name, want := range map[string]bool{cookieName: false, secureCookieName: true} {
			req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/", nil)
			req.Header.Set("X-Forwarded-Proto", "https")
			req.AddCookie(&http.Cookie{Name: name, Value: good})
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if signedIn := strings.Contains(string(page), `data-page="inbox"`); signedIn != want {
				t.Errorf("over https with a session in %s: signed in = %v, want %v", name, signedIn, want)
			}
		}
	})

	t.Run("a forged or stale session is refused", func(t *testing.T) {
		good := b.web.sessionValue(session{Name: "ada", Exp: b.clock.now().Add(time.Hour).Unix()})
		forged := b.web.sessionValue(session{Name: "ada", Exp: b.clock.now().Add(time.Hour).Unix()})
		forged = forged[:strings.IndexByte(forged, '.')] + "." + strings.Repeat("A", 43)
		expired := b.web.sessionValue(session{Name: "ada", Exp: b.clock.now().Add(-time.Second).Unix()})
		asker := b.web.sessionValue(session{Name: "agent", Exp: b.clock.now().Add(time.Hour).Unix()})
		for name, v := range map[string]string{"good": good, "forged": forged, "expired": expired, "ask-only token": asker} {
			req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/", nil)
			req.AddCookie(&http.Cookie{Name: cookieName, Value: v})
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			signedIn := res.StatusCode == 200 && res.Header.Get("Content-Type") != "" && inboxServed(t, b, v)
			if signedIn != (name == "good") {
				t.Errorf("%s session: signed in = %v", name, signedIn)
			}
		}
	})

	t.Run("sign out with Redis down", func(t *testing.T) {
		c := b.browser(t)
		csrf := b.signIn(t, c, "ada-token-7f3c9e21b4")
		b.mr.SetError("LOADING Redis is loading the dataset in memory")
		res, err := c.PostForm(b.srv.URL+"/web/signout", url.Values{"csrf": {csrf}})
		b.mr.SetError("")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode < 500 {
			t.Errorf("sign-out with Redis down answered %d; want an error", res.StatusCode)
		}
		// The sign-out was not recorded, but this browser is signed out.
		if _, page := b.page(t, c, "/"); !strings.Contains(page, `action="/web/signin"`) {
			t.Errorf("the browser is still signed in after signing out with Redis down")
		}
	})

	t.Run("sign out", func(t *testing.T) {
		csrf := b.signIn(t, c, "ada-token-7f3c9e21b4")
		other := b.browser(t) // the same person on another device
		b.signIn(t, other, "ada-token-7f3c9e21b4")
		copied := sessionCookie(t, b, c)
		res, err := c.PostForm(b.srv.URL+"/web/signout", url.Values{"csrf": {csrf}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if _, page := b.page(t, c, "/"); !strings.Contains(page, `action="/web/signin"`) {
			t.Errorf("still signed in after signing out")
		}
		// The session ended on the server, not only in the browser: a copy
		// of its cookie is refused, for pages and for answers.
		if inboxServed(t, b, copied) {
			t.Errorf("a copy of the signed-out cookie still opens the inbox")
		}
		rec := b.ask(t, time.Hour, seam.Question{ID: "q", Question: "Deploy?"})
		copyOf := &http.Client{}
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/web/requests/"+rec.ID+"/dismiss", nil)
		req.AddCookie(&http.Cookie{Name: cookieName, Value: copied})
		req.Header.Set("X-CSRF-Token", csrf)
		res, err = copyOf.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || b.get(t, rec.ID).Status != seam.StatusPending {
			t.Errorf("a dismissal with the signed-out cookie: %d, request %s", res.StatusCode, b.get(t, rec.ID).Status)
		}
		if _, page := b.page(t, other, "/"); !strings.Contains(page, `data-page="inbox"`) {
			t.Errorf("signing out one browser signed out another")
		}
	})
}

// TestSignInFirst: a call that needs a session and has none is 401
// UNAUTHORIZED, and says "your session has ended" only when a session
// cookie came and is no longer good; a call without one (no cookie ever,
// curl) is told how to sign in to this bridge instead.
func TestSignInFirst(t *testing.T) {
	for _, bridge := range []struct {
		name   string
		tokens []api.Token
		user   string
		how    string
	}{
		{"no tokens", nil, anonymous, "open the one-time sign-in link from the bridge's log, or run bridge signin-link on its machine for another"},
		{"tokens", defaultTokens, "ada", "sign in at / with an API token that has the answer scope"},
	} {
		t.Run(bridge.name, func(t *testing.T) {
			b := newBench(t, bridge.tokens)
			rec := b.ask(t, time.Hour, deploy)
			expired := b.web.sessionValue(session{Name: bridge.user, Exp: b.clock.now().Add(-time.Second).Unix()})
			forged := b.web.sessionValue(session{Name: bridge.user, Exp: b.clock.now().Add(time.Hour).Unix()})
			forged = forged[:strings.IndexByte(forged, '.')] + "." + strings.Repeat("A", 43)
			for _, cookie := range []struct {
				name, value string
				set         bool
				ended       bool
			}{
				{"no cookie", "", false, false},
				{"an empty cookie", "", true, false},
				{"an expired session", expired, true, true},
				{"a forged session", forged, true, true},
			} {
				wantJSON, wantPage := "sign in first: "+bridge.how, "Sign in first: "+bridge.how+"."
				if cookie.ended {
					wantJSON, wantPage = "sign in first: your session has ended", "Your session has ended; reload the page to sign in again."
				}
				send := func(method, path, body string) (int, string) {
					t.Helper()
					req, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
					if cookie.set {
						req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie.value})
					}
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer res.Body.Close()
					raw, _ := io.ReadAll(res.Body)
					return res.StatusCode, string(raw)
				}
				for _, call := range []struct{ method, path, body string }{
					{http.MethodPost, "/web/requests/" + rec.ID + "/answer", `{}`}, // as QA sent it, with curl -d
					{http.MethodPost, "/web/requests/" + rec.ID + "/dismiss", ""},
					{http.MethodGet, "/web/events", ""},
				} {
					status, raw := send(call.method, call.path, call.body)
					var got struct {
						Error struct{ Code, Message string }
					}
					json.Unmarshal([]byte(raw), &got)
					if status != http.StatusUnauthorized || got.Error.Code != api.CodeUnauthorized || got.Error.Message != wantJSON {
						t.Errorf("%s: %s %s: %d %s, want 401 UNAUTHORIZED %q", cookie.name, call.method, call.path, status, raw, wantJSON)
					}
				}
				for _, path := range []string{"/web/cards", "/web/requests/" + rec.ID + "/outcome"} {
					if status, page := send(http.MethodGet, path, ""); status != http.StatusUnauthorized || !strings.Contains(page, template.HTMLEscapeString(wantPage)) {
						t.Errorf("%s: GET %s: %d, want 401 saying %q:\n%s", cookie.name, path, status, wantPage, page)
					}
				}
			}
			if got := b.get(t, rec.ID); got.Status != seam.StatusPending {
				t.Errorf("a call without a session ended the request: %s", got.Status)
			}
		})
	}
}

// sessionCookie is the session cookie c holds for the bench.
func sessionCookie(t *testing.T, b *bench, c *http.Client) string {
	t.Helper()
	u, _ := url.Parse(b.srv.URL)
	for _, k := range c.Jar.Cookies(u) {
		if k.Name == cookieName {
			return k.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

func inboxServed(t *testing.T, b *bench, cookie string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := new(strings.Builder)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		buf.WriteString(sc.Text())
	}
	return strings.Contains(buf.String(), `data-page="inbox"`)
}

func TestOneTimeSignInLink(t *testing.T) {
	b := newBench(t, nil)
	if got := newBench(t, defaultTokens).web.SignInLink("http://x"); got != "" {
		t.Errorf("a bridge with tokens printed a sign-in link: %s", got)
	}
	link := b.web.SignInLink(b.srv.URL)
	if !strings.HasPrefix(link, b.srv.URL+"/web/signin/") {
		t.Fatalf("link %q", link)
	}
	path := strings.TrimPrefix(link, b.srv.URL)
	c := b.browser(t)
	// Looking at the link (a chat's link preview, a mail scanner, a HEAD)
	// does not use it: it shows a button, whose POST does.
	for range 2 {
		status, page := b.page(t, b.browser(t), path)
		if status != http.StatusOK || !strings.Contains(page, `action="`+path+`"`) {
			t.Fatalf("opening the link: %d %s", status, page)
		}
	}
	if res, err := http.Head(b.srv.URL + path); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("HEAD of the link: %v %v", res, err)
	}
	useLink(t, c, b.srv.URL+path)
	if res, err := b.browser(t).PostForm(b.srv.URL+path, nil); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("second sign-in through the link: %v %v, want 403", res, err)
	}
	// The button tapped twice in the browser it signed in: to the inbox.
	if res, err := c.PostForm(b.srv.URL+path, nil); err != nil || res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Errorf("a second tap in the signed-in browser: %v %v, want 303 to /", res, err)
	}
	if _, page := b.page(t, c, "/"); !strings.Contains(page, ">anonymous<") {
		t.Errorf("not signed in as anonymous after the one-time link")
	}
	if status, _ := b.page(t, b.browser(t), path); status != http.StatusForbidden {
		t.Errorf("second use: %d, want 403", status)
	}
	// Pasting a token does nothing on a bridge with no tokens.
	res, err := b.browser(t).PostForm(b.srv.URL+"/web/signin", url.Values{"token": {""}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || len(res.Cookies()) != 0 {
		t.Errorf("token sign-in on an open bridge: %d %v", res.StatusCode, res.Cookies())
	}
}

// useLink signs browser c in through the one-time link at url.
func useLink(t *testing.T, c *http.Client, url string) {
	t.Helper()
	res, err := c.PostForm(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use of the sign-in link: %d", res.StatusCode)
	}
}

// TestUsedSignInLinkOpenedAgain: a used sign-in link opened again (Back,
// or from the log) in the browser it signed in goes to the inbox, not to
// "already used"; in any browser without a current session, a signed-out
// one too, it is still refused, and it sets no cookie anywhere.
func TestUsedSignInLinkOpenedAgain(t *testing.T) {
	b := newBench(t, nil)
	path := strings.TrimPrefix(b.web.SignInLink(b.srv.URL), b.srv.URL)
	c := b.browser(t)
	useLink(t, c, b.srv.URL+path)
	csrf := csrfOf(t, func() string { _, page := b.page(t, c, "/"); return page }())
	open := func(c *http.Client, method, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, b.srv.URL+path, nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		if res := open(c, method, path); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" || len(res.Cookies()) != 0 {
			t.Errorf("%s of the used link in the browser it signed in: %d to %q, cookies %v; want 303 to /, none set", method, res.StatusCode, res.Header.Get("Location"), res.Cookies())
		}
	}
	// An expired link, likewise.
	expired := strings.TrimPrefix(b.web.SignInLink(b.srv.URL), b.srv.URL)
	b.clock.add(2 * time.Hour)
	if res := open(c, http.MethodGet, expired); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Errorf("an expired link in a signed-in browser: %d to %q, want 303 to /", res.StatusCode, res.Header.Get("Location"))
	}
	b.clock.add(-2 * time.Hour)

	// Another browser, and this one once signed out, are refused.
	copied := sessionCookie(t, b, c)
	if res := open(b.browser(t), http.MethodGet, path); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Errorf("the used link in a new browser: %d, cookies %v; want 403, none", res.StatusCode, res.Cookies())
	}
	res, err := c.PostForm(b.srv.URL+"/web/signout", url.Values{"csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: copied})
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(page), "already used or has expired") || len(res.Cookies()) != 0 {
		t.Errorf("the used link with a signed-out session: %d, cookies %v; want the 403 page:\n%s", res.StatusCode, res.Cookies(), page)
	}
}

// Asking for sign-in links in a loop retires the oldest unused ones: the
// set of good links (and each sign-in's scan of it) stays small.
func TestOneTimeSignInLinksAreCapped(t *testing.T) {
	var o onceLinks
	now := time.Unix(1_800_000_000, 0)
	var issued []string
	for i := range 10 * maxOnceLinks {
		issued = append(issued, o.issue(now.Add(time.Duration(i)*time.Second), time.Hour))
	}
	if len(o.nonce) != maxOnceLinks {
		t.Errorf("%d links good at once, want %d", len(o.nonce), maxOnceLinks)
	}
	at := now.Add(time.Duration(len(issued)) * time.Second)
	for i, n := range issued {
		if want := i >= len(issued)-maxOnceLinks; o.valid(n, at) != want {
			t.Errorf("link %d of %d good: %t, want %t", i+1, len(issued), !want, want)
		}
	}
	if newest := issued[len(issued)-1]; !o.use(newest, at) || o.use(newest, at) {
		t.Error("the newest link does not sign in exactly once")
	}
}

func TestCSRF(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	csrf := b.signIn(t, c, "ada-token-7f3c9e21b4")
	rec := b.ask(t, time.Hour, deploy)
	path := "/web/requests/" + rec.ID + "/answer"
	answer := seam.Answer{Answers: []seam.AnswerItem{{ID: "deploy", Selected: []string{"No"}}}}

	other := b.browser(t)
	otherCSRF := b.signIn(t, other, "ada-token-7f3c9e21b4")
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"no token", nil, http.StatusForbidden},
		{"wrong token", map[string]string{"X-CSRF-Token": "AAAA"}, http.StatusForbidden},
		{"another session's token", map[string]string{"X-CSRF-Token": otherCSRF + "x"}, http.StatusForbidden},
		{"cross-site origin", map[string]string{"X-CSRF-Token": csrf, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"other origin without fetch metadata", map[string]string{"X-CSRF-Token": csrf, "Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := b.post(t, c, path, tc.headers, answer)
			if status != tc.status || errCode(body) != "FORBIDDEN" {
				t.Errorf("status %d %v, want %d FORBIDDEN, as JSON", status, body, tc.status)
			}
			if got := b.get(t, rec.ID); got.Status != seam.StatusPending {
				t.Fatalf("a refused call changed the request: %s", got.Status)
			}
		})
	}
	t.Run("no session", func(t *testing.T) {
		if status, _ := b.post(t, b.browser(t), path, map[string]string{"X-CSRF-Token": csrf}, answer); status != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", status)
		}
	})
	t.Run("sign-out needs it too", func(t *testing.T) {
		res, err := c.PostForm(b.srv.URL+"/web/signout", url.Values{"csrf": {"bad"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("sign-out with a bad CSRF token: %d", res.StatusCode)
		}
		// Its form is read within the API's body limit, as the answer
		// calls' are.
		big := url.Values{"pad": {strings.Repeat("x", seam.MaxBodyBytes)}, "csrf": {csrf}}.Encode()
		if res, err = c.Post(b.srv.URL+"/web/signout", "application/x-www-form-urlencoded", strings.NewReader(big)); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if _, page := b.page(t, c, "/"); res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(page, `data-page="inbox"`) {
			t.Errorf("sign-out with a form past the limit: %d, want 413 and still signed in", res.StatusCode)
		}
		// In the header, as a script sends it, it signs out as the form's does.
		other := b.browser(t)
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/web/signout", nil)
		req.Header.Set("X-CSRF-Token", b.signIn(t, other, "ada-token-7f3c9e21b4"))
		if res, err = other.Do(req); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if _, page := b.page(t, other, "/"); res.StatusCode != http.StatusSeeOther || !strings.Contains(page, `action="/web/signin"`) {
			t.Errorf("sign-out with the CSRF token in X-CSRF-Token: %d, and still signed in", res.StatusCode)
		}
	})
	t.Run("in a form's field", func(t *testing.T) {
		// A plain HTML form (no script) sends the token as the sign-out
		// form does, as a field: urlencoded or multipart.
		form := func(t *testing.T, contentType, body string) int {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/web/requests/"+b.ask(t, time.Hour, deploy).ID+"/dismiss", strings.NewReader(body))
			req.Header.Set("Content-Type", contentType)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		multipartForm := func(pad int) (contentType, body string) {
			var b strings.Builder
			mw := multipart.NewWriter(&b)
			mw.WriteField("pad", strings.Repeat("x", pad))
			mw.WriteField("csrf", csrf)
			mw.Close()
			return mw.FormDataContentType(), b.String()
		}
		mpType, mp := multipartForm(0)
		bigType, big := multipartForm(seam.MaxBodyBytes)
		for _, tc := range []struct {
			name, contentType, body string
			status                  int
		}{
			{"urlencoded", "application/x-www-form-urlencoded", url.Values{"csrf": {csrf}}.Encode(), http.StatusOK},
			{"multipart", mpType, mp, http.StatusOK},
			{"multipart, past the body's limit", bigType, big, http.StatusRequestEntityTooLarge},
			{"wrong", "application/x-www-form-urlencoded", "csrf=AAAA", http.StatusForbidden},
			{"another session's", "application/x-www-form-urlencoded", url.Values{"csrf": {otherCSRF}}.Encode(), http.StatusForbidden},
			{"in JSON", "application/json", `{"csrf":"` + csrf + `"}`, http.StatusForbidden},
			{"past the body's limit", "application/x-www-form-urlencoded", "pad=" + strings.Repeat("x", seam.MaxBodyBytes) + "&csrf=" + url.QueryEscape(csrf), http.StatusRequestEntityTooLarge},
		} {
			if got := form(t, tc.contentType, tc.body); got != tc.status {
				t.Errorf("%s: %d, want %d", tc.name, got, tc.status)
			}
		}
		// A script's JSON sent as a form (curl -d) with the token in the
		// header is read as JSON still: the form is read only without it.
		rec := b.ask(t, time.Hour, deploy)
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/web/requests/"+rec.ID+"/answer", strings.NewReader(`{"answers":[{"id":"deploy","selected":["No"]}]}`))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-CSRF-Token", csrf)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := b.get(t, rec.ID); res.StatusCode != http.StatusOK || fmtAnswers(got.Answer) != "[{deploy [No] }]" {
			t.Errorf("JSON sent as a form: %d, %+v", res.StatusCode, got.Answer)
		}
	})
	t.Run("same origin with the token", func(t *testing.T) {
		h := map[string]string{"X-CSRF-Token": csrf, "Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"}
		if status, body := b.post(t, c, path, h, answer); status != http.StatusOK {
			t.Fatalf("status %d: %v", status, body)
		}
	})
}

func TestAnswerDecideDismiss(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}

	t.Run("answer", func(t *testing.T) {
		rec := b.ask(t, time.Hour, deploy, seam.Question{ID: "regions", Question: "Where?", MultiSelect: true,
			Options: []seam.Option{{Label: "eu"}, {Label: "us"}, {Label: "ap"}}})
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{
			map[string]any{"id": "regions", "selected": []string{"us", "eu"}, "custom": "  and mars "},
			map[string]any{"id": "deploy", "selected": []string{"Yes (Recommended)"}},
		}})
		if status != 200 || body["status"] != "answered" || !strings.Contains(body["html"].(string), "Answered by <bdi>ada</bdi>") {
			t.Fatalf("%d %v", status, body)
		}
		got := b.get(t, rec.ID)
		want := `[{deploy [Yes (Recommended)] } {regions [eu us] and mars}]` // the options' order
		if s := fmtAnswers(got.Answer); s != want {
			t.Errorf("answer %s, want %s", s, want)
		}
		if by := got.ResolvedBy; by == nil || *by != (pending.Responder{Surface: "web", UserID: "ada", Name: "ada"}) {
			t.Errorf("resolved by %+v", by)
		}
		status, body = b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{}})
		if status != http.StatusConflict || errCode(body) != "ALREADY_RESOLVED" || !strings.Contains(body["html"].(string), "Answered by <bdi>ada</bdi>") {
			t.Errorf("second answer: %d %v", status, body)
		}
		// A stale form, one the request would refuse, gets the outcome too:
		// it is not the person's to mend any more.
		status, body = b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{
			map[string]any{"id": "nope", "selected": []string{"x"}}}, "extra": true})
		if status != http.StatusConflict || errCode(body) != "ALREADY_RESOLVED" || !strings.Contains(body["html"].(string), "Answered by <bdi>ada</bdi>") {
			t.Errorf("a stale, invalid form after the answer: %d %v", status, body)
		}
	})

	t.Run("a body that is not an object is refused", func(t *testing.T) {
		// As the API refuses it: null too, which would read as an
		// answer without "answers" or a decision without an outcome.
		q, ap := b.ask(t, time.Hour, deploy), b.approval(t, seam.Approval{ToolName: "kubectl_apply"})
		for _, path := range []string{"/web/requests/" + q.ID + "/answer", "/web/requests/" + ap.ID + "/decision"} {
			for body, want := range map[string]string{
				`null`: "the request body must be an object, not JSON null",
				`[]`:   "the request body must be an object, not a JSON array",
			} {
				status, got := b.post(t, c, path, h, json.RawMessage(body))
				msg, _ := got["error"].(map[string]any)["message"].(string)
				if status != http.StatusBadRequest || errCode(got) != "INVALID_REQUEST" || msg != want {
					t.Errorf("%s with %s: %d %v, want 400 INVALID_REQUEST %q", path, body, status, got, want)
				}
			}
		}
		if b.get(t, q.ID).Status != seam.StatusPending || b.get(t, ap.ID).Status != seam.StatusPending {
			t.Errorf("a refused body ended a request")
		}
	})

	t.Run("a lone question sent with nothing chosen is refused", func(t *testing.T) {
		rec := b.ask(t, time.Hour, seam.Question{ID: "env", Question: "Where?", Options: []seam.Option{{Label: "eu"}, {Label: "us"}}})
		for _, answers := range []any{[]any{}, []any{map[string]any{"id": "env", "selected": []string{}, "custom": "  "}}} {
			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": answers})
			e, _ := body["error"].(map[string]any)
			if status != 400 || e["code"] != "INVALID_REQUEST" || e["field"] != "env" || e["message"] != surface.MsgChooseOrWrite {
				t.Errorf("%v: %d %v", answers, status, body)
			}
		}
		if got := b.get(t, rec.ID); got.Status != seam.StatusPending {
			t.Fatalf("status %s, want still pending", got.Status)
		}
		status, _ := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "env", "selected": []string{"us"}}}})
		if got := b.get(t, rec.ID); status != 200 || fmtAnswers(got.Answer) != "[{env [us] }]" {
			t.Errorf("%d %+v", status, got.Answer)
		}
	})

	t.Run("a lone free-text question sent blank is refused", func(t *testing.T) {
		// As the form's script and Slack's and Discord's forms refuse it
		// (surface.TextRequired), with the API's words for a required field.
		rec := b.ask(t, time.Hour, seam.Question{ID: "why", Header: "Reason", Question: "Why roll back?"})
		for _, answers := range []any{[]any{}, []any{map[string]any{"id": "why", "selected": []string{}, "custom": "  "}}} {
			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": answers})
			e, _ := body["error"].(map[string]any)
			if status != 400 || e["code"] != "INVALID_REQUEST" || e["field"] != "why" || e["message"] != "Reason is required" {
				t.Errorf("%v: %d %v", answers, status, body)
			}
		}
		if got := b.get(t, rec.ID); got.Status != seam.StatusPending {
			t.Fatalf("status %s, want still pending", got.Status)
		}
		// What the form does not require may still be skipped, as long as
		// something is answered (surface.EmptyAnswer).
		for _, tc := range []struct {
			qs      []seam.Question
			answers []any
		}{
			{[]seam.Question{{ID: "a", Question: "Why?"}, {ID: "b", Question: "And?"}}, []any{map[string]any{"id": "a", "selected": []string{}}, map[string]any{"id": "b", "custom": "because"}}},
			{[]seam.Question{{ID: "n", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger}}}, []any{map[string]any{"id": "n", "selected": []string{}}}},
		} {
			rec := b.ask(t, time.Hour, tc.qs...)
			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": tc.answers})
			if got := b.get(t, rec.ID); status != 200 || got.Status != seam.StatusAnswered || got.Answer.Answers[0].Custom != "" {
				t.Errorf("%s skipped: %d %v", tc.qs[0].ID, status, body)
			}
		}
	})

	t.Run("invalid answer names its field", func(t *testing.T) {
		rec := b.ask(t, time.Hour, seam.Question{ID: "n", Question: "How many?", Input: &seam.Input{Type: "integer", Required: true}})
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "n", "selected": []string{}, "custom": "many"}}})
		e, _ := body["error"].(map[string]any)
		if status != 400 || e["code"] != "INVALID_REQUEST" || e["field"] != "n" {
			t.Errorf("%d %v", status, body)
		}
		status, _ = b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "n", "selected": []string{}, "custom": " 42 "}}})
		if got := b.get(t, rec.ID); status != 200 || got.Answer.Answers[0].Custom != "42" {
			t.Errorf("%d %+v", status, got.Answer)
		}
	})

	t.Run("an integer past 64 bits is refused with its range", func(t *testing.T) {
		rec := b.ask(t, time.Hour, seam.Question{ID: "n", Header: "Copies", Question: "How many?", Input: &seam.Input{Type: "integer", Required: true}})
		for _, text := range []string{"99999999999999999999", " -9223372036854775809", "+" + strings.Repeat("9", 5000)} {
			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "n", "selected": []string{}, "custom": text}}})
			e, _ := body["error"].(map[string]any)
			if m, _ := e["message"].(string); status != 400 || e["code"] != "INVALID_REQUEST" || e["field"] != "n" ||
				!strings.HasPrefix(m, "Copies: ") || !strings.HasSuffix(m, " is not a whole number from -9223372036854775808 to 9223372036854775807") {
				t.Errorf("%.30s: %d %v", text, status, body)
			}
		}
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "n", "selected": []string{}, "custom": "-9223372036854775808"}}})
		if got := b.get(t, rec.ID); status != 200 || got.Answer.Answers[0].Custom != "-9223372036854775808" {
			t.Errorf("the smallest int64: %d %v", status, body)
		}
	})

	t.Run("decision", func(t *testing.T) {
		rec := b.approval(t, seam.Approval{ToolName: "kubectl_apply", Reason: "ship it"})
		if status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{}}); status != 404 {
			t.Errorf("answering an approval: %d %v", status, body)
		}
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/decision", h, map[string]any{"outcome": "rejected", "note": " not on a Friday "})
		if status != 200 {
			t.Fatalf("%d %v", status, body)
		}
		if got := b.get(t, rec.ID); got.Decision == nil || *got.Decision != (seam.Decision{Outcome: "rejected", Note: "not on a Friday"}) {
			t.Errorf("decision %+v", got.Decision)
		}
	})

	t.Run("dismiss", func(t *testing.T) {
		rec := b.ask(t, time.Hour, deploy)
		if status, body := b.post(t, c, "/web/requests/"+rec.ID+"/dismiss", h, nil); status != 200 || body["status"] != "dismissed" {
			t.Fatalf("%d %v", status, body)
		}
		if got := b.get(t, rec.ID); got.Status != seam.StatusDismissed || got.ResolvedBy.Surface != "web" {
			t.Errorf("%s %+v", got.Status, got.ResolvedBy)
		}
	})

	t.Run("an answer without answers is refused", func(t *testing.T) {
		// as the API refuses it: recorded, it would skip every question for good
		rec := b.ask(t, time.Hour, deploy)
		for _, body := range []any{map[string]any{}, map[string]any{"answers": nil}} {
			status, got := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, body)
			if status != 400 {
				t.Errorf("answer %v: %d %v, want 400", body, status, got)
			}
		}
		status, got := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": 7}}})
		if msg := fmt.Sprint(got); status != 400 || !strings.Contains(msg, "answers[0].id must be a string") || strings.Contains(msg, "Go ") {
			t.Errorf("an id of the wrong type: %d %v", status, got)
		}
		if got := b.get(t, rec.ID); got.Status != seam.StatusPending {
			t.Errorf("refused answers changed the request: %s", got.Status)
		}
	})

	t.Run("unknown fields are refused", func(t *testing.T) {
		rec := b.ask(t, time.Hour, deploy)
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "deploy", "selcted": []string{"No"}}}})
		if status != 400 {
			t.Errorf("%d %v", status, body)
		}
	})
}

// TestOtherKind: an answer sent for an approval, or a decision for a
// question, is a 404 that says which kind the request is and where the
// call goes, as the API's is, not "no such request": signed in and
// through the request's link alike. The request stays pending.
func TestOtherKind(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	session := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	q, ap := b.ask(t, time.Hour, deploy), b.approval(t, seam.Approval{ToolName: "kubectl_apply"})
	linkOf := func(rec *pending.Record) map[string]string {
		u, _ := url.Parse(b.web.Links().For(rec))
		e, _, sig, _ := linkQuery(u.Query())
		return map[string]string{linkHeader: e + "." + sig}
	}
	answer := map[string]any{"answers": []any{map[string]any{"id": "deploy", "selected": []string{"No"}}}}
	decision := map[string]any{"outcome": "rejected"}
	for _, tc := range []struct {
		name   string
		client *http.Client
		hdr    map[string]string
		path   string
		body   any
		want   string
	}{
		{"decision on a question, signed in", c, session, "/web/requests/" + q.ID + "/decision", decision,
			q.ID + " is a question, not an approval: use /web/requests/" + q.ID + "/answer"},
		{"answer to an approval, signed in", c, session, "/web/requests/" + ap.ID + "/answer", answer,
			ap.ID + " is an approval, not a question: use /web/requests/" + ap.ID + "/decision"},
		{"decision on a question, by its link", b.browser(t), linkOf(q), "/web/requests/" + q.ID + "/decision", decision,
			q.ID + " is a question, not an approval: use /web/requests/" + q.ID + "/answer"},
		{"answer to an approval, by its link", b.browser(t), linkOf(ap), "/web/requests/" + ap.ID + "/answer", answer,
			ap.ID + " is an approval, not a question: use /web/requests/" + ap.ID + "/decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := b.post(t, tc.client, tc.path, tc.hdr, tc.body)
			msg, _ := body["error"].(map[string]any)["message"].(string)
			if status != http.StatusNotFound || errCode(body) != api.CodeNotFound || msg != tc.want {
				t.Errorf("%d %v, want 404 NOT_FOUND %q", status, body, tc.want)
			}
		})
	}
	if b.get(t, q.ID).Status != seam.StatusPending || b.get(t, ap.ID).Status != seam.StatusPending {
		t.Errorf("a call of the wrong kind ended a request")
	}
	// Without a session or a link that grants it, the kind is not told.
	if status, body := b.post(t, b.browser(t), "/web/requests/"+ap.ID+"/answer", nil, answer); status != http.StatusUnauthorized {
		t.Errorf("no session, no link: %d %v, want 401", status, body)
	}
	// Under a base_url with a path, the path named is the browser's.
	under, err := New(Options{Store: b.store, Dispatcher: b.disp, Tokens: defaultTokens, Signer: NewSigner(testSecret),
		BaseURL: "https://tools.example.com/askbridge", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(under.Shutdown)
	mx := mux{http.NewServeMux()}
	under.Mount(mx)
	srv := httptest.NewServer(mx)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/web/requests/"+ap.ID+"/answer", strings.NewReader(`{"answers":[]}`))
	req.Header.Set(linkHeader, linkOf(ap)[linkHeader])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got struct {
		Error struct{ Code, Message string }
	}
	json.NewDecoder(res.Body).Decode(&got)
	if want := ap.ID + " is an approval, not a question: use /askbridge/web/requests/" + ap.ID + "/decision"; res.StatusCode != http.StatusNotFound || got.Error.Message != want {
		t.Errorf("under /askbridge: %d %+v, want 404 %q", res.StatusCode, got, want)
	}
}

// A header of spaces alone, which the API takes, is no header, as on
// Slack and Discord (surface.Header): the inbox showed an empty header
// line over the question and an empty legend, labelled a typed field
// with nothing, and refused a required field left blank as "  is
// required". Its id names it instead, as for a question without one.
func TestBlankHeaderIsNoHeader(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	for i, header := range []string{" ", "\t \n"} {
		free := b.ask(t, time.Hour, seam.Question{ID: fmt.Sprintf("why%d", i), Header: header, Question: "Why roll back?"})
		typed := b.ask(t, time.Hour, seam.Question{ID: fmt.Sprintf("n%d", i), Header: header, Question: "How many?",
			Input: &seam.Input{Type: seam.InputInteger, Required: true}})
		_, page := b.page(t, c, "/")
		for _, rec := range []*pending.Record{free, typed} {
			id := rec.Questions.Questions[0].ID
			at := strings.Index(page, `data-qid="`+id+`"`)
			if at < 0 {
				t.Fatalf("the inbox has no field for %s", id)
			}
			fs := page[at : at+strings.Index(page[at:], "</fieldset>")]
			if strings.Contains(fs, "<legend") || strings.Contains(fs, "<bdi>"+template.HTMLEscapeString(header)+"</bdi>") || strings.Contains(fs, id+`-h `) {
				t.Errorf("header %q: %s's field shows its blank header:\n%s", header, id, fs)
			}
			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{}})
			e, _ := body["error"].(map[string]any)
			if want := id + " is required"; status != 400 || e["code"] != "INVALID_REQUEST" || e["message"] != want {
				t.Errorf("header %q: %d %v, want 400 %q", header, status, body, want)
			}
		}
		status, body := b.post(t, c, "/web/requests/"+free.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": free.Questions.Questions[0].ID, "custom": "tests fail"}}})
		if html, _ := body["html"].(string); status != 200 || !strings.Contains(html, "Why roll back?") || strings.Contains(html, `class="header"`) {
			t.Errorf("header %q: the outcome shows its blank header: %d %v", header, status, body)
		}
	}
}

// TestRequiredFields: a form's text field is required as on Slack and
// Discord: as input.required says, and with no input, for a request's
// only question when it has no options.
func TestRequiredFields(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	typed := func(id string, required bool) seam.Question {
		return seam.Question{ID: id, Question: id + "?", Input: &seam.Input{Type: seam.InputInteger, Required: required}}
	}
	for _, tc := range []struct {
		name string
		qs   []seam.Question
		want []bool
	}{
		{"a lone question", []seam.Question{{ID: "lone", Question: "Why?"}}, []bool{true}},
		{"a lone question with options", []seam.Question{{ID: "opts", Question: "Go?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}, []bool{false}},
		{"a lone typed question, optional", []seam.Question{typed("optional", false)}, []bool{false}},
		{"a lone typed question, required", []seam.Question{typed("required", true)}, []bool{true}},
		{"several", []seam.Question{{ID: "free", Question: "Why?"}, typed("must", true), typed("may", false)}, []bool{false, true, false}},
		{"booleans", []seam.Question{{ID: "yes", Question: "Sure?", Input: &seam.Input{Type: seam.InputBoolean, Required: true}},
			{ID: "dry", Question: "Dry run?", Input: &seam.Input{Type: seam.InputBoolean}}}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := b.ask(t, time.Hour, tc.qs...)
			_, page := b.page(t, c, "/")
			for i, q := range tc.qs {
				at := strings.Index(page, `data-qid="`+q.ID+`"`)
				if at < 0 {
					t.Fatalf("the inbox has no field for %s", q.ID)
				}
				tag := page[at : at+strings.IndexByte(page[at:], '>')]
				if got := strings.Contains(tag, "data-required"); got != tc.want[i] || b.web.card(rec).Questions[i].Required != got {
					t.Errorf("%s: required %v (%s), want %v", q.ID, got, tag, tc.want[i])
				}
				// Its field says which, as Slack's forms say "(optional)".
				fs := page[at : at+strings.Index(page[at:], "</fieldset>")]
				if strings.Contains(fs, " (required)") != tc.want[i] || strings.Contains(fs, " (optional)") == tc.want[i] {
					t.Errorf("%s: required %v, but its field is not marked so:\n%s", q.ID, tc.want[i], fs)
				}
			}
		})
	}
}

// A boolean field's prefill is chosen as Slack's and Discord's forms
// choose it: any spelling the bridge takes for it ("True", "yes", " n "),
// not only "true" and "false". Shown unchosen, an optional one would be
// sent unanswered, not as the agent prefilled it. A request is stored
// with its prefill canonical ("true"); one an earlier bridge stored as it
// came ("yes") is chosen the same.
func TestBooleanPrefill(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	for _, tc := range []struct {
		value, want string
		asSent      bool // stored as an earlier bridge stored it
	}{
		{"true", "true", false}, {"True", "true", false}, {"yes", "true", false}, {" false ", "false", false}, {"N", "false", false}, {"", "", false},
		{"True", "true", true}, {"yes", "true", true}, {" false ", "false", true}, {"N", "false", true},
	} {
		t.Run(fmt.Sprintf("%s as sent %t", tc.value, tc.asSent), func(t *testing.T) {
			qs := []seam.Question{
				{ID: "b", Question: "Dry run first?", Input: &seam.Input{Type: seam.InputBoolean, Value: tc.value}},
				{ID: "n", Question: "Note?"},
			}
			var rec *pending.Record
			if tc.asSent {
				var err error
				rec, _, err = b.disp.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Client: "agent", Questions: &seam.Questions{Questions: qs}, ExpiresIn: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
			} else if rec = b.ask(t, time.Hour, qs...); rec.Questions.Questions[0].Input.Value != tc.want {
				t.Errorf("prefill %q stored as %q, want %q", tc.value, rec.Questions.Questions[0].Input.Value, tc.want)
			}
			_, page := b.page(t, c, "/r/"+rec.ID)
			var got []string
			for _, v := range []string{"true", "false"} {
				at := strings.Index(page, `name="`+rec.ID+`-0-bool" value="`+v+`"`)
				if at < 0 {
					t.Fatalf("no %s choice in the page", v)
				}
				if strings.Contains(page[at:at+strings.IndexByte(page[at:], '>')], " checked") {
					got = append(got, v)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("prefill %q: chosen %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

// The page a message's Open in browser opens shows each option with the
// number Slack and Discord give it where they cut its label ("3. Deploy
// the release to the eu-west-1…"), counted per question, so that the
// whole option is found by it; the number is not part of what is sent.
func TestOptionsNumbered(t *testing.T) {
	b := newBench(t, defaultTokens)
	regions := seam.Question{ID: "regions", Question: "Which regions?", MultiSelect: true}
	for i := range 12 {
		regions.Options = append(regions.Options, seam.Option{Label: fmt.Sprintf("region-%02d", i)})
	}
	qs := []seam.Question{{ID: "when", Question: "When?", Options: []seam.Option{
		{Label: "Deploy the release to the eu-west-1 production cluster now"},
		{Label: "Deploy the release to the eu-west-1 production cluster tomorrow"},
		{Label: "Wait"},
	}}, regions}
	rec := b.ask(t, time.Hour, qs...)
	_, page := b.page(t, b.browser(t), strings.TrimPrefix(b.web.Links().For(rec), "http://bridge.test"))
	optRE := regexp.MustCompile(`<input type="(?:radio|checkbox)" name="([^"]+)" value="([^"]*)"><span class="txt"><span class="num">(\d+)\.</span><span class="label" dir="auto">([^<]*)</span>`)
	shown := map[string][]string{}
	for _, m := range optRE.FindAllStringSubmatch(page, -1) {
		if m[2] != m[4] {
			t.Errorf("option %s. %q is sent as %q", m[3], m[4], m[2])
		}
		shown[m[1]] = append(shown[m[1]], m[3]+". "+m[4])
	}
	for i, q := range qs {
		// As Slack and Discord list them numbered.
		want := strings.Split(surface.OptionListing(q, true), "\n")
		if got := shown[fmt.Sprintf("%s-%d", rec.ID, i)]; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("question %s shows its options as\n%s\nwant\n%s", q.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestRecommendedBadge: the option an agent recommends ("… (Recommended)")
// wears a badge in place of the suffix, and no option is styled as
// chosen before it is: neither it, nor a plan's approving option. The
// answer still names it by its whole label.
func TestRecommendedBadge(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	rec := b.ask(t, time.Hour,
		seam.Question{ID: "deploy", Question: "Deploy?", Options: []seam.Option{{Label: "Yes, ship it (Recommended)"}, {Label: "No"}, {Label: "(Recommended)"}}},
		seam.Question{ID: "plan", Question: "Approve the plan?", Detail: "1. Roll back", Options: []seam.Option{{Label: "Approve"}, {Label: "Keep planning"}},
			Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}})
	_, page := b.page(t, c, "/r/"+rec.ID)
	optRE := regexp.MustCompile(`<label class="([^"]*)"><input type="radio" name="[^"]+" value="([^"]*)"><span class="txt"><span class="num">\d+\.</span><span class="label" dir="auto">(.*?)</span></span></label>`)
	got := map[string]string{}
	for _, m := range optRE.FindAllStringSubmatch(page, -1) {
		if m[1] != "opt" {
			t.Errorf("option %q is styled %q, as if chosen", m[2], m[1])
		}
		got[m[2]] = m[3]
	}
	for value, want := range map[string]string{
		"Yes, ship it (Recommended)": `Yes, ship it <span class="badge">Recommended</span>`,
		"No":                         "No",
		"(Recommended)":              "(Recommended)", // nothing left to label it
		"Approve":                    "Approve",
		"Keep planning":              "Keep planning",
	} {
		if got[value] != want {
			t.Errorf("option %q is shown as %q, want %q", value, got[value], want)
		}
	}
}

func fmtAnswers(a *seam.Answer) string {
	if a == nil {
		return "<nil>"
	}
	var parts []string
	for _, it := range a.Answers {
		parts = append(parts, "{"+it.ID+" ["+strings.Join(it.Selected, " ")+"] "+it.Custom+"}")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestSignedLinks(t *testing.T) {
	b := newBench(t, defaultTokens)
	rec := b.ask(t, 30*time.Minute, deploy)
	other := b.ask(t, 30*time.Minute, deploy)
	link := b.web.Links().For(rec)
	// One parameter: Slack's iOS app opens a mrkdwn link with its &
	// left escaped as &amp; (slackapi/bolt-js#2103).
	if !strings.HasPrefix(link, "http://bridge.test/r/"+rec.ID+"?l=") || strings.Contains(link, "&") {
		t.Fatalf("link %s; want /r/ID?l=E.S, without &", link)
	}
	path := strings.TrimPrefix(link, "http://bridge.test")
	u, _ := url.Parse(path)
	e, s := linkParams(u).Get("e"), linkParams(u).Get("s")
	if e != itoa(rec.ExpiresAt.Unix()) {
		t.Errorf("link expiry %s, request expires %d", e, rec.ExpiresAt.Unix())
	}
	anon := b.browser(t)

	t.Run("opens its request", func(t *testing.T) {
		// A link of before (e=E&s=S), posted in a message, opens it too.
		for _, p := range []string{path, "/r/" + rec.ID + "?e=" + e + "&s=" + s} {
			status, page := b.page(t, anon, p)
			if status != 200 || !strings.Contains(page, "Deploy to prod?") || !strings.Contains(page, `<meta name="answer-link" content="`+e+"."+s+`">`) {
				t.Fatalf("%s: %d\n%s", p, status, page)
			}
		}
	})
	t.Run("tampered or moved links are refused", func(t *testing.T) {
		for name, p := range map[string]string{
			"bad signature":   "/r/" + rec.ID + "?l=" + e + "." + strings.Repeat("A", len(s)),
			"later expiry":    "/r/" + rec.ID + "?l=" + itoa(rec.ExpiresAt.Unix()+3600) + "." + s,
			"another request": "/r/" + other.ID + "?l=" + e + "." + s,
			"no expiry":       "/r/" + rec.ID + "?l=." + s,
			"no signature":    "/r/" + rec.ID + "?l=" + e,
			"old, bad":        "/r/" + rec.ID + "?e=" + e + "&s=" + strings.Repeat("A", len(s)),
			"old, no expiry":  "/r/" + rec.ID + "?s=" + s,
		} {
			if status, _ := b.page(t, anon, p); status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", name, status)
			}
		}
		if status, _ := b.page(t, anon, "/r/"+rec.ID); status != http.StatusUnauthorized {
			t.Errorf("no link, no session: %d", status)
		}
	})
	t.Run("grants answering only its request", func(t *testing.T) {
		ans := map[string]any{"answers": []any{map[string]any{"id": "deploy", "selected": []string{"No"}}}}
		if status, _ := b.post(t, anon, "/web/requests/"+other.ID+"/answer", map[string]string{linkHeader: e + "." + s}, ans); status != http.StatusForbidden {
			t.Errorf("the link answered another request: %d", status)
		}
		if status, _ := b.post(t, anon, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: itoa(rec.ExpiresAt.Unix()+60) + "." + s}, ans); status != http.StatusForbidden {
			t.Errorf("a stretched link answered: %d", status)
		}
		status, body := b.post(t, anon, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: e + "." + s}, ans)
		if status != 200 {
			t.Fatalf("%d %v", status, body)
		}
		if by := b.get(t, rec.ID).ResolvedBy; by == nil || by.Surface != "web" || by.UserID != "link" {
			t.Errorf("resolved by %+v", by)
		}
		if got := b.get(t, other.ID); got.Status != seam.StatusPending {
			t.Errorf("the other request is %s", got.Status)
		}
	})
	t.Run("a finished request's link shows its outcome", func(t *testing.T) {
		status, page := b.page(t, anon, path)
		if status != 200 || !strings.Contains(page, "Answered by <bdi>someone with the link</bdi>") || strings.Contains(page, `class="answer"`) {
			t.Errorf("%d\n%s", status, page)
		}
	})
	t.Run("expires with its request", func(t *testing.T) {
		third := b.ask(t, 30*time.Minute, deploy)
		p := strings.TrimPrefix(b.web.Links().For(third), "http://bridge.test")
		u, _ := url.Parse(p)
		hdr := map[string]string{linkHeader: linkParams(u).Get("e") + "." + linkParams(u).Get("s")}
		b.clock.add(31 * time.Minute) // past its expiry; the sweeper has not run
		if status, page := b.page(t, anon, p); status != http.StatusGone || !strings.Contains(page, "expired with its request") {
			t.Errorf("an expired link's page: %d, want 410, expired with its request:\n%s", status, page)
		}
		ans := map[string]any{"answers": []any{map[string]any{"id": "deploy", "selected": []string{"No"}}}}
		if status, _ := b.post(t, anon, "/web/requests/"+third.ID+"/answer", hdr, ans); status != http.StatusForbidden {
			t.Errorf("an expired link answered: %d", status)
		}
	})
	t.Run("a request that never expires gets link_ttl", func(t *testing.T) {
		forever := &pending.Record{ID: "abc", CreatedAt: b.clock.now()}
		u, _ := url.Parse(b.web.Links().For(forever))
		if want := itoa(forever.CreatedAt.Add(time.Hour).Unix()); linkParams(u).Get("e") != want {
			t.Errorf("e = %s, want %s", linkParams(u).Get("e"), want)
		}
	})
}

// TestExpiredLinkOfAnEndedRequest: a call through a link that expired,
// on a request that has ended, gets the request's outcome (409), as a call
// after someone else answered does, not "this link has expired": the
// same outcome the link's page shows, nothing more. On a request still
// pending, the expired link is refused.
func TestExpiredLinkOfAnEndedRequest(t *testing.T) {
	b := newBench(t, defaultTokens)
	ctx := context.Background()
	bob := &pending.Responder{Surface: "slack", UserID: "UBOB", Name: "bob"}
	ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}
	type linked struct {
		rec  *pending.Record
		link string // the page's path
	}
	public := func(rec *pending.Record) linked {
		return linked{rec, strings.TrimPrefix(b.web.Links().For(rec), "http://bridge.test")}
	}
	personal := func(rec *pending.Record) linked {
		l, _ := b.web.Links().ForPerson(rec, ada, b.clock.now())
		return linked{rec, strings.TrimPrefix(l, "http://bridge.test")}
	}
	answered, dismissed, expired, open := public(b.ask(t, 30*time.Minute, deploy)), personal(b.ask(t, 30*time.Minute, deploy)),
		public(b.ask(t, 20*time.Minute, deploy)), public(b.ask(t, 30*time.Minute, deploy))
	if _, err := b.disp.Resolve(ctx, answered.rec.ID, pending.Resolution{Status: seam.StatusAnswered, By: bob,
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "deploy", Selected: []string{"No"}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.disp.Resolve(ctx, dismissed.rec.ID, pending.Resolution{Status: seam.StatusDismissed, By: bob}); err != nil {
		t.Fatal(err)
	}
	b.clock.add(25 * time.Minute) // past the third's expiry, which the sweeper marks
	if got, err := b.store.Sweep(ctx); err != nil || len(got) != 1 || got[0].ID != expired.rec.ID {
		t.Fatalf("Sweep: %v, %v", got, err)
	}
	b.clock.add(10 * time.Minute) // every link has expired
	anon := b.browser(t)
	header := func(l linked) map[string]string {
		u, _ := url.Parse(l.link)
		q := linkParams(u)
		v := q.Get("e") + "." + q.Get("s")
		if q.Has("p") {
			v += "." + q.Get("p")
		}
		return map[string]string{linkHeader: v}
	}
	ans := map[string]any{"answers": []any{map[string]any{"id": "deploy", "selected": []string{"Yes (Recommended)"}}}}
	for _, tc := range []struct {
		name   string
		l      linked
		status seam.Status
		line   string
	}{
		{"answered", answered, seam.StatusAnswered, "Answered by <bdi>bob</bdi>"},
		{"dismissed, by a personal link", dismissed, seam.StatusDismissed, "Dismissed by <bdi>bob</bdi>"},
		{"expired", expired, seam.StatusExpired, "Expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, page := b.page(t, anon, tc.l.link)
			if status != http.StatusOK || !strings.Contains(page, tc.line) {
				t.Fatalf("the link's page: %d\n%s", status, page)
			}
			for _, action := range []string{"answer", "dismiss"} {
				status, body := b.post(t, anon, "/web/requests/"+tc.l.rec.ID+"/"+action, header(tc.l), ans)
				html, _ := body["html"].(string)
				if status != http.StatusConflict || errCode(body) != "ALREADY_RESOLVED" || body["status"] != string(tc.status) ||
					html == "" || !strings.Contains(page, html) {
					t.Errorf("%s: %d %v; want 409 with the outcome its page shows", action, status, body)
				}
			}
			if got := b.get(t, tc.l.rec.ID); got.Status != tc.status || got.ResolvedBy != nil && *got.ResolvedBy != *bob {
				t.Errorf("the request is %s by %+v", got.Status, got.ResolvedBy)
			}
		})
	}
	t.Run("still pending", func(t *testing.T) {
		status, body := b.post(t, anon, "/web/requests/"+open.rec.ID+"/answer", header(open), ans)
		if e, _ := body["error"].(map[string]any); status != http.StatusForbidden || e["message"] != "this link has expired" {
			t.Errorf("%d %v; want 403, the link expired", status, body)
		}
		if got := b.get(t, open.rec.ID); got.Status != seam.StatusPending {
			t.Errorf("the request is %s", got.Status)
		}
	})
}

// A personal link, which a target that limits its responders hands the
// one person who tapped "Open in browser", answers as that person, for an
// hour at most, and can't be made to name another.
func TestPersonalLinks(t *testing.T) {
	b := newBench(t, defaultTokens)
	rec := b.ask(t, 2*time.Hour, deploy)
	ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}
	link, until := b.web.Links().ForPerson(rec, ada, b.clock.now())
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, "http://bridge.test/r/"+rec.ID+"?l=") || strings.Contains(link, "&") {
		t.Fatalf("link %s; want /r/ID?l=E.S.P, without &", link)
	}
	q := linkParams(u)
	e, p, s := q.Get("e"), q.Get("p"), q.Get("s")
	if want := itoa(b.clock.now().Add(PersonalTTL).Unix()); e != want || itoa(until.Unix()) != want {
		t.Errorf("e = %s, until %v, want an hour from now (%s), before the request's expiry", e, until, want)
	}
	path := strings.TrimPrefix(link, "http://bridge.test")
	anon := b.browser(t)
	status, page := b.page(t, anon, path)
	if status != 200 || !strings.Contains(page, `title="answering as">ada<`) || !strings.Contains(page, `content="`+e+"."+s+"."+p+`"`) {
		t.Fatalf("%d\n%s", status, page)
	}

	ans := map[string]any{"answers": []any{map[string]any{"id": "deploy", "selected": []string{"No"}}}}
	eve, _ := json.Marshal(pending.Responder{Surface: "slack", UserID: "UEVE", Name: "eve"})
	for name, hdr := range map[string]string{
		"another person":   e + "." + s + "." + b64.EncodeToString(eve),
		"as a public link": e + "." + s,
		"a later expiry":   itoa(b.clock.now().Add(2*time.Hour).Unix()) + "." + s + "." + p,
	} {
		if status, _ := b.post(t, anon, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: hdr}, ans); status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, status)
		}
	}
	for _, q := range []string{"?l=" + e + "." + s + "." + b64.EncodeToString(eve), "?e=" + e + "&p=" + b64.EncodeToString(eve) + "&s=" + s} {
		if status, _ := b.page(t, anon, "/r/"+rec.ID+q); status != http.StatusForbidden {
			t.Errorf("a page for another person (%s): %d, want 403", q, status)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, _ := stream(ctx, t, anon, b.srv.URL+"/web/events?"+url.Values{"id": {rec.ID}, "e": {e}, "p": {p}, "s": {s}}.Encode())
	if ev := next(); ev != "pending" {
		t.Fatalf("the page's live stream: %q, want pending", ev)
	}

	if status, body := b.post(t, anon, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: e + "." + s + "." + p}, ans); status != 200 {
		t.Fatalf("%d %v", status, body)
	}
	if by := b.get(t, rec.ID).ResolvedBy; by == nil || *by != ada {
		t.Errorf("resolved by %+v, want %+v", by, ada)
	}

	t.Run("expires with a request that expires sooner", func(t *testing.T) {
		soon := b.ask(t, 10*time.Minute, deploy)
		link, until := b.web.Links().ForPerson(soon, ada, b.clock.now())
		u, _ := url.Parse(link)
		if got, want := linkParams(u).Get("e"), itoa(soon.ExpiresAt.Unix()); got != want || !until.Equal(soon.ExpiresAt.Truncate(time.Second)) {
			t.Errorf("e = %s, until %v, want the request's expiry %s", got, until, want)
		}
	})
	t.Run("expires an hour after it was handed out", func(t *testing.T) {
		other := b.ask(t, 2*time.Hour, deploy)
		link, _ := b.web.Links().ForPerson(other, ada, b.clock.now().Add(-61*time.Minute))
		p := strings.TrimPrefix(link, "http://bridge.test")
		if status, page := b.page(t, anon, p); status != http.StatusGone || !strings.Contains(page, "again") {
			t.Errorf("a personal link handed out 61 minutes ago: %d\n%s", status, page)
		}
	})
}

// A base_url with a path is a proxy that serves the bridge under it: the
// app starts (it refused to, taking the URL for an origin), its pages ask
// for their script, styles and calls under the path, and signing in goes
// back to the inbox there. (TestBrowserUnderAPath runs it in Chromium.)
func TestUnderAPath(t *testing.T) {
	b := newBench(t, defaultTokens)
	w, err := New(Options{Store: b.store, Dispatcher: b.disp, Tokens: defaultTokens, Signer: NewSigner(testSecret),
		BaseURL: "https://tools.example.com/askbridge/", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("a base_url with a path: %v", err)
	}
	t.Cleanup(w.Shutdown)
	mx := mux{http.NewServeMux()}
	w.Mount(mx)
	srv := httptest.NewServer(mx)
	t.Cleanup(srv.Close)
	c := b.browser(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`href="/askbridge/assets/app.css"`, `src="/askbridge/assets/app.js"`, `action="/askbridge/web/signin"`, `<meta name="root" content="/askbridge">`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the sign-in page has no %s:\n%s", want, page)
		}
	}
	res, err = c.PostForm(srv.URL+"/web/signin", url.Values{"token": {"ada-token-7f3c9e21b4"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/askbridge/" {
		t.Errorf("signed in: %d to %q, want 303 to /askbridge/", res.StatusCode, res.Header.Get("Location"))
	}
}

// TestAssets: the assets are served as files, and nothing else is: no
// listing of their directory, and a missing one is the web's JSON 404.
func TestAssets(t *testing.T) {
	b := newBench(t, defaultTokens)
	for _, tc := range []struct {
		path, method string
		status       int
		contentType  string
	}{
		{"/assets/app.css", http.MethodGet, http.StatusOK, mime.TypeByExtension(".css")},
		{"/assets/app.js", http.MethodGet, http.StatusOK, mime.TypeByExtension(".js")},
		{"/assets/app.js", http.MethodHead, http.StatusOK, mime.TypeByExtension(".js")},
		{"/assets/", http.MethodGet, http.StatusNotFound, "application/json"},
		{"/assets/", http.MethodHead, http.StatusNotFound, "application/json"},
		{"/assets/nope.js", http.MethodGet, http.StatusNotFound, "application/json"},
		{"/assets/app.js/", http.MethodGet, http.StatusNotFound, "application/json"},
	} {
		req, _ := http.NewRequest(tc.method, b.srv.URL+tc.path, nil)
		res, err := b.browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("Content-Type") != tc.contentType || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d %s %q, want %d %s", tc.method, tc.path, res.StatusCode, res.Header.Get("Content-Type"), raw, tc.status, tc.contentType)
			continue
		}
		if tc.status != http.StatusNotFound || tc.method == http.MethodHead {
			continue
		}
		var got struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(raw, &got); err != nil || got.Error.Code != api.CodeNotFound || got.Error.Message != "no such asset: "+tc.path {
			t.Errorf("%s %s: %q, want the JSON error NOT_FOUND", tc.method, tc.path, raw)
		}
	}
}

// TestRejectionShownAsOne: a tool call rejected is answered (its status),
// but its outcome is not marked as a yes: the outcome carries the class
// rejected, which the stylesheet marks with a ✗ in the danger colour,
// while the green ✓ is for the answers that are not rejections.
func TestRejectionShownAsOne(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	for outcome, class := range map[string]string{
		"rejected":     `class="outcome status-answered rejected"`,
		"allowed-once": `class="outcome status-answered"`,
	} {
		rec := b.approval(t, seam.Approval{ToolName: "kubectl_apply"})
		if _, page := b.page(t, c, "/r/"+rec.ID); !strings.Contains(page, " · expires <time") {
			t.Errorf("the pending request's page does not say when it expires")
		}
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/decision", h, map[string]any{"outcome": outcome})
		if html, _ := body["html"].(string); status != 200 || !strings.Contains(html, class) {
			t.Errorf("%s: %d, want the outcome %s:\n%s", outcome, status, class, html)
		}
		_, page := b.page(t, c, "/r/"+rec.ID)
		if !strings.Contains(page, class) {
			t.Errorf("%s: the request's page has no %s", outcome, class)
		}
		if strings.Contains(page, "expires") {
			t.Errorf("%s: the ended request's page still says when it expires", outcome)
		}
	}
	// A plan is turned down by any answer but its approving option.
	plan := seam.Question{ID: "plan", Question: "Approve the rollback plan?", Detail: "1. Roll back", Options: []seam.Option{{Label: "Approve"}, {Label: "Reject"}},
		Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}}
	for _, tc := range []struct {
		name   string
		answer map[string]any
		class  string
	}{
		{"a plan approved", map[string]any{"id": "plan", "selected": []string{"Approve"}}, `class="outcome status-answered"`},
		{"a plan rejected", map[string]any{"id": "plan", "selected": []string{"Reject"}}, `class="outcome status-answered rejected"`},
		{"a plan sent back with changes", map[string]any{"id": "plan", "custom": "do step 2 first"}, `class="outcome status-answered rejected"`},
	} {
		rec := b.ask(t, time.Hour, plan)
		status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{tc.answer}})
		if html, _ := body["html"].(string); status != 200 || !strings.Contains(html, tc.class) {
			t.Errorf("%s: %d, want the outcome %s:\n%s", tc.name, status, tc.class, html)
		}
	}
	css, err := embedded.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{} // selector: declarations
	for _, m := range regexp.MustCompile(`(?m)^([^{}\n]*\.outcome[^{}\n]*)\{([^}]*)\}`).FindAllStringSubmatch(string(css), -1) {
		rules[strings.TrimSpace(m[1])] = m[2]
	}
	for sel, decl := range rules {
		if strings.Contains(decl, "✓") && !strings.Contains(sel, ":not(.rejected)") {
			t.Errorf("the ✓ rule %q marks a rejection too", sel)
		}
	}
	if decl := rules[".outcome.rejected .line::before"]; strings.Contains(decl, "✓") || strings.Contains(decl, "--ok") || !strings.Contains(decl, "--danger") {
		t.Errorf("a rejection's mark is %q, want neither ✓ nor green", decl)
	}
	// Nor is its box the light blue of a yes: it is tinted as danger.
	if decl := rules[".outcome.rejected"]; !regexp.MustCompile(`background:\s*var\(--danger-soft\)`).MatchString(decl) {
		t.Errorf("a rejection's box is %q, want the background --danger-soft", decl)
	}
	for _, scheme := range regexp.MustCompile(`--danger:[^;]*;`).FindAllStringIndex(string(css), -1) {
		if !strings.Contains(string(css[scheme[0]:scheme[1]+40]), "--danger-soft:") {
			t.Errorf("a colour scheme sets --danger but not --danger-soft beside it")
		}
	}
}

// TestBooleanOutcome: a boolean field's answer is shown in its outcome
// as the form labels its choice, Yes or No, not as the "true" or "false"
// the agent gets, which the record keeps.
func TestBooleanOutcome(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	dry := seam.Question{ID: "dry", Header: "Dry run", Question: "Dry run first?", Input: &seam.Input{Type: seam.InputBoolean}}
	for _, tc := range []struct {
		name    string
		qs      []seam.Question
		answers []any
		line    string // in the outcome's line
		dd      string // in its list of answers, when it has one
	}{
		{"alone, No", []seam.Question{dry}, []any{map[string]any{"id": "dry", "custom": "false"}},
			"Answered by <bdi>ada</bdi> · <bdi>No</bdi>", ""},
		{"alone, Yes", []seam.Question{dry}, []any{map[string]any{"id": "dry", "custom": "yes"}},
			"Answered by <bdi>ada</bdi> · <bdi>Yes</bdi>", ""},
		{"among others", []seam.Question{dry, {ID: "why", Question: "Why?"}}, []any{map[string]any{"id": "dry", "custom": "true"}, map[string]any{"id": "why", "custom": "true"}},
			"Answered by <bdi>ada</bdi> · <time", `<dd dir="auto">Yes</dd>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := b.ask(t, time.Hour, tc.qs...)
			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": tc.answers})
			html, _ := body["html"].(string)
			if status != 200 || !strings.Contains(html, tc.line) || !strings.Contains(html, tc.dd) {
				t.Errorf("%d, want %s and %s in the outcome:\n%s", status, tc.line, tc.dd, html)
			}
			if _, page := b.page(t, c, "/r/"+rec.ID); !strings.Contains(page, tc.line) || !strings.Contains(page, tc.dd) {
				t.Errorf("the request's page has not %s and %s", tc.line, tc.dd)
			}
			// The agent gets the value, not the label.
			if got := b.get(t, rec.ID).Answer.Answers[0]; got.Custom == "Yes" || got.Custom == "No" || len(got.Selected) != 0 {
				t.Errorf("the answer stored is %+v", got)
			}
		})
	}
}

// TestSeveralAnswersShownOnce: the answers to several questions are
// listed, each under its question, and not summed up in the outcome's
// line above the list as well.
func TestSeveralAnswersShownOnce(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	rec := b.ask(t, time.Hour,
		seam.Question{ID: "n", Header: "Replicas", Question: "How many replicas?", Input: &seam.Input{Type: seam.InputInteger, Required: true}},
		seam.Question{ID: "cpu", Header: "CPU", Question: "How many cores each?", Input: &seam.Input{Type: seam.InputNumber}},
		seam.Question{ID: "dry", Header: "Dry run", Question: "Dry run first?", Input: &seam.Input{Type: seam.InputBoolean}},
		seam.Question{ID: "msg", Header: "Message", Question: "Release note?", Input: &seam.Input{Type: seam.InputString}})
	status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{
		map[string]any{"id": "n", "custom": "37"}, map[string]any{"id": "cpu", "custom": "1.5"},
		map[string]any{"id": "dry", "custom": "true"}, map[string]any{"id": "msg", "custom": "eu-west first"}}})
	html, _ := body["html"].(string)
	if status != 200 {
		t.Fatalf("answer: %d %v", status, body)
	}
	_, page := b.page(t, c, "/r/"+rec.ID)
	outcome := regexp.MustCompile(`(?s)<div class="outcome.*?</div>`)
	times := regexp.MustCompile(`<time[^>]*>[^<]*</time>`)
	for name, got := range map[string]string{"the reply's outcome": html, "the request's page": page} {
		got = times.ReplaceAllString(outcome.FindString(got), "<time>")
		line := regexp.MustCompile(`(?s)<p class="line">(.*?)</p>`).FindStringSubmatch(got)
		if line == nil || line[1] != "Answered by <bdi>ada</bdi> · <time>" {
			t.Errorf("%s: the outcome's line is %q, want who answered and when", name, line)
		}
		for _, dd := range []string{`<dd dir="auto">37</dd>`, `<dd dir="auto">1.5</dd>`, `<dd dir="auto">Yes</dd>`, `<dd dir="auto">“eu-west first”</dd>`} {
			if n := strings.Count(got, dd); n != 1 {
				t.Errorf("%s: %s shown %d times, want once", name, dd, n)
			}
		}
		for _, answer := range []string{"37", "1.5", "eu-west first"} {
			if n := strings.Count(got, answer); n != 1 {
				t.Errorf("%s: %q shown %d times, want once:\n%s", name, answer, n, got)
			}
		}
	}
}

// TestEndedPlanShowsThePlan: an ended plan review's page, and the
// outcome a card shows once answered, show the plan that was answered,
// rendered as the form showed it, beside how it ended.
func TestEndedPlanShowsThePlan(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	plan := seam.Question{ID: "plan", Question: "Approve the rollback plan?", Detail: "1. Drain **eu-west**\n2. Roll back to `v2.2`",
		Options: []seam.Option{{Label: "Approve"}, {Label: "Keep planning"}}, Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}}
	rec := b.ask(t, time.Hour, plan)
	shown := `<div class="md plan" dir="auto">` + string(Markdown(plan.Detail)) + `</div>`
	if _, page := b.page(t, c, "/r/"+rec.ID); !strings.Contains(page, shown) {
		t.Fatalf("the pending plan's page does not show it as %s", shown)
	}
	status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{map[string]any{"id": "plan", "custom": "drain us-east too"}}})
	if html, _ := body["html"].(string); status != 200 || !strings.Contains(html, shown) || !strings.Contains(html, "drain us-east too") {
		t.Errorf("answered: %d, the outcome shows no plan:\n%s", status, html)
	}
	_, page := b.page(t, c, "/r/"+rec.ID)
	if !strings.Contains(page, shown) || strings.Contains(page, "<form") || !strings.Contains(page, `class="outcome`) {
		t.Errorf("the ended plan's page does not show the plan, read-only, and how it ended:\n%s", page)
	}
	if _, outcome := b.page(t, c, "/web/requests/"+rec.ID+"/outcome"); !strings.Contains(outcome, shown) {
		t.Errorf("the outcome read for a card shows no plan:\n%s", outcome)
	}
}

// TestMetasInHead: the page's <meta>s that app.js reads, the session's
// CSRF token and a link's, are in its <head>, where a <meta name> belongs,
// not in its <body>.
func TestMetasInHead(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	csrf := b.signIn(t, c, "ada-token-7f3c9e21b4")
	rec := b.ask(t, time.Hour, deploy)
	u, _ := url.Parse(b.web.Links().For(rec))
	e, _, sig, _ := linkQuery(u.Query())
	for _, tc := range []struct {
		name   string
		client *http.Client
		path   string
		metas  []string
	}{
		{"inbox", c, "/", []string{`<meta name="csrf-token" content="` + csrf + `">`}},
		{"request, signed in", c, "/r/" + rec.ID, []string{`<meta name="csrf-token" content="` + csrf + `">`}},
		{"request by its link", b.browser(t), u.RequestURI(), []string{`<meta name="answer-link" content="` + e + "." + sig + `">`}},
		{"request by its link, signed in", c, u.RequestURI(), []string{`<meta name="csrf-token" content="` + csrf + `">`, `<meta name="answer-link" content="` + e + "." + sig + `">`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, page := b.page(t, tc.client, tc.path)
			head, body, ok := strings.Cut(page, "</head>")
			if status != http.StatusOK || !ok || !strings.Contains(head, "<head>") {
				t.Fatalf("%d, no <head>:\n%s", status, page)
			}
			for _, meta := range tc.metas {
				if !strings.Contains(head, meta) || strings.Contains(body, "<meta") {
					t.Errorf("%s is not in the <head> alone; the head:\n%s", meta, head)
				}
			}
		})
	}
}

var (
	tagRE    = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	onAttrRE = regexp.MustCompile(`\son[a-z]+\s*=`)
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestXSS(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	const detail = "Plan:\n\n<script>alert('detail')</script>\n\n<img src=x onerror=alert(1)>\n\n" +
		"[click me](javascript:alert(1)) [data](data:text/html,<script>alert(1)</script>) [ok](https://example.com/a?b=1&c=\"x\")\n\n" +
		"- <b onmouseover=alert(1)>item</b>\n- `<script>`\n\n```\n<script>alert('code')</script>\n```"
	rec := b.ask(t, time.Hour, seam.Question{
		ID: "x", Header: "<img src=x onerror=alert('h')>", Question: "<script>alert('q')</script> ok?", Detail: detail,
		Options: []seam.Option{{Label: `"><script>alert('label')</script>`, Description: "<img src=x onerror=alert('d')>"}, {Label: "javascript:alert(1)"}},
	})
	b.approval(t, seam.Approval{ToolName: "<script>alert('tool')</script>", DisplayReason: "<img src=x onerror=alert('r')> [x](javascript:alert(1))", Arguments: []byte(`{"cmd":"<script>alert('arg')</script>"}`)})

	for name, path := range map[string]string{"inbox": "/", "cards": "/web/cards", "link page": strings.TrimPrefix(b.web.Links().For(rec), "http://bridge.test")} {
		t.Run(name, func(t *testing.T) {
			status, page := b.page(t, c, path)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			// Every tag in the page is the page's own: no script but app.js,
			// no img, no event handler, no link to another scheme.
			for _, tag := range tagRE.FindAllString(page, -1) {
				lower := strings.ToLower(tag)
				switch {
				case strings.HasPrefix(lower, "<script") && lower != `<script src="/assets/app.js" defer>`,
					strings.HasPrefix(lower, "<img"), strings.HasPrefix(lower, "<b "),
					onAttrRE.MatchString(lower),
					strings.Contains(lower, "href=") && !strings.Contains(lower, `href="https://`) && !strings.Contains(lower, `href="/assets/`) && !strings.Contains(lower, `href="/"`):
					t.Errorf("the page holds the tag %s", tag)
				}
			}
			if !strings.Contains(page, "&lt;script&gt;") {
				t.Errorf("the agent's text is not shown escaped")
			}
			if !strings.Contains(page, `<a href="https://example.com/a?b=1&amp;c=&#34;x&#34;" rel="noopener noreferrer nofollow" target="_blank">ok</a>`) {
				t.Errorf("the safe https link is missing")
			}
		})
	}
	t.Run("security headers", func(t *testing.T) {
		res, err := c.Get(b.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP %q", csp)
		}
		if res.Header.Get("Referrer-Policy") != "no-referrer" || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("headers %v", res.Header)
		}
	})
}

// stream opens a live event stream and returns its lines as they come:
// a change event's data, another event's as "name: data", and comments
// as they are.
func stream(ctx context.Context, t *testing.T, c *http.Client, url string) (next func() string, events <-chan string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("%s: %d, Content-Type %q", url, res.StatusCode, ct)
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(res.Body)
		event := ""
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				event = e
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				if event != "" && event != "change" {
					d = event + ": " + d
				}
				lines <- d
			} else if sc.Text() == "" {
				event = ""
			} else if strings.HasPrefix(sc.Text(), ":") {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	return func() string {
		t.Helper()
		select {
		case e, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			return e
		case <-ctx.Done():
			t.Fatal("no event within the deadline")
		}
		return ""
	}, lines
}

// waitEnded reads events until the stream ends, failing t with why when
// ctx ends first.
func waitEnded(ctx context.Context, t *testing.T, events <-chan string, why string) {
	t.Helper()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-ctx.Done():
			t.Fatal(why)
		}
	}
}

func TestLiveEvents(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	rec := b.ask(t, time.Hour, deploy)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, events := stream(ctx, t, c, b.srv.URL+"/web/events")
	if e := next(); e != rec.ID {
		t.Fatalf("first event %q, want %q", e, rec.ID)
	}
	// Answered elsewhere (the API, Slack): it leaves the inbox.
	if _, err := b.disp.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusAnswered, Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "deploy", Selected: []string{"No"}}}}, By: &pending.Responder{Surface: "slack", UserID: "U1", Name: "Ada"}}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != "" {
		t.Fatalf("after the answer: %q, want no pending ids", e)
	}
	newer := b.ask(t, time.Hour, deploy)
	if e := next(); e != newer.ID {
		t.Fatalf("after a new request: %q", e)
	}
	t.Run("signing out ends the session's streams", func(t *testing.T) {
		other := b.browser(t)
		csrf := b.signIn(t, other, "ada-token-7f3c9e21b4")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		next, events := stream(ctx, t, other, b.srv.URL+"/web/events")
		next() // the pending ids
		res, err := other.PostForm(b.srv.URL+"/web/signout", url.Values{"csrf": {csrf}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		waitEnded(ctx, t, events, "the stream of a signed-out session is still open")
	})
	t.Run("shutdown ends streams", func(t *testing.T) {
		b.web.Shutdown()
		for range events {
		}
	})
}

// A request's page is told when it ends, and a silent stream is kept
// alive with comments.
func TestLiveRequestEvents(t *testing.T) {
	b := newBench(t, defaultTokens)
	b.web.keepAlive = 100 * time.Millisecond
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	rec := b.ask(t, time.Hour, deploy)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, _ := stream(ctx, t, c, b.srv.URL+"/web/events?id="+rec.ID)
	if e := next(); e != "pending" {
		t.Fatalf("first event %q, want pending", e)
	}
	if e := next(); e != ": ping" {
		t.Fatalf("a silent stream sent %q; want a keep-alive comment", e)
	}
	if _, err := b.disp.Resolve(ctx, rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	for e := next(); e != "cancelled"; e = next() {
		if e != ": ping" {
			t.Fatalf("after the cancel: %q, want cancelled", e)
		}
	}
	if e := next(); e != ": ping" {
		t.Fatalf("after the end: %q, want only keep-alive comments", e)
	}

	inbox, _ := stream(ctx, t, c, b.srv.URL+"/web/events")
	if e := inbox(); e != "" {
		t.Fatalf("inbox: %q, want no pending ids", e)
	}
	if e := inbox(); e != ": ping" {
		t.Fatalf("a silent inbox stream sent %q; want a keep-alive comment", e)
	}
}

// An inbox that polls less often than it keeps alive still sees changes:
// a keep-alive does not restart the wait for the next read.
func TestLiveInboxPollsPastKeepAlives(t *testing.T) {
	b := newBench(t, defaultTokens)
	b.web.poll, b.web.keepAlive = 300*time.Millisecond, 100*time.Millisecond
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, _ := stream(ctx, t, c, b.srv.URL+"/web/events")
	if e := next(); e != "" {
		t.Fatalf("first event %q, want no pending ids", e)
	}
	rec := b.ask(t, time.Hour, deploy)
	for e := next(); e != rec.ID; e = next() {
		if e != ": ping" {
			t.Fatalf("after a new request: %q", e)
		}
	}
}

// TestLinkOfAReplacedRequest: a request whose post's reply was lost is
// discarded, and another may be created under its tool_call_id, with the
// same id, asking something else (on another route, to other people).
// The message posted for the first is still in its channel with its "Open
// in browser" link; that link must not open or answer the second.
func TestLinkOfAReplacedRequest(t *testing.T) {
	b := newBench(t, defaultTokens)
	ctx := context.Background()
	create := func(q seam.Question) *pending.Record {
		t.Helper()
		qs := seam.Questions{Questions: []seam.Question{q}}
		rec, _, err := b.store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Client: "agent", ToolCallID: "call-1",
			Questions: &qs, ExpiresIn: 30 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	first := create(deploy)
	link := strings.TrimPrefix(b.web.Links().For(first), "http://bridge.test")
	if ok, err := b.store.Discard(ctx, first.ID); !ok || err != nil {
		t.Fatalf("Discard: %v, %v", ok, err)
	}
	second := create(seam.Question{ID: "drop", Question: "Drop the prod database?", Options: []seam.Option{{Label: "Drop it"}, {Label: "Keep it"}}})
	if second.ID != first.ID {
		t.Fatalf("created again as %s; want %s", second.ID, first.ID)
	}
	anon := b.browser(t)
	if status, page := b.page(t, anon, link); status != http.StatusForbidden || strings.Contains(page, "Drop the prod database?") {
		t.Errorf("the first request's link opened the second: %d", status)
	}
	u, _ := url.Parse(link)
	hdr := map[string]string{linkHeader: linkParams(u).Get("e") + "." + linkParams(u).Get("s")}
	ans := map[string]any{"answers": []any{map[string]any{"id": "drop", "selected": []string{"Drop it"}}}}
	if status, _ := b.post(t, anon, "/web/requests/"+second.ID+"/answer", hdr, ans); status != http.StatusForbidden {
		t.Errorf("the first request's link answered the second: %d", status)
	}
	if got := b.get(t, second.ID); got.Status != seam.StatusPending {
		t.Fatalf("the second request is %s by %+v", got.Status, got.ResolvedBy)
	}
	// Its own link works.
	own := strings.TrimPrefix(b.web.Links().For(second), "http://bridge.test")
	if status, page := b.page(t, anon, own); status != http.StatusOK || !strings.Contains(page, "Drop the prod database?") {
		t.Errorf("the second request's own link: %d", status)
	}
}

// TestOutcome: the inbox reads how a request that ended elsewhere ended,
// for its card that someone was filling in; only a signed-in answerer can.
func TestOutcome(t *testing.T) {
	b := newBench(t, defaultTokens)
	c := b.browser(t)
	rec := b.ask(t, time.Hour, deploy)
	path := "/web/requests/" + rec.ID + "/outcome"
	if status, _ := b.page(t, c, path); status != http.StatusUnauthorized {
		t.Errorf("signed out: %d", status)
	}
	h := map[string]string{"X-CSRF-Token": b.signIn(t, c, "ada-token-7f3c9e21b4")}
	if status, body := b.page(t, c, path); status != http.StatusNoContent {
		t.Errorf("pending: %d %s, want 204", status, body)
	}
	if status, body := b.post(t, c, "/web/requests/"+rec.ID+"/dismiss", h, nil); status != 200 {
		t.Fatalf("dismiss: %d %v", status, body)
	}
	if status, body := b.page(t, c, path); status != http.StatusOK || !strings.Contains(body, `class="outcome status-dismissed"`) || !strings.Contains(body, "Dismissed by") {
		t.Errorf("ended: %d %s", status, body)
	}
	if status, _ := b.page(t, c, "/web/requests/nosuchrequest0000/outcome"); status != http.StatusNotFound {
		t.Errorf("unknown: %d, want 404", status)
	}

	// What people wrote is escaped; the time is one the page shows in the
	// reader's zone.
	rec = b.ask(t, time.Hour, deploy)
	if status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", h, map[string]any{"answers": []any{
		map[string]any{"id": "deploy", "selected": []string{}, "custom": `<img src=x onerror="alert(1)">`}}}); status != 200 {
		t.Fatalf("answer: %d %v", status, body)
	}
	_, body := b.page(t, c, "/web/requests/"+rec.ID+"/outcome")
	if strings.Contains(body, "<img") || !strings.Contains(body, "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") {
		t.Errorf("the answer is not escaped in the outcome:\n%s", body)
	}
	if !regexp.MustCompile(`· <time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">\d{4}-\d\d-\d\d \d\d:\d\d UTC</time></p>`).MatchString(body) {
		t.Errorf("the outcome's time is not a <time>:\n%s", body)
	}
}

// TestSlowSignInIsAnswered: a sign-in form whose body stops coming is
// answered once api.BodyTimeout has passed, not held for good.
func TestSlowSignInIsAnswered(t *testing.T) {
	old := api.BodyTimeout
	api.BodyTimeout = 200 * time.Millisecond
	t.Cleanup(func() { api.BodyTimeout = old })
	b := newBench(t, defaultTokens)

	conn, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a server that never answers fails the test, not hangs it
	fmt.Fprintf(conn, "POST /web/signin HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"Content-Length: 100\r\n\r\ntoken=ada", strings.TrimPrefix(b.srv.URL, "http://"))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a sign-in whose body stops coming: no answer: %v", err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusSeeOther || len(res.Cookies()) != 0 {
		t.Errorf("a sign-in whose body stops coming: %d, cookies %v; want it refused", res.StatusCode, res.Cookies())
	}
}

// A base_url config takes as https in any case (url.Parse writes the
// scheme in lower case) makes the session cookie Secure behind a proxy
// that says nothing of https: "HTTPS://" made it a plain cookie, which a
// browser sends over http too.
func TestHTTPSBaseURLInAnyCase(t *testing.T) {
	b := newBench(t, defaultTokens)
	for base, want := range map[string]bool{"https://bridge.example.com": true, "HTTPS://bridge.example.com": true, "Https://bridge.example.com/askbridge": true, "http://bridge.example.com": false} {
		w, err := New(Options{Store: b.store, Dispatcher: b.disp, Tokens: defaultTokens, Signer: NewSigner(testSecret),
			BaseURL: base, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if got := w.secure(httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/web/signin", nil)); got != want {
			t.Errorf("base_url %s: secure = %v, want %v", base, got, want)
		}
		w.Shutdown()
	}
}

// A live stream ends when the credential that opened it expires: a link
// at its expiry, a session at its end, each by a timer at that moment
// (the streams below read nothing for seconds, and a request's page far
// longer), not when the page next reads.
func TestLiveStreamEndsWithItsCredential(t *testing.T) {
	b := newBench(t, defaultTokens)
	b.web.poll, b.web.keepAlive = time.Minute, time.Minute
	// A session expires on a whole second: one begun on one ends sessionTTL later.
	wholeSecond := func() { b.clock.add(b.clock.now().Truncate(time.Second).Add(time.Second).Sub(b.clock.now())) }
	const left = 300 * time.Millisecond // what is left of each credential as its stream opens
	ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}

	for _, tc := range []struct {
		name string
		open func(t *testing.T) (c *http.Client, path string, expires time.Time)
	}{
		{"a personal link", func(t *testing.T) (*http.Client, string, time.Time) {
			rec := b.ask(t, 2*time.Hour, deploy)
			link, until := b.web.Links().ForPerson(rec, ada, b.clock.now())
			u, _ := url.Parse(link)
			return b.browser(t), "/web/events?" + url.Values{"id": {rec.ID}, "e": {linkParams(u).Get("e")}, "p": {linkParams(u).Get("p")}, "s": {linkParams(u).Get("s")}}.Encode(), until
		}},
		{"a link of a request that expires", func(t *testing.T) (*http.Client, string, time.Time) {
			rec := b.ask(t, 10*time.Minute, deploy)
			u, _ := url.Parse(b.web.Links().For(rec))
			return b.browser(t), "/web/events?" + url.Values{"id": {rec.ID}, "e": {linkParams(u).Get("e")}, "s": {linkParams(u).Get("s")}}.Encode(), time.Unix(rec.ExpiresAt.Unix(), 0)
		}},
		{"a session's inbox", func(t *testing.T) (*http.Client, string, time.Time) {
			c := b.browser(t)
			wholeSecond()
			b.signIn(t, c, "ada-token-7f3c9e21b4")
			return c, "/web/events", b.clock.now().Add(b.web.sessionTTL)
		}},
		{"a session's request page", func(t *testing.T) (*http.Client, string, time.Time) {
			rec := b.ask(t, 48*time.Hour, deploy)
			c := b.browser(t)
			wholeSecond()
			b.signIn(t, c, "ada-token-7f3c9e21b4")
			return c, "/web/events?id=" + rec.ID, b.clock.now().Add(b.web.sessionTTL)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, path, expires := tc.open(t)
			b.clock.add(expires.Sub(b.clock.now()) - left)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			next, events := stream(ctx, t, c, b.srv.URL+path)
			next() // what the page shows
			waitEnded(ctx, t, events, "the stream is still open after its credential expired")
		})
	}

	t.Run("an expired link opens no stream to a pending request", func(t *testing.T) {
		rec := b.ask(t, 2*time.Hour, deploy)
		link, until := b.web.Links().ForPerson(rec, ada, b.clock.now())
		b.clock.add(until.Sub(b.clock.now()))
		u, _ := url.Parse(link)
		path := "/web/events?" + url.Values{"id": {rec.ID}, "e": {linkParams(u).Get("e")}, "p": {linkParams(u).Get("p")}, "s": {linkParams(u).Get("s")}}.Encode()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+path, nil)
		res, err := b.browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("%d, want 403", res.StatusCode)
		}
		// Once the request has ended, the link shows how, for good.
		if _, err := b.disp.Resolve(context.Background(), rec.ID, pending.Resolution{Status: seam.StatusCancelled}); err != nil {
			t.Fatal(err)
		}
		next, _ := stream(ctx, t, b.browser(t), b.srv.URL+path)
		if e := next(); e != "cancelled" {
			t.Fatalf("the stream of an ended request, by its expired link: %q, want cancelled", e)
		}
	})
}

// A browser that is signed in and holds a link keeps its page when the
// link expires: the page carries the session's CSRF token beside the
// link, its stream, ended at the link's expiry, opens again under the
// session, and its answer, sent with the expired link and the CSRF token
// as the page's script sends it, goes by the session (not 403, "this link
// has expired"); the expired link's page, opened again, is the session's.
// Without a session, or without its CSRF token, the expired link is
// refused as before.
func TestSignedInBrowserOutlivesItsLink(t *testing.T) {
	// Requests never expire unless they say so: a link to one expires
	// link_ttl after it was created.
	b := newBenchConfig(t, defaultTokens, []byte("store:\n  default_expires_in: 0s\n"))
	b.web.poll, b.web.keepAlive = time.Minute, time.Minute
	ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}
	for _, tc := range []struct {
		name string
		link func(t *testing.T) (rec *pending.Record, path string, until time.Time)
	}{
		{"a personal link", func(t *testing.T) (*pending.Record, string, time.Time) {
			rec := b.ask(t, 2*time.Hour, deploy)
			link, until := b.web.Links().ForPerson(rec, ada, b.clock.now())
			return rec, link[strings.Index(link, "/r/"):], until
		}},
		{"a link of a request that never expires", func(t *testing.T) (*pending.Record, string, time.Time) {
			rec := b.ask(t, 0, deploy)
			if !rec.ExpiresAt.IsZero() {
				t.Fatalf("the request expires at %v", rec.ExpiresAt)
			}
			path := b.web.Links().Path(rec)
			u, _ := url.Parse(path)
			e, _ := strconv.ParseInt(linkParams(u).Get("e"), 10, 64)
			return rec, path, time.Unix(e, 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, path, until := tc.link(t)
			u, _ := url.Parse(path)
			c := b.browser(t)
			csrf := b.signIn(t, c, "ada-token-7f3c9e21b4")

			status, page := b.page(t, c, path)
			if status != http.StatusOK || !strings.Contains(page, `<meta name="answer-link"`) {
				t.Fatalf("the link's page, signed in: %d, want 200 with the link", status)
			}
			if !strings.Contains(page, `<meta name="csrf-token" content="`+csrf+`"`) {
				t.Errorf("the link's page, signed in, lacks the session's CSRF token: its answers can't go by the session")
			}
			link := linkParams(u).Get("e") + "." + linkParams(u).Get("s")
			if p := linkParams(u).Get("p"); p != "" {
				link += "." + p
			}

			// The page's stream, opened by the link just before it
			// expires, ends at the expiry and opens again, as EventSource
			// does, under the session.
			b.clock.add(until.Sub(b.clock.now()) - 300*time.Millisecond)
			q := url.Values{"id": {rec.ID}, "e": {linkParams(u).Get("e")}, "s": {linkParams(u).Get("s")}}
			if p := linkParams(u).Get("p"); p != "" {
				q.Set("p", p)
			}
			events := b.srv.URL + "/web/events?" + q.Encode()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			next, lines := stream(ctx, t, c, events)
			next()
			waitEnded(ctx, t, lines, "the link's stream is still open after the link expired")
			b.clock.add(until.Sub(b.clock.now()))
			next, _ = stream(ctx, t, c, events)
			// The page shows whom it now answers as: the session, not
			// the person the link named.
			if e := next(); e != "by: ada" {
				t.Errorf("the stream again, under the session, begins with %q, want by: ada", e)
			}
			if e := next(); e != "pending" {
				t.Fatalf("the stream again, under the session: %q, want pending", e)
			}

			ans := map[string]any{"answers": []map[string]any{{"id": "deploy", "selected": []string{"No"}}}}
			anon := b.browser(t)
			if status, body := b.post(t, anon, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: link}, ans); status != http.StatusForbidden {
				t.Errorf("through the expired link, not signed in: %d %v, want 403", status, body)
			}
			if status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: link, "X-CSRF-Token": "forged"}, ans); status != http.StatusForbidden {
				t.Errorf("through the expired link, signed in, a wrong CSRF token: %d %v, want 403", status, body)
			}
			status, page = b.page(t, anon, path)
			if status != http.StatusGone {
				t.Errorf("the expired link's page, not signed in: %d, want 410", status)
			}
			// The request is still waiting: the page says where else to
			// answer it, not that it ended.
			if strings.Contains(page, "with its request") || !strings.Contains(page, "still waiting") {
				t.Errorf("the expired link's page, not signed in, says:\n%s", page)
			}
			status, page = b.page(t, c, path)
			if status != http.StatusOK || !strings.Contains(page, `<form class="answer"`) || !strings.Contains(page, `<meta name="csrf-token" content="`+csrf+`"`) || strings.Contains(page, `name="answer-link"`) {
				t.Errorf("the expired link's page, signed in: %d, want 200, the form, the CSRF token and no link:\n%s", status, page)
			}

			status, body := b.post(t, c, "/web/requests/"+rec.ID+"/answer", map[string]string{linkHeader: link, "X-CSRF-Token": csrf}, ans)
			if status != http.StatusOK {
				t.Fatalf("the answer through the expired link, signed in: %d %v, want 200", status, body)
			}
			if got := b.get(t, rec.ID); got.Status != seam.StatusAnswered || got.ResolvedBy == nil || *got.ResolvedBy != (pending.Responder{Surface: "web", UserID: "ada", Name: "ada"}) {
				t.Errorf("%s, by %+v; want answered by the session's ada", got.Status, got.ResolvedBy)
			}
		})
	}
}

// Live streams are capped per session, per link and client address, and,
// for those opened by links, per replica: one more is refused with 429
// and the web's JSON error, and a closed one makes room.
func TestLiveStreamCaps(t *testing.T) {
	b := newBench(t, defaultTokens)
	b.web.streams = streamLimits{perKey: 2, links: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	from := func(ip string) *http.Client {
		c := b.browser(t)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c.Transport = &http.Transport{DialContext: d.DialContext}
		return c
	}
	linkPath := func(rec *pending.Record) string {
		u, _ := url.Parse(b.web.Links().For(rec))
		return "/web/events?" + url.Values{"id": {rec.ID}, "e": {linkParams(u).Get("e")}, "s": {linkParams(u).Get("s")}}.Encode()
	}
	// open opens a stream and returns its status, its error's code, and
	// what closes it.
	open := func(c *http.Client, path string) (int, string, func()) {
		t.Helper()
		sctx, scancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(sctx, http.MethodGet, b.srv.URL+path, nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		closeIt := func() { scancel(); res.Body.Close() }
		t.Cleanup(closeIt)
		if res.StatusCode == http.StatusOK {
			return res.StatusCode, "", closeIt
		}
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
			t.Errorf("a 429 without Retry-After")
		}
		closeIt()
		return res.StatusCode, errCode(body), closeIt
	}
	want := func(what string, status int, code string, gotStatus int, gotCode string) {
		t.Helper()
		if gotStatus != status || gotCode != code {
			t.Fatalf("%s: %d %q, want %d %q", what, gotStatus, gotCode, status, code)
		}
	}
	first, second := b.ask(t, time.Hour, deploy), b.ask(t, time.Hour, deploy)
	here, there := from("127.0.0.1"), from("127.0.0.2")
	// Each refusal is counted by its cap, each cap from 0.
	refused := map[string]float64{"session": 0, "link": 0, "replica": 0}
	counted := func(what string) {
		t.Helper()
		if got := b.counts(t, "askbridge_web_streams_refused_total", "cap"); !maps.Equal(got, refused) {
			t.Errorf("%s: askbridge_web_streams_refused_total %v, want %v", what, got, refused)
		}
	}
	counted("at start")

	st, _, closeFirst := open(here, linkPath(first))
	want("a link's first stream", 200, "", st, "")
	st, _, _ = open(here, linkPath(first))
	want("its second, from the same address", 200, "", st, "")
	st, code, _ := open(here, linkPath(first))
	want("its third, from the same address", http.StatusTooManyRequests, CodeTooManyStreams, st, code)
	refused["link"]++
	counted("over a link's cap")
	st, code, _ = open(there, linkPath(first))
	want("its third, from another address", 200, "", st, code)
	st, code, _ = open(here, linkPath(second))
	want("another link's, on a replica holding all the links' streams it takes", http.StatusTooManyRequests, CodeTooManyStreams, st, code)
	refused["replica"]++
	counted("over the replica's cap")

	ada := b.browser(t)
	b.signIn(t, ada, "ada-token-7f3c9e21b4")
	st, code, _ = open(ada, "/web/events")
	want("a session's inbox, with the links' streams full", 200, "", st, code)
	st, code, _ = open(ada, "/web/events?id="+second.ID)
	want("a session's request page", 200, "", st, code)
	st, code, _ = open(ada, "/web/events")
	want("a session's third", http.StatusTooManyRequests, CodeTooManyStreams, st, code)
	refused["session"]++
	counted("over a session's cap")
	other := b.browser(t)
	b.signIn(t, other, "ada-token-7f3c9e21b4")
	st, code, _ = open(other, "/web/events")
	want("another session's", 200, "", st, code)
	// Refused for want of a credential, a stream says so in the one
	// error shape, as every other refusal does.
	st, code, _ = open(there, "/web/events")
	want("the inbox's, not signed in", http.StatusUnauthorized, api.CodeUnauthorized, st, code)
	st, code, _ = open(there, "/web/events?id="+first.ID)
	want("a request's, with neither a link nor a session", http.StatusForbidden, api.CodeForbidden, st, code)

	// A stream the page closed makes room, once the bridge has seen it go.
	closeFirst()
	for _, links := b.web.streams.open(); links >= 3; _, links = b.web.streams.open() {
		select {
		case <-ctx.Done():
			t.Fatal("a closed stream is still counted")
		case <-time.After(time.Millisecond):
		}
	}
	st, code, _ = open(here, linkPath(second))
	want("another link's, once a stream closed", 200, "", st, code)
}

// A replica full of links' streams warns of it once a minute at most, by
// the server's clock: refusals within a minute of the warning are not
// logged again, the first one a minute after it is.
func TestFullReplicaWarnsOnceAMinute(t *testing.T) {
	b := newBench(t, defaultTokens)
	b.web.streams = streamLimits{perKey: 10, links: 1}
	logs := &logRecorder{level: slog.LevelWarn}
	b.web.log = slog.New(logs)
	rec := b.ask(t, 2*time.Hour, deploy)
	u, _ := url.Parse(b.web.Links().For(rec))
	path := b.srv.URL + "/web/events?" + url.Values{"id": {rec.ID}, "e": {linkParams(u).Get("e")}, "s": {linkParams(u).Get("s")}}.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream(ctx, t, b.browser(t), path) // the one stream the replica takes from links

	for i, step := range []struct {
		after    time.Duration // on the clock since the last refusal
		warnings int           // logged in all, after this refusal
	}{
		{0, 1},                // the first
		{0, 1},                // at once again
		{59 * time.Second, 1}, // within the minute
		{time.Second, 2},      // a minute after the first warning
		{30 * time.Second, 2},
		{30 * time.Second, 3},
	} {
		b.clock.add(step.after)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
		res, err := b.browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("refusal %d: %d, want 429", i, res.StatusCode)
		}
		if got := logs.messages(); len(got) != step.warnings {
			t.Fatalf("after refusal %d, %v on: %d warnings, want %d: %q", i, step.after, len(got), step.warnings, got)
		}
	}
}

func TestClientNet(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:51000":            "192.0.2.7",
		"[::ffff:192.0.2.7]:51000":   "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::1]:443":   "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:443":      "2001:db8:1:3::/64",
		"pipe":                       "pipe",
	} {
		if got := clientNet(in); got != want {
			t.Errorf("clientNet(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRequestPageLinksBackToTheInbox: a signed-in person's page of one
// request links back to the inbox (on a phone there is no other way but
// Back); the page of a signed link alone, which opens no inbox, does not.
func TestRequestPageLinksBackToTheInbox(t *testing.T) {
	b := newBench(t, defaultTokens)
	rec := b.approval(t, seam.Approval{ToolName: "kubectl_apply"})
	const back = `<a class="back" href="/"`
	c := b.browser(t)
	b.signIn(t, c, "ada-token-7f3c9e21b4")
	if _, page := b.page(t, c, "/r/"+rec.ID); !strings.Contains(page, back) {
		t.Errorf("the signed-in page has no link back to the inbox:\n%s", page)
	}
	if status, page := b.page(t, b.browser(t), strings.TrimPrefix(b.web.Links().For(rec), "http://bridge.test")); status != http.StatusOK || strings.Contains(page, back) {
		t.Errorf("the signed link's page: %d, with a link to an inbox it does not open:\n%s", status, page)
	}
	// Beside a long name on a phone, the link and the heading keep their
	// width (a flex item shrinks and wraps otherwise: "‹ / Inbo / x"), and
	// the name gives way, cut with an ellipsis.
	css, err := embedded.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{".top .back, .top .brand, .signout": "flex: none", ".top .who": "min-width: 0"} {
		if m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sel) + ` \{([^}]*)\}`).FindStringSubmatch(string(css)); m == nil || !strings.Contains(m[1], want) {
			t.Errorf("app.css: %s has no %s", sel, want)
		}
	}
}

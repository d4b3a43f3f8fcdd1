package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Client is an authenticated API caller.
type Client struct {
	Name   string
	Scopes []string
}

// Can reports whether the client holds scope.
func (c Client) Can(scope string) bool { return slices.Contains(c.Scopes, scope) }

// Token is one configured bearer token.
type Token struct {
	Name   string
	Token  string
	Scopes []string
}

// Scopes.
const (
	ScopeAsk    = "ask"
	ScopeAnswer = "answer"
)

// openClient is every caller of an API with no tokens configured.
var openClient = Client{Name: "anonymous", Scopes: []string{ScopeAsk, ScopeAnswer}}

type tokenDigest struct {
	sum    [sha256.Size]byte
	client Client
}

type authenticator struct {
	tokens []tokenDigest
	// An API without tokens trusts whoever can connect to its loopback
	// address, which a web page its user visits can do too, and so can
	// anyone a proxy in front of it lets in: it answers only calls
	// addressed to a loopback name (DNS rebinding), that no proxy
	// forwarded, and no cross-origin browser call (CSRF).
	cop *http.CrossOriginProtection
}

// forwardedHeaders are the headers a proxy adds to what it forwards;
// nginx, Caddy, Traefik, HAProxy (option forwardfor), Cloudflare's and
// ngrok's tunnels send at least one. A bare nginx proxy_pass sends none,
// and a Host of its upstream: what the open API can't tell from a local
// call, and why a bridge behind a proxy needs tokens (docs/api.md).
var forwardedHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"}

func newAuthenticator(tokens []Token, baseURL string) authenticator {
	a := authenticator{cop: http.NewCrossOriginProtection()}
	for _, t := range tokens {
		a.tokens = append(a.tokens, tokenDigest{sha256.Sum256([]byte(t.Token)), Client{t.Name, t.Scopes}})
	}
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		_ = a.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host)
	}
	return a
}

// local reports whether host (a request's Host) names this machine's
// loopback.
func local(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// open checks a call to an API without tokens: from a program on this
// machine, not from a web page.
func (a authenticator) open(r *http.Request) error {
	if !local(r.Host) {
		return apiErr(http.StatusForbidden, CodeForbidden, "an API without tokens answers only calls addressed to localhost or a loopback address; give it tokens (api.tokens) to call it from elsewhere")
	}
	for _, h := range forwardedHeaders {
		if r.Header.Get(h) != "" {
			return apiErr(http.StatusForbidden, CodeForbidden, "an API without tokens answers only programs on its machine, and this call came through a proxy ("+h+"); give it tokens (api.tokens)")
		}
	}
	if a.cop.Check(r) != nil {
		return apiErr(http.StatusForbidden, CodeForbidden, "an API without tokens refuses cross-origin calls from web pages")
	}
	return nil
}

// client returns the caller of r. Tokens are compared as SHA-256 digests in
// constant time, all of them every time, so timing tells nothing about
// which token or how much of it matched.
func (a authenticator) client(r *http.Request) (Client, error) {
	if len(a.tokens) == 0 {
		if err := a.open(r); err != nil {
			return Client{}, err
		}
		return openClient, nil
	}
	tok, ok := Bearer(r.Header.Get("Authorization"))
	if !ok {
		return Client{}, apiErr(http.StatusUnauthorized, CodeUnauthorized, "send Authorization: Bearer <token>")
	}
	sum := sha256.Sum256([]byte(tok))
	var found Client
	match := 0
	for _, t := range a.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], t.sum[:])
		if eq == 1 {
			found = t.client
		}
		match |= eq
	}
	if match == 0 {
		return Client{}, apiErr(http.StatusUnauthorized, CodeUnauthorized, "the bearer token is not valid")
	}
	return found, nil
}

// Bearer returns the token of an Authorization header value "Bearer
// <token>". The scheme is case-insensitive (RFC 7235 §2.1: "bearer" and
// "BEARER" are Bearer too), and one or more spaces may follow it.
func Bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// require authenticates r and checks that the client holds one of scopes.
func (s *Server) require(h func(w http.ResponseWriter, r *http.Request, c Client) error, scopes ...string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := s.auth.client(r)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(scopes, c.Can) {
			return apiErr(http.StatusForbidden, CodeForbidden, "this token lacks the "+strings.Join(scopes, " or ")+" scope")
		}
		return h(w, r, c)
	}
}

// RequireAsk has h answer only the callers the API lets ask: with tokens,
// a bearer token with the ask scope; without, a program on this machine.
// Others get the API's 401 or 403.
func (s *Server) RequireAsk(h http.Handler) http.Handler {
	return s.serve(s.require(func(w http.ResponseWriter, r *http.Request, _ Client) error {
		h.ServeHTTP(w, r)
		return nil
	}, ScopeAsk))
}

package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
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

type authenticator struct{ tokens []tokenDigest }

func newAuthenticator(tokens []Token) authenticator {
	var a authenticator
	for _, t := range tokens {
		a.tokens = append(a.tokens, tokenDigest{sha256.Sum256([]byte(t.Token)), Client{t.Name, t.Scopes}})
	}
	return a
}

// client returns the caller of r. Tokens are compared as SHA-256 digests in
// constant time, all of them every time, so timing tells nothing about
// which token or how much of it matched.
func (a authenticator) client(r *http.Request) (Client, error) {
	if len(a.tokens) == 0 {
		return openClient, nil
	}
	tok, ok := bearer(r.Header.Get("Authorization"))
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

// bearer returns the token of an Authorization header value "Bearer
// <token>". The scheme is case-insensitive (RFC 7235 §2.1: "bearer" and
// "BEARER" are Bearer too), and one or more spaces may follow it.
func bearer(h string) (string, bool) {
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

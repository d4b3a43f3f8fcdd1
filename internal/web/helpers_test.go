package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

const testSecret = "0123456789abcdef0123456789abcdef"

// clock is a settable clock for link and session expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type mux struct{ *http.ServeMux }

func (m mux) Mount(pattern string, h http.Handler) { m.Handle(pattern, h) }

// bench is a web app on a store of its own, served by httptest.
type bench struct {
	web   *Server
	store *pending.Store
	disp  *dispatch.Dispatcher
	srv   *httptest.Server
	clock *clock
	mr    *miniredis.Miniredis
	reg   *prometheus.Registry // the web app's metrics
}

var defaultTokens = []api.Token{
	{Name: "agent", Token: "agent-token-7f3c9e21b4", Scopes: []string{api.ScopeAsk}},
	{Name: "ada", Token: "ada-token-7f3c9e21b4", Scopes: []string{api.ScopeAnswer}},
}

func newBench(t *testing.T, tokens []api.Token) *bench {
	t.Helper()
	return newBenchConfig(t, tokens, nil)
}

// newBenchConfig is newBench with the dispatcher's config parsed from
// yaml.
func newBenchConfig(t *testing.T, tokens []api.Token, yaml []byte) *bench {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	clk := &clock{t: time.Now()}
	store := pending.New(rdb, pending.Options{Now: clk.now, Recheck: 50 * time.Millisecond})
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	disp, err := dispatch.New(store, cfg, map[string]dispatch.Surface{}, dispatch.NewMetrics(prometheus.NewRegistry()), log)
	if err != nil {
		t.Fatal(err)
	}
	signer := NewSigner(testSecret)
	reg := prometheus.NewRegistry()
	w, err := New(Options{
		Store: store, Dispatcher: disp, Tokens: tokens, Signer: signer,
		Links: NewLinks(signer, "http://bridge.test", time.Hour), Poll: 20 * time.Millisecond,
		Registry: reg, Now: clk.now, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	mx := mux{http.NewServeMux()}
	w.Mount(mx)
	srv := httptest.NewServer(api.WithBodyDeadline(mx)) // as the app's server serves it
	t.Cleanup(func() { w.Shutdown(); srv.Close() })
	return &bench{web: w, store: store, disp: disp, srv: srv, clock: clk, mr: m, reg: reg}
}

// ask creates a question request.
func (b *bench) ask(t *testing.T, expires time.Duration, qs ...seam.Question) *pending.Record {
	t.Helper()
	body := seam.Questions{Questions: qs}
	if err := body.Validate(); err != nil {
		t.Fatal(err)
	}
	rec, _, err := b.disp.Create(context.Background(), pending.NewRequest{Kind: seam.KindQuestion, Client: "agent", Questions: &body, ExpiresIn: expires})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (b *bench) approval(t *testing.T, a seam.Approval) *pending.Record {
	t.Helper()
	rec, _, err := b.disp.Create(context.Background(), pending.NewRequest{Kind: seam.KindApproval, Client: "agent", Approval: &a, ExpiresIn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (b *bench) get(t *testing.T, id string) *pending.Record {
	t.Helper()
	rec, err := b.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so tests see them.
func (b *bench) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn signs c in with token and returns the page's CSRF token.
func (b *bench) signIn(t *testing.T, c *http.Client, token string) string {
	t.Helper()
	res, err := c.PostForm(b.srv.URL+"/web/signin", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: status %d", res.StatusCode)
	}
	_, page := b.page(t, c, "/")
	return csrfOf(t, page)
}

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	const marker = `<meta name="csrf-token" content="`
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

func (b *bench) page(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	res, err := c.Get(b.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// post calls a JSON endpoint with headers and returns the status and body.
func (b *bench) post(t *testing.T, c *http.Client, path string, headers map[string]string, body any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var out map[string]any
	json.Unmarshal(data, &out)
	if out == nil {
		out = map[string]any{"raw": string(data)}
	}
	return res.StatusCode, out
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// logRecorder is a slog.Handler that keeps the messages of the records
// at level or above.
type logRecorder struct {
	level slog.Level
	mu    sync.Mutex
	msgs  []string
}

func (h *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// messages returns the messages kept so far.
func (h *logRecorder) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// counts returns the samples of the counter name on b's registry, by the
// value of its label.
func (b *bench) counts(t *testing.T, name, label string) map[string]float64 {
	t.Helper()
	families, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					got[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return got
}

// linkParams are the e, s and p (a personal link's person) of link u, as
// the query of links before one parameter (l) spelled them.
func linkParams(u *url.URL) url.Values {
	e, p, s, ok := linkQuery(u.Query())
	if !ok {
		return url.Values{}
	}
	v := url.Values{"e": {e}, "s": {s}}
	if p != "" {
		v.Set("p", p)
	}
	return v
}

// LinkParams is linkParams, for the package's external tests.
var LinkParams = linkParams

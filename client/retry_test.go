package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/api"
)

// script is a fake bridge: each call is answered by the next step of its
// method, the last step repeating.
type script struct {
	probes atomic.Int32 // GETs of /healthz, answered as the bridge does and not counted as calls
	mu     sync.Mutex
	steps  map[string][]func(w http.ResponseWriter, r *http.Request, body []byte)
	bodies map[string][]string // request bodies by method
	query  map[string][]string // request queries by method
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
		s.probes.Add(1)
		reply(200, `{"status":"ok"}`)(w, r, nil)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies[r.Method] = append(s.bodies[r.Method], string(body))
	s.query[r.Method] = append(s.query[r.Method], r.URL.RawQuery)
	steps := s.steps[r.Method]
	step := steps[min(len(s.bodies[r.Method]), len(steps))-1]
	s.mu.Unlock()
	step(w, r, body)
}

func (s *script) calls(method string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[method]
}

// deletes returns the queries of the DELETEs made.
func (s *script) deletes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.query[http.MethodDelete]
}

func newScript(t *testing.T, steps map[string][]func(http.ResponseWriter, *http.Request, []byte)) (*script, *Client) {
	t.Helper()
	s := &script{steps: steps, bodies: map[string][]string{}, query: map[string][]string{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithPollWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	c.backoff, c.maxBackoff = time.Millisecond, 5*time.Millisecond
	return s, c
}

func reply(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// hangUp closes the connection without a response: the request arrived, the
// answer is lost.
func hangUp(t *testing.T) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}
}

const (
	pendingRec  = `{"id":"abc","kind":"question","status":"pending","route":"default","questions":[{"id":"q1","question":"Go?"}]}`
	answeredRec = `{"id":"abc","kind":"question","status":"answered","route":"default","answer":{"answers":[{"id":"q1","selected":[],"custom":"go"}]}}`
	unavailable = `{"error":{"code":"UNAVAILABLE","message":"the bridge can't reach its Redis; try again shortly"}}`
)

var question = QuestionRequest{Questions: []Question{{ID: "q1", Question: "Go?"}}}

func TestWaitRidesOutOutages(t *testing.T) {
	s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"POST": {reply(201, pendingRec)},
		"GET": {
			reply(503, unavailable),
			hangUp(t),
			reply(502, `<html>bad gateway</html>`),
			reply(200, pendingRec),
			reply(200, answeredRec),
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ans, _, err := c.Ask(ctx, question)
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if got := ans.Answers[0].Custom; got != "go" {
		t.Errorf("answer = %+v", ans)
	}
	if n := len(s.calls("GET")); n != 5 {
		t.Errorf("%d polls, want 5", n)
	}
	if n := s.probes.Load(); n != 0 {
		t.Errorf("%d probes of /healthz, want none: the bridge had answered", n)
	}
}

// TestRetryAfterIsHonoured: a 503 (or 429) that says Retry-After waits
// that long before the next try, not the first backoff's 125-250 ms, up
// to the longest backoff.
func TestRetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		header   string
		from, to time.Duration
	}{
		{"1", time.Second, time.Second},
		{"2", 2 * time.Second, 2 * time.Second},
		{"3600", 5 * time.Second, 5 * time.Second}, // the longest backoff
		{"", 125 * time.Millisecond, 250 * time.Millisecond},
		{"Wed, 21 Oct 2026 07:28:00 GMT", 125 * time.Millisecond, 250 * time.Millisecond},
	} {
		t.Run(tc.header, func(t *testing.T) {
			_, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
				"GET": {func(w http.ResponseWriter, _ *http.Request, _ []byte) {
					if tc.header != "" {
						w.Header().Set("Retry-After", tc.header)
					}
					reply(503, unavailable)(w, nil, nil)
				}},
			})
			c.backoff, c.maxBackoff = 250*time.Millisecond, 5*time.Second // New's
			_, err := c.Get(context.Background(), "abc", 0)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Get error = %v, want ErrUnavailable", err)
			}
			r := retrier{c: c, next: c.backoff}
			if d := r.delay(err); d < tc.from || d > tc.to {
				t.Errorf("Retry-After %q: waits %v before the next try, want %v to %v", tc.header, d, tc.from, tc.to)
			}
		})
	}
}

func TestWaitGivesUp(t *testing.T) {
	_, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"POST": {reply(201, pendingRec)},
		"GET":  {reply(503, unavailable)},
	})
	c.retryFor = 30 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, rec, err := c.Ask(ctx, question)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "still failing after") {
		t.Fatalf("Ask error = %v, want ErrUnavailable after retrying", err)
	}
	if rec == nil || rec.ID != "abc" {
		t.Errorf("record = %+v, want the pending request", rec)
	}
}

func TestWaitStopsOnPermanentError(t *testing.T) {
	s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"POST": {reply(201, pendingRec)},
		"GET":  {reply(404, `{"error":{"code":"NOT_FOUND","message":"no such request"}}`)},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Ask(ctx, question); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Ask error = %v, want ErrNotFound", err)
	}
	if n := len(s.calls("GET")); n != 1 {
		t.Errorf("%d polls, want 1: a 404 is not retried", n)
	}
}

// TestCreateReattaches checks that a create whose response was lost is sent
// again with the same tool_call_id, so the bridge returns the request it
// made instead of making a second.
func TestCreateReattaches(t *testing.T) {
	s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"POST": {hangUp(t), reply(503, unavailable), reply(200, answeredRec)},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Ask(ctx, question); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	bodies := s.calls("POST")
	if len(bodies) != 3 {
		t.Fatalf("%d creates, want 3", len(bodies))
	}
	if n := s.probes.Load(); n != 1 {
		t.Errorf("%d probes of /healthz, want 1: the first hang-up came before the bridge had answered", n)
	}
	var first struct {
		ToolCallID string `json:"tool_call_id"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &first); err != nil || !strings.HasPrefix(first.ToolCallID, "askbridge-") {
		t.Fatalf("first create %s: no generated tool_call_id (%v)", bodies[0], err)
	}
	for i, b := range bodies[1:] {
		if b != bodies[0] {
			t.Errorf("create %d = %s, want the first create's body %s", i+2, b, bodies[0])
		}
	}
}

func TestCreateDoesNotRetryRefusals(t *testing.T) {
	for _, body := range []string{
		`{"error":{"code":"NO_PROVIDER","message":"no user-questions answerer accepted the request"}}`,
		`{"error":{"code":"INVALID_REQUEST","message":"bad"}}`,
	} {
		status := 503
		if strings.Contains(body, "INVALID") {
			status = 400
		}
		s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){"POST": {reply(status, body)}})
		_, _, err := c.Ask(context.Background(), question)
		var e *Error
		if !errors.As(err, &e) || e.Status != status {
			t.Errorf("Ask error = %v, want the bridge's %d", err, status)
		}
		if n := len(s.calls("POST")); n != 1 {
			t.Errorf("%s: %d creates, want 1", e.Code, n)
		}
	}
}

// Something that does not speak HTTP at the bridge's address (a Redis on
// a mistyped port) is not a bridge that will come back: the create fails
// at once, where retrying would take the client's two minutes. (A server
// that speaks first, as ssh does, fails the call before it is sent:
// ErrUnreachable, also at once.)
func TestCreateGivesUpOnWhatIsNotHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			// Redis reads the request's lines as commands, and answers.
			line, _ := bufio.NewReader(conn).ReadString('\n')
			fmt.Fprintf(conn, "-ERR unknown command '%s'\r\n", strings.Fields(line)[0])
			conn.Close()
		}
	}()
	c, err := New("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Ask(context.Background(), question)
	if !errors.Is(err, errBadResponse) {
		t.Errorf("Ask error = %v, want a bad response", err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: it retried", n)
	}
}

// hangUpServer is a server that reads what it is sent and closes the
// connection without a response, as Postgres and Redis do with an HTTP
// request, and counts the connections.
func hangUpServer(t *testing.T) (addr string, conns *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = new(atomic.Int32)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			conn.Read(make([]byte, 4096))
			conn.Close()
		}
	}()
	return ln.Addr().String(), conns
}

// A server that closes the connection without a response (a database on
// a mistyped port) before anything there answered in HTTP is asked once
// more, for the bridge's /healthz: closing that one too, it is no bridge,
// and the create fails at once, where retrying would take the client's
// two minutes. Nothing was asked.
func TestCreateGivesUpOnWhatClosesWithoutAResponse(t *testing.T) {
	addr, conns := hangUpServer(t)
	c, err := New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, rec, err := c.Ask(ctx, question)
	if !errors.Is(err, ErrWrongURL) || !errors.Is(err, ErrUnreachable) || Transient(err) || rec != nil {
		t.Fatalf("Ask = %+v, %v; want ErrWrongURL and ErrUnreachable, not transient, and no record", rec, err)
	}
	for _, want := range []string{
		"create question: POST /v1/questions: wrong bridge URL: http://" + addr + " closed the connection without an HTTP response",
		"GET /healthz", "no bridge",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q; want it to say %q", err, want)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the create and the probe", n)
	}
}

// A bridge that stops during the first create of a client (its rolling
// upgrade) closes the connection without a response, as a database does;
// the probe that follows finds nothing listening, not something that
// closes again, and the create is retried until the bridge is back.
func TestCreateRetriesABridgeStoppedAtTheFirstCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() {
		conn, err := ln.Accept()
		ln.Close() // the bridge stops: no more connections
		if err != nil {
			return
		}
		conn.Read(make([]byte, 4096))
		conn.Close()
	}()
	refused := make(chan struct{}, 1)
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			select {
			case refused <- struct{}{}:
			default:
			}
		}
		return conn, err
	}}}
	c, err := New("http://"+addr, WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	c.backoff, c.maxBackoff = time.Millisecond, 5*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Ask(ctx, question)
		done <- err
	}()
	select {
	case <-refused:
	case err := <-done:
		t.Fatalf("Ask = %v before any connection was refused", err)
	case <-ctx.Done():
		t.Fatal("no connection refused within 10s")
	}
	// The bridge is back, on the same address.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &script{steps: map[string][]func(http.ResponseWriter, *http.Request, []byte){"POST": {reply(200, answeredRec)}}, bodies: map[string][]string{}, query: map[string][]string{}}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener.Close()
	srv.Listener = ln2
	srv.Start()
	defer srv.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Ask: %v; want the create retried until the bridge was back", err)
		}
	case <-ctx.Done():
		t.Fatal("Ask did not end within 10s")
	}
	if n := len(s.calls("POST")); n != 1 {
		t.Errorf("%d creates reached the restarted bridge, want 1", n)
	}
}

func TestRecordErr(t *testing.T) {
	for _, tc := range []struct {
		status Status
		want   error
	}{
		{StatusPending, nil},
		{StatusAnswered, nil},
		{StatusCancelled, ErrAborted},
		{StatusDismissed, ErrCancelled},
		{StatusExpired, ErrTimedOut},
	} {
		err := (&Record{Status: tc.status}).Err()
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: Err() = %v, want %v", tc.status, err, tc.want)
		}
	}
}

// TestRecordMirrorsAPI keeps Record in step with the bridge's own record:
// the same JSON fields, options and types, all the way down.
func TestRecordMirrorsAPI(t *testing.T) {
	got, want := jsonShape(reflect.TypeFor[Record](), 0), jsonShape(reflect.TypeFor[api.Record](), 0)
	if got != want {
		t.Errorf("client.Record's JSON differs from api.Record's:\nclient: %s\napi:    %s", got, want)
	}
}

// jsonShape describes how encoding/json sees t: field names with their
// options, and the shape of each field's type.
func jsonShape(t reflect.Type, depth int) string {
	if depth > 5 {
		return t.String()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + jsonShape(t.Elem(), depth+1)
	case reflect.Slice:
		return "[]" + jsonShape(t.Elem(), depth+1)
	case reflect.Struct:
		if t.PkgPath() != "" && !strings.Contains(t.PkgPath(), "askbridge/internal/api") &&
			!strings.Contains(t.PkgPath(), "askbridge/internal/pending") && !strings.Contains(t.PkgPath(), "askbridge/client") {
			return t.String() // shared types (seam, time) are the same on both sides
		}
		var b strings.Builder
		b.WriteString("{")
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(&b, "%s:%s,", f.Tag.Get("json"), jsonShape(f.Type, depth+1))
		}
		b.WriteString("}")
		return b.String()
	}
	return t.String()
}

// A create abandoned on its way (ctx ended before the reply) is withdrawn
// by its tool_call_id. A bridge from before that withdrawal existed
// answers 404 for a request it has not created yet: the client then makes
// sure it exists (the same create re-attaches) and cancels it.
func TestAbandonOnAnOlderBridge(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := `{"id":"abc","kind":"question","status":"cancelled","route":"default","questions":[{"id":"q1","question":"Go?"}],` +
		`"error":{"code":"ASK_ABORTED","message":"withdrawn"}}`
	s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"POST": {
			func(w http.ResponseWriter, r *http.Request, _ []byte) { cancel(); <-r.Context().Done() }, // the caller gives up mid-create
			reply(200, pendingRec),
		},
		"DELETE": {
			reply(404, `{"error":{"code":"NOT_FOUND","message":"no such request"}}`),
			reply(200, cancelled),
		},
	})
	rec, err := c.Create(ctx, question, 0)
	if !errors.Is(err, context.Canceled) || rec == nil || rec.Status != StatusCancelled {
		t.Fatalf("Create = %+v, %v; want the request cancelled and context.Canceled", rec, err)
	}
	if n := len(s.calls("POST")); n != 2 {
		t.Errorf("%d creates, want 2 (the second re-attaches to learn the id)", n)
	}
	if n := len(s.calls("DELETE")); n != 2 {
		t.Errorf("%d deletes, want 2 (by tool_call_id, then by id)", n)
	}
}

// A create that may have reached the bridge, then failed until the client
// gave up (or was refused), leaves no question behind that nobody waits
// for. Under the caller's tool_call_id it is looked up and, pending,
// withdrawn by id: a withdrawal by tool_call_id is recorded even where
// nothing was made, and the caller's next create under it would find it.
func TestCreateGivenUpIsWithdrawn(t *testing.T) {
	const id = "call-7"
	rec := func(status string) string {
		return `{"id":"abc","kind":"question","status":"` + status + `","route":"default","tool_call_id":"` + id + `","questions":[{"id":"q1","question":"Go?"}]` +
			map[string]string{"answered": `,"answer":{"answers":[{"id":"q1","selected":[],"custom":"go"}]}`, "cancelled": `,"error":{"code":"ASK_ABORTED","message":"withdrawn"}`}[status] + `}`
	}
	refused := reply(400, `{"error":{"code":"INVALID_REQUEST","message":"bad"}}`)
	type step = func(http.ResponseWriter, *http.Request, []byte)
	for _, tc := range []struct {
		name    string
		post    []step
		found   step // GET ?tool_call_id=
		status  Status
		err     string // in Create's error; "" for none
		deletes int
	}{
		{"made, pending: withdrawn", []step{hangUp(t), reply(503, unavailable)}, reply(200, rec("pending")), StatusCancelled, "still failing", 1},
		{"never made", []step{hangUp(t), reply(503, unavailable)}, reply(404, `{"error":{"code":"NOT_FOUND","message":"no such request"}}`), "", "still failing", 0},
		{"answered meanwhile: its answer", []step{hangUp(t), reply(503, unavailable)}, reply(200, rec("answered")), StatusAnswered, "", 0},
		{"refused after a lost reply", []step{hangUp(t), refused}, reply(200, rec("pending")), StatusCancelled, "INVALID_REQUEST", 1},
		{"refused at once: nothing looked up", []step{refused}, nil, "", "INVALID_REQUEST", 0},
		{"the id names another request: nothing looked up", []step{hangUp(t), reply(409, `{"error":{"code":"CONFLICT","message":"another request"}}`)}, nil, "", "CONFLICT", 0},
		{"a bridge that can't look up", []step{hangUp(t), reply(503, unavailable)}, reply(200, `{"questions":[]}`), "", "can't look it up", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := map[string][]step{"POST": tc.post, "DELETE": {reply(200, rec("cancelled"))}}
			if tc.found != nil {
				steps["GET"] = []step{tc.found}
			}
			s, c := newScript(t, steps)
			c.retryFor = 20 * time.Millisecond
			q := question
			q.ToolCallID = id
			got, err := c.Create(context.Background(), q, 0)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Create error %v, want one saying %q", err, tc.err)
			}
			if status := Status(""); got != nil {
				if status = got.Status; status != tc.status {
					t.Errorf("Create returned a %s record, want %q", status, tc.status)
				}
			} else if tc.status != "" {
				t.Errorf("Create returned no record, want a %s one", tc.status)
			}
			s.mu.Lock()
			gets := s.query["GET"]
			s.mu.Unlock()
			if tc.found != nil && (len(gets) != 1 || gets[0] != "tool_call_id="+id) {
				t.Errorf("looked up %q, want once by tool_call_id %s", gets, id)
			}
			if tc.found == nil && len(gets) != 0 {
				t.Errorf("looked up %q", gets)
			}
			if got := s.deletes(); len(got) != tc.deletes || (tc.deletes > 0 && got[0] != "") {
				t.Errorf("withdrawals %q, want %d by id", got, tc.deletes)
			}
		})
	}
}

// Under a tool_call_id Create made up, nobody will create again: a create
// given up on is withdrawn by it, which also stops one still on its way.
func TestCreateGivenUpUnderItsOwnIDIsWithdrawnByIt(t *testing.T) {
	cancelled := `{"id":"abc","kind":"question","status":"cancelled","route":"default","questions":[{"id":"q1","question":"Go?"}],` +
		`"error":{"code":"ASK_ABORTED","message":"withdrawn"}}`
	s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"POST":   {hangUp(t), reply(503, unavailable)},
		"DELETE": {reply(200, cancelled)},
	})
	c.retryFor = 20 * time.Millisecond
	rec, err := c.Create(context.Background(), question, 0)
	if err == nil || !strings.Contains(err.Error(), "still failing") || rec == nil || rec.Status != StatusCancelled {
		t.Fatalf("Create = %+v, %v; want the request withdrawn", rec, err)
	}
	var sent struct {
		ToolCallID string `json:"tool_call_id"`
	}
	if err := json.Unmarshal([]byte(s.calls("POST")[0]), &sent); err != nil {
		t.Fatal(err)
	}
	if got := s.deletes(); len(got) != 1 || got[0] != "tool_call_id="+sent.ToolCallID {
		t.Errorf("withdrew %q, want by the create's tool_call_id %s", got, sent.ToolCallID)
	}
}

// A withdrawal refused while the bridge restarts is sent again: one refusal
// must not leave a question live that its agent gave up on.
func TestWithdrawalIsRetried(t *testing.T) {
	cancelled := `{"id":"abc","kind":"question","status":"cancelled","route":"default","questions":[{"id":"q1","question":"Go?"}],` +
		`"error":{"code":"ASK_ABORTED","message":"withdrawn"}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
		"GET":    {func(w http.ResponseWriter, r *http.Request, _ []byte) { cancel(); <-r.Context().Done() }}, // the agent gives up mid-wait
		"DELETE": {hangUp(t), reply(503, unavailable), reply(200, cancelled)},
	})
	rec, err := c.Wait(ctx, &Record{ID: "abc", Kind: KindQuestion, Status: StatusPending})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrAborted) || rec.Status != StatusCancelled {
		t.Fatalf("Wait = %+v, %v; want the request withdrawn", rec, err)
	}
	if n := len(s.calls("DELETE")); n != 3 {
		t.Errorf("%d deletes, want 3", n)
	}
}

// A withdrawal that fails says so with ErrNotWithdrawn, whether the caller
// gave up during the wait (withdrawn by id) or during the create (by
// tool_call_id): a command that was interrupted can then tell the person
// that the question is still live, its message still answerable. A
// withdrawal that went through does not.
func TestWithdrawalFailedSaysSo(t *testing.T) {
	refused := reply(500, `{"error":{"code":"INTERNAL","message":"internal error"}}`)
	cancelled := reply(200, `{"id":"abc","kind":"question","status":"cancelled","route":"default","questions":[{"id":"q1","question":"Go?"}],`+
		`"error":{"code":"ASK_ABORTED","message":"withdrawn"}}`)
	type step = func(http.ResponseWriter, *http.Request, []byte)
	for _, tc := range []struct {
		name   string
		during string // POST: the caller gives up mid-create; GET: mid-wait
		delete step
		failed bool
	}{
		{"mid-wait, refused", "GET", refused, true},
		{"mid-create, refused", "POST", refused, true},
		{"mid-wait, withdrawn", "GET", cancelled, false},
		{"mid-create, withdrawn", "POST", cancelled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			giveUp := func(w http.ResponseWriter, r *http.Request, _ []byte) { cancel(); <-r.Context().Done() }
			steps := map[string][]step{"DELETE": {tc.delete}, "POST": {reply(201, pendingRec)}, "GET": {reply(200, pendingRec)}}
			steps[tc.during] = []step{giveUp}
			_, c := newScript(t, steps)
			var err error
			if tc.during == "POST" {
				_, err = c.Create(ctx, question, 0)
			} else {
				_, err = c.Wait(ctx, &Record{ID: "abc", Kind: KindQuestion, Status: StatusPending})
			}
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotWithdrawn) != tc.failed {
				t.Errorf("error %v: errors.Is(ErrNotWithdrawn) = %v, want %v", err, errors.Is(err, ErrNotWithdrawn), tc.failed)
			}
			if tc.failed && !strings.Contains(err.Error(), "withdrawing it failed: internal error") {
				t.Errorf("error %q, want it to say the withdrawal failed, and why", err)
			}
		})
	}
}

// A caller whose context ends with a cause (bridge ask's is the signal)
// reads that cause as the reason its request was withdrawn, not Go's
// "context canceled"; errors.Is still finds context.Canceled, and the
// cause. So does a call that the context cut short.
func TestWithdrawalSaysWhy(t *testing.T) {
	cancelled := reply(200, `{"id":"abc","kind":"question","status":"cancelled","route":"default","questions":[{"id":"q1","question":"Go?"}],`+
		`"error":{"code":"ASK_ABORTED","message":"ask_user_question was aborted before the user answered"}}`)
	why := errors.New("interrupted by Ctrl-C (SIGINT)")
	type step = func(http.ResponseWriter, *http.Request, []byte)
	for _, during := range []string{"POST", "GET", "pending"} {
		t.Run(during, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			giveUp := func(w http.ResponseWriter, r *http.Request, _ []byte) { cancel(why); <-r.Context().Done() }
			steps := map[string][]step{"DELETE": {cancelled}, "POST": {reply(201, pendingRec)}, "GET": {reply(200, pendingRec)}}
			var err error
			switch during {
			case "POST":
				steps["POST"] = []step{giveUp}
				_, c := newScript(t, steps)
				_, err = c.Create(ctx, question, 0)
			case "GET":
				steps["GET"] = []step{giveUp}
				_, c := newScript(t, steps)
				_, err = c.Wait(ctx, &Record{ID: "abc", Kind: KindQuestion, Status: StatusPending})
			case "pending":
				steps["GET"] = []step{giveUp}
				_, c := newScript(t, steps)
				_, err = c.Pending(ctx)
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, why) {
				t.Errorf("error %v: want it to wrap context.Canceled and the cause", err)
			}
			if err != nil && (!strings.Contains(err.Error(), why.Error()) || strings.Contains(err.Error(), "context canceled")) {
				t.Errorf("error %q: want it to say %q, not context canceled", err, why)
			}
			if during != "pending" && !errors.Is(err, ErrAborted) {
				t.Errorf("error %v: want ErrAborted", err)
			}
		})
	}
}

// fakeClock is a client's clock for its retries: a sleep moves it on at
// once and is recorded, so a test reads the waits asked for instead of
// timing them.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock(c *Client) *fakeClock {
	f := &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	c.now, c.wait = f.now, f.sleep
	return f
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func (f *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.sleeps = append(f.sleeps, d)
	f.mu.Unlock()
	f.advance(d)
	return ctx.Err()
}

// WithRetryFor is a window, not a floor: no wait between attempts outlasts
// it, the last attempt is made as it closes, and a wait still failing then
// fails, saying how long its failures lasted. (It used to check the window
// only before a whole backoff: WithRetryFor(3s) failed after up to 8 s.)
func TestRetryForIsAWindow(t *testing.T) {
	const window = 3 * time.Second
	for _, tc := range []struct {
		name       string
		retryAfter string        // the 503's Retry-After
		attempt    time.Duration // how long each failing poll takes
		sleeps     []time.Duration
	}{
		{name: "backoff"},
		{name: "Retry-After past the window", retryAfter: "5", sleeps: []time.Duration{window}},
		{name: "slow attempts", attempt: 700 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clock *fakeClock
			s, c := newScript(t, map[string][]func(http.ResponseWriter, *http.Request, []byte){
				"GET": {func(w http.ResponseWriter, _ *http.Request, _ []byte) {
					clock.advance(tc.attempt)
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					reply(503, unavailable)(w, nil, nil)
				}},
			})
			c.backoff, c.maxBackoff, c.retryFor = 250*time.Millisecond, 5*time.Second, window // New's pace
			clock = newFakeClock(c)
			start := clock.now()
			_, err := c.Wait(context.Background(), &Record{ID: "abc", Kind: KindQuestion, Status: StatusPending})
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Wait error = %v, want ErrUnavailable", err)
			}
			polls := len(s.calls("GET"))
			if len(clock.sleeps) != polls-1 {
				t.Errorf("%d polls and %d waits, want a poll after each wait, the last as the window closed", polls, len(clock.sleeps))
			}
			if tc.sleeps != nil && !reflect.DeepEqual(clock.sleeps, tc.sleeps) {
				t.Errorf("waits %v, want %v", clock.sleeps, tc.sleeps)
			}
			var waited time.Duration
			for _, d := range clock.sleeps {
				waited += d
			}
			failing := clock.now().Sub(start) - tc.attempt // from the first failure on
			if waited > window || failing < window || failing > window+tc.attempt {
				t.Errorf("waits %v (%v in all), failing for %v: want the waits within the %v window and the wait to fail as it closes, after its last poll", clock.sleeps, waited, failing, window)
			}
			if tc.attempt == 0 && waited != window {
				t.Errorf("waits %v (%v in all); want them to end with the %v window, the last poll made then", clock.sleeps, waited, window)
			}
			if want := fmt.Sprintf("still failing after %s:", spent(failing)); !strings.Contains(err.Error(), want) {
				t.Errorf("Wait error %q, want it to say %q", err, want)
			}
		})
	}
}

package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/api"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

const tokensYAML = `
api:
  tokens:
    - {name: agent-a, token: tok-ask-a-7f3c9e21b4, scopes: [ask]}
    - {name: agent-b, token: tok-ask-b-7f3c9e21b4, scopes: [ask]}
    - {name: inbox, token: tok-answer-7f3c9e21b4, scopes: [answer]}
store:
  sweep_interval: 10ms
`

// replica starts one bridge on the Redis at url under prefix.
func replica(t *testing.T, yaml, url, prefix string, opt app.Options) *app.App {
	t.Helper()
	return apptest.Start(t, apptest.Config(t, yaml, url, prefix), opt)
}

func start(t *testing.T, yaml string) *app.App {
	t.Helper()
	url, prefix := apptest.Redis(t)
	return replica(t, yaml, url, prefix, app.Options{})
}

type response struct {
	Status int
	Body   map[string]any
	Raw    string
}

func (r response) code() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r response) str(key string) string { s, _ := r.Body[key].(string); return s }

// field returns one top-level field of the body exactly as the server
// wrote it, key order included.
func (r response) field(t *testing.T, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Raw), &m); err != nil {
		t.Fatal(err)
	}
	return string(m[key])
}

func call(t *testing.T, ctx context.Context, method, url, token string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{Status: res.StatusCode, Raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", method, url, raw)
		}
	}
	return out
}

func do(t *testing.T, method, url, token string, body any) response {
	t.Helper()
	return call(t, context.Background(), method, url, token, body)
}

const deployQ = `{"questions":[{"id":"deploy","question":"Deploy to prod?","options":[{"label":"Yes (Recommended)","description":"ship it"},{"label":"No"}]}]}`

func TestErrorsHaveStatusAndCode(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	created := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ)
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Raw)
	}
	id := created.str("id")
	approval := do(t, "POST", u+"/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"kubectl_apply","arguments":{"f":"x.yaml"}}`)
	if approval.Status != http.StatusCreated {
		t.Fatalf("create approval: %d %s", approval.Status, approval.Raw)
	}
	aid := approval.str("id")

	big := `{"questions":[{"id":"q","question":"` + strings.Repeat("x", 1<<20) + `"}]}`
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      string
	}{
		{"no token", "POST", "/v1/questions", "", deployQ, 401, "UNAUTHORIZED"},
		{"bad token", "POST", "/v1/questions", "tok-wrong", deployQ, 401, "UNAUTHORIZED"},
		{"answer token can't ask", "POST", "/v1/questions", "tok-answer-7f3c9e21b4", deployQ, 403, "FORBIDDEN"},
		{"ask token can't answer", "POST", "/v1/questions/" + id + "/answer", "tok-ask-a-7f3c9e21b4", `{"answers":[]}`, 403, "FORBIDDEN"},
		{"ask token can't list", "GET", "/v1/questions?status=pending", "tok-ask-a-7f3c9e21b4", nil, 403, "FORBIDDEN"},
		{"unknown tool_call_id", "GET", "/v1/questions?tool_call_id=never", "tok-ask-a-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"cancel without tool_call_id", "DELETE", "/v1/questions", "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"cancel a tool_call_id too long to be one", "DELETE", "/v1/questions?tool_call_id=" + strings.Repeat("x", 201), "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"read a tool_call_id too long to be one", "GET", "/v1/questions?tool_call_id=" + strings.Repeat("x", 201), "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"read an empty tool_call_id", "GET", "/v1/approvals?tool_call_id=", "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"cancel an empty tool_call_id", "DELETE", "/v1/approvals?tool_call_id=", "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"empty body", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", "", 400, "INVALID_REQUEST"},
		{"not json", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", "{", 400, "INVALID_REQUEST"},
		{"two values", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ + deployQ, 400, "INVALID_REQUEST"},
		{"a stray brace after the body", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ + "}", 400, "INVALID_REQUEST"},
		{"a stray bracket after the body", "POST", "/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"rm"}]`, 400, "INVALID_REQUEST"},
		{"too large", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", big, 413, "TOO_LARGE"},
		{"no questions", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[]}`, 400, "EMPTY_QUESTIONS"},
		{"blank id", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":" ","question":"x"}]}`, 400, "INVALID_REQUEST"},
		{"multiSelect and multi_select disagree", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x","multiSelect":true,"multi_select":false,"options":[{"label":"A"},{"label":"B"}]}]}`, 400, "INVALID_REQUEST"},
		{"duplicate ids", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x"},{"id":"a","question":"y"}]}`, 400, "INVALID_REQUEST"},
		{"duplicate labels", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x","options":[{"label":"A"},{"label":"A"}]}]}`, 400, "INVALID_REQUEST"},
		{"empty label", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x","options":[{"label":" "}]}]}`, 400, "INVALID_REQUEST"},
		{"unknown input type", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x","input":{"type":"date"}}]}`, 400, "INVALID_REQUEST"},
		{"approve names no option", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"p","question":"ok?","detail":"plan","intent":{"kind":"plan-review","approve":"Go"},"options":[{"label":"Approve"}]}]}`, 400, "BAD_INTENT"},
		{"plan without detail", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"p","question":"ok?","intent":{"kind":"plan-review"}}]}`, 400, "BAD_INTENT"},
		{"delegated caller", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x"}],"caller":{"delegated":true}}`, 403, "DELEGATED_CALLER"},
		// The seam's order: no questions, a delegated caller, the rest.
		{"delegated caller, questions with a bad intent", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"p","question":"ok?","intent":{"kind":"plan-review"}}],"caller":{"delegated":true}}`, 403, "DELEGATED_CALLER"},
		{"delegated caller, no questions", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[],"caller":{"delegated":true}}`, 400, "EMPTY_QUESTIONS"},
		{"delegated caller, an approval without tool", "POST", "/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"reason":"x","caller":{"delegated":true}}`, 403, "DELEGATED_CALLER"},
		{"bad expires_in", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x"}],"expires_in":"soon"}`, 400, "INVALID_REQUEST"},
		{"bad wait", "GET", "/v1/questions/" + id + "?wait=forever", "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"unknown route", "POST", "/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x"}],"route":"nope"}`, 503, "NO_PROVIDER"},
		{"approval without tool", "POST", "/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"reason":"x"}`, 400, "INVALID_REQUEST"},
		{"approval arguments a list", "POST", "/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"rm","arguments":[1,2]}`, 400, "INVALID_REQUEST"},
		{"approval arguments a string", "POST", "/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"rm","arguments":"str"}`, 400, "INVALID_REQUEST"},
		{"unknown id", "GET", "/v1/questions/nosuchid", "tok-ask-a-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"another client's request", "GET", "/v1/questions/" + id, "tok-ask-b-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"another client's cancel", "DELETE", "/v1/questions/" + id, "tok-ask-b-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"approval read as question", "GET", "/v1/questions/" + aid, "tok-answer-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		// Waits check as reads do, at once: a pending request of another
		// kind or client must not hold the call for its wait.
		{"unknown id, waiting", "GET", "/v1/questions/nosuchid?wait=60s", "tok-ask-a-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"another client's request, waiting", "GET", "/v1/questions/" + id + "?wait=60s", "tok-ask-b-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"approval waited on as question", "GET", "/v1/questions/" + aid + "?wait=60s", "tok-answer-7f3c9e21b4", nil, 404, "NOT_FOUND"},
		{"label not an option", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["Maybe"]}]}`, 400, "INVALID_REQUEST"},
		{"two labels for single-select", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["Yes (Recommended)","No"]}]}`, 400, "INVALID_REQUEST"},
		{"an option selected twice", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["No","No"]}]}`, 400, "INVALID_REQUEST"},
		{"unknown question id", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"other","selected":[]}]}`, 400, "INVALID_REQUEST"},
		{"misspelt answer field", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selcted":["No"]}]}`, 400, "INVALID_REQUEST"},
		{"an answer field given twice", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["No"],"selected":[]}]}`, 400, "INVALID_REQUEST"},
		{"an answer with a stray bracket after it", "POST", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[]}]`, 400, "INVALID_REQUEST"},
		{"a decision with a stray brace after it", "POST", "/v1/approvals/" + aid + "/decision", "tok-answer-7f3c9e21b4", `{"outcome":"allowed-once"} }`, 400, "INVALID_REQUEST"},
		{"a decision's outcome given twice", "POST", "/v1/approvals/" + aid + "/decision", "tok-answer-7f3c9e21b4", `{"outcome":"rejected","outcome":"allowed-once"}`, 400, "INVALID_REQUEST"},
		{"bad outcome", "POST", "/v1/approvals/" + aid + "/decision", "tok-answer-7f3c9e21b4", `{"outcome":"maybe"}`, 400, "INVALID_REQUEST"},
		{"list other status", "GET", "/v1/questions?status=answered", "tok-answer-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		// An empty value is no value the parameter takes, as an unknown one
		// is not: ?status= listed pending, ?limit= 100, ?wait= held nothing.
		{"list an empty status", "GET", "/v1/questions?status=", "tok-answer-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"list an empty limit", "GET", "/v1/approvals?status=pending&limit=", "tok-answer-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"read with an empty wait", "GET", "/v1/questions/" + id + "?wait=", "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"read by tool_call_id with an empty wait", "GET", "/v1/questions?tool_call_id=never&wait", "tok-ask-a-7f3c9e21b4", nil, 400, "INVALID_REQUEST"},
		{"create with an empty wait", "POST", "/v1/approvals?wait=", "tok-ask-a-7f3c9e21b4", `{"tool_name":"rm"}`, 400, "INVALID_REQUEST"},
		{"unknown path", "GET", "/v2/nothing", "", nil, 404, "NOT_FOUND"},
		{"a method the path does not take", "PUT", "/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ, 405, "METHOD_NOT_ALLOWED"},
		{"reading an answer endpoint", "GET", "/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", nil, 405, "METHOD_NOT_ALLOWED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, u+tt.path, tt.token, tt.body)
			if r.Status != tt.status || r.code() != tt.code {
				t.Fatalf("got %d %s, want %d %s: %.300s", r.Status, r.code(), tt.status, tt.code, r.Raw)
			}
			e := r.Body["error"].(map[string]any)
			if msg, _ := e["message"].(string); msg == "" {
				t.Errorf("error without a message: %s", r.Raw)
			}
		})
	}

	// Nothing above changed the question.
	if r := do(t, "GET", u+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
		t.Fatalf("question changed by bad input: %s", r.Raw)
	}
	// And answering works, once.
	ans := `{"answers":[{"id":"deploy","selected":["Yes (Recommended)"]}]}`
	if r := do(t, "POST", u+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", ans); r.Status != 200 {
		t.Fatalf("answer: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "POST", u+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", ans); r.Status != 409 || r.code() != "ALREADY_RESOLVED" ||
		!strings.Contains(r.Raw, "already ended: answered") {
		t.Fatalf("second answer: %d %s", r.Status, r.Raw)
	}
}

// TestUnknownFieldSaysWhere: a misspelt field of an answer or a decision
// is refused naming where it is and the fields there, so that whoever
// wrote an answer to twenty questions need not search for it.
func TestUnknownFieldSaysWhere(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	id := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4",
		`{"questions":[{"id":"a","question":"A?"},{"id":"b","question":"B?","options":[{"label":"Yes"},{"label":"No"}]}]}`).str("id")
	aid := do(t, "POST", u+"/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"kubectl_apply"}`).str("id")
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/questions/" + id + "/answer", `{"answers":[{"id":"a","custom":"x"},{"id":"b","selcted":["No"]}]}`,
			`answers[1] has no field "selcted"; its fields are id, selected and custom`},
		{"/v1/questions/" + id + "/answer", `{"answer":[]}`, `the request body has no field "answer"; its fields are answers`},
		{"/v1/approvals/" + aid + "/decision", `{"outcome":"rejected","notes":"not today"}`,
			`the request body has no field "notes"; its fields are outcome and note`},
	} {
		r := do(t, "POST", u+tc.path, "tok-answer-7f3c9e21b4", tc.body)
		e, _ := r.Body["error"].(map[string]any)
		if msg, _ := e["message"].(string); r.Status != 400 || r.code() != "INVALID_REQUEST" || msg != tc.want {
			t.Errorf("%s %s: %d %s; want 400 INVALID_REQUEST %q", tc.path, tc.body, r.Status, r.Raw, tc.want)
		}
	}
	if r := do(t, "GET", u+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
		t.Errorf("refused answers changed the request: %s", r.Raw)
	}
}

// TestAnswerAfterExpiry: an answer that comes after the request's expiry,
// before any sweeper (sweeps an hour apart here) expired it, is refused,
// and says why; the request has expired.
func TestAnswerAfterExpiry(t *testing.T) {
	url, prefix := apptest.Redis(t)
	clk := apptest.NewClock(time.Now())
	a := replica(t, strings.Replace(tokensYAML, "sweep_interval: 10ms", "sweep_interval: 1h", 1), url, prefix, app.Options{Now: clk.Now})
	u := a.URL()
	id := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"deploy","question":"Deploy?"}],"expires_in":"60s"}`).str("id")
	clk.Advance(time.Minute)
	r := do(t, "POST", u+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","custom":"yes"}]}`)
	if r.Status != 409 || r.code() != "ALREADY_RESOLVED" || !strings.Contains(r.Raw, "already ended: expired") {
		t.Errorf("an answer after the expiry: %d %s", r.Status, r.Raw)
	}
	if got := do(t, "GET", u+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); got.str("status") != "expired" || got.Body["answer"] != nil {
		t.Errorf("the request after a late answer: %s", got.Raw)
	}
}

func TestCreateIsIdempotentPerClientAndToolCall(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	body := `{"tool_call_id":"call-1",` + deployQ[1:]
	first := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", body)
	again := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", body)
	if first.Status != 201 || again.Status != 200 || first.str("id") != again.str("id") {
		t.Fatalf("create twice: %d %s / %d %s", first.Status, first.str("id"), again.Status, again.str("id"))
	}
	other := do(t, "POST", u+"/v1/questions", "tok-ask-b-7f3c9e21b4", body)
	if other.Status != 201 || other.str("id") == first.str("id") {
		t.Fatalf("another client with the same tool_call_id: %d %s", other.Status, other.Raw)
	}
	// The agent that lost the reply finds its request by tool_call_id, and
	// only its own; then it cancels it the same way.
	if r := do(t, "GET", u+"/v1/questions?tool_call_id=call-1", "tok-ask-a-7f3c9e21b4", nil); r.Status != 200 || r.str("id") != first.str("id") {
		t.Fatalf("read by tool_call_id: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "GET", u+"/v1/approvals?tool_call_id=call-1", "tok-ask-a-7f3c9e21b4", nil); r.Status != 404 {
		t.Fatalf("a question read as an approval by tool_call_id: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "DELETE", u+"/v1/questions?tool_call_id=call-1", "tok-ask-b-7f3c9e21b4", nil); r.Status != 200 || r.str("id") != other.str("id") || r.str("status") != "cancelled" {
		t.Fatalf("cancel by tool_call_id: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "GET", u+"/v1/questions/"+first.str("id"), "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
		t.Fatalf("another client's cancel by the same tool_call_id touched this one: %s", r.Raw)
	}
	changed := strings.Replace(body, "Deploy to prod?", "Deploy to staging?", 1)
	if r := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", changed); r.Status != 409 || r.code() != "CONFLICT" || !strings.Contains(r.Raw, "send that request's body again to re-attach to it, or give this one a tool_call_id of its own") {
		t.Fatalf("different body, same tool_call_id: %d %s", r.Status, r.Raw)
	}
}

// TestWithdrawBeforeCreate: an agent whose turn ended before its create's
// reply cancels by tool_call_id; when the create has not landed yet, it is
// withdrawn, and the create finds it cancelled when it lands, whatever it
// asks, instead of asking a person something nobody waits for.
func TestWithdrawBeforeCreate(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	w := do(t, "DELETE", u+"/v1/questions?tool_call_id=call-9", "tok-ask-a-7f3c9e21b4", nil)
	if w.Status != 200 || w.str("status") != "cancelled" || w.str("tool_call_id") != "call-9" {
		t.Fatalf("withdraw before the create: %d %s", w.Status, w.Raw)
	}
	// No create has named its route yet: the record names none, and says
	// nothing of one, as the API leaves out every empty field.
	if _, ok := w.Body["route"]; ok {
		t.Errorf("the withdrawn record has a route before any create named one: %s", w.Raw)
	}
	late := do(t, "POST", u+"/v1/questions?wait=5s", "tok-ask-a-7f3c9e21b4", `{"tool_call_id":"call-9",`+deployQ[1:])
	if late.Status != 200 || late.str("id") != w.str("id") || late.str("status") != "cancelled" {
		t.Fatalf("the create that lands after it: %d %s", late.Status, late.Raw)
	}
	// The create that lands names it ("default", naming none), as every
	// create does its record's.
	if late.str("route") != "default" {
		t.Errorf("the create that lands after it: route %q, want default: %s", late.str("route"), late.Raw)
	}
	if r := do(t, "GET", u+"/v1/questions?tool_call_id=call-9", "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "cancelled" || r.str("route") != "default" {
		t.Errorf("read by tool_call_id: %s", r.Raw)
	}
	if r := do(t, "GET", u+"/v1/questions?status=pending", "tok-answer-7f3c9e21b4", nil); strings.Contains(r.Raw, w.str("id")) {
		t.Errorf("the withdrawn request is listed as pending: %s", r.Raw)
	}
	// Another client's tool_call_id of the same name is its own.
	if r := do(t, "POST", u+"/v1/questions", "tok-ask-b-7f3c9e21b4", `{"tool_call_id":"call-9",`+deployQ[1:]); r.Status != 201 || r.str("status") != "pending" {
		t.Errorf("another client's create under the same tool_call_id: %d %s", r.Status, r.Raw)
	}
	// Withdrawing twice is the same.
	if r := do(t, "DELETE", u+"/v1/questions?tool_call_id=call-9", "tok-ask-a-7f3c9e21b4", nil); r.Status != 200 || r.str("id") != w.str("id") || r.str("status") != "cancelled" {
		t.Errorf("withdraw again: %d %s", r.Status, r.Raw)
	}
}

// TestToolCallIDOfTheOtherKind: ids are per kind, and one tool call is one
// kind, so a cancel or a lookup by tool_call_id on the other kind's path
// means the request the caller has: it is 404 naming that one and the call
// that serves it, and withdraws nothing. A cancel there once recorded a
// withdrawn question and answered 200, while the approval it meant stayed
// pending, posted in chat.
func TestToolCallIDOfTheOtherKind(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	const ask = "tok-ask-a-7f3c9e21b4"
	aid := do(t, "POST", u+"/v1/approvals", ask, `{"tool_name":"rm","tool_call_id":"call_x1"}`).str("id")
	qid := do(t, "POST", u+"/v1/questions", ask, `{"tool_call_id":"call q&1",`+deployQ[1:]).str("id")
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/v1/questions?tool_call_id=call_x1", "call_x1 names an approval, not a question: use GET /v1/approvals?tool_call_id=call_x1"},
		{"GET", "/v1/questions?tool_call_id=call_x1&wait=30s", "call_x1 names an approval, not a question: use GET /v1/approvals?tool_call_id=call_x1"},
		{"GET", "/v1/approvals?tool_call_id=call+q%261", "call q&1 names a question, not an approval: use GET /v1/questions?tool_call_id=call+q%261"},
		{"DELETE", "/v1/questions?tool_call_id=call_x1", "call_x1 names an approval, not a question: use DELETE /v1/approvals?tool_call_id=call_x1; it is still pending, and no question will be asked under call_x1"},
		{"DELETE", "/v1/questions?tool_call_id=call_x1", "call_x1 names an approval, not a question: use DELETE /v1/approvals?tool_call_id=call_x1; it is still pending, and no question will be asked under call_x1"}, // again: the same
		{"DELETE", "/v1/approvals?tool_call_id=call+q%261", "call q&1 names a question, not an approval: use DELETE /v1/questions?tool_call_id=call+q%261; it is still pending, and no approval will be asked under call q&1"},
	} {
		r := do(t, c.method, u+c.path, ask, nil)
		e, _ := r.Body["error"].(map[string]any)
		if msg, _ := e["message"].(string); r.Status != 404 || r.code() != "NOT_FOUND" || msg != c.want {
			t.Errorf("%s %s: %d %s; want 404 NOT_FOUND %q", c.method, c.path, r.Status, r.Raw, c.want)
		}
	}
	for _, p := range []string{"/v1/approvals/" + aid, "/v1/questions/" + qid} {
		if r := do(t, "GET", u+p, ask, nil); r.str("status") != "pending" {
			t.Errorf("%s after the other kind's cancel: %s; want it pending", p, r.Raw)
		}
	}
	// The kind the cancel named is withdrawn all the same: a create of it
	// still on its way, when the agent did mean it, asks no one.
	if r := do(t, "POST", u+"/v1/questions", ask, `{"tool_call_id":"call_x1",`+deployQ[1:]); r.Status != 200 || r.str("status") != "cancelled" {
		t.Errorf("a question created under call_x1 after: %d %s; want it withdrawn", r.Status, r.Raw)
	}

	// Beside one of the other kind that has ended, the cancel is of the
	// kind it names, as any other.
	did := do(t, "POST", u+"/v1/approvals", ask, `{"tool_name":"rm","tool_call_id":"call_d1"}`).str("id")
	if r := do(t, "POST", u+"/v1/approvals/"+did+"/decision", "tok-answer-7f3c9e21b4", `{"outcome":"allowed-once"}`); r.Status != 200 {
		t.Fatalf("decide the approval: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "DELETE", u+"/v1/questions?tool_call_id=call_d1", ask, nil); r.Status != 200 || r.str("kind") != "question" || r.str("status") != "cancelled" {
		t.Errorf("cancel a question beside a decided approval: %d %s; want the question withdrawn", r.Status, r.Raw)
	}
	if r := do(t, "POST", u+"/v1/questions", ask, `{"tool_call_id":"call_d1",`+deployQ[1:]); r.Status != 200 || r.str("status") != "cancelled" {
		t.Errorf("its create after: %d %s; want it withdrawn", r.Status, r.Raw)
	}

	// Another client's tool_call_id of that name is its own: it names
	// nothing of agent-a's, with the ask scope or the answer scope.
	if r := do(t, "GET", u+"/v1/questions?tool_call_id=call_x2", ask, nil); r.Status != 404 || strings.Contains(r.Raw, "names") {
		t.Errorf("an unknown tool_call_id: %d %s; want a plain 404", r.Status, r.Raw)
	}
	do(t, "POST", u+"/v1/approvals", ask, `{"tool_name":"rm","tool_call_id":"call_x2"}`)
	if r := do(t, "GET", u+"/v1/questions?tool_call_id=call_x2", "tok-answer-7f3c9e21b4", nil); r.Status != 404 || strings.Contains(r.Raw, "names") {
		t.Errorf("the inbox's lookup of call_x2: %d %s; want a plain 404", r.Status, r.Raw)
	}
	if r := do(t, "DELETE", u+"/v1/questions?tool_call_id=call_x2", "tok-ask-b-7f3c9e21b4", nil); r.Status != 200 || r.str("status") != "cancelled" {
		t.Errorf("agent-b's cancel of call_x2: %d %s; want its own question withdrawn", r.Status, r.Raw)
	}

	// A withdrawn request of the other kind is no request the caller has:
	// the create on its way is withdrawn too.
	if r := do(t, "DELETE", u+"/v1/approvals?tool_call_id=call_w1", ask, nil); r.Status != 200 {
		t.Fatalf("withdraw an approval: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "DELETE", u+"/v1/questions?tool_call_id=call_w1", ask, nil); r.Status != 200 || r.str("status") != "cancelled" {
		t.Errorf("withdraw a question beside a withdrawn approval: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "POST", u+"/v1/questions", ask, `{"tool_call_id":"call_w1",`+deployQ[1:]); r.Status != 200 || r.str("status") != "cancelled" {
		t.Errorf("the question's create after it: %d %s; want it withdrawn", r.Status, r.Raw)
	}

	// The right path still cancels it.
	if r := do(t, "DELETE", u+"/v1/approvals?tool_call_id=call_x1", ask, nil); r.Status != 200 || r.str("id") != aid || r.str("status") != "cancelled" {
		t.Errorf("cancel the approval by its tool_call_id: %d %s", r.Status, r.Raw)
	}
}

// TestAnswerOnOneReplicaWakesWaiterOnAnother is the heart of the bridge:
// the agent long-polls replica A, the person's answer lands on replica B.
func TestAnswerOnOneReplicaWakesWaiterOnAnother(t *testing.T) {
	url, prefix := apptest.Redis(t)
	a := replica(t, tokensYAML, url, prefix, app.Options{})
	b := replica(t, tokensYAML, url, prefix, app.Options{})

	q := `{"questions":[
	  {"id":"region","question":"Which region?","options":[{"label":"eu-west-1"},{"label":"us-east-1"}]},
	  {"id":"extras","question":"Extras?","multi_select":true,"options":[{"label":"logs"},{"label":"metrics"},{"label":"traces"}]},
	  {"id":"replicas","question":"How many?","input":{"type":"integer","value":3}},
	  {"id":"note","question":"Anything else?"}]}`
	created := do(t, "POST", a.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", q)
	id := created.str("id")

	got := make(chan response, 1)
	go func() {
		got <- call(t, context.Background(), "GET", a.URL()+"/v1/questions/"+id+"?wait=30s", "tok-ask-a-7f3c9e21b4", nil)
	}()
	waitFor(t, "the waiter to register on replica A", func() bool { return a.Store().Waiting() == 1 })

	// Answer items out of order, labels out of the options' order, with
	// whitespace and a custom override.
	ans := `{"answers":[
	  {"id":"replicas","selected":[],"custom":" 5 "},
	  {"id":"extras","selected":["traces","logs"],"custom":"  also profiles "},
	  {"id":"region","selected":["us-east-1"],"custom":"ap-south-1"}]}`
	if r := do(t, "POST", b.URL()+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", ans); r.Status != 200 {
		t.Fatalf("answer on B: %d %s", r.Status, r.Raw)
	}
	var r response
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter on A was not woken")
	}
	want := `{"answers":[{"id":"region","selected":[]` + `,"custom":"ap-south-1"},` +
		`{"id":"extras","selected":["logs","traces"],"custom":"also profiles"},` +
		`{"id":"replicas","selected":[],"custom":"5"},` +
		`{"id":"note","selected":[]}]}`
	gotAns := r.field(t, "answer")
	if r.str("status") != "answered" || string(gotAns) != want {
		t.Fatalf("waiter got %s %s\nwant answer %s", r.str("status"), gotAns, want)
	}
	by := r.Body["answered_by"].(map[string]any)
	if by["surface"] != "api" || by["name"] != "inbox" || r.str("answered_at") == "" {
		t.Fatalf("answered_by = %v, answered_at %q", by, r.str("answered_at"))
	}
}

func TestConcurrentAnswersExactlyOneWins(t *testing.T) {
	url, prefix := apptest.Redis(t)
	reps := []*app.App{
		replica(t, tokensYAML, url, prefix, app.Options{}),
		replica(t, tokensYAML, url, prefix, app.Options{}),
	}
	id := do(t, "POST", reps[0].URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	var ok, conflict, other atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			label := []string{"Yes (Recommended)", "No"}[i%2]
			r := call(t, context.Background(), "POST", reps[i%2].URL()+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4",
				fmt.Sprintf(`{"answers":[{"id":"deploy","selected":[%q]}]}`, label))
			switch {
			case r.Status == 200:
				ok.Add(1)
			case r.Status == 409 && r.code() == "ALREADY_RESOLVED":
				conflict.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != 99 || other.Load() != 0 {
		t.Fatalf("200s %d, 409s %d, others %d; want 1, 99, 0", ok.Load(), conflict.Load(), other.Load())
	}
}

func TestCancelRacesAnswerOneWins(t *testing.T) {
	a := start(t, tokensYAML)
	for range 20 {
		id := do(t, "POST", a.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
		var cancel, answer response
		var wg sync.WaitGroup
		wg.Go(func() { cancel = do(t, "DELETE", a.URL()+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil) })
		wg.Go(func() {
			answer = do(t, "POST", a.URL()+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["No"]}]}`)
		})
		wg.Wait()
		final := do(t, "GET", a.URL()+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil)
		switch final.str("status") {
		case "answered":
			if answer.Status != 200 || cancel.Status != 200 || cancel.str("status") != "answered" {
				t.Fatalf("answered, but answer %d, cancel %d %s", answer.Status, cancel.Status, cancel.str("status"))
			}
		case "cancelled":
			if answer.Status != 409 || cancel.str("status") != "cancelled" {
				t.Fatalf("cancelled, but answer %d %s", answer.Status, answer.Raw)
			}
			e := final.Body["error"].(map[string]any)
			if e["code"] != "ASK_ABORTED" || e["message"] != "ask_user_question was aborted before the user answered" {
				t.Fatalf("cancelled record error = %v", e)
			}
		default:
			t.Fatalf("final status %q", final.str("status"))
		}
	}
}

func TestRestartBetweenCreateAndAnswer(t *testing.T) {
	url, prefix := apptest.Redis(t)
	cfg := apptest.Config(t, tokensYAML, url, prefix)
	first, err := app.New(cfg, discard(), app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	body := `{"tool_call_id":"call-restart",` + deployQ[1:]
	id := do(t, "POST", first.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", body).str("id")
	stop()
	if err := <-done; err != nil {
		t.Fatalf("first replica: %v", err)
	}

	second := replica(t, tokensYAML, url, prefix, app.Options{})
	// The restarted agent re-attaches by tool_call_id.
	again := do(t, "POST", second.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", body)
	if again.Status != 200 || again.str("id") != id || again.str("status") != "pending" {
		t.Fatalf("re-attach after restart: %d %s", again.Status, again.Raw)
	}
	do(t, "POST", second.URL()+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["No"]}]}`)
	r := do(t, "GET", second.URL()+"/v1/questions/"+id+"?wait=5s", "tok-ask-a-7f3c9e21b4", nil)
	if r.str("status") != "answered" {
		t.Fatalf("after restart: %s", r.Raw)
	}
}

// TestReattachAfterTheDefaultExpiryChanged: a bridge restarted with
// another default expiry (store.default_expires_in, or the route's) takes
// a create sent again under its tool_call_id as the same request: the
// agent's body is the same, and the request keeps the expiry it got.
func TestReattachAfterTheDefaultExpiryChanged(t *testing.T) {
	url, prefix := apptest.Redis(t)
	before := replica(t, tokensYAML, url, prefix, app.Options{})
	body := `{"tool_call_id":"call-config",` + deployQ[1:]
	first := do(t, "POST", before.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", body)
	if first.Status != 201 {
		t.Fatalf("create: %d %s", first.Status, first.Raw)
	}
	for _, yaml := range []string{
		tokensYAML + "  default_expires_in: 48h\n",
		tokensYAML + "routes:\n  - {name: default, expires_in: 1h}\n",
	} {
		after := replica(t, yaml, url, prefix, app.Options{})
		again := do(t, "POST", after.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", body)
		if again.Status != 200 || again.str("id") != first.str("id") || again.str("expires_at") != first.str("expires_at") {
			t.Errorf("create again on a bridge with\n%s\ngot %d %s; want 200 and the first request, as it was", yaml, again.Status, again.Raw)
		}
	}
}

// clock is a fake clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestExpiryOnTwoReplicasExpiresOnce(t *testing.T) {
	url, prefix := apptest.Redis(t)
	clk := &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	a := replica(t, tokensYAML, url, prefix, app.Options{Now: clk.Now})
	b := replica(t, tokensYAML, url, prefix, app.Options{Now: clk.Now})
	id := do(t, "POST", a.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"expires_in":"10m",`+deployQ[1:]).str("id")
	if r := do(t, "GET", a.URL()+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); r.str("expires_at") != "2026-12-02T12:10:00Z" {
		t.Fatalf("expires_at = %q", r.str("expires_at"))
	}
	got := make(chan response, 1)
	go func() {
		got <- call(t, context.Background(), "GET", b.URL()+"/v1/questions/"+id+"?wait=30s", "tok-ask-a-7f3c9e21b4", nil)
	}()
	waitFor(t, "the waiter on B", func() bool { return b.Store().Waiting() == 1 })

	clk.Add(9 * time.Minute)
	if _, err := a.Store().Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "GET", a.URL()+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
		t.Fatalf("expired early: %s", r.Raw)
	}
	clk.Add(2 * time.Minute) // both replicas' sweepers race for it now
	var r response
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the expiry")
	}
	e, _ := r.Body["error"].(map[string]any)
	if r.str("status") != "expired" || e["code"] != "ASK_TIMED_OUT" || e["message"] != "ask_user_question timed out before the user answered" {
		t.Fatalf("expired record: %s", r.Raw)
	}
	expired := func() float64 {
		return metricSum(t, a.URL(), "askbridge_requests_resolved_total", `outcome="expired"`) +
			metricSum(t, b.URL(), "askbridge_requests_resolved_total", `outcome="expired"`)
	}
	waitFor(t, "the expiry to be counted", func() bool { return expired() >= 1 })
	events, err := a.Store().Audit(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var audited int
	for _, ev := range events {
		if ev.Fields["event"] == "expired" && ev.Fields["id"] == id {
			audited++
		}
	}
	if n := expired(); n != 1 || audited != 1 {
		t.Fatalf("expired counted %v times across replicas and audited %d times, want 1 and 1", n, audited)
	}
}

func TestLongPollEndsWhenClientGoesAway(t *testing.T) {
	a := start(t, tokensYAML)
	id := do(t, "POST", a.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", a.URL()+"/v1/questions/"+id+"?wait=60s", nil)
		req.Header.Set("Authorization", "Bearer tok-ask-a-7f3c9e21b4")
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	waitFor(t, "the long-poll to wait", func() bool { return a.Store().Waiting() == 1 })
	cancel()
	<-errc
	waitFor(t, "the waiter to leave", func() bool { return a.Store().Waiting() == 0 })
}

// TestShutdownAnswersHeldCalls: when a replica stops (SIGTERM cancels
// Run's context), a create and a read held with ?wait= answer at once with
// the request still pending, as when a wait ends, so that their agents wait
// again on another replica; and the replica stops without waiting for them.
func TestShutdownAnswersHeldCalls(t *testing.T) {
	url, prefix := apptest.Redis(t)
	a := apptest.Run(t, apptest.Config(t, "", url, prefix), app.Options{}, discard())

	id := do(t, "POST", a.URL()+"/v1/questions", "", deployQ).str("id")
	read := apptest.Go(a.URL(), "GET", "/v1/questions/"+id+"?wait=60s", nil)
	create := apptest.Go(a.URL(), "POST", "/v1/questions?wait=60s", json.RawMessage(deployQ))
	waitFor(t, "both calls to be held", func() bool { return a.Store().Waiting() == 2 })
	a.Stop()

	for name, held := range map[string]struct {
		ch     <-chan apptest.Result
		status int
	}{"read": {read, http.StatusOK}, "create": {create, http.StatusCreated}} {
		r := apptest.Await(t, held.ch, 10*time.Second)
		if r.Status != held.status || r.Rec.M["status"] != "pending" {
			t.Errorf("held %s at shutdown: %d %v; want %d with the pending record", name, r.Status, r.Rec.M, held.status)
		}
	}
	select {
	case err := <-a.Done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replica did not stop")
	}
}

func TestWaitEndsWithPendingRecord(t *testing.T) {
	a := start(t, tokensYAML)
	created := do(t, "POST", a.URL()+"/v1/questions?wait=50ms", "tok-ask-a-7f3c9e21b4", deployQ)
	if created.Status != 201 || created.str("status") != "pending" {
		t.Fatalf("create with a short wait: %d %s", created.Status, created.Raw)
	}
	r := do(t, "GET", a.URL()+"/v1/questions/"+created.str("id")+"?wait=0.05", "tok-ask-a-7f3c9e21b4", nil)
	if r.Status != 200 || r.str("status") != "pending" {
		t.Fatalf("wait that ends: %d %s", r.Status, r.Raw)
	}
}

// TestMaxWaitZero: with store.max_wait 0 a call is never held; the wait
// it asks for ends at once, with the pending record.
func TestMaxWaitZero(t *testing.T) {
	a := start(t, tokensYAML+"  max_wait: 0\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // well under the 60s asked for
	defer cancel()
	created := call(t, ctx, "POST", a.URL()+"/v1/questions?wait=60s", "tok-ask-a-7f3c9e21b4", deployQ)
	if created.Status != 201 || created.str("status") != "pending" {
		t.Fatalf("create with a wait: %d %s", created.Status, created.Raw)
	}
	r := call(t, ctx, "GET", a.URL()+"/v1/questions/"+created.str("id")+"?wait=60s", "tok-ask-a-7f3c9e21b4", nil)
	if r.Status != 200 || r.str("status") != "pending" {
		t.Fatalf("read with a wait: %d %s", r.Status, r.Raw)
	}
}

func TestApprovalLifeCycle(t *testing.T) {
	a := start(t, tokensYAML)
	r := do(t, "POST", a.URL()+"/v1/approvals", "tok-ask-a-7f3c9e21b4",
		`{"tool_call_id":"call-9","tool_name":"kubectl_apply","reason":"apply the manifest","arguments":{"file":"prod.yaml"}}`)
	if r.Status != 201 || r.str("call_id") != "call-9" || r.str("kind") != "approval" {
		t.Fatalf("create approval: %d %s", r.Status, r.Raw)
	}
	id := r.str("id")
	list := do(t, "GET", a.URL()+"/v1/approvals?status=pending", "tok-answer-7f3c9e21b4", nil)
	if items, _ := list.Body["approvals"].([]any); len(items) != 1 {
		t.Fatalf("pending approvals: %s", list.Raw)
	}
	d := do(t, "POST", a.URL()+"/v1/approvals/"+id+"/decision", "tok-answer-7f3c9e21b4", `{"outcome":"rejected","note":"  not on a Friday "}`)
	dec := d.field(t, "decision")
	if d.Status != 200 || string(dec) != `{"outcome":"rejected","note":"not on a Friday"}` {
		t.Fatalf("decision: %d %s", d.Status, d.Raw)
	}
	if list := do(t, "GET", a.URL()+"/v1/approvals?status=pending", "tok-answer-7f3c9e21b4", nil); !strings.Contains(list.Raw, `"approvals":[]`) {
		t.Fatalf("pending approvals after decision: %s", list.Raw)
	}
	// null arguments are none: an MCP client or a harness may send them.
	if r := do(t, "POST", a.URL()+"/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"rotate_keys","arguments":null}`); r.Status != 201 || r.field(t, "arguments") != "" {
		t.Fatalf("create approval with null arguments: %d %s", r.Status, r.Raw)
	}
}

func TestDismissCarriesSeamError(t *testing.T) {
	a := start(t, tokensYAML)
	id := do(t, "POST", a.URL()+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	if r := do(t, "POST", a.URL()+"/v1/questions/"+id+"/dismiss", "tok-answer-7f3c9e21b4", nil); r.Status != 200 {
		t.Fatalf("dismiss: %d %s", r.Status, r.Raw)
	}
	r := do(t, "GET", a.URL()+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil)
	e, _ := r.Body["error"].(map[string]any)
	if r.str("status") != "dismissed" || e["code"] != "ASK_CANCELLED" || e["message"] != "the user cancelled ask_user_question" {
		t.Fatalf("dismissed record: %s", r.Raw)
	}
	// Cancelling after the person dismissed changes nothing and is not an error.
	if c := do(t, "DELETE", a.URL()+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); c.Status != 200 || c.str("status") != "dismissed" {
		t.Fatalf("cancel after dismiss: %d %s", c.Status, c.Raw)
	}
}

func TestOpenAPIWithoutTokens(t *testing.T) {
	a := start(t, "")
	r := do(t, "POST", a.URL()+"/v1/questions", "", deployQ)
	if r.Status != 201 {
		t.Fatalf("open API create: %d %s", r.Status, r.Raw)
	}
	if h := do(t, "GET", a.URL()+"/readyz", "", nil); h.Status != 200 {
		t.Fatalf("readyz: %d %s", h.Status, h.Raw)
	}
}

// TestBearerScheme: the scheme of Authorization is case-insensitive (RFC
// 7235 §2.1); the token is not.
func TestBearerScheme(t *testing.T) {
	a := start(t, tokensYAML)
	for _, tc := range []struct {
		header string
		status int
	}{
		{"Bearer tok-ask-a-7f3c9e21b4", http.StatusCreated},
		{"bearer tok-ask-a-7f3c9e21b4", http.StatusCreated},
		{"BEARER tok-ask-a-7f3c9e21b4", http.StatusCreated},
		{"Bearer   tok-ask-a-7f3c9e21b4 ", http.StatusCreated},
		{"Bearer TOK-ASK-A", http.StatusUnauthorized},
		{"Bearer", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Bearertok-ask-a", http.StatusUnauthorized},
		{"Basic tok-ask-a-7f3c9e21b4", http.StatusUnauthorized},
		{"tok-ask-a-7f3c9e21b4", http.StatusUnauthorized},
	} {
		req, err := http.NewRequest("POST", a.URL()+"/v1/questions", strings.NewReader(deployQ))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", tc.header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("Authorization: %q: %d, want %d", tc.header, res.StatusCode, tc.status)
		}
	}
}

func TestRedisDownIs503(t *testing.T) {
	url, prefix := apptest.Redis(t)
	cfg := apptest.Config(t, tokensYAML, "redis://127.0.0.1:1", prefix) // nothing listens on port 1
	_ = url
	a := apptest.Start(t, cfg, app.Options{})
	for _, tt := range []struct{ method, path string }{
		{"POST", "/v1/questions"},
		{"GET", "/v1/questions/abc"},
		{"GET", "/readyz"},
	} {
		r := do(t, tt.method, a.URL()+tt.path, "tok-ask-a-7f3c9e21b4", deployQ)
		if r.Status != 503 || r.code() != "UNAVAILABLE" {
			t.Errorf("%s %s with Redis down: %d %s", tt.method, tt.path, r.Status, r.Raw)
		}
		if strings.Contains(r.Raw, "127.0.0.1:1") {
			t.Errorf("the error leaks the Redis address: %s", r.Raw)
		}
	}
	// /metrics still answers: an outage is when its counters matter.
	res, err := http.Get(a.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(raw), "\naskbridge_redis_up 0\n") || !strings.Contains(string(raw), "\naskbridge_waiters 0\n") ||
		strings.Contains(string(raw), "\naskbridge_pending_requests ") {
		t.Errorf("/metrics with Redis down: %d\n%s", res.StatusCode, raw)
	}
}

// TestDurationsAreGoDurationsOrSeconds: expires_in and wait are a Go
// duration ("90s") or a number of seconds written as JSON writes numbers.
// NaN once read as a number of seconds and made a request that never
// expires, past the route's and the store's default; Go's literal forms
// (1_0, 0x1p4) were read as numbers too.
func TestDurationsAreGoDurationsOrSeconds(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	q := func(expires string) string {
		return `{"questions":[{"id":"a","question":"x"}],"expires_in":` + expires + `}`
	}
	for _, bad := range []string{`"NaN"`, `"nan"`, `"-NaN"`, `"1_0"`, `"0x1p4"`, `"Inf"`, `"-5"`, `-5`, `true`, `{}`, `[1]`} {
		if r := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", q(bad)); r.Status != 400 || r.code() != "INVALID_REQUEST" {
			t.Errorf("expires_in %s: %d %s, want 400 INVALID_REQUEST", bad, r.Status, r.Raw)
		}
	}
	// A value of another JSON type is refused as any field's is: its
	// path, what it takes and what it got. true once read as the text
	// "true", "not a duration".
	for bad, got := range map[string]string{`true`: "boolean", `false`: "boolean", `{}`: "object", `[1]`: "array"} {
		want := "expires_in must be a string or a number (30s, 10m or a number of seconds), not a JSON " + got
		for path, body := range map[string]string{"/v1/questions": q(bad), "/v1/approvals": `{"tool_name":"rm","expires_in":` + bad + `}`} {
			r := do(t, "POST", u+path, "tok-ask-a-7f3c9e21b4", body)
			e, _ := r.Body["error"].(map[string]any)
			if msg, _ := e["message"].(string); r.Status != 400 || r.code() != "INVALID_REQUEST" || msg != want {
				t.Errorf("POST %s, expires_in %s: %d %s; want 400 INVALID_REQUEST %q", path, bad, r.Status, r.Raw, want)
			}
		}
	}
	for _, neg := range []string{`-5`, `"-5"`, `"-5m"`} {
		if r := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", q(neg)); r.Status != 400 || !strings.Contains(r.Raw, "is negative") {
			t.Errorf("expires_in %s: %d %s, want 400 saying it is negative", neg, r.Status, r.Raw)
		}
	}
	if r := do(t, "GET", u+"/v1/questions?tool_call_id=x&wait=-1", "tok-ask-a-7f3c9e21b4", ""); r.Status != 400 || !strings.Contains(r.Raw, `wait: \"-1\" is negative`) {
		t.Errorf("wait=-1: %d %s, want 400 saying it is negative", r.Status, r.Raw)
	}
	// At most 1e9 seconds, written either way: "1000000h" once made a
	// request that expired in 2141. Past 290 years time.ParseDuration
	// itself fails, which is still too long, not "not a duration".
	for _, long := range []string{`1000000001`, `"1e10"`, `"1000000h"`, `"277778h"`, `"3000000h"`, `"99999999999999999999s"`} {
		if r := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", q(long)); r.Status != 400 || r.code() != "INVALID_REQUEST" || !strings.Contains(r.Raw, "is out of range; the most is 1e9 seconds") {
			t.Errorf("expires_in %s: %d %s, want 400 saying it is out of range", long, r.Status, r.Raw)
		}
	}
	if r := do(t, "GET", u+"/v1/questions?tool_call_id=x&wait=1000000h", "tok-ask-a-7f3c9e21b4", ""); r.Status != 400 || !strings.Contains(r.Raw, "is out of range") {
		t.Errorf("wait=1000000h: %d %s, want 400 saying it is out of range", r.Status, r.Raw)
	}
	for expires, want := range map[string]time.Duration{
		`"90s"`: 90 * time.Second, `90`: 90 * time.Second, `"90"`: 90 * time.Second,
		`1.5`: 1500 * time.Millisecond, `"1e2"`: 100 * time.Second, `".5"`: 500 * time.Millisecond,
		`"1h30m"`: 90 * time.Minute, `1000000000`: 1e9 * time.Second, `"277777h"`: 277777 * time.Hour,
	} {
		r := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", q(expires))
		if r.Status != 201 {
			t.Errorf("expires_in %s: %d %s", expires, r.Status, r.Raw)
			continue
		}
		created, _ := time.Parse(time.RFC3339Nano, r.str("created_at"))
		expiresAt, _ := time.Parse(time.RFC3339Nano, r.str("expires_at"))
		if got := expiresAt.Sub(created); got != want {
			t.Errorf("expires_in %s: expires %s after creation, want %s", expires, got, want)
		}
	}
	id := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	for _, bad := range []string{"NaN", "nan", "1_0", "0x1p4"} {
		if r := do(t, "GET", u+"/v1/questions/"+id+"?wait="+bad, "tok-ask-a-7f3c9e21b4", nil); r.Status != 400 || r.code() != "INVALID_REQUEST" {
			t.Errorf("wait=%s: %d %s, want 400 INVALID_REQUEST", bad, r.Status, r.Raw)
		}
	}
}

// TestWrongTypesAreNamedByField: a value of the wrong type is a 400 whose
// message names the API's field, with the index of each list on the way,
// and the type to send, not the Go structs that read it.
func TestWrongTypesAreNamedByField(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	id := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	const q0 = `{"id":"a","question":"x","options":[{"label":"y"},{"label":"z"}]}`
	for _, tt := range []struct{ path, token, body, want string }{
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":1,"question":"x"}]}`, "questions[0].id must be a string, not a JSON number"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,{"id":"b","question":"x","options":[{"label":"y"},{"label":5}]}]}`, "questions[1].options[1].label must be a string, not a JSON number"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,{"id":"b","question":"x","multi_select":"yes"}]}`, "questions[1].multi_select must be true or false, not a JSON string"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,{"id":"b","question":"x","Multi_Select":"yes"}]}`, "questions[1].Multi_Select must be true or false, not a JSON string"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,"deploy?"]}`, "questions[1] must be an object, not a JSON string"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":{"id":"a"}}`, "questions must be an array, not a JSON object"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,{"id":"b","question":"x","input":{"type":"integer","value":[1]}}]}`, "questions[1].input.value must be a string, number or boolean, not a JSON array"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,{"id":"b","question":"x","input":{"type":"integer","value":{"n":1}}}]}`, "questions[1].input.value must be a string, number or boolean, not a JSON object"},
		// A number no float64 holds is the input type's to judge.
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[` + q0 + `,{"id":"b","question":"x","input":{"type":"number","value":1e400}}]}`, `question "b": input.value "1e400" is not a number`},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `{"questions":[{"id":"a","question":"x"}],"caller":{"delegated":"no"}}`, "caller.delegated must be true or false, not a JSON string"},
		{"/v1/questions", "tok-ask-a-7f3c9e21b4", `[]`, "the request body must be an object, not a JSON array"},
		{"/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":["rm"]}`, "tool_name must be a string, not a JSON array"},
		{"/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":"No"}]}`, "answers[0].selected must be an array, not a JSON string"},
		{"/v1/questions/" + id + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[{"id":"deploy","selected":["No",5]}]}`, "answers[0].selected[1] must be a string, not a JSON number"},
	} {
		r := do(t, "POST", u+tt.path, tt.token, tt.body)
		msg, _ := r.Body["error"].(map[string]any)["message"].(string)
		if r.Status != 400 || r.code() != "INVALID_REQUEST" || !strings.HasPrefix(msg, tt.want) {
			t.Errorf("%s: %d %s, want 400 INVALID_REQUEST %q", tt.body, r.Status, r.Raw, tt.want)
		}
		for _, goName := range []string{"Go ", "seam.", "plain", "Body", "Questions."} {
			if strings.Contains(msg, goName) {
				t.Errorf("%s: the message names Go internals (%q): %s", tt.body, goName, msg)
			}
		}
	}
}

// TestBodyMustBeAnObject: every endpoint that takes a JSON object refuses
// a body that is another JSON value alike, null included, which
// encoding/json would read into its struct as nothing (a create's
// EMPTY_QUESTIONS, an answer's missing "answers"). Nothing changes.
func TestBodyMustBeAnObject(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	qid := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	aid := do(t, "POST", u+"/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"kubectl_apply"}`).str("id")
	for _, ep := range []struct{ path, token string }{
		{"/v1/questions", "tok-ask-a-7f3c9e21b4"},
		{"/v1/approvals", "tok-ask-a-7f3c9e21b4"},
		{"/v1/questions/" + qid + "/answer", "tok-answer-7f3c9e21b4"},
		{"/v1/approvals/" + aid + "/decision", "tok-answer-7f3c9e21b4"},
	} {
		for _, tc := range []struct{ body, want string }{
			{`null`, "the request body must be an object, not JSON null"},
			{" \n null \r\n", "the request body must be an object, not JSON null"},
			{`[]`, "the request body must be an object, not a JSON array"},
			{`"deploy?"`, "the request body must be an object, not a JSON string"},
			{`5`, "the request body must be an object, not a JSON number"},
		} {
			r := do(t, "POST", u+ep.path, ep.token, tc.body)
			msg, _ := r.Body["error"].(map[string]any)["message"].(string)
			if r.Status != 400 || r.code() != "INVALID_REQUEST" || msg != tc.want {
				t.Errorf("%s with %q: %d %s, want 400 INVALID_REQUEST %q", ep.path, tc.body, r.Status, r.Raw, tc.want)
			}
		}
	}
	for _, path := range []string{"/v1/questions/" + qid, "/v1/approvals/" + aid} {
		if r := do(t, "GET", u+path, "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
			t.Errorf("a refused body changed %s: %s", path, r.Raw)
		}
	}
	for _, kind := range []string{"questions", "approvals"} {
		r := do(t, "GET", u+"/v1/"+kind+"?status=pending", "tok-answer-7f3c9e21b4", nil)
		if list, _ := r.Body[kind].([]any); len(list) != 1 {
			t.Errorf("a refused create made a request: %s", r.Raw)
		}
	}
}

// TestAnswerNeedsAnswers: an answer body without "answers" (null, which
// is no object, {}, or "answers": null) is refused rather than recorded as every question
// skipped, which can't be undone; "answers": [] skips them all.
func TestAnswerNeedsAnswers(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	id := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ).str("id")
	for _, body := range []string{`null`, `{}`, `{"answers":null}`} {
		if r := do(t, "POST", u+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", body); r.Status != 400 || r.code() != "INVALID_REQUEST" {
			t.Errorf("answer %s: %d %s, want 400 INVALID_REQUEST", body, r.Status, r.Raw)
		}
	}
	if r := do(t, "GET", u+"/v1/questions/"+id, "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
		t.Fatalf("an answer without answers changed the question: %s", r.Raw)
	}
	r := do(t, "POST", u+"/v1/questions/"+id+"/answer", "tok-answer-7f3c9e21b4", `{"answers":[]}`)
	if r.Status != 200 || r.field(t, "answer") != `{"answers":[{"id":"deploy","selected":[]}]}` {
		t.Fatalf(`answer {"answers":[]}: %d %s`, r.Status, r.Raw)
	}
}

// TestMethodNotAllowedSaysWhich: a path the API serves, asked with another
// method, is 405 with the methods it takes in Allow, not "no such endpoint".
func TestMethodNotAllowedSaysWhich(t *testing.T) {
	a := start(t, tokensYAML)
	for path, want := range map[string]string{
		"/v1/questions/abc":        "GET, HEAD, DELETE",
		"/v1/questions/abc/answer": "POST",
		"/healthz":                 "GET, HEAD",
	} {
		req, err := http.NewRequest("PATCH", a.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != want {
			t.Errorf("PATCH %s: %d, Allow %q; want 405, Allow %q", path, res.StatusCode, res.Header.Get("Allow"), want)
		}
	}
}

// TestUncleanPathIsNotFound: an API path with an empty segment (an empty
// id from a shell variable) or a "." or ".." is 404 NOT_FOUND in JSON,
// naming what is wrong and the clean path, not ServeMux's redirect to the
// clean path, whose body is no JSON and which a POST followed would send
// to another endpoint.
func TestUncleanPathIsNotFound(t *testing.T) {
	a := start(t, tokensYAML)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/v1/questions//answer", "POST /v1/questions//answer has an empty segment (an empty id?); paths are taken as sent, not cleaned to /v1/questions/answer"},
		{"GET", "/v1/questions/abc/../x?wait=30s", `GET /v1/questions/abc/../x has a "." or ".." segment; paths are taken as sent, not cleaned to /v1/questions/x`},
		{"DELETE", "/v1/approvals/./abc", "not cleaned to /v1/approvals/abc"},
		{"GET", "/v1/questions/..", "not cleaned to /v1"},
		{"POST", "//v1/questions", "POST //v1/questions starts with // (a bridge URL that ends in /?)"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, a.URL()+tc.path, strings.NewReader(deployQ))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer tok-answer-7f3c9e21b4")
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(raw, &body); err != nil || res.StatusCode != http.StatusNotFound || body.Error.Code != "NOT_FOUND" {
				t.Fatalf("got %d (Location %q) %q; want 404 NOT_FOUND in JSON", res.StatusCode, res.Header.Get("Location"), raw)
			}
			if !strings.Contains(body.Error.Message, tc.want) {
				t.Errorf("message %q; want it to hold %q", body.Error.Message, tc.want)
			}
		})
	}
}

// TestUnknownQueryParameterIsRefused: a query parameter the endpoint does
// not read is 400 INVALID_REQUEST naming it and the ones it reads: a
// misspelt ?wiat=30s was ignored, and the call answered at once instead of
// waiting. The parameters its callers send (the Go client, the harness
// plugin, the Agno example) still work.
func TestUnknownQueryParameterIsRefused(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	const (
		asker    = "tok-ask-a-7f3c9e21b4"
		answerer = "tok-answer-7f3c9e21b4"
	)
	created := do(t, "POST", u+"/v1/questions", asker, `{"questions":[{"id":"deploy","question":"Deploy?"}],"tool_call_id":"call-q"}`)
	approval := do(t, "POST", u+"/v1/approvals", asker, `{"tool_name":"rm","tool_call_id":"call-a"}`)
	if created.Status != http.StatusCreated || approval.Status != http.StatusCreated {
		t.Fatalf("create: %d %s; %d %s", created.Status, created.Raw, approval.Status, approval.Raw)
	}
	id, aid := created.str("id"), approval.str("id")

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		want                      string
	}{
		{"misspelt wait", "GET", "/v1/questions/" + id + "?wiat=30s", asker, nil, `unknown query parameter "wiat"; this endpoint takes wait`},
		{"misspelt wait on a create", "POST", "/v1/questions?wiat=30s", asker, deployQ, `unknown query parameter "wiat"; this endpoint takes wait`},
		{"of two, the first by name", "GET", "/v1/approvals/" + aid + "?z=1&b=2", asker, nil, `unknown query parameter "b"`},
		{"listing", "GET", "/v1/questions?statsu=pending", answerer, nil, `unknown query parameter "statsu"; this endpoint takes status, limit, tool_call_id and wait`},
		{"a wait on a listing", "GET", "/v1/questions?status=pending&wait=30s", answerer, nil, `unknown query parameter "wait"; a listing (no tool_call_id) takes status and limit`},
		{"a limit on a lookup", "GET", "/v1/questions?tool_call_id=call-q&limit=5", asker, nil, `unknown query parameter "limit"; a lookup by tool_call_id takes tool_call_id and wait`},
		{"a wait on a cancel by tool_call_id", "DELETE", "/v1/questions?tool_call_id=call-q&wait=1s", asker, nil, `unknown query parameter "wait"; this endpoint takes tool_call_id`},
		{"cancel", "DELETE", "/v1/questions/" + id + "?force=1", asker, nil, `unknown query parameter "force"; this endpoint takes no query parameters`},
		{"answer", "POST", "/v1/questions/" + id + "/answer?wait=1s", answerer, `{"answers":[]}`, `unknown query parameter "wait"; this endpoint takes no query parameters`},
		{"decision", "POST", "/v1/approvals/" + aid + "/decision?outcome=rejected", answerer, `{"outcome":"allowed-once"}`, `unknown query parameter "outcome"`},
		{"dismiss", "POST", "/v1/approvals/" + aid + "/dismiss?x", answerer, nil, `unknown query parameter "x"`},
		{"sign-in link", "POST", "/v1/signin-link?x=1", answerer, nil, `unknown query parameter "x"`},
		{"a wait given twice", "GET", "/v1/questions/" + id + "?wait=1s&wait=30s", asker, nil, `query parameter "wait" is given 2 times; give it once`},
		// Go's query parsing drops such a pair: its wait would be ignored.
		{"a semicolon", "GET", "/v1/questions/" + id + "?wait=30s;x=1", asker, nil, "the query can't be read: invalid semicolon separator in query"},
		{"a bad escape", "GET", "/v1/questions/" + id + "?wait=30%s", asker, nil, `the query can't be read: invalid URL escape "%s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, u+tc.path, tc.token, tc.body)
			e, _ := r.Body["error"].(map[string]any)
			if msg, _ := e["message"].(string); r.Status != http.StatusBadRequest || r.code() != "INVALID_REQUEST" || msg != tc.want && !strings.HasPrefix(msg, tc.want+";") {
				t.Fatalf("got %d %s; want 400 INVALID_REQUEST, message %q", r.Status, r.Raw, tc.want)
			}
		})
	}
	// Nothing above was created, cancelled, answered or decided.
	for _, p := range []string{"/v1/questions/" + id, "/v1/approvals/" + aid} {
		if r := do(t, "GET", u+p, asker, nil); r.str("status") != "pending" {
			t.Fatalf("%s changed by a refused call: %s", p, r.Raw)
		}
	}
	if r := do(t, "GET", u+"/v1/questions?status=pending", answerer, nil); len(r.Body["questions"].([]any)) != 1 {
		t.Fatalf("a refused create made a question: %s", r.Raw)
	}

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"create, waiting", "POST", "/v1/questions?wait=0s", asker, `{"questions":[{"id":"a","question":"x"}]}`, http.StatusCreated},
		{"read, waiting", "GET", "/v1/questions/" + id + "?wait=0s", asker, nil, http.StatusOK},
		{"list", "GET", "/v1/approvals?status=pending&limit=500", answerer, nil, http.StatusOK},
		{"lookup, waiting", "GET", "/v1/questions?tool_call_id=call-q&wait=1ms", asker, nil, http.StatusOK},
		{"cancel by tool_call_id", "DELETE", "/v1/approvals?tool_call_id=call-a", asker, nil, http.StatusOK},
		{"an empty query", "GET", "/v1/questions/" + id + "?", asker, nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := do(t, tc.method, u+tc.path, tc.token, tc.body); r.Status != tc.status {
				t.Fatalf("got %d %s; want %d", r.Status, r.Raw, tc.status)
			}
		})
	}
}

// TestOpenAPIRefusesWebPages: an API without tokens trusts whoever can
// connect, and listens on loopback only; a web page the person who runs it
// visits can connect too. A cross-site form or fetch must not answer, and
// a page on a name rebound to 127.0.0.1 (DNS rebinding) must not read or
// answer anything. Programs (curl, the Go client, the harness plugin) send
// neither Origin nor Sec-Fetch-Site and a loopback Host, and go through.
func TestOpenAPIRefusesWebPages(t *testing.T) {
	a := start(t, "")
	approval := `{"tool_name":"kubectl_delete","reason":"delete the prod namespace","arguments":{"ns":"prod"}}`
	id := do(t, "POST", a.URL()+"/v1/approvals", "", approval).str("id")
	port := a.URL()[strings.LastIndexByte(a.URL(), ':')+1:]
	send := func(method, path, host string, hdr map[string]string, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, a.URL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	decision := `{"outcome":"allowed-once"}`
	crossSite := map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
	oldBrowser := map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}
	rebound := map[string]string{"Origin": "http://rebind.evil.example:" + port, "Sec-Fetch-Site": "same-origin"}
	for _, tc := range []struct {
		name         string
		method, path string
		host         string
		hdr          map[string]string
		body         string
	}{
		{"cross-site decision", "POST", "/v1/approvals/" + id + "/decision", "", crossSite, decision},
		{"cross-site decision, Origin only", "POST", "/v1/approvals/" + id + "/decision", "", oldBrowser, decision},
		{"cross-site dismiss", "POST", "/v1/approvals/" + id + "/dismiss", "", crossSite, ""},
		{"cross-site cancel", "DELETE", "/v1/approvals/" + id, "", crossSite, ""},
		{"cross-site create", "POST", "/v1/questions", "", crossSite, deployQ},
		{"rebound list", "GET", "/v1/approvals?status=pending", "rebind.evil.example:" + port, rebound, ""},
		{"rebound read", "GET", "/v1/approvals/" + id, "rebind.evil.example:" + port, rebound, ""},
		{"rebound decision", "POST", "/v1/approvals/" + id + "/decision", "rebind.evil.example:" + port, rebound, decision},
	} {
		if got := send(tc.method, tc.path, tc.host, tc.hdr, tc.body); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, got)
		}
	}
	if r := do(t, "GET", a.URL()+"/v1/approvals/"+id, "", nil); r.str("status") != "pending" {
		t.Fatalf("a web page changed the approval: %s", r.Raw)
	}
	for _, host := range []string{"", "localhost:" + port, "[::1]:" + port, "bridge.localhost:" + port} {
		if got := send("GET", "/v1/approvals/"+id, host, nil, ""); got != http.StatusOK {
			t.Errorf("a program's read with Host %q: %d, want 200", host, got)
		}
	}
	if got := send("POST", "/v1/approvals/"+id+"/decision", "", map[string]string{"Content-Type": "application/json"}, decision); got != http.StatusOK {
		t.Fatalf("a program's decision: %d, want 200", got)
	}
}

// TestOpenAPIRefusesWhatAProxyForwards: an API without tokens is for the
// programs on its machine. Behind a proxy (the public base_url a Slack
// Request URL or a Discord endpoint needs), a call addressed to base_url's
// host, or one a proxy forwarded with the loopback Host of its upstream,
// comes from anyone who reaches the proxy: refused, so that nobody on the
// internet lists, answers or approves.
func TestOpenAPIRefusesWhatAProxyForwards(t *testing.T) {
	a := start(t, "base_url: https://bridge.example.com\n")
	for _, tc := range []struct {
		name   string
		host   string
		header [2]string
		want   int
	}{
		{"a program on this machine", "", [2]string{}, http.StatusOK},
		{"addressed to base_url's host", "bridge.example.com", [2]string{}, http.StatusForbidden},
		{"nginx with X-Forwarded-For", "", [2]string{"X-Forwarded-For", "203.0.113.7"}, http.StatusForbidden},
		{"nginx with X-Real-IP", "", [2]string{"X-Real-IP", "203.0.113.7"}, http.StatusForbidden},
		{"RFC 7239", "", [2]string{"Forwarded", "for=203.0.113.7"}, http.StatusForbidden},
		{"a rewritten Host", "", [2]string{"X-Forwarded-Host", "bridge.example.com"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", a.URL()+"/v1/questions?status=pending", nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.header[0] != "" {
				req.Header.Set(tc.header[0], tc.header[1])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", res.StatusCode, body, tc.want)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(string(body), "api.tokens") {
				t.Errorf("the refusal does not say what to do: %s", body)
			}
		})
	}
}

// A create's Location names the new request relative to the create's own
// URL, so that it holds both at the bridge's address and behind a proxy
// that serves the bridge under base_url's path and strips it.
func TestCreatedLocationIsRelative(t *testing.T) {
	a := start(t, tokensYAML)
	for _, kind := range []struct{ path, body string }{
		{"/v1/questions", deployQ},
		{"/v1/approvals", `{"tool_name":"kubectl_apply","arguments":{"f":"x.yaml"}}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, a.URL()+kind.path, strings.NewReader(kind.body))
		req.Header.Set("Authorization", "Bearer tok-ask-a-7f3c9e21b4")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ ID string }
		json.NewDecoder(res.Body).Decode(&rec)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated || rec.ID == "" {
			t.Fatalf("%s: %d", kind.path, res.StatusCode)
		}
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil {
			t.Fatalf("%s: Location %q", kind.path, res.Header.Get("Location"))
		}
		for _, base := range []string{a.URL() + kind.path, "https://tools.example.com/askbridge" + kind.path} {
			b, _ := url.Parse(base)
			got := b.ResolveReference(loc).String()
			if want := base + "/" + rec.ID; got != want {
				t.Errorf("Location %q from %s is %s, want %s", loc, base, got, want)
			}
		}
		if got := do(t, "GET", a.URL()+kind.path+"/"+rec.ID, "tok-ask-a-7f3c9e21b4", nil); got.Status != http.StatusOK {
			t.Errorf("GET of the new request: %d", got.Status)
		}
	}
}

// TestOtherKindsIDIsNamed: a question's id sent to /v1/approvals/ (or the
// reverse) is still 404 NOT_FOUND, but says which kind it is, to a caller
// that may see it; to another agent it stays a plain unknown id.
func TestOtherKindsIDIsNamed(t *testing.T) {
	a := start(t, tokensYAML)
	u := a.URL()
	q := do(t, "POST", u+"/v1/questions", "tok-ask-a-7f3c9e21b4", deployQ)
	ap := do(t, "POST", u+"/v1/approvals", "tok-ask-a-7f3c9e21b4", `{"tool_name":"kubectl_apply"}`)
	qid, aid := q.str("id"), ap.str("id")
	if qid == "" || aid == "" {
		t.Fatalf("create: %s %s", q.Raw, ap.Raw)
	}
	for _, tc := range []struct {
		method, path, token string
		body                any
		want                string
	}{
		{"GET", "/v1/approvals/" + qid, "tok-ask-a-7f3c9e21b4", nil, qid + " is a question, not an approval: use /v1/questions/" + qid + "\""},
		{"GET", "/v1/approvals/" + qid + "?wait=1s", "tok-ask-a-7f3c9e21b4", nil, qid + " is a question, not an approval"},
		{"DELETE", "/v1/approvals/" + qid, "tok-ask-a-7f3c9e21b4", nil, qid + " is a question, not an approval"},
		// The path named serves the call: an answer to an approval is a decision.
		{"POST", "/v1/approvals/" + qid + "/decision", "tok-answer-7f3c9e21b4", `{"outcome":"rejected"}`, qid + " is a question, not an approval: use /v1/questions/" + qid + "/answer\""},
		{"POST", "/v1/approvals/" + qid + "/dismiss", "tok-answer-7f3c9e21b4", nil, qid + " is a question, not an approval: use /v1/questions/" + qid + "/dismiss\""},
		{"POST", "/v1/questions/" + aid + "/answer", "tok-answer-7f3c9e21b4", `{"answers":[]}`, aid + " is an approval, not a question: use /v1/approvals/" + aid + "/decision\""},
		{"GET", "/v1/questions/" + aid, "tok-answer-7f3c9e21b4", nil, aid + " is an approval, not a question"},
		{"GET", "/v1/approvals/" + qid, "tok-ask-b-7f3c9e21b4", nil, `"no such request"`},
		{"DELETE", "/v1/approvals/" + qid, "tok-ask-b-7f3c9e21b4", nil, `"no such request"`},
	} {
		r := do(t, tc.method, u+tc.path, tc.token, tc.body)
		if r.Status != 404 || r.code() != "NOT_FOUND" || !strings.Contains(r.Raw, tc.want) {
			t.Errorf("%s %s (%s): %d %s; want 404 NOT_FOUND with %q", tc.method, tc.path, tc.token, r.Status, r.Raw, tc.want)
		}
	}
	if r := do(t, "GET", u+"/v1/questions/"+qid, "tok-ask-a-7f3c9e21b4", nil); r.str("status") != "pending" {
		t.Errorf("the question after the wrong calls: %s; want it pending", r.Raw)
	}
}

// TestSlowBodyIsCutOffNotTheWait: a body that doesn't arrive within
// BodyTimeout is refused; a held call, whose body came at once,
// is not cut off by that deadline while it waits.
func TestSlowBodyIsCutOffNotTheWait(t *testing.T) {
	old := api.BodyTimeout
	api.BodyTimeout = 200 * time.Millisecond
	t.Cleanup(func() { api.BodyTimeout = old })
	a := start(t, tokensYAML)

	conn, err := net.Dial("tcp", strings.TrimPrefix(a.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a server that never answers fails the test, not hangs it
	fmt.Fprintf(conn, "POST /v1/questions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-ask-a-7f3c9e21b4\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(deployQ), deployQ[:10])
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a body that stops coming: no answer: %v", err)
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "did not arrive within 200ms") {
		t.Errorf("a body that stops coming: %d %s", res.StatusCode, raw)
	}

	// Held for its whole wait, five times the body's deadline: a deadline
	// left in place would end it early (net/http takes the failed read
	// for a client gone), with the request pending all the same.
	start := time.Now()
	created := do(t, "POST", a.URL()+"/v1/questions?wait=1s", "tok-ask-a-7f3c9e21b4", deployQ)
	if held := time.Since(start); created.Status != 201 || created.str("status") != "pending" || held < time.Second {
		t.Fatalf("a create held for 1s: %d after %v; %s", created.Status, held, created.Raw)
	}
	// A call without a body gets no deadline at all: net/http is reading
	// its connection from the start, and the deadline would end the wait.
	start = time.Now()
	read := do(t, "GET", a.URL()+"/v1/questions/"+created.str("id")+"?wait=1s", "tok-ask-a-7f3c9e21b4", nil)
	if held := time.Since(start); read.Status != 200 || read.str("status") != "pending" || held < time.Second {
		t.Fatalf("a read held for 1s: %d after %v; %s", read.Status, held, read.Raw)
	}
}

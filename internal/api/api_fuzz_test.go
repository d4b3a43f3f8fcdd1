package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// fuzzQuestions is the request every fuzzed answer goes to: a single-select
// question, a multi-select one and a typed field, so that an answer body
// can be right or wrong in each way.
const fuzzQuestions = `{"questions":[
 {"id":"deploy","question":"Deploy to prod?","options":[{"label":"Yes (Recommended)","description":"ship it"},{"label":"No"}]},
 {"id":"regions","question":"Which regions?","multiSelect":true,"options":[{"label":"eu"},{"label":"us"},{"label":"ap"}]},
 {"id":"replicas","question":"How many replicas?","input":{"type":"integer","required":true}}]}`

const fuzzApproval = `{"tool_name":"kubectl_apply","reason":"roll out","arguments":{"f":"x.yaml"}}`

// A fuzzed body goes to one of these, by the input's first byte. The ones
// with an id in their path go to a request created for that input.
var fuzzEndpoints = []struct {
	path, token string
	create      string // the request the body answers, created first; "" for a create
	kind        string
}{
	{"/v1/questions", "tok-ask-a-7f3c9e21b4", "", "question"},
	{"/v1/approvals", "tok-ask-a-7f3c9e21b4", "", "approval"},
	{"/v1/questions/{id}/answer", "tok-answer-7f3c9e21b4", fuzzQuestions, "question"},
	{"/v1/approvals/{id}/decision", "tok-answer-7f3c9e21b4", fuzzApproval, "approval"},
	{"/v1/questions/{id}/dismiss", "tok-answer-7f3c9e21b4", fuzzQuestions, "question"},
}

// fuzzAllowed is every status and code a body may earn. A 5xx other than
// NO_PROVIDER's 503 (a route that does not exist) is a bug, and so is a
// code not in this list: clients match on them.
var fuzzAllowed = map[int][]string{
	http.StatusOK:                    nil,
	http.StatusCreated:               nil,
	http.StatusBadRequest:            {"INVALID_REQUEST", "EMPTY_QUESTIONS", "BAD_INTENT"},
	http.StatusForbidden:             {"DELEGATED_CALLER"},
	http.StatusConflict:              {"CONFLICT"},
	http.StatusRequestEntityTooLarge: {"TOO_LARGE"},
	http.StatusServiceUnavailable:    {"NO_PROVIDER"},
}

// FuzzBodies posts arbitrary bodies to every endpoint of the HTTP API that
// reads one, on a running replica. Whatever the body, the answer is JSON
// with a status and code of fuzzAllowed, and an error has a message. Bad
// input changes nothing: a request whose answer was refused is still
// pending, and one whose answer was taken reads back as the response said.
func FuzzBodies(f *testing.F) {
	url, prefix := apptest.Redis(f)
	// Logged to nowhere: a fuzz target must not log through f.
	a := apptest.StartLogged(f, apptest.Config(f, tokensYAML, url, prefix), app.Options{}, discard())
	u := a.URL()

	for _, s := range []struct {
		endpoint byte
		body     string
	}{
		{0, deployQ},
		{0, fuzzQuestions},
		{0, `{"questions":[{"id":"a","question":"x"}],"tool_call_id":"call_1","expires_in":"90s","caller":{"agent":"a1","name":"deploy-bot","session":"run-42"}}`},
		{0, `{"questions":[{"id":"a","question":"x"}],"expires_in":1e300}`},
		{0, `{"questions":[{"id":"p","question":"ok?","detail":"1. build\n2. ship","intent":{"kind":"plan-review","approve":"Go"},"options":[{"label":"Go"},{"label":"Stop"}]}]}`},
		{0, `{"questions":[{"id":"a","question":"x"}],"route":"nope"}`},
		{0, `{"questions":[],"caller":{"delegated":true}}`},
		{1, fuzzApproval},
		{1, `{"tool_name":"rm","tool_call_id":"call_2","display_reason":"clean up","expires_in":"10m"}`},
		{2, `{"answers":[{"id":"deploy","selected":["No"]},{"id":"regions","selected":["eu","ap"],"custom":"and sa"},{"id":"replicas","selected":[],"custom":"3"}]}`},
		{2, `{"answers":[{"id":"deploy","selected":["Yes (Recommended)"]},{"id":"regions","selected":[]},{"id":"replicas","custom":"three"}]}`},
		{2, `{"answers":[{"id":"deploy","selected":["No","Yes (Recommended)"]}]}`},
		{2, `{"answers":[{"id":"deploy","custom":"  later  "},{"id":"replicas","custom":"-0"}]}`},
		{3, `{"outcome":"allowed-once","note":"go"}`},
		{3, `{"outcome":"rejected"}`},
		{3, `{"outcome":"allowed-always"}`},
		{4, ``},
		{4, `{}`},
	} {
		f.Add(s.endpoint, s.body)
	}

	f.Fuzz(func(t *testing.T, endpoint byte, body string) {
		e := fuzzEndpoints[int(endpoint)%len(fuzzEndpoints)]
		path, id := e.path, ""
		if e.create != "" {
			created := do(t, "POST", u+"/v1/"+e.kind+"s", "tok-ask-a-7f3c9e21b4", e.create)
			if created.Status != http.StatusCreated {
				t.Fatalf("create: %d %s", created.Status, created.Raw)
			}
			id = created.str("id")
			path = "/v1/" + e.kind + "s/" + id + path[len("/v1/"+e.kind+"s/{id}"):]
		}

		r := do(t, "POST", u+path, e.token, body) // fails unless the body is JSON
		codes, ok := fuzzAllowed[r.Status]
		if !ok {
			t.Fatalf("POST %s: status %d: %.300s", path, r.Status, r.Raw)
		}
		if r.Status >= 300 {
			if !slices.Contains(codes, r.code()) {
				t.Fatalf("POST %s: %d with code %q: %.300s", path, r.Status, r.code(), r.Raw)
			}
			e, _ := r.Body["error"].(map[string]any)
			if msg, _ := e["message"].(string); msg == "" {
				t.Fatalf("POST %s: an error without a message: %.300s", path, r.Raw)
			}
		}

		switch {
		case id == "" && r.Status < 300:
			// A create: it reads back as created, under its kind (or
			// expired since, when its expires_in was next to nothing:
			// the sweeper runs every 10 ms here).
			got := do(t, "GET", u+"/v1/"+e.kind+"s/"+r.str("id"), "tok-ask-a-7f3c9e21b4", nil)
			status := got.str("status")
			if got.Status != http.StatusOK || status != r.str("status") && status != "expired" || got.str("kind") != e.kind {
				t.Fatalf("created %.300s, reads back %d %.300s", r.Raw, got.Status, got.Raw)
			}
		case id != "":
			got := do(t, "GET", u+"/v1/"+e.kind+"s/"+id, "tok-ask-a-7f3c9e21b4", nil)
			if r.Status >= 300 {
				if got.str("status") != "pending" {
					t.Fatalf("refused with %d %s, yet the request is %q", r.Status, r.code(), got.str("status"))
				}
				return
			}
			for _, k := range []string{"status", "answer", "decision", "answered_by"} {
				if !reflect.DeepEqual(got.Body[k], r.Body[k]) {
					t.Fatalf("%s: the resolve said %s, a read says %s", k, js(r.Body[k]), js(got.Body[k]))
				}
			}
			if got.str("status") == "pending" {
				t.Fatalf("resolved with %d, yet still pending: %.300s", r.Status, got.Raw)
			}
		}
	})
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

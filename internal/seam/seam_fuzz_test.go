package seam

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzQuestions decodes an API body as the questions endpoint does, then
// validates it and normalises an answer against it: nothing panics, a
// valid request survives a JSON round trip still valid and unchanged (its
// prefills already canonical), and normalising a normalised answer
// changes nothing.
func FuzzQuestions(f *testing.F) {
	f.Add([]byte(`{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","header":"Confirm","options":[{"label":"Yes, delete them (Recommended)","description":"Removes the three stale files."},{"label":"No, keep them"}]}]}`),
		[]byte(`{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}`))
	f.Add([]byte(`{"questions":[{"id":"envs","question":"Which environments?","options":[{"label":"staging"},{"label":"prod"}],"multi_select":true}]}`),
		[]byte(`{"answers":[{"id":"envs","selected":["prod","staging"],"custom":" and dev "}]}`))
	f.Add([]byte(`{"questions":[{"id":"replicas","question":"How many?","input":{"type":"integer","value":3}}]}`),
		[]byte(`{"answers":[{"id":"replicas","selected":[],"custom":" 5 "}]}`))
	f.Add([]byte(`{"questions":[{"id":"plan","question":"Approve the plan?","detail":"# Plan\n1. a","intent":{"type":"plan_review","approve":"Approve"},"options":[{"label":"Approve"},{"label":"Keep planning"}]}]}`),
		[]byte(`{"answers":[{"id":"plan","selected":["Keep planning"],"custom":"split step 2"}]}`))
	f.Add([]byte(`{"questions":[]}`), []byte(`{}`))
	f.Add([]byte(`{"questions":[{"id":"a","question":"q\u0000","options":[{"label":""}]}]}`), []byte(`{"answers":null}`))
	f.Add([]byte(`{"questions":[{"id":"n","question":"Size?","input":{"type":"number","value":"1e309"}}]}`), []byte(`{"answers":[{"id":"n","custom":"NaN"}]}`))
	f.Add([]byte(`{"questions":[{"id":"b","question":"Dry run?","input":{"type":"boolean","value":" Yes "}},{"id":"n","question":"How many?","input":{"type":"integer","value":"+007"}}]}`), []byte(`{"answers":[]}`))
	f.Fuzz(func(t *testing.T, body, answer []byte) {
		var q Questions
		if json.Unmarshal(body, &q) != nil || q.Validate() != nil {
			return
		}
		again, err := json.Marshal(q)
		if err != nil {
			t.Fatalf("a valid request does not marshal: %v", err)
		}
		var q2 Questions
		if err := json.Unmarshal(again, &q2); err != nil {
			t.Fatalf("a valid request does not read back: %v\n%s", err, again)
		}
		if err := q2.Validate(); err != nil {
			t.Fatalf("a valid request is invalid after a round trip: %v\n%s", err, again)
		}
		if twice, _ := json.Marshal(q2); string(twice) != string(again) {
			t.Fatalf("validating a valid request again changed it:\n%s\n%s", again, twice)
		}
		var a Answer
		if json.Unmarshal(answer, &a) != nil {
			return
		}
		norm, err := q.Normalize(a)
		if err != nil {
			return
		}
		twice, err := q.Normalize(norm)
		if err != nil {
			t.Fatalf("a normalised answer is refused: %v\n%+v", err, norm)
		}
		if !reflect.DeepEqual(norm, twice) {
			t.Fatalf("normalising twice changed the answer:\n%+v\n%+v", norm, twice)
		}
	})
}

// FuzzApproval decodes an approval body and a decision, validates and
// normalises them: nothing panics and normalising is idempotent.
func FuzzApproval(f *testing.F) {
	f.Add([]byte(`{"tool_name":"kubectl_apply","call_id":"call-9","reason":"apply the new deployment","display_reason":"Deploy web v2","arguments":{"file":"web.yaml","replicas":3}}`),
		[]byte(`{"outcome":"rejected","reason":"not on a Friday"}`))
	f.Add([]byte(`{"tool_name":"rm","arguments":"not an object"}`), []byte(`{"outcome":"allowed-once"}`))
	f.Add([]byte(`{}`), []byte(`{"outcome":"cancelled"}`))
	f.Fuzz(func(t *testing.T, body, decision []byte) {
		var a Approval
		if json.Unmarshal(body, &a) == nil {
			_ = a.Validate()
		}
		var d Decision
		if json.Unmarshal(decision, &d) != nil {
			return
		}
		norm, err := d.Normalize()
		if err != nil {
			return
		}
		twice, err := norm.Normalize()
		if err != nil || !reflect.DeepEqual(norm, twice) {
			t.Fatalf("normalising twice: %+v, %v; want %+v", twice, err, norm)
		}
	})
}

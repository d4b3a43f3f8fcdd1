package seam

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// TestTypeErrorMessage: the value at fault is named by its path in the
// body, indexes included, whatever Go types read it.
func TestTypeErrorMessage(t *testing.T) {
	type item struct {
		N    uint     `json:"n"`
		Tags []string `json:"tags"`
	}
	type body struct {
		Items []item     `json:"items"`
		Grid  [][]int    `json:"grid"`
		Qs    []Question `json:"qs"`
	}
	for _, tt := range []struct{ body, want string }{
		// The first value of the wrong kind at the path, in the body's order.
		{`{"items":[{"n":1},{"n":2,"tags":["a",3]},{"tags":[4]}]}`, "items[1].tags[1] must be a string, not a JSON number"},
		// A number of the right kind that does not fit is told by its literal.
		{`{"items":[{"n":1},{"n":-5}]}`, "items[1].n must be a number, not a JSON number"},
		{`{"grid":[[1],[2,"x"]]}`, "grid[1][1] must be a number, not a JSON string"},
		// An array where an element was due is named by its place.
		{`{"items":[{"tags":[["a"]]}]}`, "items[0].tags[0] must be a string, not a JSON array"},
		{`{"items":[{"n":[1]}]}`, "items[0].n must be a number, not a JSON array"},
		// encoding/json matches a member's name under case folding; the
		// message names it as the body spells it.
		{`{"ITEMS":[{"N":"one"}]}`, "ITEMS[0].N must be a number, not a JSON string"},
		{`{"items":{"n":1}}`, "items must be an array, not a JSON object"},
		{`["x"]`, "the request body must be an object, not a JSON array"},
		// A question reads itself: its errors' paths start again inside it.
		{`{"qs":[{"id":"a","question":"x"},{"id":"b","question":"y","options":[{"label":"p"},{"label":false}]}]}`,
			"qs[1].options[1].label must be a string, not a JSON boolean"},
	} {
		var v body
		err := json.Unmarshal([]byte(tt.body), &v)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%s: %v, want a type error", tt.body, err)
		}
		if got := TypeErrorMessage([]byte(tt.body), te, ""); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.body, got, tt.want)
		}
	}

	// Named by a root: "arguments" of a tool call.
	var v body
	err := json.Unmarshal([]byte(`{"items":[{"n":"x"}]}`), &v)
	var te0 *json.UnmarshalTypeError
	if !errors.As(err, &te0) {
		t.Fatal(err)
	}
	if got, want := TypeErrorMessage([]byte(`{"items":[{"n":"x"}]}`), te0, "arguments"), "arguments.items[0].n must be a number, not a JSON string"; got != want {
		t.Errorf("with a root: got %q, want %q", got, want)
	}
	err = json.Unmarshal([]byte(`[1]`), &v)
	if !errors.As(err, &te0) {
		t.Fatal(err)
	}
	if got, want := TypeErrorMessage([]byte(`[1]`), te0, "arguments"), "arguments must be an object, not a JSON array"; got != want {
		t.Errorf("the root itself: got %q, want %q", got, want)
	}

	// A body it can't read again: the path without indexes, still by the
	// body's names.
	te := &json.UnmarshalTypeError{Value: "string", Type: reflect.TypeFor[bool](), Field: "Qs.questions.plain.multi_select"}
	if got, want := TypeErrorMessage([]byte(`{`), te, ""), "questions.multi_select must be true or false, not a JSON string"; got != want {
		t.Errorf("unreadable body: got %q, want %q", got, want)
	}
}

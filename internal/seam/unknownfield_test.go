package seam

import (
	"encoding/json"
	"testing"
)

func TestUnknownFieldMessage(t *testing.T) {
	type inner struct {
		Raw json.RawMessage `json:"raw"`
		Any any             `json:"any"`
	}
	type Embedded struct {
		E string `json:"e"`
	}
	type body struct {
		Embedded
		Items  []inner          `json:"items"`
		Map    map[string]inner `json:"map"`
		Ptr    *inner           `json:"ptr"`
		Skip   string           `json:"-"`
		Plain  int
		hidden int
	}
	var answer struct {
		Answers *[]AnswerItem `json:"answers"`
	}
	for _, tc := range []struct {
		v          any
		body, want string
	}{
		{&answer, `{"answers":[{"id":"a","selected":["A"],"custom":"x"}]}`, ""},
		{&answer, `{"answers":[{"id":"a"},{"id":"b","selcted":["A"]}]}`,
			`answers[1] has no field "selcted"; its fields are id, selected and custom`},
		{&answer, `{"answer":[]}`, `the request body has no field "answer"; its fields are answers`},
		{&answer, `{"Answers":[{"ID":"a","Selected":[]}]}`, ""}, // as encoding/json matches keys, case aside
		{&answer, `{"answers":[{"id":"a","selected":[]}],"id":"x"}`, `the request body has no field "id"; its fields are answers`},
		{&Decision{}, `{"outcome":"rejected","notes":"x"}`, `the request body has no field "notes"; its fields are outcome and note`},
		{&body{}, `{"e":"x","items":[{"raw":{"anything":1},"any":{"goes":[{"x":1}]}}],"map":{"k":{"raw":1}},"ptr":{"any":1},"Plain":1}`, ""},
		{&body{}, `{"map":{"k":{"raw":1,"nope":2}}}`, `map.k has no field "nope"; its fields are raw and any`},
		{&body{}, `{"ptr":{"nope":1}}`, `ptr has no field "nope"; its fields are raw and any`},
		{&body{}, `{"Skip":"x"}`, `the request body has no field "Skip"; its fields are e, items, map, ptr and Plain`},
		{&body{}, `{"hidden":1}`, `the request body has no field "hidden"; its fields are e, items, map, ptr and Plain`},
		{&body{}, `{"items":"not a list","ptr":[{"nope":1}]}`, ""}, // wrong types: decoding says so
		{&answer, `not json`, ""},
		{&answer, ``, ""},
		{&answer, `{"answers":[{"nope"`, `answers[0] has no field "nope"; its fields are id, selected and custom`},
	} {
		if got := UnknownFieldMessage([]byte(tc.body), tc.v); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.body, got, tc.want)
		}
	}
}

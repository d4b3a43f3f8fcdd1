package seam

import (
	"runtime"
	"strings"
	"testing"
)

func TestDuplicateKeyMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"answers":[{"id":"a","selected":["A"]}]}`:                               "",
		`{"answers":[{"id":"a","selected":["A"],"selected":[]}]}`:                 `answers[0] holds "selected" twice; send it once`,
		`{"answers":[{"id":"a"},{"id":"b","custom":"x","Custom":""}]}`:            `answers[1] holds "Custom" twice; send it once`,
		`{"outcome":"rejected","outcome":"allowed-once"}`:                         `the request body holds "outcome" twice; send it once`,
		`{"a":{"b":[1,{"c":1}],"c":2},"d":[[{"e":1,"f":{"e":2}},{"e":1,"e":2}]]}`: `d[0][1] holds "e" twice; send it once`,
		`{"selected":["A"],"ſelected":[]}`:                                        `the request body holds "ſelected" twice; send it once`,
		`{"a":1,"b":{"a":2}}`:                                                     "",
		`[{"a":1},{"a":1}]`:                                                       "",
		`not json`:                                                                "",
		`{"a":1,"a"`:                                                              `the request body holds "a" twice; send it once`,
		``:                                                                        "",
	} {
		if got := DuplicateKeyMessage([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// A body nested deeper than encoding/json decodes costs no more than that
// depth: the walk stops where decoding refuses it. (Before, a 1 MiB body of
// {"a":{"a":... allocated about 100 MB: a map a level.)
func TestDuplicateKeyMessageStopsAtDecodingsDepth(t *testing.T) {
	levels := (1 << 20) / len(`{"a":`)
	deep := []byte(strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	DuplicateKeyMessage(deep)
	runtime.ReadMemStats(&after)
	if mb := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20); mb > 16 {
		t.Errorf("%.0f MB allocated for a body %d deep", mb, levels)
	}
}

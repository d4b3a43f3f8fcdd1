package slack

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestTrimMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"block_actions","message":{"type":"message","ts":"1.2","text":"hi","blocks":[{"a":"}"}]},"x":1}`,
			`{"type":"block_actions","message":{"ts":"1.2","text":"hi"},"x":1}`},
		// Quotes, backslashes and brackets inside strings end nothing.
		{`{"message":{"blocks":[{"t":"a \"]}\" \\"}],"text":"\\\"{","TS":"3"}, "user":{"id":"U1"}}`,
			`{"message":{"text":"\\\"{","TS":"3"}, "user":{"id":"U1"}}`},
		// White space anywhere JSON allows it.
		{" {\n \"message\" : { \"ts\" : \"1\" , \"b\" : [ 1 , 2 ] } , \"type\" : \"t\" } ",
			" {\n \"message\" : {\"ts\":\"1\"} , \"type\" : \"t\" } "},
		// Keys it can't tell from ts or text by their bytes are kept.
		{`{"message":{"t\u0073":"1","tſ":"2","blocks":[]}}`, `{"message":{"t\u0073":"1","tſ":"2"}}`},
		// Nothing to trim, or not an object it can walk: as it is.
		{`{"type":"block_actions"}`, `{"type":"block_actions"}`},
		{`{"message":null}`, `{"message":null}`},
		{`{"message":{"ts":"1",}}`, `{"message":{"ts":"1",}}`},
		{`{"message":{"ts":"1"}`, `{"message":{"ts":"1"}`},
		{`{"message":{"ts":"1"]}`, `{"message":{"ts":"1"]}`},
		{`{"message":{"ts":"1"}} x`, `{"message":{"ts":"1"}} x`},
		{`[{"message":{}}]`, `[{"message":{}}]`},
		{``, ``},
	} {
		if got := string(trimMessage([]byte("dst:"), []byte(c.in))); got != "dst:"+c.want {
			t.Errorf("trimMessage(dst:, %s)\n got %s\nwant dst:%s", c.in, got, c.want)
		}
	}
}

// FuzzTrimMessage: whatever decodes into a clickPayload decodes into the
// same one trimmed.
func FuzzTrimMessage(f *testing.F) {
	f.Add(benchPayload(f))
	for _, s := range []string{
		`{"type":"block_actions","message":{"ts":"1.2","text":"hi","blocks":[{"a":"}"}]},"actions":[{"block_id":"b","action_id":"a"}]}`,
		`{"Message":{"Ts":"1","TEXT":"x","blocks":{}},"message":{"text":"y"}}`,
		`{"message":{"ts":1}}`,
		`{"message":{"text":"\u00e9\"\\"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		trimmed := trimMessage(nil, []byte(in))
		var want, got clickPayload
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			return
		}
		if err := json.Unmarshal(trimmed, &got); err != nil {
			t.Fatalf("trimMessage(%s) = %s: %v", in, trimmed, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trimMessage(%s) = %s:\n got %+v\nwant %+v", in, trimmed, got, want)
		}
		if len(trimmed) > len(in) {
			t.Fatalf("trimMessage(%s) = %s: longer", in, trimmed)
		}
	})
}

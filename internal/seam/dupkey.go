package seam

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

// DuplicateKeyMessage says where body first holds an object with a key
// twice, or returns "" when none does. encoding/json keeps the last of the
// two (matching keys as it matches field names, case aside) without a
// word: in a person's answer, {"selected": ["A"], "selected": []} would
// record a skip. A body that is not JSON returns "": decoding says why.
func DuplicateKeyMessage(body []byte) string {
	type frame struct {
		object  bool
		keys    map[string]bool
		key     string // an object's current key
		index   int    // an array's current element
		wantKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		return b.String()
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := stack[n-1]
			if k, ok := tok.(string); ok {
				folded := foldKey(k)
				if top.keys[folded] {
					if at := path(); at != "" {
						return at + " holds " + strconv.Quote(k) + " twice; send it once"
					}
					return "the request body holds " + strconv.Quote(k) + " twice; send it once"
				}
				if top.keys == nil {
					top.keys = map[string]bool{}
				}
				top.keys[folded], top.key, top.wantKey = true, k, false
				continue
			}
		}
		if len(stack) > maxDepth {
			return "" // decoding refuses it
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 && !dec.More() {
			return ""
		}
	}
}

// maxDepth is as deep as encoding/json decodes (deeper, it refuses the
// body), so as deep as a duplicate needs finding.
const maxDepth = 10000

// foldKey is k with each rune the least of its case-folding orbit, so that
// two keys fold alike exactly when strings.EqualFold holds, as
// encoding/json matches a key to a field ("ſelected" is "selected").
func foldKey(k string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, k)
}

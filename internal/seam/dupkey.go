package seam

import (
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
	return walkKeys(body,
		func(*jsonFrame[map[string]bool], bool) map[string]bool { return nil },
		func(stack []*jsonFrame[map[string]bool], k string) string {
			top, folded := stack[len(stack)-1], foldKey(k)
			if top.data[folded] {
				return keyPath(stack) + " holds " + strconv.Quote(k) + " twice; send it once"
			}
			if top.data == nil {
				top.data = map[string]bool{}
			}
			top.data[folded] = true
			return ""
		})
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

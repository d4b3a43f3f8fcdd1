package seam

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// jsonFrame is an object or an array open where walkKeys is in a body,
// with what its caller keeps of it.
type jsonFrame[T any] struct {
	object  bool
	key     string // an object's current key
	index   int    // an array's current element
	wantKey bool
	data    T
}

// walkKeys walks body's tokens and calls key for each key of an object
// in it, stack ending with that object; a message key returns ends the
// walk and is walkKeys's. open gives each object or array that opens
// what its frame keeps, parent being the frame it opens in (nil at the
// top). A body that is not JSON, or deeper than encoding/json decodes,
// ends the walk with "": decoding says why.
func walkKeys[T any](body []byte, open func(parent *jsonFrame[T], object bool) T, key func(stack []*jsonFrame[T], k string) string) string {
	var stack []*jsonFrame[T]
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
			if k, ok := tok.(string); ok {
				if msg := key(stack, k); msg != "" {
					return msg
				}
				stack[n-1].key, stack[n-1].wantKey = k, false
				continue
			}
		}
		if len(stack) > maxDepth {
			return "" // decoding refuses it
		}
		var parent *jsonFrame[T]
		if n := len(stack); n > 0 {
			parent = stack[n-1]
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &jsonFrame[T]{object: true, wantKey: true, data: open(parent, true)})
		case json.Delim('['):
			stack = append(stack, &jsonFrame[T]{data: open(parent, false)})
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

// keyPath is where the last frame of stack is, as messages name it:
// "answers[1]", "map.k"; "the request body" at the top.
func keyPath[T any](stack []*jsonFrame[T]) string {
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
	if b.Len() == 0 {
		return "the request body"
	}
	return b.String()
}

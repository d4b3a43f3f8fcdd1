package seam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// TypeErrorMessage words e, a value of the wrong type that decoding body
// met, in the body's own terms: the value's path with the index of every
// array on the way ("questions[1].options[0].label"), what it must be and
// what it is. encoding/json's own message names the Go types that read
// the body, and no index: useless to whoever has to mend a list. root
// names the body as a whole ("arguments"), and comes first in a path;
// empty, the body is "the request body" and paths start inside it.
func TypeErrorMessage(body []byte, e *json.UnmarshalTypeError, root string) string {
	value, literal, _ := strings.Cut(e.Value, " ") // "number -5"
	path := locate(body, fieldPath(e.Field), value, literal)
	if value == "bool" {
		value = "boolean"
	}
	switch {
	case path == "" && root == "":
		path = "the request body"
	case path == "":
		path = root
	case root != "" && path[0] == '[':
		path = root + path
	case root != "":
		path = root + "." + path
	}
	return fmt.Sprintf("%s must be %s, not a JSON %s", path, jsonKind(e.Type), value)
}

// fieldPath is the JSON names in an UnmarshalTypeError's Field, which
// holds Go's names too: those of embedded types and of structs read by an
// UnmarshalJSON of their own (a question's "plain"), which name no field
// of the body. The body's names are all lower case.
func fieldPath(field string) []string {
	var path []string
	for _, seg := range strings.Split(field, ".") {
		if seg == "" || seg == "plain" || unicode.IsUpper(rune(seg[0])) {
			continue
		}
		path = append(path, seg)
	}
	return path
}

// locate returns the path, indexes included, of the first value in body,
// in the order of the text, that lies at names (arrays on the way take no
// name) and is a JSON value of kind (with this literal, for a number).
// encoding/json reports the first such value it meets. Without one (a
// body it can't read again), it returns names joined as they are.
func locate(body []byte, names []string, kind, literal string) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err == nil {
		if p, ok := find(doc, names, kind, literal, ""); ok {
			return p
		}
	}
	return strings.Join(names, ".")
}

func find(v any, names []string, kind, literal, at string) (string, bool) {
	switch v := v.(type) {
	case []any:
		// The deepest value first: where an array of strings was sent
		// an array of arrays, the fault is in its first element, not
		// the array (which a string field sent an array is).
		for i, el := range v {
			if p, ok := find(el, names, kind, literal, at+"["+strconv.Itoa(i)+"]"); ok {
				return p, true
			}
		}
		if len(names) == 0 && isKind(v, kind, literal) {
			return at, true
		}
	case map[string]any:
		if len(names) == 0 {
			return at, isKind(v, kind, literal)
		}
		key, ok := member(v, names[0])
		if !ok {
			return "", false
		}
		next := key
		if at != "" {
			next = at + "." + key
		}
		return find(v[key], names[1:], kind, literal, next)
	}
	return at, len(names) == 0 && isKind(v, kind, literal)
}

// member returns the key of obj that encoding/json reads as the field
// name: itself, else one equal to it under case folding.
func member(obj map[string]any, name string) (string, bool) {
	if _, ok := obj[name]; ok {
		return name, true
	}
	for k := range obj {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// isKind reports whether v, decoded with UseNumber, is a JSON value of
// kind as encoding/json names kinds in an UnmarshalTypeError.
func isKind(v any, kind, literal string) bool {
	switch v := v.(type) {
	case string:
		return kind == "string"
	case json.Number:
		return kind == "number" && (literal == "" || literal == string(v))
	case bool:
		return kind == "bool"
	case []any:
		return kind == "array"
	case map[string]any:
		return kind == "object"
	}
	return false
}

// jsonKind names the JSON a Go type is read from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Interface: // an input's value (Input.UnmarshalJSON)
		return "a string, number or boolean"
	}
	return "an object"
}

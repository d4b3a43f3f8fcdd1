package seam

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// UnknownFieldMessage says where body first holds a key that v, the value
// it is to be decoded into, has no field for, and which fields it has
// there: `answers[0] has no field "selcted"; its fields are id, selected
// and custom`. encoding/json's own message names the key alone, which in
// an answer of twenty questions leaves its sender to search for it. Keys
// are matched as encoding/json matches them (case aside); a value read by
// an UnmarshalJSON of its own, or into an interface, is not looked into.
// It returns "" when every key has a field, and for a body that is not
// JSON: decoding says why.
func UnknownFieldMessage(body []byte, v any) string {
	// Each frame's types: the struct or map of an object, the slice or
	// array of an array (nil: not looked into), and the type its current
	// key's value decodes into.
	type types struct{ t, val reflect.Type }
	return walkKeys(body,
		func(parent *jsonFrame[types], object bool) types {
			var t reflect.Type // the value's that opens
			switch {
			case parent == nil:
				t = reflect.TypeOf(v)
			case parent.object:
				t = parent.data.val
			case parent.data.t != nil:
				t = parent.data.t.Elem()
			}
			if object {
				return types{t: lookInto(t, reflect.Struct, reflect.Map)}
			}
			return types{t: lookInto(t, reflect.Slice, reflect.Array)}
		},
		func(stack []*jsonFrame[types], k string) string {
			top := &stack[len(stack)-1].data
			top.val = nil
			switch {
			case top.t == nil:
			case top.t.Kind() == reflect.Map:
				top.val = top.t.Elem()
			default:
				f, ok := jsonField(top.t, k)
				if !ok {
					return keyPath(stack) + " has no field " + strconv.Quote(k) + "; its fields are " + fieldList(top.t)
				}
				top.val = f
			}
			return ""
		})
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// lookInto returns t without its pointers when it is of one of kinds and
// encoding/json decodes it field by field (or element by element), else
// nil: a type with an UnmarshalJSON of its own reads what it likes.
func lookInto(t reflect.Type, kinds ...reflect.Kind) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	for _, k := range kinds {
		if t.Kind() == k {
			return t
		}
	}
	return nil
}

// jsonFields returns the JSON names of struct t's fields, in order, with
// their types: those of embedded structs without a name of their own
// included, as encoding/json takes them.
func jsonFields(t reflect.Type) (names []string, types []reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				n, ts := jsonFields(et)
				names, types = append(names, n...), append(types, ts...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names, types = append(names, name), append(types, f.Type)
	}
	return names, types
}

// jsonField returns the type of struct t's field that encoding/json
// decodes key into: the one named key, else one named so case aside.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	names, types := jsonFields(t)
	for i, n := range names {
		if n == key {
			return types[i], true
		}
	}
	for i, n := range names {
		if strings.EqualFold(n, key) {
			return types[i], true
		}
	}
	return nil, false
}

// fieldList is struct t's JSON field names as a sentence: "a, b and c".
func fieldList(t reflect.Type) string {
	names, _ := jsonFields(t)
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

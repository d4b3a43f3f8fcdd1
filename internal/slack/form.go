package slack

import (
	"bytes"
	"errors"
)

// formValue returns the value of key in body, a form as Slack posts its
// callbacks (application/x-www-form-urlencoded, payload=<JSON>), decoded
// into a slice of its own; nil when key is absent. It reads what
// url.ParseQuery reads, with one copy where ParseQuery and Get make three
// of a payload of kilobytes: a string of the body, the decoded string,
// and the bytes for JSON. Unlike ParseQuery it takes ';' as any other
// byte; a key is matched as sent.
func formValue(body []byte, key string) ([]byte, error) {
	for len(body) > 0 {
		var pair []byte
		pair, body, _ = bytes.Cut(body, []byte{'&'})
		k, v, _ := bytes.Cut(pair, []byte{'='})
		if string(k) == key {
			return unescapeForm(v)
		}
	}
	return nil, nil
}

var errBadEscape = errors.New("form: a malformed %-escape")

// unescapeForm decodes a form value: '+' is a space, %XX a byte.
func unescapeForm(v []byte) ([]byte, error) {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '+':
			out = append(out, ' ')
		case '%':
			if i+2 >= len(v) || !isHex(v[i+1]) || !isHex(v[i+2]) {
				return nil, errBadEscape
			}
			out = append(out, unhex(v[i+1])<<4|unhex(v[i+2]))
			i += 2
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

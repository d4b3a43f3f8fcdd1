package slack

import (
	"bytes"
	"errors"
)

// formValue returns the value of key in body, a form as Slack posts its
// callbacks (application/x-www-form-urlencoded, payload=<JSON>), decoded
// in place: the value it returns is body's own bytes, overwritten (a
// decoded value is never longer than its escapes); nil when key is
// absent. It reads what url.ParseQuery reads, without the copies
// ParseQuery and Get make of a payload of kilobytes: a string of the body,
// the decoded string, and the bytes for JSON. Unlike ParseQuery it takes
// ';' as any other byte; a key is matched as sent.
func formValue(body []byte, key string) ([]byte, error) {
	for len(body) > 0 {
		var pair []byte
		pair, body, _ = bytes.Cut(body, []byte{'&'})
		k, v, _ := bytes.Cut(pair, []byte{'='})
		if string(k) == key {
			if v == nil {
				return []byte{}, nil // the key alone: present, empty
			}
			return unescapeForm(v)
		}
	}
	return nil, nil
}

var errBadEscape = errors.New("form: a malformed %-escape")

// unescapeForm decodes a form value over itself and returns the decoded
// part: '+' is a space, %XX a byte. On an error, v is left part decoded.
func unescapeForm(v []byte) ([]byte, error) {
	n := 0 // decoded so far, all at or behind i
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(v) || !isHex(v[i+1]) || !isHex(v[i+2]) {
				return nil, errBadEscape
			}
			c = unhex(v[i+1])<<4 | unhex(v[i+2])
			i += 2
		}
		v[n] = c
		n++
	}
	return v[:n], nil
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

package slack

import "bytes"

// trimMessage appends to dst payload, the JSON object of a block_actions
// callback, with its "message" cut down to the message's "ts" and "text".
// The rest of the message, its blocks, is most of a payload: what the
// bridge posted, which it never reads back. Cut out before decoding, it is
// skipped once, by a scan that looks for little more than quotes and
// brackets, where encoding/json reads it twice (validating, then
// skipping). A payload it can't walk is appended as it is, for
// json.Unmarshal to judge.
func trimMessage(dst, payload []byte) []byte {
	out := dst
	from := 0 // payload[from:] is not yet in out
	ok := members(payload, func(key []byte, start, end int) bool {
		if !isKey(key, "message") || payload[start] != '{' {
			return true
		}
		out = append(out, payload[from:start]...)
		out = append(out, '{')
		msg := payload[start:end]
		if !members(msg, func(key []byte, start, end int) bool {
			if !plainKey(key) || isKey(key, "ts") || isKey(key, "text") {
				if out[len(out)-1] != '{' {
					out = append(out, ',')
				}
				out = append(out, key...)
				out = append(out, ':')
				out = append(out, msg[start:end]...)
			}
			return true
		}) {
			return false
		}
		out = append(out, '}')
		from = end
		return true
	})
	if !ok {
		return append(dst, payload...)
	}
	return append(out, payload[from:]...)
}

// isKey reports whether key, quoted, is name as encoding/json matches a
// struct field's name: regardless of case.
func isKey(key []byte, name string) bool {
	return len(key) == len(name)+2 && bytes.EqualFold(key[1:len(key)-1], []byte(name))
}

// plainKey reports whether key, quoted, is plain ASCII, with no escape:
// whether isKey can tell every field name it matches. Any other key is
// kept.
func plainKey(key []byte) bool {
	for _, c := range key[1 : len(key)-1] {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// members walks obj, a JSON object, and calls f with each member's key,
// quoted as it is written, and where its value starts and ends in obj. It
// returns false when obj is not an object as far as it can tell, or when
// f does.
func members(obj []byte, f func(key []byte, start, end int) bool) bool {
	s := scanner{b: obj}
	if !s.next('{') {
		return false
	}
	for first := true; !s.next('}'); first = false {
		if !first && !s.next(',') {
			return false
		}
		key, ok := s.str()
		if !ok || !s.next(':') {
			return false
		}
		s.space()
		start := s.i
		if !s.value() || !f(key, start, s.i) {
			return false
		}
	}
	s.space()
	return s.i == len(obj)
}

// scanner walks JSON text without decoding it: enough to find where a
// value ends. It checks the brackets and the strings, not the rest.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and c, if c is next.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str skips white space and a string, and returns the string, quotes and
// escapes as they are.
func (s *scanner) str() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	s.i++
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return nil, false
		}
		s.i += j + 1
		// A quote after an odd number of backslashes is escaped.
		n := 0
		for k := s.i - 2; k > start && s.b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return s.b[start:s.i], true
		}
	}
}

// value skips white space and one value.
func (s *scanner) value() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		var stack [32]byte
		open := stack[:0] // the brackets to close, innermost last
		for s.i < len(s.b) {
			switch c := s.b[s.i]; c {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{':
				open = append(open, '}')
			case '[':
				open = append(open, ']')
			case '}', ']':
				if len(open) == 0 || open[len(open)-1] != c {
					return false
				}
				open = open[:len(open)-1]
				if len(open) == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i // a number, true, false or null
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

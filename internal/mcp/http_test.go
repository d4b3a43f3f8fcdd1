package mcpserver

import "testing"

// A POST whose call ended, taking its entry out, as its client went away
// is nothing to end: posted must not expect the entry.
func TestPostedAfterItsCallEnded(t *testing.T) {
	h := NewHTTP(HTTPOptions{Bridge: "http://127.0.0.1:1"})
	s := &session{posts: map[string]*post{}}
	h.posted(s, "gone-with-its-call", true)
	if len(s.posts) != 0 {
		t.Errorf("posts = %v, want none", s.posts)
	}
}

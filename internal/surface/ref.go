package surface

import (
	"errors"
	"strconv"
	"strings"
)

// Verbs of the controls askbridge puts in chat messages and forms. Each
// control carries a Ref back (Slack's action_id or callback_id, Discord's
// custom_id): the verb, the request id and, where it matters, the question
// and option indexes. Labels never travel: they can be longer than a
// platform lets a value be, and an index into the stored request can't be
// forged into a label it doesn't have.
const (
	VerbPick    = "pick"    // button of one option: answers at once
	VerbSelect  = "select"  // select of one option: answers at once
	VerbMulti   = "multi"   // checkboxes or multi-select in a message: state only
	VerbSubmit  = "submit"  // submits the message's multi-select state
	VerbAnswer  = "answer"  // opens the form holding every question
	VerbOther   = "other"   // opens the free-text form of one question
	VerbDismiss = "dismiss" // dismisses the request
	VerbAllow   = "allow"   // allows an approval once
	VerbReject  = "reject"  // opens the reject form of an approval
	VerbLink    = "link"    // asks for a personal web link (see Links.ForPerson)
	VerbDraft   = "draft"   // opens a refused form again, filled as it was sent
)

const refPrefix = "ab"

// Ref is what a control carries back: "ab:pick:<id>:<q>:<o>", and
// ":<tag>" when tagged, at most 2+1+7+1+64+1+2+1+3+1+8 < 100 characters
// (Discord's custom_id limit).
type Ref struct {
	Verb string
	ID   string // request id
	Q, O int    // question and option indexes
	// Tag is the start of the hash of the request the control was made
	// for (see HashTag), or "". A request discarded (its post's reply
	// lost) can be created again under its tool_call_id, and so its id,
	// asking something else; the indexes of a control on the first one's
	// message mean nothing for the second, and the tag tells them apart.
	Tag string
}

// tagLen is a Tag's length: 32 bits of the hash, enough to tell two
// requests under one id apart.
const tagLen = 8

// HashTag is the Tag of a control made for a request of hash, or "" for
// a request without one.
func HashTag(hash string) string {
	if len(hash) < tagLen {
		return ""
	}
	return hash[:tagLen]
}

// Fits reports whether the control was made for a request of hash, as far
// as it tells: an untagged one (made by an earlier version) fits any.
func (r Ref) Fits(hash string) bool {
	return r.Tag == "" || strings.HasPrefix(hash, r.Tag)
}

func (r Ref) String() string {
	s := strings.Join([]string{refPrefix, r.Verb, r.ID, strconv.Itoa(r.Q), strconv.Itoa(r.O)}, ":")
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	return s
}

// ErrNotOurs is ParseRef's error for a control askbridge did not make.
var ErrNotOurs = errors.New("not an askbridge control")

// ParseRef reads a Ref back.
func ParseRef(s string) (Ref, error) {
	p := strings.Split(s, ":")
	if len(p) < 5 || len(p) > 6 || p[0] != refPrefix || p[1] == "" || !validID(p[2]) {
		return Ref{}, ErrNotOurs
	}
	q, err1 := strconv.Atoi(p[3])
	o, err2 := strconv.Atoi(p[4])
	if err1 != nil || err2 != nil || q < 0 || o < 0 {
		return Ref{}, ErrNotOurs
	}
	r := Ref{Verb: p[1], ID: p[2], Q: q, O: o}
	if len(p) == 6 {
		if !validTag(p[5]) {
			return Ref{}, ErrNotOurs
		}
		r.Tag = p[5]
	}
	return r, nil
}

// validTag accepts what HashTag makes: tagLen lowercase hex digits.
func validTag(t string) bool {
	if len(t) != tagLen {
		return false
	}
	for _, c := range t {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// validID accepts what the store's ids look like: short, lowercase base32.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

package discord

import (
	"errors"
	"strconv"
	"strings"
)

// Verbs of the controls askbridge puts in messages and modals. Each
// control's custom_id (a modal's too) is a ref: the verb, the request id
// and, where it matters, the question and option indexes. Labels never
// travel: they can be longer than a custom_id or a select value may be, and
// an index into the stored request can't be forged into a label it doesn't
// have. A ref is at most 2+1+7+1+64+1+2+1+3 < 100 characters.
const (
	verbPick    = "pick"    // button of one option: answers at once
	verbSelect  = "select"  // string select in a message: answers at once
	verbAnswer  = "answer"  // opens the modal of the whole request
	verbOther   = "other"   // opens the free-text modal of one question
	verbDismiss = "dismiss" // dismisses the request
	verbAllow   = "allow"   // allows an approval once
	verbReject  = "reject"  // opens the reject modal of an approval
)

const refPrefix = "ab"

// ref is what a control carries back: "ab:pick:<id>:<q>:<o>".
type ref struct {
	verb string
	id   string
	q, o int
}

func (r ref) String() string {
	return strings.Join([]string{refPrefix, r.verb, r.id, strconv.Itoa(r.q), strconv.Itoa(r.o)}, ":")
}

var errNotOurs = errors.New("not an askbridge control")

func parseRef(s string) (ref, error) {
	p := strings.Split(s, ":")
	if len(p) != 5 || p[0] != refPrefix || p[1] == "" || !validID(p[2]) {
		return ref{}, errNotOurs
	}
	q, err1 := strconv.Atoi(p[3])
	o, err2 := strconv.Atoi(p[4])
	if err1 != nil || err2 != nil || q < 0 || o < 0 {
		return ref{}, errNotOurs
	}
	return ref{verb: p[1], id: p[2], q: q, o: o}, nil
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

// custom_ids of modal fields: "q<i>" holds question i's text, "q<i>p<k>"
// the k-th select (25 options each) of its options, "q<i>o" its optional
// free text beside options; "note" a rejection's reason.
func textField(i int) string         { return "q" + strconv.Itoa(i) }
func selectField(i, part int) string { return "q" + strconv.Itoa(i) + "p" + strconv.Itoa(part) }
func otherField(i int) string        { return "q" + strconv.Itoa(i) + "o" }

const noteField = "note"

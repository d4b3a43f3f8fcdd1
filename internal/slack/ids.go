package slack

import (
	"errors"
	"strconv"
	"strings"
)

// Verbs of the controls askbridge puts in messages and modals. Each
// control's action_id (a modal's callback_id) is a ref: the verb, the
// request id and, where it matters, the question and option indexes. Labels
// never travel: they can be longer than Slack lets a value be, and an index
// into the stored request can't be forged into a label it doesn't have.
const (
	verbPick    = "pick"    // button of one option: answers at once
	verbSelect  = "select"  // static select of one option: answers at once
	verbMulti   = "multi"   // checkboxes or multi-select in a message: state only
	verbSubmit  = "submit"  // submits the message's multi-select state
	verbAnswer  = "answer"  // opens the modal holding every question
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

// Block ids of modal inputs: "q<i>" holds question i's choice or text,
// "q<i>o" its optional free text beside options; "note" a rejection's
// reason. Every input element's action_id is inputAction.
const inputAction = "v"

func choiceBlock(i int) string { return "q" + strconv.Itoa(i) }
func otherBlock(i int) string  { return "q" + strconv.Itoa(i) + "o" }

const noteBlock = "note"

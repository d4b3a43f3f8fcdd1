package discord

import (
	"strconv"
)

// custom_ids of modal fields: "q<i>" holds question i's text, "q<i>p<k>"
// the k-th select (25 options each) of its options, "q<i>o" its optional
// free text beside options; "note" a rejection's reason.
func textField(i int) string         { return "q" + strconv.Itoa(i) }
func selectField(i, part int) string { return "q" + strconv.Itoa(i) + "p" + strconv.Itoa(part) }
func otherField(i int) string        { return "q" + strconv.Itoa(i) + "o" }

const noteField = "note"

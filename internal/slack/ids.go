package slack

import (
	"strconv"
)

// Block ids of modal inputs: "q<i>" holds question i's choice or text,
// "q<i>o" its optional free text beside options; "note" a rejection's
// reason. Every input element's action_id is inputAction.
const inputAction = "v"

func choiceBlock(i int) string { return "q" + strconv.Itoa(i) }
func otherBlock(i int) string  { return "q" + strconv.Itoa(i) + "o" }

const noteBlock = "note"

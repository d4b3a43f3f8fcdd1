package slack

import (
	"encoding/json"
	"strings"
	"testing"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// TestModalFieldRequired: a text field is required as input.required says
// and, with no input to say, when its question is the request's only one;
// a blank required field is refused beside it, a blank optional one skips
// its question.
func TestModalFieldRequired(t *testing.T) {
	free := func(id string) seam.Question { return seam.Question{ID: id, Question: id + "?"} }
	typed := func(id string, required bool) seam.Question {
		return seam.Question{ID: id, Question: id + "?", Input: &seam.Input{Type: seam.InputInteger, Required: required}}
	}
	for _, tc := range []struct {
		name     string
		qs       []seam.Question
		required []bool
	}{
		{"a lone question", []seam.Question{free("a")}, []bool{true}},
		{"a lone typed question, required", []seam.Question{typed("a", true)}, []bool{true}},
		{"a lone typed question, optional", []seam.Question{typed("a", false)}, []bool{false}},
		{"several", []seam.Question{free("a"), typed("b", true), typed("c", false)}, []bool{false, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := questionRecord(tc.qs...)
			v := answerModal(rec, origin{})
			blank := viewValues{}
			for i := range tc.qs {
				var in *slackapi.InputBlock
				for _, b := range v.Blocks.BlockSet {
					if ib, ok := b.(*slackapi.InputBlock); ok && ib.BlockID == choiceBlock(i) {
						in = ib
					}
				}
				if in == nil || in.Optional == tc.required[i] {
					t.Errorf("question %d: its field is required %v, want %v", i, in != nil && !in.Optional, tc.required[i])
				}
				blank[choiceBlock(i)] = map[string]slackapi.BlockAction{inputAction: {Value: "  "}}
			}
			a, errs := answerFrom(rec.Questions, blank, surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID})
			for i := range tc.qs {
				if (errs[choiceBlock(i)] != "") != tc.required[i] {
					t.Errorf("question %d sent blank: errors %v, want one only when required", i, errs)
				}
			}
			if errs != nil {
				return
			}
			norm, err := rec.Questions.Normalize(a)
			got, _ := json.Marshal(norm)
			if err != nil || strings.Contains(string(got), "custom") {
				t.Errorf("blank optional fields gave %s, %v; want every question skipped", got, err)
			}
		})
	}
}

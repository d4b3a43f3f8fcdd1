package surface

import (
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/seam"
)

func TestEmptyAnswer(t *testing.T) {
	opts := []seam.Option{{Label: "a"}, {Label: "b"}}
	lone := []seam.Question{{ID: "q", Question: "Which?", Options: opts}}
	item := func(selected []string, custom string) seam.Answer {
		return seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: selected, Custom: custom}}}
	}
	for _, tc := range []struct {
		name  string
		qs    []seam.Question
		a     seam.Answer
		empty bool
	}{
		{"nothing chosen", lone, item([]string{}, ""), true},
		{"only spaces written", lone, item(nil, "  "), true},
		{"no item at all", lone, seam.Answer{}, true},
		{"an option", lone, item([]string{"a"}, ""), false},
		{"text instead", lone, item(nil, "c"), false},
		{"no options: TextRequired's", []seam.Question{{ID: "q", Question: "Why?"}}, item(nil, ""), false},
		{"two questions may skip", []seam.Question{lone[0], {ID: "r", Question: "Also?", Options: opts}}, item(nil, ""), false},
	} {
		if got := EmptyAnswer(tc.qs, tc.a); got != tc.empty {
			t.Errorf("%s: EmptyAnswer = %v, want %v", tc.name, got, tc.empty)
		}
	}
}

func TestNoFence(t *testing.T) {
	for _, in := range []string{"```", "````", "``````", "a``b", "x ``` y ```` z"} {
		got := NoFence(in)
		if strings.Contains(got, "``") || strings.ReplaceAll(got, "\u200b", "") != in {
			t.Errorf("NoFence(%q) = %q: two backticks side by side, or more than zero-width spaces added", in, got)
		}
	}
	if got := NoFence("`one` and ``"); got != "`one` and `\u200b`" {
		t.Errorf("NoFence = %q", got)
	}
}

package surface

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

func TestStatusLine(t *testing.T) {
	at := time.Date(2026, 3, 4, 14, 3, 0, 0, time.UTC)
	qs := &seam.Questions{Questions: []seam.Question{
		{ID: "env", Header: "Environment", Question: "Where?", Options: []seam.Option{{Label: "staging"}, {Label: "prod"}}},
		{ID: "why", Question: "Why?"},
	}}
	one := &seam.Questions{Questions: qs.Questions[:1]}
	dry := seam.Question{ID: "dry", Header: "Dry run", Question: "Dry run first?", Input: &seam.Input{Type: seam.InputBoolean}}
	yn := &seam.Questions{Questions: []seam.Question{dry}}
	yns := &seam.Questions{Questions: []seam.Question{dry, qs.Questions[1]}}
	ada := &pending.Responder{Surface: "slack", UserID: "U1", Name: "Ada <x>"}
	f := Format{Escape: func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") }, Surface: "slack"}
	for _, tc := range []struct {
		name string
		rec  pending.Record
		want string
		late string
	}{
		{"one answer", pending.Record{Status: seam.StatusAnswered, Questions: one, ResolvedBy: ada, ResolvedAt: at,
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "env", Selected: []string{"prod"}}}}},
			"Answered by Ada &lt;x> · prod · 2026-03-04 14:03 UTC", "Already answered by Ada &lt;x> · prod"},
		{"several answers, custom text, a skip; each by its header, else its question", pending.Record{Status: seam.StatusAnswered, Questions: qs, ResolvedBy: ada, ResolvedAt: at,
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "env", Selected: []string{}}, {ID: "why", Custom: "it is\n<late>"}}}},
			"Answered by Ada &lt;x> · Environment: skipped; Why?: “it is &lt;late>” · 2026-03-04 14:03 UTC", ""},
		{"answered elsewhere", pending.Record{Status: seam.StatusAnswered, Questions: one, ResolvedAt: at,
			ResolvedBy: &pending.Responder{Surface: "discord", Name: "bo"},
			Answer:     &seam.Answer{Answers: []seam.AnswerItem{{ID: "env", Selected: []string{"staging"}, Custom: "and prod"}}}},
			"Answered by bo via discord · staging + “and prod” · 2026-03-04 14:03 UTC", ""},
		{"a boolean field's answer, as the form labels it", pending.Record{Status: seam.StatusAnswered, Questions: yn, ResolvedBy: ada, ResolvedAt: at,
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "dry", Custom: "false"}}}},
			"Answered by Ada &lt;x> · No · 2026-03-04 14:03 UTC", "Already answered by Ada &lt;x> · No"},
		{"a boolean field among others; a text field's true stays text", pending.Record{Status: seam.StatusAnswered, Questions: yns, ResolvedBy: ada, ResolvedAt: at,
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "dry", Custom: "yes"}, {ID: "why", Custom: "true"}}}},
			"Answered by Ada &lt;x> · Dry run: Yes; Why?: “true” · 2026-03-04 14:03 UTC", ""},
		{"number fields' answers, as numbers; a text field's stays quoted", pending.Record{Status: seam.StatusAnswered, ResolvedBy: ada, ResolvedAt: at,
			Questions: &seam.Questions{Questions: []seam.Question{
				{ID: "n", Header: "Replicas", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger}},
				{ID: "r", Header: "Ratio", Question: "Which ratio?", Input: &seam.Input{Type: seam.InputNumber}},
				{ID: "t", Header: "Ticket", Question: "Ticket?", Input: &seam.Input{Type: seam.InputString}}}},
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "n", Custom: "3"}, {ID: "r", Custom: "0.5"}, {ID: "t", Custom: "42"}}}},
			"Answered by Ada &lt;x> · Replicas: 3; Ratio: 0.5; Ticket: “42” · 2026-03-04 14:03 UTC", ""},
		{"allowed", pending.Record{Status: seam.StatusAnswered, ResolvedBy: ada, ResolvedAt: at, Decision: &seam.Decision{Outcome: seam.OutcomeAllowedOnce}},
			"Allowed once by Ada &lt;x> · 2026-03-04 14:03 UTC", "Already allowed once by Ada &lt;x>"},
		{"rejected", pending.Record{Status: seam.StatusAnswered, ResolvedBy: ada, ResolvedAt: at, Decision: &seam.Decision{Outcome: seam.OutcomeRejected, Note: "no"}},
			"Rejected by Ada &lt;x> · “no” · 2026-03-04 14:03 UTC", "Already rejected by Ada &lt;x> · “no”"},
		{"cancelled", pending.Record{Status: seam.StatusCancelled, ResolvedAt: at}, "Cancelled by the agent · 2026-03-04 14:03 UTC", "Already cancelled by the agent"},
		{"dismissed", pending.Record{Status: seam.StatusDismissed, ResolvedBy: ada, ResolvedAt: at}, "Dismissed by Ada &lt;x> · 2026-03-04 14:03 UTC", "Already dismissed by Ada &lt;x>"},
		{"expired", pending.Record{Status: seam.StatusExpired, ResolvedAt: at}, "Expired unanswered · 2026-03-04 14:03 UTC", "Already expired unanswered"},
		{"pending", pending.Record{Status: seam.StatusPending}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatusLine(&tc.rec, f); got != tc.want {
				t.Errorf("StatusLine = %q\nwant         %q", got, tc.want)
			}
			if tc.late != "" {
				if got := LateReply(&tc.rec, f); got != tc.late {
					t.Errorf("LateReply = %q, want %q", got, tc.late)
				}
			}
		})
	}
}

// A surface that lists the answers (Listed) leaves several out of its
// line, not one or a decision's note.
func TestStatusLineListed(t *testing.T) {
	at := time.Date(2026, 3, 4, 14, 3, 0, 0, time.UTC)
	qs := &seam.Questions{Questions: []seam.Question{
		{ID: "n", Header: "Replicas", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger}},
		{ID: "why", Question: "Why?"},
	}}
	ada := &pending.Responder{Name: "Ada"}
	f := Format{Listed: true}
	for _, tc := range []struct {
		name string
		rec  pending.Record
		want string
	}{
		{"several answers", pending.Record{Status: seam.StatusAnswered, Questions: qs, ResolvedBy: ada, ResolvedAt: at,
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "n", Custom: "3"}, {ID: "why", Custom: "load"}}}},
			"Answered by Ada · 2026-03-04 14:03 UTC"},
		{"one answer", pending.Record{Status: seam.StatusAnswered, Questions: &seam.Questions{Questions: qs.Questions[:1]}, ResolvedBy: ada, ResolvedAt: at,
			Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "n", Custom: "3"}}}},
			"Answered by Ada · 3 · 2026-03-04 14:03 UTC"},
		{"a decision's note", pending.Record{Status: seam.StatusAnswered, ResolvedBy: ada, ResolvedAt: at, Decision: &seam.Decision{Outcome: seam.OutcomeRejected, Note: "no"}},
			"Rejected by Ada · “no” · 2026-03-04 14:03 UTC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatusLine(&tc.rec, f); got != tc.want {
				t.Errorf("StatusLine = %q\nwant         %q", got, tc.want)
			}
		})
	}
}

// Shown relabels a boolean field's answer for people; the answer the
// agent gets keeps its value.
func TestShownKeepsTheAnswer(t *testing.T) {
	qs := &seam.Questions{Questions: []seam.Question{{ID: "dry", Question: "Dry run?", Input: &seam.Input{Type: seam.InputBoolean}}}}
	a := &seam.Answer{Answers: []seam.AnswerItem{{ID: "dry", Custom: "true"}}}
	if got := Shown(qs, a).Answers[0]; len(got.Selected) != 1 || got.Selected[0] != "Yes" || got.Custom != "" {
		t.Errorf("shown as %+v, want Yes chosen", got)
	}
	if got := a.Answers[0]; got.Custom != "true" || len(got.Selected) != 0 {
		t.Errorf("the answer became %+v", got)
	}
}

func TestSummaryIsBounded(t *testing.T) {
	rec := &pending.Record{Status: seam.StatusAnswered, Questions: &seam.Questions{Questions: []seam.Question{{ID: "q"}}},
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Custom: strings.Repeat("x", seam.MaxCustomLen)}}}}
	if n := Len(Summary(rec)); n > MaxSummary {
		t.Errorf("summary %d long", n)
	}
}

// A status line that must take little room (Format.SummaryLen) cuts the
// answer's summary, before escaping it; the rest of the line stays.
func TestStatusLineWithAShortSummary(t *testing.T) {
	at := time.Date(2026, 3, 4, 14, 3, 0, 0, time.UTC)
	rec := &pending.Record{Status: seam.StatusAnswered, Questions: &seam.Questions{Questions: []seam.Question{{ID: "q"}}},
		ResolvedBy: &pending.Responder{Name: "ada"}, ResolvedAt: at,
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Custom: strings.Repeat("<", 100)}}}}
	f := Format{Escape: func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") }, SummaryLen: 10}
	if got, want := StatusLine(rec, f), "Answered by ada · “"+strings.Repeat("&lt;", 8)+"… · 2026-03-04 14:03 UTC"; got != want {
		t.Errorf("StatusLine = %q\nwant         %q", got, want)
	}
}

func TestCutAndSplit(t *testing.T) {
	esc := func(s string) string { return strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(s) }
	s := strings.Repeat("line with <tags> & 😀 emoji\n", 500)
	pieces := Split(s, 100, esc)
	if strings.Join(pieces, "") != s {
		t.Fatal("the pieces do not add up to the text")
	}
	for i, p := range pieces {
		if n := Len(esc(p)); n > 100 {
			t.Fatalf("piece %d is %d long escaped", i, n)
		}
		if i < len(pieces)-1 && !strings.HasSuffix(p, "\n") && !strings.HasSuffix(p, " ") {
			t.Errorf("piece %d breaks inside a word: %q", i, p)
		}
	}
	for _, tc := range []struct {
		max        int
		head, rest string
	}{
		{7, "a&b", ""}, // escaped, exactly 7 long
		{6, "a&", "b"},
		{1, "a", "&b"}, // no room for the escaped &
	} {
		if head, rest := Cut("a&b", tc.max, esc); head != tc.head || rest != tc.rest {
			t.Errorf("Cut(a&b, %d) = %q, %q; want %q, %q", tc.max, head, rest, tc.head, tc.rest)
		}
	}
	if got := Truncate("héllo wörld", 6); got != "héllo…" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("😀😀😀", 5); got != "😀😀…" || Len(got) != 5 {
		t.Errorf("Truncate by UTF-16 = %q (%d)", got, Len(got))
	}
	// No word shown cut where a space lies in the last quarter.
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"Migrate the production database in place", 39, "Migrate the production database in…"},
		{"Migrate the production database in place", 33, "Migrate the production database…"},
		{"Migrate the production database in place", 20, "Migrate the product…"}, // "Migrate the" is 11 of 19: the last quarter starts at 14, so cut
		{"Migrate the production database in place", 14, "Migrate the…"},         // 11 of 13
		{"Supercalifragilistic expialidocious", 12, "Supercalifr…"},              // no space: cut
		{"a b  c", 5, "a b…"}, // spaces before the cut are dropped
		{"What should the release branch for the Q3 hotfix be?", 45, "What should the release branch for the Q3…"},
	} {
		if got := Truncate(tc.s, tc.max); got != tc.want || Len(got) > tc.max {
			t.Errorf("Truncate(%q, %d) = %q; want %q", tc.s, tc.max, got, tc.want)
		}
	}
	notShown := func(rest string) string { return fmt.Sprintf("\n… (%d more characters not shown)", Len(rest)) }
	head, note, rest := Shorten(strings.Repeat("&", 1000), 200, esc, notShown)
	if fit := head + note; Len(fit) > 200 || !strings.Contains(fit, "more characters not shown") || note != notShown(rest) {
		t.Errorf("Shorten = %q (%d)", fit, Len(fit))
	}
	if head, note, rest := Shorten("short", 200, esc, notShown); head != "short" || note != "" || rest != "" {
		t.Errorf("Shorten of a short text = %q, %q, %q", head, note, rest)
	}
}

func TestPrimary(t *testing.T) {
	opts := []seam.Option{{Label: "a"}, {Label: "b (Recommended)"}, {Label: "c"}}
	if got := Primary(seam.Question{Options: opts}); got != 1 {
		t.Errorf("Primary = %d, want the recommended option", got)
	}
	plan := seam.Question{Options: opts, Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "c"}}
	if got := Primary(plan); got != 2 {
		t.Errorf("Primary of a plan review = %d, want its approve label", got)
	}
	if got := Primary(seam.Question{Options: opts[:1]}); got != -1 {
		t.Errorf("Primary without a recommendation = %d", got)
	}
}

// An escape that depends on what follows a rune (Discord's "](") is
// measured on the head as a whole: the head never exceeds max escaped.
func TestCutWithAContextualEscape(t *testing.T) {
	esc := func(s string) string { return strings.ReplaceAll(s, "](", "]\u200b(") }
	s := strings.Repeat("[a](b) ", 100)
	for max := 1; max < 80; max++ {
		head, rest := Cut(s, max, esc)
		if head+rest != s {
			t.Fatalf("Cut(%d): the parts do not add up", max)
		}
		if n := Len(esc(head)); n > max {
			t.Errorf("Cut(%d): head is %d long escaped", max, n)
		}
	}
	for i, p := range Split(strings.Repeat("](", 500), 99, esc) {
		if n := Len(esc(p)); n > 99 {
			t.Errorf("piece %d is %d long escaped", i, n)
		}
	}
}

// TestCutKeepsCodeSpans: Discord's escape leaves code alone, so a prefix
// that cuts a code span open may escape longer than a longer prefix. A
// head that backs off to a space inside a span must still fit.
func TestCutKeepsCodeSpans(t *testing.T) {
	escaper := strings.NewReplacer("@", "@\u200b", "](", "]\u200b(")
	esc := func(s string) string { // as Discord's: outside closed code spans
		parts := strings.Split(s, "`")
		for i, p := range parts {
			if i%2 == 0 || i == len(parts)-1 {
				parts[i] = escaper.Replace(p)
			}
		}
		return strings.Join(parts, "`")
	}
	for _, s := range []string{"@@```](a ((a@(]( `(``] ]", "`@@@@ @@@@` tail", "see [x](y) `a](b @c` then @d"} {
		for max := 1; max < 2*len(s); max++ {
			head, rest := Cut(s, max, esc)
			if head+rest != s {
				t.Fatalf("Cut(%q, %d): the parts do not add up", s, max)
			}
			if n := Len(esc(head)); n > max {
				t.Errorf("Cut(%q, %d): head %q is %d long escaped", s, max, head, n)
			}
		}
	}
}

package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

func TestFromMarkdown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"## Plan\n\n1. Drop the `users_old` table\n2. Migrate **all** rows", "*Plan*\n\n1. Drop the `users_old` table\n2. Migrate *all* rows"},
		{"# Title #", "*Title*"},
		{"####### seven is not a heading", "####### seven is not a heading"},
		{"#hashtag", "#hashtag"},
		{"Apply to __prod__ and **staging**.", "Apply to *prod* and *staging*."},
		{"keep `**this**` as code, **not** this", "keep `**this**` as code, *not* this"},
		{"```\n## inside a fence\n**stays**\n```\n## after", "```\n## inside a fence\n**stays**\n```\n*after*"},
		{"~~~\n## inside a tilde fence\n**stays**\n```\n**still in it**\n~~~\n**out**", "~~~\n## inside a tilde fence\n**stays**\n```\n**still in it**\n~~~\n*out*"},
		{"a ** b ** c", "a ** b ** c"}, // not emphasis
		{"x = 2 ** 10", "x = 2 ** 10"},
		{"snake_case_name and __init__", "snake_case_name and *init*"},
		{"plain text", "plain text"},
		{"Logging__LogLevel__Default=Debug", "Logging__LogLevel__Default=Debug"}, // __ inside a word is not emphasis
		{"(__now__) and __then__.", "(*now*) and *then*."},
		{"## **Steps**", "*Steps*"}, // bold does not nest
		{"## ", "## "},              // no text: not a heading
		{"**a** and **b**", "*a* and *b*"},
		{"__a__ __b__", "*a* *b*"},
		{"x__a__ __b__y", "x__a__ __b__y"},
		{"Apply:\n```go\nfunc f() {}\n```", "Apply:\n```\nfunc f() {}\n```"}, // mrkdwn would show "go"
		{"  ```sh\n**x**\n  ```", "  ```\n**x**\n  ```"},
		{"```a`b\n```", "```a`b\n```"}, // not a fence's info string: left as written
	} {
		if got := fromMarkdown(tc.in); got != tc.want {
			t.Errorf("fromMarkdown(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// A plan's and a reason's Markdown reach the message as mrkdwn.
func TestMarkdownReachesTheMessage(t *testing.T) {
	plan := seam.Question{ID: "p", Question: "Approve the plan?", Detail: "## Steps\n1. Migrate **all** rows",
		Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}, Options: []seam.Option{{Label: "Approve"}, {Label: "Revise"}}}
	for _, rec := range []*pending.Record{
		{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{plan}}},
		{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{plan, {ID: "q", Question: "Why?"}}}},
		{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, Approval: &seam.Approval{ToolName: "migrate", Reason: "## Steps\n1. Migrate **all** rows"}},
	} {
		raw, err := json.Marshal(render(rec, "", true).blocks)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(raw); strings.Contains(s, "**") || strings.Contains(s, "## ") || !strings.Contains(s, "*Steps*") || !strings.Contains(s, "*all*") {
			t.Errorf("%s: Markdown marks shown as typed: %s", rec.Kind, s)
		}
	}
}

package slack

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
)

// sameJSON checks that req encodes by hand to the value encoding/json
// makes of it, and reports whether the hand-written path took all of it.
func sameJSON(t *testing.T, what string, req chatRequest) (fast bool) {
	t.Helper()
	got, err := req.appendJSON(nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(got) { // Go's decoder would mend it; Slack's need not
		t.Errorf("%s: the hand-written JSON is not valid UTF-8", what)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: the hand-written JSON does not parse: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
	_, fast = appendBlocks(nil, req.Blocks)
	return fast
}

func TestChatRequestJSON(t *testing.T) {
	tricky := []string{
		"", "plain", `quotes " and \ backslashes`, "<html> & ampersands", "emoji 👩‍💻 and é",
		"tabs\tand\nnewlines\r", "controls \x00\x01\x1f\x7f", "invalid \xff\xfe UTF-8 \xe2\x82", "separators \u2028 and \u2029",
	}
	for _, s := range tricky {
		blocks := []slackapi.Block{
			slackapi.NewHeaderBlock(plain(s)),
			slackapi.NewSectionBlock(plain(s), []*slackapi.TextBlockObject{mrkdwn(s + " field"), plain(s)}, nil),
			slackapi.NewContextBlock(s, mrkdwn(s), plain(s+" again")),
			slackapi.NewActionBlock("", slackapi.NewButtonBlockElement("b1", "1", plain(s)), slackapi.NewButtonBlockElement("b2", s, plain(s+"2"))),
			slackapi.NewActionBlock("", slackapi.NewButtonBlockElement("b3", "3", plain(s)).WithStyle(slackapi.StyleDanger).WithConfirm(
				slackapi.NewConfirmationBlockObject(plain("Sure?"), plain(s), plain("Yes"), nil))),
			slackapi.NewActionBlock(""),
			&slackapi.ActionBlock{Type: slackapi.MBTAction},
			&slackapi.ContextBlock{Type: slackapi.MBTContext},
			&slackapi.HeaderBlock{Type: slackapi.MBTHeader, Level: 2},
			&slackapi.SectionBlock{Type: slackapi.MBTSection, Expand: true},
			&slackapi.ActionBlock{Type: slackapi.MBTAction, Elements: &slackapi.BlockElements{ElementSet: []slackapi.BlockElement{
				&slackapi.ButtonBlockElement{Text: plain(s), URL: "https://x.example/" + s, AccessibilityLabel: s, VisibleToUserIDs: []string{"U1", s}},
				&slackapi.ButtonBlockElement{Type: slackapi.METButton},
			}}},
		}
		req := chatRequest{Channel: "C1", TS: s, ThreadTS: s, Broadcast: s != "plain", Text: s, Parse: s, Blocks: blocks}
		if !sameJSON(t, "tricky "+s, req) {
			t.Errorf("%q: blocks of the kinds written by hand went through encoding/json", s)
		}
	}
	var nilHeader *slackapi.HeaderBlock
	for _, bl := range []slackapi.Block{nilHeader, (*slackapi.SectionBlock)(nil), (*slackapi.ContextBlock)(nil), (*slackapi.ActionBlock)(nil),
		slackapi.NewActionBlock("", (*slackapi.ButtonBlockElement)(nil))} {
		if sameJSON(t, fmt.Sprintf("a nil in %T", bl), chatRequest{Blocks: []slackapi.Block{bl}}) {
			t.Errorf("a nil in %T was written by hand", bl)
		}
	}
	if sameJSON(t, "an accessory", chatRequest{Blocks: []slackapi.Block{
		slackapi.NewSectionBlock(mrkdwn("x"), nil, slackapi.NewAccessory(slackapi.NewButtonBlockElement("b", "v", plain("x")))),
	}}) {
		t.Error("a section with an accessory was written by hand")
	}

	// Every message the renderer makes, live and ended.
	for name, rec := range extremes() {
		rec.Hash = "11f97202a71009b7c94b7b5867f0abdd"
		for _, live := range []bool{true, false} {
			m := render(rec, "<!subteam^S0123ABC>", live)
			m.carry(rec, "default/0")
			sameJSON(t, name, chatRequest{Channel: "C1", Text: m.text, Blocks: m.blocks})
		}
		for st, e := range ended(rec) {
			m := render(e, "", false)
			if !sameJSON(t, name+", "+st, chatRequest{Channel: "C1", TS: "1.2", Text: m.text, Parse: "none", Blocks: m.blocks}) {
				t.Errorf("%s, %s: an ended message went through encoding/json", name, st)
			}
		}
	}
	// The usual question, as bridge bench asks it, takes the fast path,
	// its buttons' values included.
	bench := benchRecord()
	bench.Hash = "11f97202a71009b7c94b7b5867f0abdd"
	m := render(bench, "", true)
	m.carry(bench, "default/0")
	if !strings.Contains(fmt.Sprint(values(m)), bench.Hash) {
		t.Fatal("the bench's question carries no values")
	}
	if !sameJSON(t, "the bench's question", chatRequest{Channel: "C1", Text: m.text, Blocks: m.blocks}) {
		t.Error("a question with three options went through encoding/json")
	}
}

func FuzzChatRequestJSON(f *testing.F) {
	for _, s := range []string{"plain", `"\`, "<&>", "\xff", "\u2028", "tab\t", "😀"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, q, label string) {
		rec := benchRecord()
		rec.Questions.Questions[0].Question = q
		rec.Questions.Questions[0].Options[0].Label = label
		rec.Hash = "11f97202a71009b7c94b7b5867f0abdd"
		m := render(rec, "", true)
		m.carry(rec, "default/0")
		sameJSON(t, "fuzzed", chatRequest{Channel: "C1", Text: m.text, Blocks: m.blocks})
	})
}

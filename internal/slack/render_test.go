package slack

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// nasty is agent text at its worst: characters that grow when escaped,
// tokens that would ping, a forged link, and characters outside the BMP
// that count twice in UTF-16.
func nasty(n int, seed string) string {
	unit := seed + " <!channel> & <@U1> <https://x.example|y> 😀 "
	var b strings.Builder
	for surface.Len(b.String()) < n {
		b.WriteString(unit)
	}
	s := []rune(b.String())
	for len(s) > 0 && surface.Len(string(s)) > n {
		s = s[:len(s)-1]
	}
	return string(s)
}

func escapeHeavy(n int) string { return strings.Repeat("<&>", n/3) }

func extremeQuestion(i int, opts int, multi bool) seam.Question {
	q := seam.Question{
		ID:          fmt.Sprintf("%02d", i) + strings.Repeat("i", seam.MaxIDLen-2),
		Question:    nasty(seam.MaxQuestionLen, fmt.Sprint("q", i)),
		Header:      nasty(seam.MaxHeaderLen, "h"),
		Detail:      escapeHeavy(seam.MaxDetailLen),
		MultiSelect: multi,
	}
	for o := range opts {
		q.Options = append(q.Options, seam.Option{
			Label:       fmt.Sprintf("%03d ", o) + nasty(seam.MaxLabelLen-4, "l"),
			Description: nasty(seam.MaxDescriptionLen, "d"),
		})
	}
	return q
}

func extremeCaller() *seam.Caller {
	return &seam.Caller{Name: escapeHeavy(seam.MaxCallerFieldLen), Agent: "a", Session: escapeHeavy(seam.MaxCallerFieldLen)}
}

func questionRecord(qs ...seam.Question) *pending.Record {
	now := time.Unix(1700000000, 0)
	return &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending,
		Caller: extremeCaller(), Questions: &seam.Questions{Questions: qs}, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
}

// extremes are requests at every seam limit at once, in every shape.
func extremes() map[string]*pending.Record {
	many := make([]seam.Question, seam.MaxQuestions)
	for i := range many {
		many[i] = extremeQuestion(i, seam.MaxOptions, i%2 == 0)
	}
	plan := extremeQuestion(0, 2, false)
	plan.Options[1].Label = "Approve"
	plan.Intent = &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}
	typed := seam.Question{ID: "n", Question: nasty(seam.MaxQuestionLen, "n"), Detail: nasty(seam.MaxDetailLen, "d"),
		Input: &seam.Input{Type: seam.InputString, Value: nasty(seam.MaxInputValueLen, "v"), Required: true}}
	// As many characters as the API takes, each two in UTF-16.
	typedEmoji := seam.Question{ID: "e", Question: nasty(seam.MaxQuestionLen, "e"),
		Input: &seam.Input{Type: seam.InputString, Value: strings.Repeat("😀", seam.MaxInputValueLen), Required: true}}
	buttons := extremeQuestion(0, maxButtons, false)
	for i := range buttons.Options {
		buttons.Options[i].Label = fmt.Sprintf("%d", i) + nasty(maxButtonText-1, "b")
	}
	out := map[string]*pending.Record{
		"20 questions, 100 options each":  questionRecord(many...),
		"one question, 100 options":       questionRecord(extremeQuestion(0, seam.MaxOptions, false)),
		"one multi-select, 100 options":   questionRecord(extremeQuestion(0, seam.MaxOptions, true)),
		"one multi-select, 10 options":    questionRecord(extremeQuestion(0, maxChoiceOptions, true)),
		"one question, 5 button options":  questionRecord(buttons),
		"plan review":                     questionRecord(plan),
		"typed input":                     questionRecord(typed),
		"typed input of emoji":            questionRecord(typedEmoji),
		"free text without options":       questionRecord(seam.Question{ID: "f", Question: escapeHeavy(seam.MaxQuestionLen)}),
		"two plain questions, no details": questionRecord(seam.Question{ID: "a", Question: "A?"}, seam.Question{ID: "b", Question: "B?"}),
	}
	args, _ := json.Marshal(map[string]string{"blob": escapeHeavy(seam.MaxArgumentsBytes - 100)})
	now := time.Unix(1700000000, 0)
	out["approval"] = &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, Caller: extremeCaller(),
		CreatedAt: now, Approval: &seam.Approval{ToolName: nasty(seam.MaxToolNameLen, "t"), Reason: escapeHeavy(seam.MaxReasonLen),
			DisplayReason: escapeHeavy(seam.MaxReasonLen), Arguments: args}}
	return out
}

// ended returns rec as it looks after each way of ending, at the limits.
func ended(rec *pending.Record) map[string]*pending.Record {
	by := &pending.Responder{Surface: "discord", UserID: "U1", Name: escapeHeavy(maxNameLen)}
	out := map[string]*pending.Record{}
	for _, st := range []seam.Status{seam.StatusAnswered, seam.StatusCancelled, seam.StatusDismissed, seam.StatusExpired} {
		r := *rec
		r.Status, r.ResolvedAt, r.ResolvedBy = st, time.Unix(1700000500, 0), by
		if st == seam.StatusAnswered {
			if r.Kind == seam.KindApproval {
				r.Decision = &seam.Decision{Outcome: seam.OutcomeRejected, Note: escapeHeavy(seam.MaxNoteLen)}
			} else {
				r.Answer = &seam.Answer{}
				for _, q := range r.Questions.Questions {
					it := seam.AnswerItem{ID: q.ID, Custom: escapeHeavy(seam.MaxCustomLen)}
					for _, o := range q.Options {
						it.Selected = append(it.Selected, o.Label)
					}
					r.Answer.Answers = append(r.Answer.Answers, it)
				}
			}
		}
		out[string(st)] = &r
	}
	return out
}

func TestEveryMessageWithinBlockKitLimits(t *testing.T) {
	const mention = "<!subteam^S0123ABC>"
	for name, rec := range extremes() {
		t.Run(name, func(t *testing.T) {
			m := render(rec, mention, true)
			checkMessage(t, "live message", m.text, m.blocks, mention)
			for i, r := range m.replies {
				checkMessage(t, fmt.Sprintf("thread reply %d", i+1), "Continued", r, "")
			}
			for st, e := range ended(rec) {
				fm := render(e, "", false)
				checkMessage(t, st+" message", fm.text, fm.blocks, "")
				if hasControls(fm.blocks) {
					t.Errorf("the %s message still has controls", st)
				}
			}
			o := origin{Channel: "C0123456789", TS: "1700000000.000100", Thread: "1700000000.000001", Text: m.text}
			switch rec.Kind {
			case seam.KindApproval:
				checkModal(t, "reject modal", rejectModal(rec, o))
			default:
				checkModal(t, "answer modal", answerModal(rec, o, shown{}))
				for i, q := range rec.Questions.Questions {
					var all []int // every option ticked
					for n := range q.Options {
						all = append(all, n)
					}
					checkModal(t, fmt.Sprintf("other modal %d", i), otherModal(rec, i, o, all, shown{}))
				}
			}
		})
	}
}

// A header of spaces alone, which the API takes, is no header, as on
// Discord: the message of one question opened with a header block of
// " ", and a question of several was named " : Ship it?" in its message,
// its form and the status line of its answer.
func TestBlankHeaderIsNoHeader(t *testing.T) {
	for _, header := range []string{" ", "\t \n"} {
		one := questionRecord(seam.Question{ID: "go", Header: header, Question: "Ship it?",
			Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}})
		two := questionRecord(seam.Question{ID: "go", Header: header, Question: "Ship it?"}, seam.Question{ID: "why", Question: "Why?"})
		answered := *two
		answered.Status, answered.ResolvedAt = seam.StatusAnswered, time.Unix(1700000500, 0)
		answered.ResolvedBy = &pending.Responder{Surface: surfaceName, UserID: "U1", Name: "eve"}
		answered.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "go", Selected: []string{}, Custom: "yes"}, {ID: "why", Selected: []string{}, Custom: "tests pass"}}}
		views := map[string][]slackapi.Block{
			"the message of one question":  render(one, "", true).blocks,
			"the message of two questions": render(two, "", true).blocks,
			"the answered message":         render(&answered, "", false).blocks,
			"the answer form":              answerModal(two, origin{}, shown{}).Blocks.BlockSet,
			"the Other… form":              otherModal(one, 0, origin{}, nil, shown{}).Blocks.BlockSet,
		}
		for what, blocks := range views {
			for _, b := range blocks {
				if b.BlockType() == slackapi.MBTHeader {
					t.Errorf("header %q: %s has a header block", header, what)
				}
			}
			if text := sentText(jsonBlocks(t, blocks), "\n"); strings.Contains(text, ": Ship it?") || strings.Contains(text, header+": ") {
				t.Errorf("header %q: %s names the question by its blank header:\n%s", header, what, text)
			}
		}
	}
}

func TestLongTextGoesToTheThreadNotLost(t *testing.T) {
	q := seam.Question{ID: "plan", Question: "Approve?", Detail: strings.Repeat("0123456789abcdef\n", 2000),
		Options: []seam.Option{{Label: "Approve"}, {Label: "Keep planning"}}, Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}}
	m := render(questionRecord(q), "", true)
	if len(m.replies) == 0 {
		t.Fatal("a 34,000-character plan did not spill into the thread")
	}
	var all strings.Builder
	for _, blocks := range append([][]slackapi.Block{m.blocks}, m.replies...) {
		for _, b := range blocks {
			if s, ok := b.(*slackapi.SectionBlock); ok && s.Text != nil && s.Text.Type == slackapi.MarkdownType {
				all.WriteString(s.Text.Text)
			}
		}
	}
	if got := strings.Count(all.String(), "0123456789abcdef"); got != 2000 {
		t.Errorf("the message and its replies hold %d of the plan's 2000 lines", got)
	}
}

func hasControls(blocks []slackapi.Block) bool {
	for _, b := range blocks {
		if t := b.BlockType(); t == slackapi.MBTAction || t == slackapi.MBTInput {
			return true
		}
	}
	return false
}

// Block Kit's limits as PLATFORM.md states them, written out here rather
// than taken from the renderer, so that a wrong limit there fails here.
const (
	limitMessageBlocks = 50
	limitModalBlocks   = 100
	limitButtonText    = 75
	limitOptionText    = 75
	limitSelectOptions = 100
	limitChoiceOptions = 10
	limitSectionText   = 3000
	limitHeaderText    = 150
	limitViewTitle     = 24
	limitInputLabel    = 2000
	limitPlaceholder   = 150
	limitInputLength   = 3000
	limitConfirmTitle  = 100
	limitConfirmText   = 300
	// limitViewBytes: Slack refuses a view "greater than 250kb"
	// (view_too_large), read as bytes of the JSON sent.
	limitViewBytes = 250_000
)

// checkMessage checks blocks against every message limit of PLATFORM.md
// and that no mrkdwn text holds a live token other than date tokens and
// the configured mention.
func checkMessage(t *testing.T, what, text string, blocks []slackapi.Block, mention string) {
	t.Helper()
	if text == "" {
		t.Errorf("%s: no top-level text fallback", what)
	}
	if n := surface.Len(text); n > 40000 {
		t.Errorf("%s: text fallback %d long", what, n)
	}
	checkTokens(t, what+" text", text, mention)
	if len(blocks) > limitMessageBlocks {
		t.Errorf("%s: %d blocks, limit %d", what, len(blocks), limitMessageBlocks)
	}
	if n := refTextLen(t, blocks); n > 12000 {
		t.Errorf("%s: %d characters of block text; Slack refuses messages from about 13,000", what, n)
	}
	for _, b := range walkBlocks(t, blocks) {
		if b["type"] == "input" {
			t.Errorf("%s: an input block in a message", what)
		}
		checkBlock(t, what, b, mention)
	}
}

func checkModal(t *testing.T, what string, v slackapi.ModalViewRequest) {
	t.Helper()
	if len(v.Blocks.BlockSet) > limitModalBlocks {
		t.Errorf("%s: %d blocks, limit %d", what, len(v.Blocks.BlockSet), limitModalBlocks)
	}
	// As viewCall sends it (TestViewSentAsMeasured holds it to what the
	// fake receives).
	if raw, err := encodeJSON(v); err != nil || len(raw) > limitViewBytes {
		t.Errorf("%s: %d bytes of view (%v), limit %d", what, len(raw), err, limitViewBytes)
	}
	for name, txt := range map[string]*slackapi.TextBlockObject{"title": v.Title, "submit": v.Submit, "close": v.Close} {
		if txt != nil && (surface.Len(txt.Text) > limitViewTitle || txt.Text == "" || txt.Type != slackapi.PlainTextType) {
			t.Errorf("%s: %s %q", what, name, txt.Text)
		}
	}
	if v.Title == nil {
		t.Errorf("%s: no title", what)
	}
	if n := surface.Len(v.PrivateMetadata); n > 3000 {
		t.Errorf("%s: private_metadata %d long", what, n)
	}
	if n := len(v.CallbackID); n > 255 {
		t.Errorf("%s: callback_id %d long", what, n)
	}
	if !slackapi.ValidateUniqueBlockID(v) {
		t.Errorf("%s: block ids are not unique", what)
	}
	for _, b := range walkBlocks(t, v.Blocks.BlockSet) {
		checkBlock(t, what, b, "")
	}
}

func walkBlocks(t *testing.T, blocks []slackapi.Block) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatalf("blocks do not marshal: %v", err)
	}
	var out []map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func obj(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

func list(m map[string]any, k string) []map[string]any {
	var out []map[string]any
	l, _ := m[k].([]any)
	for _, x := range l {
		if o, ok := x.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

func checkText(t *testing.T, where string, o map[string]any, max int, plainOnly bool, mention string) {
	t.Helper()
	if o == nil {
		t.Errorf("%s: missing text", where)
		return
	}
	s := str(o, "text")
	switch {
	case s == "":
		t.Errorf("%s: empty text", where)
	case surface.Len(s) > max:
		t.Errorf("%s: text %d long, limit %d", where, surface.Len(s), max)
	}
	if typ := str(o, "type"); plainOnly && typ != "plain_text" {
		t.Errorf("%s: text of type %s, want plain_text", where, typ)
	} else if typ == "mrkdwn" {
		checkTokens(t, where, s, mention)
	}
}

// checkTokens fails when mrkdwn text holds a "<" that starts anything but
// a date token or the configured mention: agent text must be escaped.
func checkTokens(t *testing.T, where, s, mention string) {
	t.Helper()
	for i := strings.IndexByte(s, '<'); i >= 0; i = strings.IndexByte(s, '<') {
		rest := s[i:]
		if !strings.HasPrefix(rest, "<!date^") && (mention == "" || !strings.HasPrefix(rest, mention)) {
			t.Errorf("%s: live token in mrkdwn: %.40q", where, rest)
			return
		}
		s = rest[1:]
	}
}

func checkBlock(t *testing.T, what string, b map[string]any, mention string) {
	t.Helper()
	typ := str(b, "type")
	where := what + " " + typ
	if n := len(str(b, "block_id")); n > 255 {
		t.Errorf("%s: block_id %d long", where, n)
	}
	switch typ {
	case "header":
		checkText(t, where, obj(b, "text"), limitHeaderText, true, mention)
	case "section":
		checkText(t, where, obj(b, "text"), limitSectionText, false, mention)
		if f := list(b, "fields"); len(f) > 10 {
			t.Errorf("%s: %d fields", where, len(f))
		}
	case "context":
		els := list(b, "elements")
		if len(els) == 0 || len(els) > 10 {
			t.Errorf("%s: %d elements", where, len(els))
		}
		for _, e := range els {
			checkText(t, where, e, limitSectionText, false, mention)
		}
	case "actions":
		els := list(b, "elements")
		if len(els) == 0 || len(els) > 25 {
			t.Errorf("%s: %d elements", where, len(els))
		}
		for _, e := range els {
			checkElement(t, where, e)
		}
	case "input":
		checkText(t, where+" label", obj(b, "label"), limitInputLabel, true, mention)
		if h := obj(b, "hint"); h != nil {
			checkText(t, where+" hint", h, limitInputLabel, true, mention)
		}
		checkElement(t, where, obj(b, "element"))
	default:
		t.Errorf("%s: a block type rendering does not use", where)
	}
}

func checkElement(t *testing.T, where string, e map[string]any) {
	t.Helper()
	typ := str(e, "type")
	where += " " + typ
	if n := len(str(e, "action_id")); n == 0 || n > 255 {
		t.Errorf("%s: action_id %d long", where, n)
	}
	if p := obj(e, "placeholder"); p != nil {
		checkText(t, where+" placeholder", p, limitPlaceholder, true, "")
	}
	opts := list(e, "options")
	switch typ {
	case "button":
		checkText(t, where, obj(e, "text"), limitButtonText, true, "")
		if n := len(str(e, "value")); n > 2000 {
			t.Errorf("%s: value %d long", where, n)
		}
		if c := obj(e, "confirm"); c != nil {
			checkText(t, where+" confirm title", obj(c, "title"), limitConfirmTitle, true, "")
			checkText(t, where+" confirm text", obj(c, "text"), limitConfirmText, false, "")
			checkText(t, where+" confirm button", obj(c, "confirm"), 30, true, "")
			checkText(t, where+" deny button", obj(c, "deny"), 30, true, "")
		}
	case "static_select", "multi_static_select":
		if len(opts) == 0 || len(opts) > limitSelectOptions {
			t.Errorf("%s: %d options", where, len(opts))
		}
	case "checkboxes", "radio_buttons":
		if len(opts) == 0 || len(opts) > limitChoiceOptions {
			t.Errorf("%s: %d options", where, len(opts))
		}
	case "plain_text_input":
		// A prefill is never cut (it is what a person who changes
		// nothing sends): a field whose prefill is longer than Slack's
		// max_length may count it (UTF-16) has none; any other has one.
		n := surface.Len(str(e, "initial_value"))
		max, ok := e["max_length"].(float64)
		switch {
		case !ok && n <= limitInputLength:
			t.Errorf("%s: no max_length, with an initial_value of %d", where, n)
		case ok && (max <= 0 || max > limitInputLength):
			t.Errorf("%s: max_length %v", where, e["max_length"])
		case ok && float64(n) > max:
			t.Errorf("%s: initial_value %d long, max_length %v", where, n, max)
		}
	default:
		t.Errorf("%s: an element type rendering does not use", where)
	}
	values := map[string]bool{}
	for _, o := range opts {
		checkText(t, where+" option", obj(o, "text"), limitOptionText, false, "")
		if d := obj(o, "description"); d != nil {
			checkText(t, where+" option description", d, limitOptionText, false, "")
		}
		v := str(o, "value")
		if v == "" || len(v) > 75 || values[v] {
			t.Errorf("%s: option value %q empty, too long or repeated", where, v)
		}
		values[v] = true
	}
	for _, in := range list(e, "initial_options") { // Slack refuses one that differs from its option at all
		if !slices.ContainsFunc(opts, func(o map[string]any) bool { return reflect.DeepEqual(o, in) }) {
			t.Errorf("%s: initial option %v is not one of its options", where, in)
		}
	}
}

func TestShapes(t *testing.T) {
	opts := func(labels ...string) []seam.Option {
		var out []seam.Option
		for _, l := range labels {
			out = append(out, seam.Option{Label: l})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		q       seam.Question
		want    []string // element types of the controls, in order
		primary string   // the label of the primary button, if any
	}{
		{"few short options: buttons", seam.Question{Options: opts("No", "Yes (Recommended)")}, []string{"button", "button", "button", "button"}, "Yes (Recommended)"},
		{"many options: select", seam.Question{Options: opts("a", "b", "c", "d", "e", "f")}, []string{"static_select", "button", "button"}, ""},
		{"a long label: select", seam.Question{Options: opts("a", strings.Repeat("x", 76))}, []string{"static_select", "button", "button"}, ""},
		{"multi-select, few: checkboxes", seam.Question{MultiSelect: true, Options: opts("a", "b")}, []string{"checkboxes", "button", "button", "button"}, "Submit"},
		{"multi-select, many: multi-select", seam.Question{MultiSelect: true, Options: opts("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")}, []string{"multi_static_select", "button", "button", "button"}, "Submit"},
		{"free text: answer button", seam.Question{}, []string{"button", "button"}, "Answer…"},
		{"plan review: approve primary", seam.Question{Detail: "plan", Intent: &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Go"}, Options: opts("Keep planning", "Go")}, []string{"button", "button", "button", "button"}, "Go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.ID, tc.q.Question = "q", "Question?"
			var types []string
			primary := ""
			for _, b := range walkBlocks(t, questionControls("abcdefghijklmnop", tc.q, shapeOf(tc.q))) {
				for _, e := range list(b, "elements") {
					types = append(types, str(e, "type"))
					if str(e, "style") == "primary" {
						primary = str(obj(e, "text"), "text")
					}
				}
			}
			if strings.Join(types, " ") != strings.Join(tc.want, " ") {
				t.Errorf("controls %v, want %v", types, tc.want)
			}
			if primary != tc.primary {
				t.Errorf("primary %q, want %q", primary, tc.primary)
			}
		})
	}
}

// TestWideLabelsAreNumbered: a phone shows about 30 characters of a
// button. Labels longer than that, alike at their start, would look the
// same: the buttons carry their numbers and the options are listed whole.
func TestWideLabelsAreNumbered(t *testing.T) {
	labels := []string{"Roll back the deployment to the previous version (Recommended)", "Roll back the deployment and also purge the CDN cache"}
	q := seam.Question{ID: "q", Question: "Which?", Options: []seam.Option{{Label: labels[0]}, {Label: labels[1]}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	blocks := render(rec, "", true).blocks
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, b := range walkBlocks(t, blocks) {
		for _, e := range list(b, "elements") {
			if str(e, "type") == "button" {
				texts = append(texts, str(obj(e, "text"), "text"))
			}
		}
	}
	if len(texts) < 2 || texts[0] != "1. "+labels[0] || texts[1] != "2. "+labels[1] {
		t.Errorf("buttons %q; want them numbered", texts)
	}
	if !strings.Contains(string(raw), "1. "+labels[0]+"\\n2. "+labels[1]) {
		t.Errorf("the options are not listed whole, numbered: %s", raw)
	}
	// Short labels stay as they are.
	q.Options = []seam.Option{{Label: "Yes"}, {Label: "No"}}
	if sh := shapeOf(q); !sh.buttons || sh.numbered || sh.listing {
		t.Errorf("short labels: %+v; want plain buttons", sh)
	}
}

// A CJK character takes about two Latin letters' width, so a button cuts
// CJK labels of half as many characters short: labels a phone can't show
// whole are numbered and listed, as Latin ones are.
func TestWideScriptLabelsAreNumbered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
		wide   bool
	}{
		{"Japanese", []string{"本番環境にデプロイしてステージング環境を削除する", "本番環境にデプロイしてステージング環境を保持する"}, true},
		{"Korean", []string{"프로덕션에 배포하고 스테이징 환경을 삭제합니다", "프로덕션에 배포하고 스테이징 환경을 유지합니다"}, true},
		{"Chinese", []string{"部署到生产环境并删除预发布环境中的全部数据", "部署到生产环境并保留预发布环境中的全部数据"}, true},
		{"fullwidth", []string{"ＤＥＰＬＯＹ　ＴＯ　ＰＲＯＤＵＣＴＩＯＮ　ＮＯＷ", "ＤＥＰＬＯＹ　ＴＯ　ＳＴＡＧＩＮＧ　ＦＩＲＳＴ"}, true},
		{"short Japanese", []string{"はい", "いいえ"}, false},
		{"Latin of the same length", []string{"Deploy and drop staging now", "Deploy and keep staging now"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := seam.Question{ID: "q", Question: "Which?", Options: []seam.Option{{Label: tc.labels[0]}, {Label: tc.labels[1]}}}
			sh := shapeOf(q)
			if !sh.buttons || sh.numbered != tc.wide || sh.listing != tc.wide {
				t.Errorf("labels %q: %+v; want buttons, numbered and listed: %v", tc.labels, sh, tc.wide)
			}
		})
	}
}

func TestRefRoundTrip(t *testing.T) {
	r := surface.Ref{Verb: surface.VerbPick, ID: "abcdefghijklmnop", Q: 19, O: 99}
	got, err := surface.ParseRef(r.String())
	if err != nil || got != r {
		t.Fatalf("surface.ParseRef(%q) = %v, %v", r.String(), got, err)
	}
	if n := len(r.String()); n > 255 {
		t.Errorf("action_id %d long", n)
	}
	for _, bad := range []string{"", "ab:pick", "xx:pick:abc:0:0", "ab:pick:ABC!:0:0", "ab:pick:abc:-1:0", "ab:pick:abc:0:x", "ab::abc:0:0"} {
		if _, err := surface.ParseRef(bad); err == nil {
			t.Errorf("surface.ParseRef(%q) accepted", bad)
		}
	}
}

func TestAnswerFromModal(t *testing.T) {
	qs := &seam.Questions{Questions: []seam.Question{
		{ID: "n", Question: "How many?", Input: &seam.Input{Type: seam.InputNumber}},
		{ID: "b", Question: "Sure?", Input: &seam.Input{Type: seam.InputBoolean}},
		{ID: "o", Question: "Which?", Options: []seam.Option{{Label: "x"}, {Label: "y"}}},
	}}
	text := func(s string) map[string]slackapi.BlockAction {
		return map[string]slackapi.BlockAction{inputAction: {Value: s}}
	}
	r := surface.Ref{Verb: surface.VerbAnswer, ID: "abcdefghijklmnop"}
	_, errs := answerFrom(qs, viewValues{"q0": text("1.5x"), "q1": text("maybe"), "q2": {inputAction: {SelectedOption: slackapi.OptionBlockObject{Value: "7"}}}}, r)
	for _, b := range []string{"q0", "q1", "q2"} {
		if errs[b] == "" {
			t.Errorf("no error on %s: %v", b, errs)
		}
	}
	a, errs := answerFrom(qs, viewValues{"q0": text("1.5"), "q1": text("yes"), "q2": {inputAction: {SelectedOption: slackapi.OptionBlockObject{Value: "1"}}}, "q2o": text("")}, r)
	if errs != nil {
		t.Fatalf("errors %v", errs)
	}
	norm, err := qs.Normalize(a)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(norm)
	if want := `{"answers":[{"id":"n","selected":[],"custom":"1.5"},{"id":"b","selected":[],"custom":"true"},{"id":"o","selected":["y"]}]}`; string(got) != want {
		t.Errorf("answer %s, want %s", got, want)
	}
}

func TestOpenInBrowserLink(t *testing.T) {
	const url = "https://bridge.example.com/r/abcdefghijklmnop?e=1796221208&s=0123456789012345678901234567890123456789abc"
	for name, rec := range extremes() {
		t.Run(name, func(t *testing.T) {
			m := render(rec, "", true)
			before := len(m.blocks)
			m.addLink(url)
			checkMessage(t, "live message with a link", m.text, m.blocks, "")
			found := 0
			for _, bl := range m.blocks {
				if a, ok := bl.(*slackapi.ActionBlock); ok {
					for _, e := range a.Elements.ElementSet {
						if b, ok := e.(*slackapi.ButtonBlockElement); ok && b.URL == url && b.ActionID == openAction {
							found++
						}
					}
				}
			}
			if found != 1 {
				t.Errorf("%d Open in browser buttons", found)
			}
			if len(m.blocks) != before {
				t.Errorf("the link took a block of its own (%d -> %d) though the last row had room", before, len(m.blocks))
			}
		})
	}
	t.Run("too long a URL is left out", func(t *testing.T) {
		m := render(questionRecord(seam.Question{ID: "a", Question: "A?"}), "", true)
		before := textLen(m.blocks...)
		m.addLink("https://x/" + strings.Repeat("a", maxButtonURL))
		if textLen(m.blocks...) != before {
			t.Errorf("a URL over %d characters was added", maxButtonURL)
		}
	})
}

func TestNoLinkWhereRespondersAreLimited(t *testing.T) {
	if !linkable(&config.SlackTarget{Channel: "C1"}) {
		t.Error("a target open to the channel gets no link")
	}
	if linkable(&config.SlackTarget{Channel: "C1", Responders: config.SlackResponders{Groups: []string{"S1"}}}) {
		t.Error("a target with responders gets a link anyone in the channel could answer with")
	}
}

// refTextLen is textLen the slow way, as the check of a message's budget
// the tests trust: decode the blocks' JSON and add up every string under a
// "text" key.
func refTextLen(t *testing.T, blocks []slackapi.Block) int {
	t.Helper()
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) int
	walk = func(v any) int {
		n := 0
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "text" {
					n += surface.Len(s)
				} else {
					n += walk(x)
				}
			}
		case []any:
			for _, x := range v {
				n += walk(x)
			}
		}
		return n
	}
	return walk(v)
}

// textLen scans the blocks' JSON instead of decoding it; it must count
// what decoding counts, escapes, emoji and "text" keys inside strings
// included.
func TestTextLenCountsWhatDecodingCounts(t *testing.T) {
	tricky := []string{
		"plain", `quotes " and \ backslashes`, "<html> & ampersands", "emoji 👩‍💻 and é",
		`a "text":"fake key" inside a string`, "tabs\tand\nnewlines", strings.Repeat("long ", 500),
	}
	for _, s := range tricky {
		blocks := []slackapi.Block{
			slackapi.NewSectionBlock(plain(s), []*slackapi.TextBlockObject{mrkdwn(s + " field")}, nil),
			slackapi.NewContextBlock("", mrkdwn(s), plain(s+" again")),
			slackapi.NewHeaderBlock(plain(s)),
			slackapi.NewSectionBlock(mrkdwn(s), nil, slackapi.NewAccessory(slackapi.NewButtonBlockElement("b", "v", plain(s)))),
			slackapi.NewActionBlock("", slackapi.NewButtonBlockElement("b1", "1", plain(s)), slackapi.NewButtonBlockElement("b2", "2", plain(s+"2"))),
			slackapi.NewActionBlock("", slackapi.NewButtonBlockElement("b3", "3", plain(s)).WithConfirm(
				slackapi.NewConfirmationBlockObject(plain("Sure?"), plain(s), plain("Yes"), plain("No")))),
			slackapi.NewActionBlock("", slackapi.NewButtonBlockElement("ab:pick:x:0:0", "0", plain(s))),
		}
		if got, want := textLen(blocks...), refTextLen(t, blocks); got != want {
			t.Errorf("textLen(%q) = %d; decoding counts %d", s, got, want)
		}
		for _, bl := range blocks {
			if got, want := textLen(bl), refTextLen(t, []slackapi.Block{bl}); got != want {
				t.Errorf("textLen(%s block of %q) = %d; decoding counts %d", bl.BlockType(), s, got, want)
			}
		}
	}
	// Every message the renderer makes, live and ended.
	for name, rec := range extremes() {
		for _, live := range []bool{true, false} {
			blocks := render(rec, "", live).blocks
			if got, want := textLen(blocks...), refTextLen(t, blocks); got != want {
				t.Errorf("%s (live %v): textLen = %d; decoding counts %d", name, live, got, want)
			}
		}
	}
}

// An argument holding ``` must not end the arguments' code block early:
// what follows would be read as mrkdwn.
// TestLongArgumentsAreReadInFull: arguments longer than the message holds
// go on in the thread, and "Allow once" asks first: before, the rest was
// cut ("… N more characters not shown") with nowhere to read it.
func TestLongArgumentsAreReadInFull(t *testing.T) {
	tail := "END-OF-THE-MANIFEST"
	args, _ := json.Marshal(map[string]string{"manifest": strings.Repeat("spec line; ", 600) + tail})
	for _, tc := range []struct {
		name    string
		args    json.RawMessage
		confirm bool
	}{
		{"long", args, true},
		{"short", json.RawMessage(`{"replicas":3}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
				Approval: &seam.Approval{ToolName: "kubectl_apply", Arguments: tc.args}}
			m := render(rec, "", true)
			var confirm bool
			for _, b := range walkBlocks(t, m.blocks) {
				for _, e := range list(b, "elements") {
					if str(obj(e, "text"), "text") == "Allow once" {
						confirm = obj(e, "confirm") != nil
					}
				}
			}
			if confirm != tc.confirm {
				t.Errorf("Allow once asks first: %v; want %v", confirm, tc.confirm)
			}
			replies, _ := json.Marshal(m.replies)
			if got := strings.Contains(string(replies), "Arguments, continued") && strings.Contains(string(replies), tail); got != tc.confirm {
				t.Errorf("the arguments' rest in the thread: %v; want %v", got, tc.confirm)
			}
		})
	}
}

func TestArgumentsKeepTheirCodeBlock(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"cmd": "printf '```' '````' '``````' && rm -rf *build*"})
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Approval: &seam.Approval{ToolName: "bash", Arguments: args}}
	var found bool
	for _, b := range walkBlocks(t, render(rec, "", true).blocks) {
		text := str(obj(b, "text"), "text")
		if !strings.HasPrefix(text, "*Arguments*") {
			continue
		}
		found = true
		if n := strings.Count(text, "```"); n != 2 {
			t.Errorf("%d code fences in %q, want the block's own 2", n, text)
		}
	}
	if !found {
		t.Fatal("no arguments section")
	}
}

// The problem told to a person who clicked quotes the agent's text (a
// header, a label): it is escaped, so it can't forge a link or a mention.
func TestProblemToldIsEscaped(t *testing.T) {
	header := "<https://evil.example|Re-authenticate> <!channel>"
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "q", Header: header, Question: "Which?", Options: []seam.Option{{Label: "a"}, {Label: "b"}}, Input: &seam.Input{Type: seam.InputString, Required: true}}}}}
	_, problem := resolutionOf(rec, click{ref: surface.Ref{Verb: surface.VerbPick, ID: rec.ID, O: 0}})
	if problem == "" {
		t.Fatal("no problem with a required field left empty")
	}
	if strings.ContainsAny(problem, "<>") || !strings.Contains(problem, "&lt;https://evil.example|Re-authenticate&gt;") {
		t.Errorf("problem %q is not escaped", problem)
	}
}

// Bidi controls (embeddings, overrides, isolates) in an agent's or a
// person's text are dropped wherever the surface shows it, as Discord
// drops them: an override would show the rest of its line reversed
// ("Answered by eve · txet"), or an option as another. Their text stays,
// and a label of nothing but them is kept, as Slack refuses an empty text.
// (Until 2026-12-06 they went out as written.)
func TestBidiControlsAreDropped(t *testing.T) {
	const rlo, lri, pdi, lre, pdf = "\u202e", "\u2066", "\u2069", "\u202a", "\u202c"
	noBidi := func(t *testing.T, what string, v any) {
		t.Helper()
		raw, _ := json.Marshal(v)
		if i := strings.IndexFunc(string(raw), surface.IsBidi); i >= 0 {
			t.Errorf("%s holds a bidi control: %s", what, raw[max(0, i-40):min(len(raw), i+40)])
		}
	}
	message := func(t *testing.T, what string, m message) {
		t.Helper()
		checkMessage(t, what, m.text, m.blocks, "")
		noBidi(t, what, map[string]any{"text": m.text, "blocks": m.blocks, "replies": m.replies})
	}
	caller := &seam.Caller{Name: "deploy" + rlo + "bot", Session: "s" + lri + "1"}
	opts := func(n int, desc string) []seam.Option {
		out := []seam.Option{{Label: "Yes " + rlo + "on", Description: desc}, {Label: lre + "No" + pdf}}
		for i := 2; i < n; i++ {
			out = append(out, seam.Option{Label: fmt.Sprintf("%d%s", i, rlo)})
		}
		return out
	}
	q := func(id string, n int, multi bool) seam.Question {
		return seam.Question{ID: id, Header: "Dep" + rlo + "loy", Question: "Ship " + lri + "it" + pdi + " to <@U1>?",
			Detail: "plan " + rlo + "x\n" + strings.Repeat("step "+rlo+"\n", 2000), Options: opts(n, "d"+rlo), MultiSelect: multi}
	}
	o := origin{Channel: "C0123456789", TS: "1700000000.000100"}
	for name, qs := range map[string][]seam.Question{
		"buttons":      {q("q", 2, false)},
		"select":       {q("q", 12, false)},
		"checkboxes":   {q("q", 3, true)},
		"multi-select": {q("q", 12, true)},
		"free text":    {{ID: "q", Header: "H" + rlo, Question: "Why" + rlo + "?", Detail: rlo + "x"}},
		"several":      {q("q", 2, false), q("r", 12, true), {ID: "s", Question: "Why" + rlo + "?", Input: &seam.Input{Type: seam.InputNumber}}},
	} {
		t.Run(name, func(t *testing.T) {
			rec := questionRecord(qs...)
			rec.Caller = caller
			message(t, "the live message", render(rec, "", true))
			message(t, "the short message", renderShort(rec, "", true))
			noBidi(t, "the form", answerModal(rec, o, shown{}))
			checkModal(t, "the form", answerModal(rec, o, shown{}))
			for i := range qs {
				noBidi(t, "Other's form", otherModal(rec, i, o, []int{0}, shown{}))
				checkModal(t, "Other's form", otherModal(rec, i, o, []int{0}, shown{}))
			}
			rec.Status, rec.ResolvedAt = seam.StatusAnswered, time.Unix(1700000500, 0)
			rec.ResolvedBy = &pending.Responder{Surface: surfaceName, UserID: "U1", Name: "eve" + rlo}
			rec.Answer = &seam.Answer{}
			for _, q := range qs {
				rec.Answer.Answers = append(rec.Answer.Answers, seam.AnswerItem{ID: q.ID, Selected: []string{}, Custom: rlo + "text"})
			}
			message(t, "the ended message", render(rec, "", false))
			message(t, "the brief edit", renderBrief(rec, "", false))
			noBidi(t, "a late click's reply", surface.LateReply(rec, statusFormat))
			if st := surface.StatusLine(rec, statusFormat); len(qs) == 1 && !strings.HasPrefix(st, "Answered by eve · “text”") {
				t.Errorf("the status line %q; want the name and the answer, without their controls", st)
			}
		})
	}

	lone := questionRecord(seam.Question{ID: "q", Question: "Which?", Detail: rlo, Options: []seam.Option{{Label: "Yes"}, {Label: rlo}}})
	m := render(lone, "", true)
	checkMessage(t, "a label and a detail of a bidi control alone", m.text, m.blocks, "")
	found := false
	for _, b := range walkBlocks(t, m.blocks) {
		for _, e := range list(b, "elements") {
			if strings.HasPrefix(str(e, "action_id"), "ab:pick:"+lone.ID+":0:1") {
				found = str(obj(e, "text"), "text") == rlo
			}
		}
	}
	if !found {
		t.Errorf("the button of a label of a bidi control alone is missing or blank; want it kept: %+v", m.blocks)
	}

	args, _ := json.Marshal(map[string]string{"cmd": "rm -rf /" + rlo + " tmp", "blob": strings.Repeat("x"+rlo, 3000)})
	approval := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, Caller: caller,
		Approval: &seam.Approval{ToolName: "rm" + rlo, Reason: "why" + rlo, Arguments: args}}
	message(t, "the approval", render(approval, "", true))
	noBidi(t, "Reject's form", rejectModal(approval, o))

	typed := &seam.Questions{Questions: []seam.Question{{ID: "n", Header: rlo + "Replicas", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger}}}}
	_, err := typed.Normalize(seam.Answer{Answers: []seam.AnswerItem{{ID: "n", Custom: "three"}}})
	errs := fieldErrors(typed, viewValues{choiceBlock(0): {}}, err)
	if len(errs) == 0 {
		t.Fatalf("no field error for %v", err)
	}
	noBidi(t, "a field's error", errs)
}

// TestEndedTextAsPosted: an ended request's message shows its text as it
// was posted, whole or short, cut where the post cut it, which its thread
// goes on from: only its intro (without the mention and the expiry), its
// status line and its controls differ. Cut where its own, shorter, intro
// left room, it showed again text its thread holds.
func TestEndedTextAsPosted(t *testing.T) {
	const mention = "<!subteam^S0123ABC>"
	text := func(t *testing.T, m message, drop func(i int, b map[string]any) bool) string {
		t.Helper()
		var kept []map[string]any
		for i, b := range walkBlocks(t, m.blocks) {
			if !drop(i, b) {
				kept = append(kept, b)
			}
		}
		raw, _ := json.Marshal(map[string]any{"blocks": kept, "replies": m.replies})
		return string(raw)
	}
	for name, rec := range extremes() {
		for _, tc := range []struct {
			name   string
			render func(*pending.Record, string, bool) message
		}{{"whole", render}, {"short", renderShort}} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				posted := text(t, tc.render(rec, mention, true), func(i int, b map[string]any) bool {
					return i == 0 || b["type"] == "actions"
				})
				for st, e := range ended(rec) {
					edit := text(t, tc.render(e, mention, false), func(i int, b map[string]any) bool { return i < 2 })
					if edit != posted {
						t.Errorf("%s: the edit's text and thread differ from the post's", st)
					}
				}
			})
		}
	}
}

// TestControlsBesideTheStatusLine: an ended request's message, whose
// status line takes the place of the controls, reserves the room of the
// two that takes more (renderQuestion), and builds the controls only where
// they may be the one: a menu's options. Buttons and checkboxes, at the
// limits, take less room than the status line; a menu may take more.
func TestControlsBesideTheStatusLine(t *testing.T) {
	menuMore := false
	for name, rec := range extremes() {
		if rec.Kind != seam.KindQuestion || len(rec.Questions.Questions) != 1 {
			continue
		}
		q := rec.Questions.Questions[0]
		sh := shapeOf(q)
		n := textLen(questionControls(rec.ID, q, sh)...)
		switch {
		case sh.menu:
			menuMore = menuMore || n > statusReserve
		case n >= statusReserve:
			t.Errorf("%s: its controls take %d, the status line's room is %d", name, n, statusReserve)
		}
	}
	if !menuMore {
		t.Errorf("no menu at the limits takes more room than the status line; the ended message need not measure one")
	}
}

// TestEndedLineUnderTheIntro: how a request ended is the first thing read,
// not small print after a long plan.
func TestEndedLineUnderTheIntro(t *testing.T) {
	q := seam.Question{ID: "q", Question: "Deploy?", Detail: strings.Repeat("A long plan. ", 300), Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusAnswered, Questions: &seam.Questions{Questions: []seam.Question{q}},
		ResolvedAt: time.Unix(1700000500, 0), ResolvedBy: &pending.Responder{Surface: "slack", UserID: "U1", Name: "ada"},
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{"Yes"}}}}}
	blocks := walkBlocks(t, render(rec, "", false).blocks)
	if len(blocks) < 3 || str(blocks[1], "type") != "section" || !strings.HasPrefix(str(obj(blocks[1], "text"), "text"), "Answered by ada · Yes") {
		t.Errorf("the second block is %v; want the ended line, a section", blocks[1])
	}
}

// TestSelectsCarryDescriptions: on a phone a select's sheet covers the
// listing above it, and a form lists nothing: their options carry their
// descriptions (in a message, up to maxDescribed options).
func TestSelectsCarryDescriptions(t *testing.T) {
	q := func(n int) seam.Question {
		q := seam.Question{ID: "r", Question: "Which region?"}
		for i := range n {
			q.Options = append(q.Options, seam.Option{Label: fmt.Sprintf("region-%d", i), Description: fmt.Sprintf("costs $%d/month", i)})
		}
		return q
	}
	described := func(el any) bool {
		raw, _ := json.Marshal(el)
		return strings.Contains(string(raw), `"description":{"type":"plain_text","text":"costs $1/month"`)
	}
	for _, tc := range []struct {
		n    int
		want bool
	}{{12, true}, {maxDescribed, true}, {maxDescribed + 1, false}} {
		if got := described(questionControls("abcdefghijklmnop", q(tc.n), shapeOf(q(tc.n)))); got != tc.want {
			t.Errorf("a message's select of %d options carries descriptions: %v; want %v", tc.n, got, tc.want)
		}
	}
	if !described(choice(q(40), nil)) {
		t.Errorf("a form's select of 40 options carries no descriptions")
	}
}

// TestIntroSkipsABlankSession: a session of white space and control
// characters names nothing, and the intro says no session.
func TestIntroSkipsABlankSession(t *testing.T) {
	rec := &pending.Record{Kind: seam.KindQuestion, Caller: &seam.Caller{Name: "deploy-bot", Session: " \n\x00"}}
	if got := intro(rec, ""); strings.Contains(got, "session") {
		t.Errorf("intro = %q; want no session", got)
	}
}

// TestIntroSaysTheExpiryOnlyWhilePending: an ended request's message does
// not say when it expires (or expired): its ended line says how it ended.
func TestIntroSaysTheExpiryOnlyWhilePending(t *testing.T) {
	rec := &pending.Record{Kind: seam.KindQuestion, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0), ExpiresAt: time.Unix(1700003600, 0)}
	if got := intro(rec, ""); !strings.Contains(got, "expires") {
		t.Errorf("a pending request's intro = %q; want its expiry", got)
	}
	for _, st := range []seam.Status{seam.StatusAnswered, seam.StatusCancelled, seam.StatusExpired, seam.StatusDismissed} {
		rec.Status = st
		if got := intro(rec, ""); strings.Contains(got, "expires") {
			t.Errorf("a request %s: intro = %q; want no expiry", st, got)
		}
	}
}

// The rest of an approval's arguments, posted in the thread to be read in
// full, stays code: as bare mrkdwn Slack would show `*cache*` bold,
// without its asterisks, and the command allowed is not the one read.
func TestArgumentsContinuedStayCode(t *testing.T) {
	cmd := strings.Repeat("echo keep; ", 400) + "rm -rf ./build *cache* ~/old~ `id`"
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Approval: &seam.Approval{ToolName: "bash", Arguments: args}}
	m := render(rec, "", true)
	found := false
	for _, reply := range m.replies {
		for _, b := range walkBlocks(t, reply) {
			text := str(obj(b, "text"), "text")
			i := strings.Index(text, "*cache*")
			if i < 0 {
				continue
			}
			found = true
			if strings.Count(text[:i], "```")%2 != 1 || strings.Count(text, "```")%2 != 0 {
				t.Errorf("the continued arguments are not in a code block: %q", text[max(0, i-80):])
			}
		}
	}
	if !found {
		t.Fatalf("the end of the arguments is not in the thread: %d replies", len(m.replies))
	}
}

// A long plan whose code block is cut between sections (the message's,
// and its thread's) has each part closed and opened again: Slack formats
// each section on its own, and a lone fence shows as text, the code
// beside it as mrkdwn.
func TestPlanCodeBlockCutStaysCode(t *testing.T) {
	var plan strings.Builder
	plan.WriteString("## Steps\n\n1. Apply this patch:\n\n```go\n")
	for range 400 {
		plan.WriteString("func f_x_(p *T) { return *p.next_ptr_ } // line\n")
	}
	plan.WriteString("```\n\n2. Run the tests.\n")
	q := seam.Question{ID: "plan", Question: "Approve the plan?", Detail: plan.String(),
		Options: []seam.Option{{Label: "Approve"}, {Label: "Keep planning"}},
		Intent:  &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true)
	blocks := walkBlocks(t, m.blocks)
	for _, reply := range m.replies {
		blocks = append(blocks, walkBlocks(t, reply)...)
	}
	n, lines := 0, 0
	for _, b := range blocks {
		text := str(obj(b, "text"), "text")
		if str(b, "type") != "section" || !strings.Contains(text, "next_ptr") {
			continue
		}
		n++
		lines += strings.Count(text, "next_ptr")
		if c := strings.Count(text, "```"); c%2 != 0 {
			t.Errorf("section %d holds %d fences: starts %q, ends %q", n, c, text[:40], text[len(text)-40:])
		}
	}
	if n < 3 || lines < 400 {
		t.Fatalf("the plan's code is in %d sections, %d lines of 400; the test wants it cut, and whole", n, lines)
	}
}

// A question of several shortened in the message keeps its code block
// closed too: an open fence shows as three backticks, and the code after
// it as mrkdwn.
func TestShortenedQuestionCodeStaysCode(t *testing.T) {
	var detail strings.Builder
	detail.WriteString("Apply this patch:\n\n```go\n")
	for range 60 {
		detail.WriteString("func f_x_(p *T) { return *p.next_ptr_ } // line\n")
	}
	detail.WriteString("```\n")
	var qs []seam.Question
	for i := range 5 {
		qs = append(qs, seam.Question{ID: fmt.Sprintf("q%d", i), Question: "Apply it?", Detail: detail.String(),
			Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}})
	}
	rec := questionRecord(qs...)
	m := render(rec, "", true)
	n := 0
	for _, b := range walkBlocks(t, m.blocks) {
		text := str(obj(b, "text"), "text")
		if str(b, "type") != "section" || !strings.Contains(text, "next_ptr") {
			continue
		}
		n++
		if c := strings.Count(text, "```"); c%2 != 0 {
			t.Errorf("section %d holds %d fences: ends %q", n, c, text[len(text)-60:])
		}
	}
	if n != len(qs) || len(m.replies) == 0 {
		t.Fatalf("%d sections show the code, %d replies; the test wants each question shortened in the message", n, len(m.replies))
	}
}

// What a message has no room for fills its thread's sections: short
// pieces share one, so text that fits the thread is not cut off there.
func TestSpillsShareThreadSections(t *testing.T) {
	var qs []seam.Question
	for i := range 20 {
		qs = append(qs, seam.Question{ID: fmt.Sprintf("q%d", i), Question: strings.Repeat("Which one? ", 181)[:1990],
			Detail: strings.Repeat("Some context here. ", 60)})
	}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Questions: &seam.Questions{Questions: qs}}
	m := render(rec, "", true)
	var thread strings.Builder
	for _, r := range m.replies {
		for _, b := range walkBlocks(t, r) {
			thread.WriteString(str(obj(b, "text"), "text"))
			els, _ := b["elements"].([]any) // a context block's
			for _, el := range els {
				m, _ := el.(map[string]any)
				thread.WriteString(str(m, "text"))
			}
		}
	}
	if strings.Contains(thread.String(), "too long to post") {
		t.Errorf("20 questions of about 3,100 characters, within the thread's %d sections of %d, are cut off there", maxReplies*replySections, maxSectionText)
	}
	for i := range qs {
		if !strings.Contains(thread.String(), fmt.Sprintf("*Question %d in full:*", i+1)) {
			t.Errorf("question %d is not in the thread", i+1)
		}
	}
}

// A thread that can't hold all a message had no room for ends with a note
// of how many of the request's characters are left out: the text it leaves,
// not the fences that cutting that text's code blocks into sections would
// add.
func TestFullThreadCountsTheTextLeft(t *testing.T) {
	words := strings.Repeat("Some words of context here. ", 1700)
	code := "```\n" + strings.Repeat("x := 1 // a line of code\n", 1500) + "```"
	var qs []seam.Question
	total := 0
	for i := range 20 {
		q := seam.Question{ID: fmt.Sprintf("q%d", i), Question: "Which one?", Detail: words}
		if i >= 2 { // past what the thread holds
			q.Detail = code
		}
		qs = append(qs, q)
		total += surface.Len(questionText(i, q, false))
	}
	m := render(questionRecord(qs...), "", true)
	title := regexp.MustCompile(`(\n\n)?\*Question \d+ in full:\*\n`)
	shown := 0
	for _, r := range m.replies {
		for _, b := range r {
			if s, ok := b.(*slackapi.SectionBlock); ok {
				shown += surface.Len(title.ReplaceAllString(s.Text.Text, ""))
			}
		}
	}
	if len(m.replies) != maxReplies {
		t.Fatalf("%d replies; the test wants a full thread", len(m.replies))
	}
	last := m.replies[maxReplies-1]
	note, _ := last[len(last)-1].(*slackapi.ContextBlock)
	var left int
	if note == nil {
		t.Fatal("a full thread without a note")
	}
	if _, err := fmt.Sscanf(note.ContextElements.Elements[0].(*slackapi.TextBlockObject).Text, "_… %d more characters are too long to post", &left); err != nil {
		t.Fatal(err)
	}
	if left != total-shown {
		t.Errorf("the note counts %d characters left; the thread shows %d of %d, leaving %d", left, shown, total, total-shown)
	}
}

package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// Where an answer form says a question is shown whole.
const (
	atMessage          = "the message"
	atThread           = "the thread"
	atMessageAndThread = "the message and its thread"
	atBrowser          = "the browser"
	atInbox            = "the web inbox"
)

// jsonBlocks are blocks as Slack receives them.
func jsonBlocks(t *testing.T, blocks []slackapi.Block) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sentText joins every "text" of blocks, block by block, with sep.
func sentText(blocks []map[string]any, sep string) string {
	var parts []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "text" {
					parts = append(parts, s)
				} else {
					walk(x)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, b := range blocks {
		walk(b)
	}
	return strings.Join(parts, sep)
}

// sentTexts are the text of m as Slack shows it: its message's, and its
// thread's, the replies' sections joined as they were cut.
func sentTexts(t *testing.T, m message) (msg, thread string) {
	t.Helper()
	for _, r := range m.replies {
		thread += sentText(jsonBlocks(t, r), "")
	}
	return sentText(jsonBlocks(t, m.blocks), "\n"), thread
}

// checkFormPlaces checks that what an answer form (blocks, as sent) says
// of where each question of qs is shown whole is true of the message it
// was opened from, whose text (mrkdwn, as sent) is msg, and its thread's
// thread. A question it says the message or its thread (or the two
// together) shows whole is there whole, with every option's label the
// form does not show whole itself (a message posted short offers its
// options in the form alone), and each option the form
// numbers is there under that number. One it says the browser shows
// (browser: the message has an Open in browser button), or the web inbox
// of request id, is on the web page, which numbers every option, in the
// same order. Every option the form cuts carries its number, and no two
// options of a question read alike in the form. It returns where each
// question is said to be shown whole ("" where the form says nothing).
func checkFormPlaces(t *testing.T, qs []seam.Question, blocks []map[string]any, msg, thread, id string, browser bool) []string {
	t.Helper()
	names := map[string]string{
		"the message":                atMessage,
		"the message's thread":       atThread,
		"the message and its thread": atMessageAndThread,
		"the browser":                atBrowser,
		"the browser (the message's Open in browser button)": atBrowser,
		"the bridge's web inbox":                             atInbox,
		"the bridge's web inbox, at /r/" + id:                atInbox,
	}
	line := regexp.MustCompile(`^In (.*?), not shown here: `)
	more := regexp.MustCompile(`\(in full in ([^()]*)\)$`)
	out := make([]string, len(qs))
	var own []string // the text of the contexts since the last question's fields
	for _, b := range blocks {
		switch b["type"] {
		case "context":
			own = append(own, sentText([]map[string]any{b}, "\n"))
			continue
		case "input":
		default:
			continue
		}
		i := -1
		for n := range qs {
			if b["block_id"] == choiceBlock(n) {
				i = n
			}
		}
		if i < 0 {
			own = nil
			continue
		}
		label, _ := b["label"].(map[string]any)["text"].(string)
		named := map[string]bool{}
		for _, s := range append(slices.Clone(own), label) {
			m := line.FindStringSubmatch(s)
			if m == nil {
				m = more.FindStringSubmatch(s)
			}
			if m == nil {
				continue
			}
			if where, ok := names[m[1]]; ok {
				named[where] = true
			} else {
				t.Errorf("question %d is said to be shown whole in %q", i, m[1])
			}
		}
		if len(named) > 1 {
			t.Errorf("question %d is said to be shown whole in %v", i, named)
		}
		for where := range named {
			out[i] = where
		}
		q, where := qs[i], ""
		switch out[i] {
		case atMessage:
			where = msg
		case atThread:
			where = thread
		case atMessageAndThread:
			where = msg + "\n" + thread
		case atBrowser:
			if !browser {
				t.Errorf("question %d names the browser; the message has no Open in browser", i)
			}
		case atInbox:
			if browser {
				t.Errorf("question %d names the web inbox, not the message's Open in browser", i)
			}
		}
		el, _ := b["element"].(map[string]any)
		opts, _ := el["options"].([]any)
		optText := func(n int) string {
			text, _ := opts[n].(map[string]any)["text"].(map[string]any)["text"].(string)
			return text
		}
		if where != "" {
			need := []string{questionLabel(q)}
			for n, l := range labelsOf(q) {
				if n >= len(opts) || optText(n) != l { // a label the form shows whole may be there alone
					need = append(need, l)
				}
			}
			for _, s := range need {
				if !strings.Contains(where, esc(s)) {
					t.Errorf("question %d is said to be shown whole in %s, which lacks %.60q…", i, out[i], s)
					break
				}
			}
		}
		read := map[string]int{}
		for n := range opts {
			if m, ok := read[optText(n)]; ok {
				t.Errorf("question %d's options %d and %d read alike in the form: %q", i, m+1, n+1, optText(n))
			}
			read[optText(n)] = n
		}
		for n := range opts {
			text := optText(n)
			num, l := fmt.Sprintf("%d. ", n+1), q.Options[n].Label
			if !strings.HasPrefix(text, num) || strings.HasPrefix(l, num) {
				if text != l {
					t.Errorf("question %d's option %d is cut without its number: %q", i, n+1, text)
				}
				continue
			}
			if out[i] == atBrowser || out[i] == atInbox {
				continue // the web page numbers every option
			}
			if !strings.Contains("\n"+strings.Join(own, "\n"), "\n"+num+l) && (where == "" || !strings.Contains("\n"+where, "\n"+num+esc(l))) {
				t.Errorf("question %d's option %q: %q is found neither in the form nor in %q", i, text, num+l[:min(len(l), 20)]+"…", out[i])
				break
			}
		}
		own = nil
	}
	return out
}

func labelsOf(q seam.Question) []string {
	var out []string
	for _, o := range q.Options {
		out = append(out, o.Label)
	}
	return out
}

// smallQuestion is a question whose text a message of many questions
// shows whole, unless posted short; detail pads it.
func smallQuestion(detail string) seam.Question {
	return seam.Question{ID: "region", Question: "Which region?", Detail: detail, Options: []seam.Option{
		{Label: "eu-west", Description: "Ireland, where the rest runs"}, {Label: "us-east", Description: "Virginia"}}}
}

// A form too large for Slack gives way, and says of each question where
// what it leaves out is shown whole, as the message it was opened from
// holds it: the message, its thread (up to what its replies hold), or,
// past those, the browser where the bridge has a public URL and its web
// inbox where it has none. Its options cut to their number and first
// words are found under that number there, the web page too.
func TestFormNamesWhereQuestionsAreWhole(t *testing.T) {
	largest := largestRequest(t, "a", 80, 80).Questions
	mixed := append([]seam.Question{smallQuestion(strings.Repeat("d", 250))}, largest[1:]...)
	for _, tc := range []struct {
		name  string
		qs    []seam.Question
		from  shown
		want  map[int]string // of some questions, where the form says they are whole
		kinds []string       // every place some question is said to be whole in
	}{
		{"no public URL", largest, shown{}, map[int]string{0: atThread, 19: atInbox}, []string{atThread, atInbox}},
		{"a public URL", largest, shown{browser: true}, map[int]string{0: atThread, 19: atBrowser}, []string{atThread, atBrowser}},
		{"a question whole in the message", mixed, shown{}, map[int]string{0: atMessage, 1: atThread, 19: atInbox}, []string{atMessage, atThread, atInbox}},
		{"the message posted short", mixed, shown{short: true}, map[int]string{0: atThread, 19: atInbox}, []string{atThread, atInbox}},
		{"a mention", mixed, shown{mention: "<!subteam^S0123ABC>", browser: true}, map[int]string{0: atMessage, 19: atBrowser}, []string{atMessage, atThread, atBrowser}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := questionRecord(tc.qs...)
			v := answerModal(rec, origin{}, tc.from)
			checkModal(t, "answer modal", v)
			msg, thread := sentTexts(t, renderWith(builder{short: tc.from.short}, rec, tc.from.mention, true))
			got := checkFormPlaces(t, tc.qs, jsonBlocks(t, v.Blocks.BlockSet), msg, thread, rec.ID, tc.from.browser)
			for i, w := range tc.want {
				if got[i] != w {
					t.Errorf("question %d is said to be whole in %q; want %q", i, got[i], w)
				}
			}
			for _, k := range tc.kinds {
				if !slices.Contains(got, k) {
					t.Errorf("no question is said to be whole in %s: %q", k, got)
				}
			}
		})
	}
}

// A message of several questions numbers the options of a question whose
// labels a form's option cuts (as a message of one question does), so
// the numbers the form puts before them find them whole there.
func TestMessageNumbersOptionsTheFormCuts(t *testing.T) {
	q := seam.Question{ID: "host", Question: "Which host?"}
	for i := range 20 {
		q.Options = append(q.Options, seam.Option{Label: fmt.Sprintf("host %02d, which has served the payments API since the spring, and may be retired now", i)})
	}
	short := seam.Question{ID: "why", Question: "Why?", Options: []seam.Option{{Label: "Cost"}, {Label: "Age"}}}
	rec := questionRecord(q, short)
	msg, _ := sentTexts(t, render(rec, "", true))
	choices := viewChoices(t, answerModal(rec, origin{}, shown{}))
	for n, o := range choices[choiceBlock(0)] {
		if want := fmt.Sprintf("\n%d. %s", n+1, q.Options[n].Label); !strings.HasPrefix(o.Text.Text, fmt.Sprintf("%d. ", n+1)) || !strings.Contains(msg, want) {
			t.Fatalf("the form's option %q is not found as %q in the message:\n%s", o.Text.Text, want, msg)
		}
	}
	if !strings.Contains(msg, "\n• Cost\n• Age") {
		t.Errorf("the options of a question no form cuts are not listed as they were:\n%s", msg)
	}
}

// The form says where a question is whole from the message it was opened
// from, as posted: short when Slack refused it whole (as its record says,
// or, a copy its request does not list, the message itself), with the
// target's mention. A question the whole message would show, that one
// shows only in part, is named in its thread.
func TestFormOpenedFromItsMessage(t *testing.T) {
	const mention = "<!subteam^S0123ABC>"
	largest := largestRequest(t, "a", 80, 80).Questions[1:]
	request := func(detail string) []seam.Question { return append([]seam.Question{smallQuestion(detail)}, largest...) }
	// cut reports whether a message of request(detail), rendered with
	// mention, shows its first question only in part.
	cut := func(rec *pending.Record, mention string, short bool) bool {
		m := renderWith(builder{short: short}, rec, mention, true)
		return slices.ContainsFunc(m.overflow, func(s spilled) bool { return s.q == 0 })
	}
	for _, tc := range []struct {
		name    string
		mention string
		short   bool // Slack refuses the post whole
		copy    bool // the post is never recorded: the message says it is short
	}{
		{"posted short", "", true, false},
		{"posted short, a copy", "", true, true},
		{"posted with a mention", mention, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			store := embeddedStore(t)
			slackTarget := &config.SlackTarget{Channel: "C1", Mention: tc.mention}
			s, err := New(&config.Config{Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
				Routes: []config.Route{{Name: "default", Targets: []config.Target{{Slack: slackTarget}}}}}, Options{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			to := dispatch.Target{Key: "default/0", Config: config.Target{Slack: slackTarget}}
			ctx := context.Background()
			create := func(detail, call string) *pending.Record {
				rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "default", Client: "agent", ToolCallID: call,
					Questions: &seam.Questions{Questions: request(detail)}})
				if err != nil {
					t.Fatal(err)
				}
				return rec
			}
			detail := strings.Repeat("d", 100)
			if tc.mention != "" {
				// The detail at which the mention, taking room in the
				// message, has it cut the first question.
				probe := *create("", "probe")
				cutAt := func(n int) bool {
					probe.Questions = &seam.Questions{Questions: request(strings.Repeat("d", n))}
					return cut(&probe, tc.mention, false)
				}
				lo, hi := 0, 1000
				for lo < hi {
					if mid := (lo + hi) / 2; cutAt(mid) {
						hi = mid
					} else {
						lo = mid + 1
					}
				}
				detail = strings.Repeat("d", lo)
			}
			rec := create(detail, "call")
			if cut(rec, "", false) || !cut(rec, tc.mention, tc.short) {
				t.Fatalf("the first question is cut in the whole message (%v), or not in the one posted (%v)", cut(rec, "", false), cut(rec, tc.mention, tc.short))
			}
			if tc.short {
				fake.FailNext("chat.postMessage", slacktest.FakeFail{Error: "msg_blocks_too_long"})
			}
			posts, err := s.Post(ctx, rec, to)
			if err != nil {
				t.Fatal(err)
			}
			posts[0].Target = to.Key
			if posts[0].Short != tc.short {
				t.Fatalf("posted short: %v; want %v", posts[0].Short, tc.short)
			}
			if !tc.copy {
				if _, err := store.AddPost(ctx, rec.ID, posts[0]); err != nil {
					t.Fatal(err)
				}
			}
			var msg, thread string
			var posted slacktest.FakeCall
			for _, c := range fake.Calls("chat.postMessage") {
				switch {
				case !c.OK:
				case c.TS == posts[0].MessageID:
					posted, msg = c, sentText(c.Blocks(), "\n")
				case c.Field("thread_ts") == posts[0].MessageID:
					thread += sentText(c.Blocks(), "")
				}
			}
			serve(t, s, store, slacktest.BlockActions(t, posted, ada, "ab:answer:"+rec.ID, nil, nil))
			opened := fake.WaitCalls(t, "views.open", 1)[0]
			if !opened.OK {
				t.Fatalf("Slack refused the form: %s", opened.Body)
			}
			got := checkFormPlaces(t, rec.Questions.Questions, opened.Blocks(), msg, thread, rec.ID, false)
			if got[0] != atThread {
				t.Errorf("the first question is said to be whole in %q; want %q", got[0], atThread)
			}
			if t.Failed() {
				t.Logf("the form's first blocks: %.600s", surface.OneLine(fmt.Sprint(opened.Blocks()[:3])))
			}
		})
	}
}

// words is n characters of prose.
func words(n int) string {
	const s = "Some context for the question, and more of it. "
	return strings.Repeat(s, n/len(s)+1)[:n]
}

// A form that fits Slack's limit, without giving way, still cuts a
// question's detail past 280 characters (and a label past a field's
// label, a listing past a block): it names where the question is whole
// as the message it is opened from holds it, as a form that gives way
// does (a question's label past what a field's label holds, too, is cut
// saying so). That is the message; its thread, for a question the message cut
// (in full there), or for a request of one question, the message and its
// thread together (continued there); and past the thread, the browser or
// the web inbox. A question the form shows whole names no place, though
// the message cut it.
func TestFittingFormNamesWhereQuestionsAreWhole(t *testing.T) {
	opts := []seam.Option{{Label: "eu-west"}, {Label: "us-east"}}
	q := func(id, question, detail string) seam.Question {
		return seam.Question{ID: id, Question: question, Detail: detail, Options: opts}
	}
	var long, many []seam.Question
	for i := range 5 {
		long = append(long, q(fmt.Sprintf("l%d", i), "Which region? "+words(1900), ""))
	}
	for i := range 20 {
		many = append(many, q(fmt.Sprintf("m%d", i), fmt.Sprintf("Which region for part %d?", i), words(5000)))
	}
	for _, tc := range []struct {
		name string
		qs   []seam.Question
		from shown
		cut  bool           // the message has no room for all of it
		want map[int]string // of some questions, where the form says they are whole; "" for nowhere
	}{
		{"a question the message cuts", []seam.Question{q("a", "Which region?", words(5000)), q("b", "Why?", "")}, shown{},
			true, map[int]string{0: atThread, 1: ""}},
		{"questions the form shows whole", long, shown{}, true, map[int]string{0: "", 1: "", 2: "", 3: "", 4: ""}},
		{"a label longer than a field's", []seam.Question{{ID: "a", Header: words(seam.MaxHeaderLen), Question: words(seam.MaxQuestionLen), Options: opts}, q("b", "Why?", "")},
			shown{}, false, map[int]string{0: atMessage, 1: ""}},
		{"one question, whole in its message", []seam.Question{q("a", "Which region?", words(1000))}, shown{},
			false, map[int]string{0: atMessage}},
		{"one question, posted short", []seam.Question{q("a", "Which region?", words(8000))}, shown{short: true},
			true, map[int]string{0: atMessageAndThread}},
		{"past the thread", many, shown{}, true, map[int]string{0: atThread, 19: atInbox}},
		{"past the thread, a public URL", many, shown{browser: true}, true, map[int]string{0: atThread, 19: atBrowser}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := questionRecord(tc.qs...)
			if formGivesWay(tc.qs) {
				t.Fatal("the form gives way: the test wants one that fits")
			}
			m := renderWith(builder{short: tc.from.short}, rec, tc.from.mention, true)
			if cut := len(m.overflow) > 0; cut != tc.cut {
				t.Fatalf("the message has no room for all of the request: %v; the test wants %v", cut, tc.cut)
			}
			v := answerModal(rec, origin{}, tc.from)
			checkModal(t, "answer modal", v)
			msg, thread := sentTexts(t, m)
			got := checkFormPlaces(t, tc.qs, jsonBlocks(t, v.Blocks.BlockSet), msg, thread, rec.ID, tc.from.browser)
			for i, w := range tc.want {
				if got[i] != w {
					t.Errorf("question %d is said to be whole in %q; want %q", i, got[i], w)
				}
			}
		})
	}
}

// The form Other… opens on a multi-select lists its options in full, as
// the message does; a listing longer than its block holds names where it
// is whole: for a request of one question, the message and its thread,
// where the message's listing goes on.
func TestOtherFormNamesWhereOptionsAreWhole(t *testing.T) {
	q := seam.Question{ID: "regions", Question: "Which regions?", MultiSelect: true}
	for i := range 6 {
		q.Options = append(q.Options, seam.Option{Label: fmt.Sprintf("region %d, ", i) + words(180), Description: words(seam.MaxDescriptionLen)})
	}
	rec := questionRecord(q)
	m := render(rec, "", true)
	if len(m.overflow) == 0 {
		t.Fatal("the message lists the options whole: the test wants them continued in the thread")
	}
	v := otherModal(rec, 0, origin{}, nil, shown{})
	checkModal(t, "other modal", v)
	msg, thread := sentTexts(t, m)
	if got := checkFormPlaces(t, rec.Questions.Questions, jsonBlocks(t, v.Blocks.BlockSet), msg, thread, rec.ID, false); got[0] != atMessageAndThread {
		t.Errorf("the form says the options are whole in %q; want %q", got[0], atMessageAndThread)
	}
}

// Options cut to their first words in a form that gives way carry their
// numbers wherever the question is shown whole, the thread or the web
// page, which number them alike: the whole option is found by its
// number, and two whose first words are alike ("Deploy the release to
// the eu-west-1 production cluster now", and "… tomorrow") are not cut
// to the same text.
func TestCutOptionsReadApart(t *testing.T) {
	deploy := seam.Question{ID: "deploy", Question: "Deploy where, and when?", Options: []seam.Option{
		{Label: "Deploy the release to the eu-west-1 production cluster now"},
		{Label: "Deploy the release to the eu-west-1 production cluster tomorrow"},
		{Label: "Roll back the release on every production cluster"},
	}}
	for i := range 97 {
		deploy.Options = append(deploy.Options, seam.Option{Label: fmt.Sprintf("Wave %02d of the release to every production cluster", i),
			Description: strings.Repeat("&", 75)})
	}
	largest := largestRequest(t, "&", 80, 80).Questions
	for _, tc := range []struct {
		name string
		at   int // the deploy question's index
		from shown
		want string // where the form says it is whole
	}{
		{"in the thread", 0, shown{}, atThread},
		{"in the web inbox", 19, shown{}, atInbox},
		{"in the browser", 19, shown{browser: true}, atBrowser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs := slices.Clone(largest)
			qs[tc.at] = deploy
			rec := questionRecord(qs...)
			v := answerModal(rec, origin{}, tc.from)
			checkModal(t, "answer modal", v)
			msg, thread := sentTexts(t, renderWith(builder{short: tc.from.short}, rec, tc.from.mention, true))
			if got := checkFormPlaces(t, qs, jsonBlocks(t, v.Blocks.BlockSet), msg, thread, rec.ID, tc.from.browser); got[tc.at] != tc.want {
				t.Fatalf("the deploy question is said to be whole in %q; want %q", got[tc.at], tc.want)
			}
			opts := viewChoices(t, v)[choiceBlock(tc.at)]
			for n, o := range opts[:3] {
				text, label := o.Text.Text, deploy.Options[n].Label
				if text == label {
					t.Fatalf("option %d reads %q whole: the test wants the deploy question's options cut", n+1, text)
				}
				if !strings.HasPrefix(text, fmt.Sprintf("%d. ", n+1)) {
					t.Errorf("option %d reads %q, without its number", n+1, text)
				}
			}
		})
	}
}

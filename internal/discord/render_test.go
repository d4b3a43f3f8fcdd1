package discord

import (
	"encoding/json"
	"fmt"
	"github.com/askbridge/askbridge/internal/config"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// checkMessage fails t for anything in body beyond Discord's limits.
func checkMessage(t *testing.T, body map[string]any) {
	t.Helper()
	if n := surface.Len(str(body, "content")); n > maxContent {
		t.Errorf("content %d long", n)
	}
	total := 0
	embeds, _ := body["embeds"].([]any)
	if len(embeds) > 10 {
		t.Errorf("%d embeds", len(embeds))
	}
	for _, e := range embeds {
		m := e.(map[string]any)
		if n := surface.Len(str(m, "description")); n > maxEmbedDesc {
			t.Errorf("embed description %d long", n)
		}
		if n := surface.Len(str(m, "title")); n > maxEmbedTitle {
			t.Errorf("embed title %d long", n)
		}
		total += surface.Len(str(m, "description")) + surface.Len(str(m, "title"))
	}
	if total > maxEmbedTotal {
		t.Errorf("embeds hold %d characters", total)
	}
	rows, _ := body["components"].([]any)
	if len(rows) > maxRows {
		t.Errorf("%d rows", len(rows))
	}
	ids := map[string]bool{}
	for _, r := range rows {
		row := r.(map[string]any)
		cs, _ := row["components"].([]any)
		if len(cs) == 0 || len(cs) > maxRowButtons {
			t.Errorf("a row of %d components", len(cs))
		}
		for _, c := range cs {
			m := c.(map[string]any)
			if m["style"] == float64(discordgo.LinkButton) {
				// A link button carries a url, no custom_id, and sends no interaction.
				if u := str(m, "url"); u == "" || len(u) > maxButtonURL || str(m, "custom_id") != "" {
					t.Errorf("link button url %q, custom_id %q", u, str(m, "custom_id"))
				}
				continue
			}
			id := str(m, "custom_id")
			if n := len(id); n == 0 || n > maxCustomID || ids[id] {
				t.Errorf("custom_id %q: empty, too long or repeated", id)
			}
			ids[id] = true
			switch m["type"] {
			case float64(2):
				if n := surface.Len(str(m, "label")); n == 0 || n > maxButtonLabel {
					t.Errorf("button label %d long", n)
				}
			case float64(3):
				if len(cs) != 1 {
					t.Errorf("a select shares its row")
				}
				opts, _ := m["options"].([]any)
				if len(opts) == 0 || len(opts) > maxSelectOptions {
					t.Errorf("a select of %d options", len(opts))
				}
				if mx, _ := m["max_values"].(float64); int(mx) > len(opts) {
					t.Errorf("max_values %v over %d options", mx, len(opts))
				}
				for _, o := range opts {
					om := o.(map[string]any)
					for _, k := range []string{"label", "value", "description"} {
						if n := surface.Len(str(om, k)); n > maxOptionText {
							t.Errorf("option %s %d long", k, n)
						}
					}
				}
				if n := surface.Len(str(m, "placeholder")); n > maxSelectHolder {
					t.Errorf("placeholder %d long", n)
				}
			}
		}
	}
}

func checkModal(t *testing.T, resp *response) {
	t.Helper()
	for _, bad := range InvalidResponse(toMap(t, resp)) {
		t.Errorf("Discord would refuse the modal: %s", bad)
	}
	d := toMap(t, resp)["data"].(map[string]any)
	if n := surface.Len(str(d, "title")); n == 0 || n > maxModalTitle {
		t.Errorf("modal title %d long", n)
	}
	if n := len(str(d, "custom_id")); n > maxCustomID {
		t.Errorf("modal custom_id %d long", n)
	}
	cs, _ := d["components"].([]any)
	if len(cs) == 0 || len(cs) > maxModalFields {
		t.Errorf("a modal of %d components", len(cs))
	}
	for _, c := range cs {
		m := c.(map[string]any)
		if m["type"] == float64(componentTextDisplay) {
			if n := surface.Len(str(m, "content")); n == 0 || n > maxTextDisplay {
				t.Errorf("a text display %d long", n)
			}
			continue
		}
		inner := m["component"]
		if m["type"] == float64(1) {
			inner = m["components"].([]any)[0]
		} else if n := surface.Len(str(m, "label")); n == 0 || n > maxFieldLabel || surface.Len(str(m, "description")) > maxLabelDesc {
			t.Errorf("label %q or its description too long", str(m, "label"))
		}
		im := inner.(map[string]any)
		if _, ok := im["required"]; !ok {
			t.Errorf("a field without an explicit required: %v", im)
		}
		if im["type"] == float64(4) && m["type"] == float64(1) && surface.Len(str(im, "label")) > maxFieldLabel {
			t.Errorf("text input label too long")
		}
		if im["type"] == float64(3) && len(im["options"].([]any)) > maxSelectOptions {
			t.Errorf("modal select too big")
		}
		if (im["type"] == float64(componentRadioGroup) || im["type"] == float64(componentCheckboxGroup)) && len(im["options"].([]any)) > maxGroupOptions {
			t.Errorf("a group of %d options", len(im["options"].([]any)))
		}
	}
}

// long is s repeated to exactly n characters.
func long(s string, n int) string { return string([]rune(strings.Repeat(s, n))[:n]) }

func extremeQuestion(i, options int, multi bool) seam.Question {
	q := seam.Question{
		ID: strings.Repeat("i", seam.MaxIDLen-2) + string(rune('a'+i)), Question: long("Why? <@1> @everyone [x](http://e) 😀 ", seam.MaxQuestionLen),
		Header: long("H😀", seam.MaxHeaderLen), Detail: long("plan line with `code` and <#1>\n", seam.MaxDetailLen), MultiSelect: multi,
	}
	for o := range options {
		q.Options = append(q.Options, seam.Option{Label: long(string(rune('A'+o%26))+"😀label ", seam.MaxLabelLen-3) + string(rune('a'+o/26)) + string(rune('a'+o%26)), Description: long("desc ", seam.MaxDescriptionLen)})
	}
	return q
}

func TestExtremeRequestsStayWithinLimits(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	caller := &seam.Caller{Name: long("n", seam.MaxCallerFieldLen), Session: long("s", seam.MaxCallerFieldLen)}
	cases := map[string]*pending.Record{}
	for _, n := range []int{0, 2, 5, 20, 21, 25, 26, 100} {
		for _, multi := range []bool{false, true} {
			q := extremeQuestion(0, n, multi)
			if n == 5 && !multi {
				q.Intent = &seam.Intent{Kind: seam.IntentPlanReview, Approve: q.Options[0].Label}
			}
			cases[fmt.Sprintf("one question, %d options, multi %v", n, multi)] =
				&pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Caller: caller, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
					Questions: &seam.Questions{Questions: []seam.Question{q}}}
		}
	}
	var many []seam.Question
	for i := range seam.MaxQuestions {
		many = append(many, extremeQuestion(i, 100, i%2 == 0))
	}
	cases["twenty questions"] = &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Caller: caller, Questions: &seam.Questions{Questions: many}}
	args, _ := json.Marshal(map[string]string{"x": long("```<@1>", 200000)})
	cases["approval"] = &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Caller: caller,
		Approval: &seam.Approval{ToolName: long("t", seam.MaxToolNameLen), Reason: long("r <@&1> ", seam.MaxReasonLen), Arguments: args}}

	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			for _, live := range []bool{true, false} {
				if !live {
					rec.Status, rec.ResolvedAt = seam.StatusAnswered, now
					rec.ResolvedBy = &pending.Responder{Surface: "discord", Name: long("x", 200)}
				}
				m := render(rec, "<@&123>", live)
				checkMessage(t, toMap(t, map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components}))
				if len(m.more) > maxMore {
					t.Errorf("%d continuation messages", len(m.more))
				}
				for _, e := range m.more {
					checkMessage(t, toMap(t, map[string]any{"embeds": []any{e}}))
				}
				all := m.content
				for _, e := range m.embeds {
					all += e.Description
				}
				// Outside code (textOf): in it, Discord shows "<@1>" as
				// typed, and a tool call's arguments, shown as code, hold
				// it as sent (surface.PrettyJSON shows < for \u003c).
				for _, text := range textOf(all) {
					if strings.Contains(text, "@everyone") || strings.Contains(text, "<@1>") || strings.Contains(text, "](http") {
						t.Errorf("agent text can ping or link")
					}
				}
			}
			rec.Status = seam.StatusPending
			if rec.Kind == seam.KindApproval {
				checkModal(t, rejectModal(rec))
				return
			}
			qs := rec.Questions.Questions
			for i := range qs {
				if len(qs[i].Options) > 0 {
					checkModal(t, otherModal(rec, i))
				}
			}
			if len(qs) == 1 && len(qs[0].Options) == 0 {
				checkModal(t, textModal(rec, nil))
			} else if sheetFits(qs) {
				checkModal(t, sheetModal(rec, nil))
			}
		})
	}
}

func TestLongPlanIsNeverCutSilently(t *testing.T) {
	q := extremeQuestion(0, 2, false)
	q.Intent = &seam.Intent{Kind: seam.IntentPlanReview}
	q.Detail = long("step ", 20000) + "THE-END"
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true)
	var shown strings.Builder
	for _, e := range append(m.embeds, m.more...) {
		shown.WriteString(e.Description)
	}
	if !strings.Contains(shown.String(), "THE-END") {
		t.Errorf("the plan's end is not posted")
	}
	if !strings.Contains(m.embeds[len(m.embeds)-1].Description, "continue below") {
		t.Errorf("the message does not say the plan continues")
	}
}

// Discord renders markdown in embed titles, and its phone apps mentions:
// an agent's header or tool name there is escaped as a description is,
// within the title's 256 characters, on the message and on the messages
// that continue it. (Until 2026-12-06 titles went as the agent wrote them.)
func TestEmbedTitlesAreEscaped(t *testing.T) {
	const header = "<@123> @everyone <#9> [docs](https://evil.example)"
	q := seam.Question{ID: "q", Header: header, Question: "Ship it?", Detail: long("plan ", 9000)}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true)
	if got := m.embeds[0].Title; got != esc(header) {
		t.Errorf("title %q, want %q", got, esc(header))
	}
	approval := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval,
		Approval: &seam.Approval{ToolName: "run_<@&5>", Reason: long("why ", 5000)}}
	wideQ := seam.Question{ID: "q", Header: strings.Repeat("@", 300), Question: "Ship it?"}
	wide := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{wideQ}}}
	var titles []string
	for _, r := range []*pending.Record{rec, approval, wide} {
		m := render(r, "", true)
		for _, e := range append(m.embeds, m.more...) {
			titles = append(titles, e.Title)
		}
	}
	if len(titles) < 5 {
		t.Fatalf("titles %q; want the continuations' too", titles)
	}
	for _, title := range titles {
		checkInert(t, "title", title)
		if n := surface.Len(title); n > maxEmbedTitle {
			t.Errorf("title %d long", n)
		}
	}
}

// A title is one line of an agent's plain text, a tool's name or a
// question's header, and shows as written: the markdown Discord renders
// in titles is inert there, as in the content's lines. An MCP tool's name
// (mcp__server__tool) would lose its underscores to an underline, and a
// person would be asked to allow a tool whose name does not read as the
// one the agent runs. (Until 2026-12-06 titles were escaped only as
// descriptions are, which keeps their markdown.)
func TestEmbedTitlesShowTheirNameAsWritten(t *testing.T) {
	approval := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval,
		Approval: &seam.Approval{ToolName: "mcp__github__delete_repo", Reason: long("why ", 5000)}}
	q := seam.Question{ID: "q", Header: "*Deploy* ~~now~~", Question: "Ship it?"}
	question := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	for _, c := range []struct {
		rec  *pending.Record
		want []string
	}{
		{approval, []string{`Allow mcp\_\_github\_\_delete\_repo?`, `Allow mcp\_\_github\_\_delete\_repo? (continued)`}},
		{question, []string{`\*Deploy\* \~\~now\~\~`}},
	} {
		m := render(c.rec, "", true)
		var titles []string
		for _, e := range append(m.embeds, m.more...) {
			if e.Title != "" && e.Title != "Arguments" {
				titles = append(titles, e.Title)
			}
		}
		if !slices.Equal(titles[:min(len(titles), len(c.want))], c.want) {
			t.Errorf("titles %q; want %q first", titles, c.want)
		}
	}
}

// Bidi controls (embeddings, overrides, isolates) in an agent's or a
// person's text are dropped wherever the surface shows it: an override
// would show the rest of its line reversed ("Answered by eve · txet"), or
// an option as another. Their text stays, and a label of nothing but them
// is kept, not blanked. (Until 2026-12-06 they went out as written.)
func TestBidiControlsAreDropped(t *testing.T) {
	const rlo, lri, pdi, lre, pdf = "\u202e", "\u2066", "\u2069", "\u202a", "\u202c"
	q := seam.Question{ID: "q", Header: "Dep" + rlo + "loy", Question: "Ship " + lri + "it" + pdi + " to <@1>?", Detail: "plan " + rlo + "x",
		Options: []seam.Option{{Label: "Yes " + rlo + "on", Description: "d" + pdf}, {Label: lre + "No"}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}},
		Caller: &seam.Caller{Name: "deploy" + rlo + "bot", Session: "s" + lri + "1"}}
	noBidi := func(t *testing.T, what string, v any) {
		t.Helper()
		raw, _ := json.Marshal(v)
		if i := strings.IndexFunc(string(raw), surface.IsBidi); i >= 0 {
			t.Errorf("%s holds a bidi control: %s", what, raw[max(0, i-40):min(len(raw), i+40)])
		}
	}
	live := render(rec, "", true)
	body := toMap(t, map[string]any{"content": live.content, "embeds": live.embeds, "components": live.components})
	checkMessage(t, body)
	noBidi(t, "the live message", body)
	noBidi(t, "the live message without embeds", live.bare().content)
	noBidi(t, "the form", sheetModal(rec, nil))
	noBidi(t, "Other's form", otherModal(rec, 0))
	noBidi(t, "the session's thread name", threadName(rec))
	lone := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "q", Question: "Which?", Options: []seam.Option{{Label: "Yes"}, {Label: rlo}}}}}}
	m := render(lone, "", true)
	body = toMap(t, map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components})
	checkMessage(t, body)
	if b := Find(body, "ab:pick:"+lone.ID+":0:1"); b == nil || b["label"] != rlo {
		t.Errorf("the button of a label of a bidi control alone: %v; want it kept", b)
	}

	rec.Status, rec.ResolvedAt = seam.StatusAnswered, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec.ResolvedBy = &pending.Responder{Surface: surfaceName, UserID: "1", Name: "eve" + rlo}
	rec.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{}, Custom: rlo + "text"}}}
	done := render(rec, "", false)
	noBidi(t, "the ended message", map[string]any{"content": done.content, "embeds": done.embeds})
	if !strings.Contains(done.content, "Answered by eve · “text”") {
		t.Errorf("the status line %q; want the name and the answer, without their controls", done.content)
	}
	noBidi(t, "a late click's reply", surface.LateReply(rec, statusFormat))

	approval := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Approval: &seam.Approval{ToolName: "rm" + rlo, Reason: "why" + rlo,
		Arguments: json.RawMessage(`{"cmd": "rm -rf /` + rlo + ` tmp"}`)}}
	m = render(approval, "", true)
	noBidi(t, "the approval", map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components})
	noBidi(t, "the approval without embeds", m.bare().content)
	noBidi(t, "Reject's form", rejectModal(approval))
}

// Where Discord drops the bot's embeds, a request's text is shown in its
// message's content: whole when it fits, else cut within Discord's 2000
// characters, its code block closed, with a line saying where the rest
// is; escaped as its embeds are (no live mention), titles on lines of
// their own with their markdown inert.
func TestBareMessageShowsTheText(t *testing.T) {
	q := seam.Question{ID: "q", Header: "Ship *it*", Question: "Deploy to <@1> prod?", Options: []seam.Option{{Label: "Yes", Description: "Ships v2"}, {Label: "No"}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true).bare()
	if len(m.embeds) != 0 || m.cut || len(m.components) == 0 {
		t.Errorf("bare: %d embeds, cut %t, %d rows; want no embeds, all of it, the controls", len(m.embeds), m.cut, len(m.components))
	}
	for _, want := range []string{"**Ship \\*it\\***\n", "Deploy to <" + zwsp + "@" + zwsp + "1> prod?", "Ships v2"} {
		if !strings.Contains(m.content, want) {
			t.Errorf("the content %q lacks %q", m.content, want)
		}
	}

	q.Intent = &seam.Intent{Kind: seam.IntentPlanReview}
	q.Detail = "## Plan\n```sh\n" + strings.Repeat("rm -rf /tmp/stale @everyone\n", 200) + "```\nTHE-END"
	rec.Questions.Questions[0] = q
	m = render(rec, "", false).bare()
	if !m.cut || surface.Len(m.content) > maxContent || strings.Contains(m.content, "THE-END") {
		t.Errorf("a long plan: cut %t, %d characters; want it cut within %d", m.cut, surface.Len(m.content), maxContent)
	}
	if !strings.HasSuffix(m.content, "The whole request is in the bridge's web inbox, at /r/abcdefghijklmnop.*") {
		t.Errorf("the content ends %q; want where the rest is", m.content[max(0, len(m.content)-200):])
	}
	if text, _, _ := strings.Cut(m.content, "\n\n*… "); strings.Count(text, "```")%2 != 0 {
		t.Errorf("the cut leaves the plan's code block open: %q", text[max(0, len(text)-100):])
	}
	checkInert(t, "bare content", m.content)
	for _, bad := range InvalidMessage(toMap(t, map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components}), false) {
		t.Errorf("Discord would refuse it: %s", bad)
	}
}

// A plan's detail with no space to cut at, at lengths where the "N more
// characters" note gains a digit between measuring and cutting (found at
// 14,054-14,072 characters): its embed stays within Discord's 4,096.
func TestPlanNoteStaysWithinTheEmbed(t *testing.T) {
	for n := 13_950; n <= 14_150; n++ {
		q := extremeQuestion(0, 2, false)
		q.Intent = &seam.Intent{Kind: seam.IntentPlanReview}
		q.Detail = strings.Repeat("x", n)
		rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
		m := render(rec, "", true)
		for _, e := range m.embeds {
			if l := surface.Len(e.Description); l > maxEmbedDesc {
				t.Fatalf("a detail of %d characters: embed %q is %d long", n, e.Title, l)
			}
		}
	}
}

func TestMentionsAllowOnlyTheConfiguredPing(t *testing.T) {
	for in, want := range map[string]string{
		"":          `{"parse":[],"replied_user":false}`,
		"<@&42>":    `{"parse":[],"roles":["42"],"replied_user":false}`,
		"<@7>":      `{"parse":[],"users":["7"],"replied_user":false}`,
		"@everyone": `{"parse":["everyone"],"replied_user":false}`,
		" @here ":   `{"parse":["everyone"],"replied_user":false}`,
		"@ops":      `{"parse":[],"replied_user":false}`, // config refuses it; it pings nobody
		"<@&42> x":  `{"parse":[],"replied_user":false}`,
	} {
		raw, _ := json.Marshal(mentions(in))
		if string(raw) != want {
			t.Errorf("mentions(%q) = %s, want %s", in, raw, want)
		}
	}
}

func TestOpenInBrowserLink(t *testing.T) {
	const url = "https://bridge.example.com/r/abcdefghijklmnop?e=1796221208&s=0123456789012345678901234567890123456789abc"
	for _, n := range []int{0, 2, 5, 19, 20, 25, 100} {
		for _, multi := range []bool{false, true} {
			rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion,
				Questions: &seam.Questions{Questions: []seam.Question{extremeQuestion(0, n, multi)}}}
			t.Run(fmt.Sprintf("%d options, multi %v", n, multi), func(t *testing.T) {
				m := render(rec, "", true)
				m.addLink(url)
				body := toMap(t, map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components})
				checkMessage(t, body)
				raw, _ := json.Marshal(m.components)
				if strings.Count(string(raw), "Open in browser") != 1 || !strings.Contains(string(raw), `"style":5`) {
					t.Errorf("no single link button (style 5) to the URL: %s", raw)
				}
			})
		}
	}
	t.Run("approval", func(t *testing.T) {
		m := render(&pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Approval: &seam.Approval{ToolName: "x"}}, "", true)
		m.addLink(url)
		if len(m.components) != 1 {
			t.Errorf("the link took a row of its own beside a row with room: %d rows", len(m.components))
		}
	})
	t.Run("too long a URL is left out", func(t *testing.T) {
		m := render(&pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Approval: &seam.Approval{ToolName: "x"}}, "", true)
		m.addLink("https://x/" + strings.Repeat("a", maxButtonURL))
		raw, _ := json.Marshal(m.components)
		if strings.Contains(string(raw), "https://x/") {
			t.Errorf("a URL over %d characters was added", maxButtonURL)
		}
	})
}

func TestNoLinkWhereRespondersAreLimited(t *testing.T) {
	if !linkable(&config.DiscordTarget{Channel: "C1"}) {
		t.Error("a target open to the channel gets no link")
	}
	if linkable(&config.DiscordTarget{Channel: "C1", Responders: config.DiscordResponders{Roles: []string{"R1"}}}) {
		t.Error("a target with responders gets a link anyone in the channel could answer with")
	}
}

// TestInteractionParent: only a thread's parent_id names the channel that
// holds it; a text channel's names its category, which no target is.
func TestInteractionParent(t *testing.T) {
	for _, tc := range []struct{ name, channel, want string }{
		{"public thread", `{"id": "T1", "type": 11, "parent_id": "C1"}`, "C1"},
		{"private thread", `{"id": "T1", "type": 12, "parent_id": "C1"}`, "C1"},
		{"announcement thread", `{"id": "T1", "type": 10, "parent_id": "C1"}`, "C1"},
		{"text channel in a category", `{"id": "T1", "type": 0, "parent_id": "K1"}`, ""},
		{"not the interaction's channel", `{"id": "T2", "type": 11, "parent_id": "C1"}`, ""},
		{"no channel", `null`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in interaction
			if err := json.Unmarshal([]byte(`{"type": 3, "channel_id": "T1", "channel": `+tc.channel+`}`), &in); err != nil {
				t.Fatal(err)
			}
			if got := in.parent(); got != tc.want {
				t.Errorf("parent() = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestNonceOf: every try of one message carries one nonce, and no other
// message shares it: not another request's, nor one created again under
// the request's id asking something else, another target's, another
// channel's (a post moved from a dead thread to its channel), nor the
// same request's continuations.
func TestNonceOf(t *testing.T) {
	rec := &pending.Record{ID: "abcdefghijklmnop", Hash: "0123456789abcdef0123456789abcdef"}
	n := nonceOf(rec, "default/0", "1200000000000000001", 0)
	if len(n) > 25 || n != nonceOf(rec, "default/0", "1200000000000000001", 0) {
		t.Fatalf("nonce %q: want the same one each time, at most 25 characters", n)
	}
	another := &pending.Record{ID: "bbcdefghijklmnop", Hash: rec.Hash}
	replaced := &pending.Record{ID: rec.ID, Hash: "fedcba9876543210fedcba9876543210"}
	for _, other := range []string{
		nonceOf(another, "default/0", "1200000000000000001", 0),
		nonceOf(replaced, "default/0", "1200000000000000001", 0),
		nonceOf(rec, "default/1", "1200000000000000001", 0),
		nonceOf(rec, "default/0", "1200000000000000002", 0),
		nonceOf(rec, "default/0", "1200000000000000001", 1),
	} {
		if other == n {
			t.Errorf("two messages share the nonce %q", n)
		}
	}
}

// A plan full of markdown links: the escape that breaks "](" adds a
// character a rune-by-rune count can't see, and every embed must still be
// within Discord's 4,096 (else Discord refuses the post with 400 Invalid
// Form Body and the request fails to post).
func TestLinkHeavyPlanStaysWithinTheEmbed(t *testing.T) {
	for _, detail := range []string{
		strings.Repeat("[a](b) ", 3000),
		strings.Repeat("](", 9000),
		strings.Repeat("see [the file](src/x.go) and ", 600),
	} {
		q := extremeQuestion(0, 2, false)
		q.Intent = &seam.Intent{Kind: seam.IntentPlanReview}
		q.Detail = detail
		rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
		m := render(rec, "", true)
		checkMessage(t, toMap(t, map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components}))
		for _, e := range m.more {
			checkMessage(t, toMap(t, map[string]any{"embeds": []any{e}}))
		}
		for _, e := range append(m.embeds, m.more...) {
			if strings.Contains(e.Description, "](") {
				t.Errorf("a masked link survived in %q", e.Title)
			}
		}
	}
}

// Who asks, the session and who answered are one line of the message's
// content, shown as written: a newline in them can't start a heading,
// a list or a subtext line (a forged "Approved" banner above the
// request), and their markdown characters don't render.
func TestOneLineTextStaysOneLine(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	q := seam.Question{ID: "q", Question: "Ship?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, CreatedAt: now,
		Caller:    &seam.Caller{Name: "deploy*bot*\n# Approved by the admin", Session: "run_42_\n-# nothing to see\n> quoted"},
		Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "<@&1>", true)
	if strings.Contains(m.content, "\n") {
		t.Errorf("the intro spans lines: %q", m.content)
	}
	if !strings.Contains(m.content, `deploy\*bot\*`) || !strings.Contains(m.content, `run\_42\_`) {
		t.Errorf("markdown in the name or session is not escaped: %q", m.content)
	}
	rec.Status, rec.ResolvedAt = seam.StatusDismissed, now
	rec.ResolvedBy = &pending.Responder{Surface: "discord", UserID: "1", Name: "eve\n# Answered by ada: Yes"}
	m = render(rec, "", false)
	for _, line := range strings.Split(m.content, "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "-") || strings.HasPrefix(line, ">") {
			t.Errorf("a line of the content renders as a heading, list or quote: %q", line)
		}
	}
	if n := strings.Count(m.content, "\n"); n != 1 {
		t.Errorf("content %q: want the status line and the intro", m.content)
	}
}

// Options whose labels differ only past what a phone shows of a button
// (Discord's guidelines: 38 characters) are listed in full and numbered,
// and their buttons carry the numbers, so they can be told apart.
func TestWideButtonLabelsAreListed(t *testing.T) {
	q := seam.Question{ID: "q", Question: "Which files go?", Options: []seam.Option{
		{Label: "Delete the stale files in the build cache directory"},
		{Label: "Delete the stale files in the build cache and the logs"},
		{Label: "Keep"},
	}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true)
	desc := m.embeds[0].Description
	for i, o := range q.Options {
		if !strings.Contains(desc, fmt.Sprintf("%d. %s", i+1, o.Label)) {
			t.Errorf("option %d is not listed in full: %q", i+1, desc)
		}
	}
	body := toMap(t, map[string]any{"components": m.components})
	for i := range q.Options {
		b := Components(body)[1+i] // the first row, then its buttons
		if !strings.HasPrefix(str(b, "label"), fmt.Sprintf("%d. ", i+1)) {
			t.Errorf("button %d is labelled %q; want its number first", i+1, str(b, "label"))
		}
	}

	// Short labels stay as they are.
	q.Options = []seam.Option{{Label: "Yes"}, {Label: "No"}}
	rec.Questions.Questions[0] = q
	m = render(rec, "", true)
	if strings.Contains(m.embeds[0].Description, "Yes") || str(Components(toMap(t, map[string]any{"components": m.components}))[1], "label") != "Yes" {
		t.Errorf("short labels were listed or numbered")
	}
}

// A CJK character shows about two Latin letters wide, so a phone cuts a
// button of CJK labels at about half of the 38 characters: labels alike
// until their last words are listed in full and numbered, as Latin ones
// are, and short ones stay as they are.
func TestWideScriptButtonLabelsAreListed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
		wide   bool
	}{
		{"Japanese", []string{"本番環境にデプロイしてステージング環境を削除する", "本番環境にデプロイしてステージング環境を保持する"}, true},
		{"Korean", []string{"프로덕션에 배포하고 스테이징 환경을 삭제합니다", "프로덕션에 배포하고 스테이징 환경을 유지합니다"}, true},
		{"Chinese", []string{"部署到生产环境并删除预发布环境中的全部数据", "部署到生产环境并保留预发布环境中的全部数据"}, true},
		{"short Japanese", []string{"はい", "いいえ"}, false},
		{"Latin of the same length", []string{"Deploy to production, drop staging now", "Deploy to production, keep staging now"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := seam.Question{ID: "q", Question: "Which?", Options: []seam.Option{{Label: tc.labels[0]}, {Label: tc.labels[1]}}}
			rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
			m := render(rec, "", true)
			listed := strings.Contains(m.embeds[0].Description, "1. "+tc.labels[0])
			b := Components(toMap(t, map[string]any{"components": m.components}))[1] // the first row, then its first button
			numbered := str(b, "label") == "1. "+tc.labels[0]
			if b["type"] != float64(discordgo.ButtonComponent) || listed != tc.wide || numbered != tc.wide {
				t.Errorf("labels %q: a button %v, listed %v, numbered %v; want a button, listed and numbered: %v", tc.labels, b["type"], listed, numbered, tc.wide)
			}
		})
	}
}

// A gateway interaction's response reaches Discord through a second call,
// and both must fit Discord's 3 s from when it sent the event: the handler
// and the callback share the ack budget, the callback keeping part of it
// whatever the handler takes (it took up to the whole budget, and the
// callback a second more).
func TestGatewayDeadlines(t *testing.T) {
	received := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	handleBy, answerBy := gatewayDeadlines(received)
	if got := answerBy.Sub(received); got > surface.AckBudget {
		t.Errorf("the callback may end %v after the event, past the ack budget %v", got, surface.AckBudget)
	}
	if got := answerBy.Sub(handleBy); got < 500*time.Millisecond {
		t.Errorf("the callback keeps %v after the handler's deadline; a call to Discord needs more", got)
	}
	if !handleBy.After(received) {
		t.Errorf("the handler gets no time: %v", handleBy.Sub(received))
	}
}

// A form holding a lone question's options, submitted with nothing chosen
// and nothing written, saves nothing: it would answer the request with
// nothing (on Slack's message, Submit says the same).
func TestEmptyFormAnswersNothing(t *testing.T) {
	var opts []seam.Option
	for i := range 30 {
		opts = append(opts, seam.Option{Label: fmt.Sprintf("region-%d", i)})
	}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending,
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "regions", Question: "Which regions?", MultiSelect: true, Options: opts}}}}
	r := surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}
	res, no := submission(rec, map[string]field{}, r)
	if res != nil || no == nil || !strings.Contains(no.say, "nothing was saved") {
		t.Fatalf("empty form: %+v, %+v; want nothing saved, and said", res, no)
	}
	res, no = submission(rec, map[string]field{selectField(0, 1): {values: []string{"27"}}}, r)
	if no != nil || res == nil || res.Answer.Answers[0].Selected[0] != "region-27" {
		t.Fatalf("a choice: %+v, %+v", res, no)
	}
}

// The problem told to a person quotes the agent's text: it can't mention
// anyone or mask a link.
func TestProblemToldIsEscaped(t *testing.T) {
	header := "[Re-authenticate](https://evil.example) @everyone"
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "q", Header: header, Question: "Which?", Options: []seam.Option{{Label: "a"}, {Label: "b"}}, Input: &seam.Input{Type: seam.InputString, Required: true}}}}}
	_, problem := resolutionOf(rec, surface.Ref{Verb: surface.VerbPick, ID: rec.ID, O: 0}, nil)
	if problem == "" {
		t.Fatal("no problem with a required field left empty")
	}
	if strings.Contains(problem, "](") || strings.Contains(problem, "@everyone") {
		t.Errorf("problem %q is not escaped", problem)
	}
}

// Code is left as written: a zero-width space in it would go along with a
// copy. Outside code, mentions and masked links are made inert.
func TestEscLeavesCodeAlone(t *testing.T) {
	const z = "\u200b"
	for in, want := range map[string]string{
		"ping @everyone":                              "ping @" + z + "everyone",
		"`@Override` and @here":                       "`@Override` and @" + z + "here",
		"```go\nvar v Vec<String> // @x\n```\n<@123>": "```go\nvar v Vec<String> // @x\n```\n<" + z + "@" + z + "123>",
		"``a`b @c`` then [x](https://e.example)":      "``a`b @c`` then [x]" + z + "(https://e.example)",
		"an unclosed ` then @here":                    "an unclosed ` then @" + z + "here",
		"```unclosed fence @here":                     "```unclosed fence @" + z + "here",
		"`one`` not closed by two @x` and @y":         "`one`` not closed by two @x` and @" + z + "y",
		"mail ada@example.com, `ada@example.com`":     "mail ada@" + z + "example.com, `ada@example.com`",
		"``a` <@1> `":                                 "``a` <" + z + "@" + z + "1> `", // Discord reads ``a` as code
		"``<@1>` x":                                   "``<@1>` x",
	} {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
}

// A backslashed backtick (as plain writes one) opens no code: what follows
// is escaped as text.
func TestEscBackslashedBacktick(t *testing.T) {
	const z = "\u200b"
	if got, want := plain("`@everyone`"), `\`+"`@"+z+`everyone\`+"`"; got != want {
		t.Errorf("plain(`@everyone`) = %q, want %q", got, want)
	}
	if got, want := esc(`\\`+"`@x`"), `\\`+"`@x`"; got != want {
		t.Errorf("after an escaped backslash: %q, want %q (code)", got, want)
	}
}

// TestLongArgumentsAreReadInFull: arguments longer than the message holds
// go on in the messages that follow, as code there too (as markdown,
// `*cache*` would show in italics, without its asterisks); before, the
// rest was cut with nowhere to read it.
func TestLongArgumentsAreReadInFull(t *testing.T) {
	tail := "END-OF-THE-MANIFEST"
	args, _ := json.Marshal(map[string]string{"manifest": strings.Repeat("spec line; ", 600) + "rm -rf *cache* " + tail})
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Approval: &seam.Approval{ToolName: "kubectl_apply", Arguments: args}}
	m := render(rec, "", true)
	var more string
	for _, e := range m.more {
		more += e.Title + "\n" + e.Description + "\n"
		if e.Title != "Arguments (continued)" || !strings.HasPrefix(e.Description, "```\n") || !strings.HasSuffix(e.Description, "\n```") || strings.Count(e.Description, "```") != 2 {
			t.Errorf("a message after holds %q: %q; want the arguments as code", e.Title, e.Description)
		}
	}
	if !strings.Contains(more, "rm -rf *cache* "+tail) {
		t.Errorf("the arguments' rest does not follow: %q", more)
	}
	for _, e := range m.embeds {
		if e.Title == "Arguments" && (strings.Count(e.Description, "```") != 2 || !strings.Contains(e.Description, "continue below")) {
			t.Errorf("the arguments embed: %q", e.Description)
		}
	}
}

// An argument holding a run of backticks must not end the arguments' code
// block: what follows would render as markdown (a masked link, say).
func TestArgumentsKeepTheirCodeBlock(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"cmd": "echo '````' '``````' [Approve](https://evil.example)"})
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindApproval, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Approval: &seam.Approval{ToolName: "bash", Arguments: args}}
	var found bool
	for _, e := range render(rec, "", true).embeds {
		if e.Title != "Arguments" {
			continue
		}
		found = true
		if n := strings.Count(e.Description, "```"); n != 2 {
			t.Errorf("%d code fences in %q, want the block's own 2", n, e.Description)
		}
	}
	if !found {
		t.Fatal("no arguments embed")
	}
}

// A fence ends at the first run of three or more backticks: a masked link
// after a longer run is outside it, and escaped.
func TestEscFenceEndsAtAnyLongRun(t *testing.T) {
	in := "```x````[Approve](https://evil.example)```"
	if got := esc(in); !strings.Contains(got, "]\u200b(") {
		t.Errorf("esc(%q) = %q: the link after the fence's end is not escaped", in, got)
	}
}

// TestIntroSkipsABlankSession: a session of white space and control
// characters names nothing, and the intro says no session.
func TestIntroSkipsABlankSession(t *testing.T) {
	rec := &pending.Record{Kind: seam.KindQuestion, Caller: &seam.Caller{Name: "deploy-bot", Session: " \n\x00"}}
	if got := intro(rec); strings.Contains(got, "session") {
		t.Errorf("intro = %q; want no session", got)
	}
}

// TestIntroSaysTheExpiryOnlyWhilePending: an ended request's message does
// not count down to its expiry ("expires in 59 minutes" once answered,
// "expires 3 days ago" later): its ended line says how it ended.
func TestIntroSaysTheExpiryOnlyWhilePending(t *testing.T) {
	rec := &pending.Record{Kind: seam.KindQuestion, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0), ExpiresAt: time.Unix(1700003600, 0)}
	if got := intro(rec); !strings.Contains(got, "expires <t:1700003600:R>") {
		t.Errorf("a pending request's intro = %q; want its expiry", got)
	}
	for _, st := range []seam.Status{seam.StatusAnswered, seam.StatusCancelled, seam.StatusExpired, seam.StatusDismissed} {
		rec.Status = st
		if got := intro(rec); strings.Contains(got, "expires") {
			t.Errorf("a request %s: intro = %q; want no expiry", st, got)
		}
	}
}

// A plan whose code block is cut between embeds (the message's, and the
// messages that follow) has each part closed and opened again: Discord
// renders each embed on its own, and a lone fence shows as text, the code
// beside it as markdown.
func TestPlanCodeBlockCutStaysCode(t *testing.T) {
	var plan strings.Builder
	plan.WriteString("Steps:\n\n1. Apply this patch:\n\n```go\n")
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
	n, lines := 0, 0
	for _, e := range append(m.embeds, m.more...) {
		if !strings.Contains(e.Description, "next_ptr") {
			continue
		}
		n++
		lines += strings.Count(e.Description, "next_ptr")
		if c := strings.Count(e.Description, "```"); c%2 != 0 {
			t.Errorf("embed %d holds %d fences: starts %q, ends %q", n, c, e.Description[:40], e.Description[len(e.Description)-40:])
		}
	}
	if n < 3 || lines < 400 {
		t.Fatalf("the plan's code is in %d embeds, %d lines of 400; the test wants it cut, and whole", n, lines)
	}
}

// Discord reads three backticks inside a span of one or two as the span's
// text, not a fence: a cut after one opens no block, where counting
// fences (Slack's way) would close one in the embed and open one in the
// next.
func TestInBlockReadsCodeAsDiscord(t *testing.T) {
	for _, tc := range []struct {
		s    string
		at   int
		want bool
	}{
		{"a ```\ncode\n``` b", 7, true},
		{"a ```\ncode\n``` b", 2, false},
		{"a ```\ncode\n``` b", 14, false},
		{"type `` ``` `` to open a block, then more words", 20, false},
		{"type `` ``` `` first\n```\ncode\n```", 26, true},
		{"```` four\n``` still open? no: closed here ````", 8, true},
		{"an unclosed ``` fence and words", 20, false},
		{"\\```not code``` here", 10, false},
	} {
		if got := inBlock(tc.s, tc.at); got != tc.want {
			t.Errorf("inBlock(%q, %d) = %v, want %v", tc.s, tc.at, got, tc.want)
		}
	}
}

func TestPlanSpanOfFencesIsNotCutAsCode(t *testing.T) {
	plan := "To start a block, type `` ``` `` on a line of its own.\n\n" + strings.Repeat("Then write the steps out in words, one per line, and check each one. ", 150)
	q := seam.Question{ID: "plan", Question: "Approve the plan?", Detail: plan,
		Options: []seam.Option{{Label: "Approve"}, {Label: "Keep planning"}},
		Intent:  &seam.Intent{Kind: seam.IntentPlanReview, Approve: "Approve"}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, CreatedAt: time.Unix(1700000000, 0),
		Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true)
	if len(m.more) == 0 {
		t.Fatal("the plan fits one message; the test wants it cut")
	}
	for i, e := range append(m.embeds, m.more...) {
		if strings.Contains(e.Description, "\n```\n") || strings.HasPrefix(e.Description, "```") || strings.HasSuffix(e.Description, "```") {
			t.Errorf("embed %d has a fence the plan does not: %q ... %q", i, e.Description[:min(60, len(e.Description))], e.Description[max(0, len(e.Description)-60):])
		}
	}
}

// An optional boolean's radio group offers Skip beside Yes and No (a radio
// group can't be cleared once tapped or prefilled), which leaves it
// unanswered; a required one offers Yes and No only.
func TestOptionalBooleanCanBeSkipped(t *testing.T) {
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "urgent", Question: "Mark it urgent?", Input: &seam.Input{Type: seam.InputBoolean, Value: "true"}},
		{ID: "notify", Question: "Notify the team?", Input: &seam.Input{Type: seam.InputBoolean, Required: true}},
	}}}
	raw, _ := json.Marshal(sheetModal(rec, nil))
	if n := strings.Count(string(raw), `"value":"`+surface.SkipValue+`"`); n != 1 {
		t.Errorf("%d Skip options in the form, want 1 (the optional boolean's): %s", n, raw)
	}
	r := surface.Ref{Verb: surface.VerbAnswer, ID: rec.ID}
	res, no := submission(rec, map[string]field{textField(0): {values: []string{surface.SkipValue}}, textField(1): {values: []string{"false"}}}, r)
	if no != nil || res == nil {
		t.Fatalf("Skip and No: %+v, %+v", res, no)
	}
	norm, err := rec.Questions.Normalize(*res.Answer)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(norm)
	if want := `{"answers":[{"id":"urgent","selected":[]},{"id":"notify","selected":[],"custom":"false"}]}`; string(got) != want {
		t.Errorf("answer %s, want %s (urgent skipped)", got, want)
	}
	if _, no := submission(rec, map[string]field{textField(0): {values: []string{"true"}}, textField(1): {values: []string{surface.SkipValue}}}, r); no == nil {
		t.Errorf("Skip on the required boolean was taken")
	}
}

// A form's radio buttons, checkboxes and selects show at most 100
// characters of an option's label or description, and on a phone the
// form covers the message that lists them whole: when one is cut, the
// form lists the question's options in full above its fields, numbered
// as its options then are. Options that fit add nothing.
func TestFormListsCutOptionsInFull(t *testing.T) {
	long := "Removes the three stale files from the staging bucket, then purges their cached copies on every edge location we run."
	label := strings.Repeat("Roll back the payments service to the build before the schema change ", 2)[:130]
	for name, tc := range map[string]struct {
		q    seam.Question
		want string
	}{
		"a long description": {seam.Question{ID: "q", Question: "Clean up?", MultiSelect: true,
			Options: []seam.Option{{Label: "Yes", Description: long}, {Label: "No"}}}, "• Yes — " + long + "\n• No"},
		"a long label": {seam.Question{ID: "q", Question: "Which?", MultiSelect: true,
			Options: []seam.Option{{Label: label}, {Label: "Keep it"}}}, "1. " + label + "\n2. Keep it"},
	} {
		t.Run(name, func(t *testing.T) {
			fits := seam.Question{ID: "r", Question: "Region?", Options: []seam.Option{{Label: "eu", Description: "Frankfurt"}, {Label: "us"}}}
			for _, qs := range [][]seam.Question{{tc.q}, {tc.q, fits}} {
				rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending,
					Questions: &seam.Questions{Questions: qs}}
				resp := sheetModal(rec, nil)
				checkModal(t, resp)
				comps := toMap(t, resp)["data"].(map[string]any)["components"].([]any)
				first := comps[0].(map[string]any)
				if first["type"] != float64(componentTextDisplay) || !strings.Contains(str(first, "content"), tc.want) {
					t.Errorf("%d questions: the form's first component is %v; want the options in full (%q)", len(qs), first, tc.want)
				}
				if strings.Contains(str(first, "content"), "Frankfurt") {
					t.Errorf("%d questions: the options that fit are listed too: %q", len(qs), str(first, "content"))
				}
			}
		})
	}
	fits := seam.Question{ID: "r", Question: "Region?", MultiSelect: true, Options: []seam.Option{{Label: "eu", Description: "Frankfurt"}, {Label: "us"}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{fits}}}
	if raw, _ := json.Marshal(sheetModal(rec, nil)); strings.Contains(string(raw), `"type":10`) {
		t.Errorf("a form whose options fit lists them: %s", raw)
	}
}

// A label a select cuts (long labels carry their number, which can push
// one of 97 to 100 characters past the 100 a select shows) is listed in
// full in the message, numbered as the select's options are.
func TestSelectCutLabelsAreListed(t *testing.T) {
	label := strings.Repeat("Roll back the payments service to the build before the schema change ", 2)[:99]
	q := seam.Question{ID: "q", Question: "Which?", Options: []seam.Option{{Label: label}, {Label: "Keep it"}}}
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Questions: &seam.Questions{Questions: []seam.Question{q}}}
	m := render(rec, "", true)
	checkMessage(t, toMap(t, map[string]any{"content": m.content, "embeds": m.embeds, "components": m.components}))
	sel := Components(toMap(t, map[string]any{"components": m.components}))[1]
	if sel["type"] != float64(componentSelect) {
		t.Fatalf("the options are not in a select: %v", sel)
	}
	if got := str(sel["options"].([]any)[0].(map[string]any), "label"); strings.HasSuffix(got, label) {
		t.Fatalf("the select shows the label whole (%q); the test wants it cut", got)
	}
	if desc := m.embeds[0].Description; !strings.Contains(desc, "1. "+label+"\n2. Keep it") {
		t.Errorf("the cut label is not listed in full: %q", desc)
	}
}

// In a form an option's label is shown whole where its 100 characters
// hold it: the number a message's select puts in front of labels too long
// for a button is not put there, where it cut a label of 97 to 100
// characters.
func TestFormShowsWholeLabels(t *testing.T) {
	label := strings.Repeat("Roll back the payments service to the build before the schema change ", 2)[:99]
	for _, multi := range []bool{false, true} {
		q := seam.Question{ID: "q", Question: "Which?", MultiSelect: multi, Options: []seam.Option{{Label: label}, {Label: "Keep it"}}}
		rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending,
			Questions: &seam.Questions{Questions: []seam.Question{q, {ID: "r", Question: "Anything else?"}}}}
		resp := sheetModal(rec, nil)
		checkModal(t, resp)
		if raw, _ := json.Marshal(resp); !strings.Contains(string(raw), `"label":"`+label+`"`) || strings.Contains(string(raw), `"type":10`) {
			t.Errorf("multi %v: the form does not show the %d-character label whole, or lists the options: %s", multi, len(label), raw)
		}
	}
}

// A question's name above its field in a form is one line with something
// on it: a header of spaces, or of several lines, and a question that is
// nothing but control characters would leave a Label's label blank (which
// Discord refuses, and trims spaces to) or break it over lines.
func TestFormLabelsAreOneNonBlankLine(t *testing.T) {
	for name, q := range map[string]seam.Question{
		"a header of spaces":          {ID: "q", Header: "   ", Question: "Which volume?"},
		"a header of two lines":       {ID: "q", Header: "Volume\n# Pick one", Question: "Which volume?"},
		"a question of control bytes": {ID: "q", Question: "\x07\x07"},
		"a typed header of two lines": {ID: "q", Header: "Count\n-# any", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger}},
		"a header of spaces, options": {ID: "q", Header: " ", Question: "Where?", MultiSelect: true, Options: []seam.Option{{Label: "eu"}, {Label: "us"}}},
		"a header of lines, options":  {ID: "q", Header: "Region\n\nnow", Question: "Where?", MultiSelect: true, Options: []seam.Option{{Label: "eu"}, {Label: "us"}}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, qs := range [][]seam.Question{{q}, {q, {ID: "r", Question: "Anything else?"}}} {
				rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: qs}}
				resp := sheetModal(rec, nil)
				if len(qs) == 1 && len(q.Options) == 0 {
					resp = textModal(rec, nil)
				}
				checkModal(t, resp)
				for _, c := range toMap(t, resp)["data"].(map[string]any)["components"].([]any) {
					if l, ok := c.(map[string]any)["label"].(string); ok && (strings.TrimSpace(l) == "" || strings.ContainsAny(l, "\r\n") || strings.TrimRight(l, " ") != l) {
						t.Errorf("%d questions: a field's label %q is blank, ends in spaces or spans lines", len(qs), l)
					}
				}
			}
		})
	}
}

// A header of spaces alone, which the API takes, is no header, as on
// Slack (surface.Header): the embed of one question had an empty title
// (the bare message an empty "****" line) where others say "Question",
// and a question of several was listed as "1.  : Ship it?" in its
// message, its bare content and the form that lists it in full.
func TestBlankHeaderIsNoHeader(t *testing.T) {
	cut := strings.Repeat("Removes the stale files from the staging bucket and purges every cached copy. ", 2)
	for _, header := range []string{" ", "\t \n"} {
		one := seam.Question{ID: "go", Header: header, Question: "Ship it?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}
		rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: &seam.Questions{Questions: []seam.Question{one}}}
		if got := render(rec, "", true).embeds[0].Title; got != "Question" {
			t.Errorf("header %q: the question's embed is titled %q, want %q", header, got, "Question")
		}
		if got := render(rec, "", true).bare().content; !strings.Contains(got, "\n**Question**\n") {
			t.Errorf("header %q: the bare message is not headed Question:\n%s", header, got)
		}

		many := seam.Question{ID: "go", Header: header, Question: "Ship it?", MultiSelect: true,
			Options: []seam.Option{{Label: "Yes", Description: cut}, {Label: "No"}}}
		rec.Questions.Questions = []seam.Question{many, {ID: "why", Question: "Why?"}}
		m := render(rec, "", true)
		form, err := json.Marshal(sheetModal(rec, nil))
		if err != nil {
			t.Fatal(err)
		}
		for what, text := range map[string]string{
			"the message": m.embeds[0].Description, "the bare message": m.bare().content, "the form": string(form),
		} {
			if !strings.Contains(text, "Ship it?") {
				t.Fatalf("header %q: %s does not show the question: %s", header, what, text)
			}
			if strings.Contains(text, ": Ship it?") {
				t.Errorf("header %q: %s names the question by its blank header: %s", header, what, text)
			}
		}
	}
}

// A form's text input holds its value whole or not at all: cut, with or
// without "…", it would be sent back altered by a person who changed
// nothing. Its length is counted as Discord counts it, in code points.
func TestEditableValueNeverCut(t *testing.T) {
	for name, tc := range map[string]struct {
		value, want string
	}{
		"3000 emoji":      {strings.Repeat("😀", 3000), strings.Repeat("😀", 3000)},
		"4000 emoji":      {strings.Repeat("😀", 4000), strings.Repeat("😀", 4000)},
		"4001 emoji":      {strings.Repeat("😀", 4001), ""},
		"4001 characters": {strings.Repeat("a", 4001), ""},
	} {
		t.Run(name, func(t *testing.T) {
			d := &draft{Fields: map[string][]string{textField(0): {tc.value}}}
			got := typedField(0, seam.Question{ID: "n", Question: "Name?"}, true, false, d).(modalText).Value
			if got != tc.want {
				t.Errorf("the field holds %d characters of the %d sent; want %d", utf8.RuneCountInString(got), utf8.RuneCountInString(tc.value), utf8.RuneCountInString(tc.want))
			}
		})
	}
}

package discord

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
)

// FuzzModalSubmit reads fuzzed MODAL_SUBMIT data (classic action rows
// and Label components, nested any way) for the modals of real requests,
// as the handler does, without a store: decode, fields, submission.
// FuzzInteractions reaches the same code through a running replica and
// checks only that it answers; this checks what it decides:
//
//   - fields finds every text input, select and radio or checkbox group
//     with a custom_id, however deep, and nothing else (checked against a
//     walk written apart);
//   - an answer chooses only options whose index a select of that
//     question submitted, answers only the question an Other… modal
//     showed, and is normalised (normalising it again changes nothing);
//   - a problem told to the person is inert markup: it quotes the agent's
//     header and the person's text;
//   - a rejection's note is the note field's, within the seam's limit.
func FuzzModalSubmit(f *testing.F) {
	seedFor := func(which uint8, cs ...any) {
		b, _ := json.Marshal(map[string]any{"custom_id": "ab:answer:abcdefghijklmnop:0:0:0123abcd", "components": cs})
		f.Add(which, b)
	}
	seed := func(cs ...any) { seedFor(0, cs...) }
	seed(LabelSelect("q0p0", "1"), LabelText("q0o", ""))
	seed(LabelSelect("q0p0", "0", "2"), LabelSelect("q0p1", "26"), LabelText("q0o", "and more"))
	seed(LabelSelect("q0p0", "-1"), LabelSelect("q0p1", "999"))
	seed(LabelSelect("q0", "true"))
	radio := func(id string, v any) any {
		return map[string]any{"type": 18, "component": map[string]any{"type": 21, "custom_id": id, "value": v}}
	}
	seedFor(2, radio("q0", "false"))
	seedFor(1, radio("q0p0", nil), LabelText("q1", "7"))
	seedFor(1, map[string]any{"type": 10, "id": 1}, radio("q0p0", "1"), LabelText("q1", "12"), LabelText("q0o", ""))
	seedFor(3, map[string]any{"type": 18, "component": map[string]any{"type": 22, "custom_id": "q0p0", "values": []string{"2", "0"}}}, LabelText("q1", "after 5pm"))
	seed(LabelText("q0", "  "), LabelText("q1", "42"))
	seed(LabelText("q1", "forty-two <@1>"))
	seed(TextRow("q0o", "keep the logs @everyone"))
	seed(map[string]any{"type": 18, "component": nil})
	seed(map[string]any{"type": 1, "components": []any{map[string]any{"type": 18, "component": map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "q0o", "value": "deep"}}}}}})
	seed(map[string]any{"type": 4, "custom_id": "q0", "value": "x", "values": []string{"1", "2"}})
	seed(map[string]any{"type": 3, "custom_id": "", "values": []string{"0"}}, map[string]any{"type": 99, "custom_id": "q0p0", "values": []string{"0"}})
	f.Add(uint8(4), []byte(`{"custom_id":"ab:reject:abcdefghijklmnop:0:0:0123abcd","components":[{"type":1,"components":[{"type":4,"custom_id":"note","value":"not on prod [docs](https://evil.example)"}]}]}`))
	f.Add(uint8(1), []byte(`{"custom_id":"ab:other:abcdefghijklmnop:0:0","components":[{"type":1,"components":[{"type":4,"custom_id":"q0o","value":"my own answer"}]}]}`))
	f.Add(uint8(1), []byte(`{"custom_id":"ab:other:abcdefghijklmnop:7:0","components":[]}`))
	f.Add(uint8(2), []byte(`{"components":[{"type":1,"components":[{"type":3,"custom_id":"q0p0","values":["x"]}]}]}`))
	f.Add(uint8(0), []byte(`{"components":{"type":1}}`))

	recs := modalRecords()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		var d modalData
		if json.Unmarshal(data, &d) != nil {
			return // the handler answers "trouble"
		}
		fs := fields(d.Components)
		if want := walkInputs(d.Components); !sameFields(fs, want) {
			t.Fatalf("fields read %v, want %v", fs, want)
		}
		rec := recs[int(which)%len(recs)]
		r, err := surface.ParseRef(d.CustomID)
		if err != nil {
			// The Ref's verb and question, fuzzed too: the custom_id is
			// checked by FuzzCustomID.
			r = surface.Ref{Verb: []string{surface.VerbAnswer, surface.VerbOther, surface.VerbReject, surface.VerbPick}[int(which/8)%4], ID: rec.ID, Q: int(which/32) % 3}
		}
		res, no := submission(rec, fs, r)
		if no != nil {
			checkInert(t, "refusal", no.say)
			checkInert(t, "refusal's fix", no.fix)
			if res != nil {
				t.Fatalf("both a resolution and a refusal (%q)", no.say)
			}
			// The form opened again from what was sent is one Discord
			// takes, however forged the submission.
			if r.Verb == surface.VerbAnswer && no.fix != "" && rec.Kind == seam.KindQuestion {
				d := newDraft(rec, fs, no)
				qs := rec.Questions.Questions
				switch {
				case len(qs) == 1 && len(qs[0].Options) == 0:
					checkModal(t, textModal(rec, d))
				case sheetFits(qs):
					checkModal(t, sheetModal(rec, d))
				}
			}
		}
		if res == nil {
			return
		}
		if res.Status != seam.StatusAnswered {
			t.Fatalf("a modal resolved as %q", res.Status)
		}
		switch rec.Kind {
		case seam.KindApproval:
			if r.Verb != surface.VerbReject || res.Decision == nil || res.Decision.Outcome != seam.OutcomeRejected {
				t.Fatalf("%s modal of an approval resolved as %+v", r.Verb, res.Decision)
			}
			if n := []rune(res.Decision.Note); len(n) > seam.MaxNoteLen {
				t.Fatalf("a note of %d characters", len(n))
			}
		case seam.KindQuestion:
			checkAnswer(t, rec, r, fs, *res.Answer)
		}
	})
}

// modalRecords are requests whose modals the fuzzed data submits: one
// question with 30 options (two selects) and Other…, a typed pair (a
// radio group and a number), a boolean, a checkbox group and a text, and
// an approval.
func modalRecords() []*pending.Record {
	var many []seam.Option
	for i := range 30 {
		many = append(many, seam.Option{Label: "Option " + strconv.Itoa(i) + " <@&1>"})
	}
	qs := []*seam.Questions{
		{Questions: []seam.Question{{ID: "region", Header: "Region [x](https://evil.example)", Question: "Which?", MultiSelect: true, Options: many}}},
		{Questions: []seam.Question{
			{ID: "why", Header: "@everyone", Question: "Why?", Options: []seam.Option{{Label: "a"}, {Label: "b"}}},
			{ID: "n", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger, Required: true}},
		}},
		{Questions: []seam.Question{{ID: "ok", Question: "OK?", Input: &seam.Input{Type: seam.InputBoolean}}}},
		{Questions: []seam.Question{
			{ID: "envs", Question: "Where?", MultiSelect: true, Options: []seam.Option{{Label: "dev"}, {Label: "staging"}, {Label: "prod"}}},
			{ID: "note", Question: "Anything else?"},
		}},
	}
	var recs []*pending.Record
	for _, q := range qs {
		if err := q.Validate(); err != nil {
			panic(err)
		}
		recs = append(recs, &pending.Record{ID: "abcdefghijklmnop", Hash: "0123abcd" + "ef", Kind: seam.KindQuestion, Status: seam.StatusPending, Questions: q})
	}
	return append(recs, &pending.Record{ID: "abcdefghijklmnop", Hash: "0123abcdef", Kind: seam.KindApproval, Status: seam.StatusPending,
		Approval: &seam.Approval{ToolName: "bash <@1>"}})
}

// walkInputs collects a modal's inputs by custom_id with a stack, in the
// order Discord lists them: a component, the one a Label wraps, then its
// children. A later input of the same custom_id wins.
func walkInputs(cs []wireComponent) map[string]field {
	out := map[string]field{}
	stack := make([]*wireComponent, 0, len(cs))
	for i := len(cs) - 1; i >= 0; i-- {
		stack = append(stack, &cs[i])
	}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case c.CustomID == "":
		case c.Type == 4 || c.Type == 3 || c.Type == 22:
			out[c.CustomID] = field{value: c.Value, values: c.Values}
		case c.Type == 21 && c.Value == "":
			out[c.CustomID] = field{values: []string{}}
		case c.Type == 21:
			out[c.CustomID] = field{values: []string{c.Value}}
		}
		for i := len(c.Components) - 1; i >= 0; i-- {
			stack = append(stack, &c.Components[i])
		}
		if c.Component != nil {
			stack = append(stack, c.Component)
		}
	}
	return out
}

func sameFields(a, b map[string]field) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.value != w.value || !slices.Equal(v.values, w.values) {
			return false
		}
	}
	return true
}

// checkAnswer checks an answer a modal gave rec.
func checkAnswer(t *testing.T, rec *pending.Record, r surface.Ref, fs map[string]field, a seam.Answer) {
	t.Helper()
	again, err := rec.Questions.Normalize(a)
	if err != nil || !slices.EqualFunc(again.Answers, a.Answers, func(x, y seam.AnswerItem) bool {
		return x.ID == y.ID && x.Custom == y.Custom && slices.Equal(x.Selected, y.Selected)
	}) {
		t.Fatalf("the answer %+v normalises again to %+v (%v)", a, again, err)
	}
	for _, it := range a.Answers {
		i := slices.IndexFunc(rec.Questions.Questions, func(q seam.Question) bool { return q.ID == it.ID })
		if i < 0 {
			t.Fatalf("an answer to question %q, which the request does not have", it.ID)
		}
		if r.Verb == surface.VerbOther && i != r.Q && (len(it.Selected) > 0 || it.Custom != "") {
			t.Fatalf("the Other… modal of question %d answered question %d", r.Q, i)
		}
		q := rec.Questions.Questions[i]
		var submitted []string // the labels the selects of q sent
		for p := range parts(q) {
			for _, v := range fs[selectField(i, p)].values {
				if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(q.Options) {
					submitted = append(submitted, q.Options[n].Label)
				}
			}
		}
		for _, l := range it.Selected {
			if !slices.Contains(submitted, l) {
				t.Fatalf("question %q answered with %q, which no select of it sent (%v)", q.ID, l, submitted)
			}
		}
	}
}

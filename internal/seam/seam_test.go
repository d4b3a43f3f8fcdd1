package seam

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func parseQuestions(t *testing.T, s string) Questions {
	t.Helper()
	var q Questions
	if err := json.Unmarshal([]byte(s), &q); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return q
}

func TestQuestionJSON(t *testing.T) {
	q := parseQuestions(t, `{"questions":[
	  {"id":"a","question":"x","multi_select":true,"options":[{"label":"A"}]},
	  {"id":"b","question":"y","multiSelect":true,"options":[{"label":"B"}]},
	  {"id":"c","question":"z","input":{"type":"integer","value":42,"required":true}},
	  {"id":"d","question":"w","input":{"type":"boolean","value":true}},
	  {"id":"e","question":"v","input":{"type":"number","value":null}}]}`)
	if !q.Questions[0].MultiSelect || !q.Questions[1].MultiSelect {
		t.Errorf("multi_select / multiSelect not read: %+v", q.Questions[:2])
	}
	if in := q.Questions[2].Input; in.Value != "42" || !in.Required || in.Type != InputInteger {
		t.Errorf("integer prefill = %+v", in)
	}
	if in := q.Questions[3].Input; in.Value != "true" {
		t.Errorf("boolean prefill = %+v", in)
	}
	if in := q.Questions[4].Input; in.Value != "" {
		t.Errorf("null prefill = %+v", in)
	}
	out, _ := json.Marshal(q.Questions[0])
	if !strings.Contains(string(out), `"multiSelect":true`) {
		t.Errorf("marshals as %s; want the seam's spelling multiSelect", out)
	}
	var bad Questions
	if err := json.Unmarshal([]byte(`{"questions":[{"id":"a","question":"x","input":{"type":"string","value":{"x":1}}}]}`), &bad); err == nil {
		t.Error("an object prefill was accepted")
	}
}

// TestMultiSelectSpellings: multiSelect and multi_select given together
// with one value are that value; with two, neither wins silently.
func TestMultiSelectSpellings(t *testing.T) {
	const opts = `"options":[{"label":"A"},{"label":"B"}]`
	for _, tt := range []struct {
		name, fields string
		multi        bool
	}{
		{"both true", `"multiSelect":true,"multi_select":true`, true},
		{"both false", `"multiSelect":false,"multi_select":false`, false},
		{"snake true, camel null", `"multiSelect":null,"multi_select":true`, true},
		{"camel alone", `"multiSelect":true`, true},
		{"snake alone", `"multi_select":true`, true},
	} {
		q := parseQuestions(t, `{"questions":[{"id":"a","question":"x",`+tt.fields+`,`+opts+`}]}`)
		if got := q.Questions[0].MultiSelect; got != tt.multi {
			t.Errorf("%s: multiSelect = %t, want %t", tt.name, got, tt.multi)
		}
	}
	for _, fields := range []string{
		`"multiSelect":true,"multi_select":false`,
		`"multi_select":true,"multiSelect":false`,
		`"MultiSelect":false,"Multi_Select":true`, // keys match fields as encoding/json matches them
	} {
		var q Questions
		err := json.Unmarshal([]byte(`{"questions":[{"id":"a","question":"x",`+fields+`,`+opts+`}]}`), &q)
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeInvalidRequest || se.Field != "a" ||
			!strings.Contains(se.Message, `question "a" gives multiSelect`) || !strings.Contains(se.Message, "send one") {
			t.Errorf("%s: %v; want INVALID_REQUEST naming question a and both spellings", fields, err)
		}
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("é", MaxLabelLen+1)
	tests := []struct {
		name, body string
		code       Code
	}{
		{"ok", `{"questions":[{"id":"a","question":"x","options":[{"label":"A"},{"label":"B"}]}]}`, ""},
		{"free text", `{"questions":[{"id":"a","question":"x"}]}`, ""},
		{"plan review", `{"questions":[{"id":"p","question":"ok?","detail":"# Plan","intent":{"kind":"plan-review","approve":"Approve"},"options":[{"label":"Approve"},{"label":"Keep planning"}]}]}`, ""},
		{"empty", `{"questions":[]}`, CodeEmptyQuestions},
		{"missing", `{}`, CodeEmptyQuestions},
		{"no id", `{"questions":[{"question":"x"}]}`, CodeInvalidRequest},
		{"blank id", `{"questions":[{"id":" ","question":"x"}]}`, CodeInvalidRequest},
		{"id of unicode spaces", `{"questions":[{"id":"\u00a0\u3000","question":"x"}]}`, CodeInvalidRequest},
		{"no text", `{"questions":[{"id":"a","question":"  "}]}`, CodeInvalidRequest},
		{"duplicate id", `{"questions":[{"id":"a","question":"x"},{"id":"a","question":"y"}]}`, CodeInvalidRequest},
		{"duplicate label", `{"questions":[{"id":"a","question":"x","options":[{"label":"A"},{"label":"A"}]}]}`, CodeInvalidRequest},
		{"label too long", `{"questions":[{"id":"a","question":"x","options":[{"label":"` + long + `"}]}]}`, CodeInvalidRequest},
		{"control in label", `{"questions":[{"id":"a","question":"x","options":[{"label":"A\u0000"}]}]}`, CodeInvalidRequest},
		// Intent tags are open (dsh-user-questions): a kind the bridge does
		// not know is shown as its plain options, not refused.
		{"unknown intent kind", `{"questions":[{"id":"a","question":"x","detail":"d","intent":{"kind":"vote","approve":"Yes"},"options":[{"label":"Yes"},{"label":"No"}]}]}`, ""},
		{"unknown intent without approve", `{"questions":[{"id":"a","question":"x","detail":"d","intent":{"kind":"vote"}}]}`, CodeBadIntent},
		{"plan without approve", `{"questions":[{"id":"a","question":"x","detail":"# Plan","intent":{"kind":"plan-review"},"options":[{"label":"Approve"}]}]}`, CodeBadIntent},
		{"plan without detail", `{"questions":[{"id":"a","question":"x","intent":{"kind":"plan-review"}}]}`, CodeBadIntent},
		{"approve not an option", `{"questions":[{"id":"a","question":"x","detail":"d","intent":{"kind":"plan-review","approve":"Go"},"options":[{"label":"Approve"}]}]}`, CodeBadIntent},
		{"unknown input type", `{"questions":[{"id":"a","question":"x","input":{"type":"date"}}]}`, CodeInvalidRequest},
		{"input with options", `{"questions":[{"id":"a","question":"x","input":{"type":"string"},"options":[{"label":"A"}]}]}`, CodeInvalidRequest},
		{"prefill of the wrong type", `{"questions":[{"id":"a","question":"x","input":{"type":"integer","value":"many"}}]}`, CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Questions
			if err := json.Unmarshal([]byte(tt.body), &q); err != nil {
				t.Fatal(err)
			}
			err := q.Validate()
			if CodeOf(err) != tt.code {
				t.Fatalf("Validate() = %v (%s), want code %q", err, CodeOf(err), tt.code)
			}
			if err != nil && err.Error() == "" {
				t.Fatal("an error without a message")
			}
		})
	}
}

// TestPrefillIsCanonical: a typed field's prefill is kept as an answer's
// text would be, so that every surface shows it chosen or filled in as
// the same value ("true" for "yes"); one that is not of its type is an
// agent's bug, refused naming the question and the field. What Agno sends
// (JSON numbers and booleans, a string, null for none) passes.
func TestPrefillIsCanonical(t *testing.T) {
	for _, tt := range []struct {
		typ, value string // value as JSON
		want       string // the stored prefill
		refused    string // or the error
	}{
		{"boolean", `true`, "true", ""},
		{"boolean", `false`, "false", ""},
		{"boolean", `"yes"`, "true", ""},
		{"boolean", `" N "`, "false", ""},
		{"boolean", `"True"`, "true", ""},
		{"boolean", `""`, "", ""},
		{"boolean", `null`, "", ""},
		{"integer", `42`, "42", ""},
		{"integer", `-0`, "0", ""},
		{"integer", `" +7 "`, "7", ""},
		{"integer", `"007"`, "7", ""},
		{"integer", `3.0`, "3", ""},
		{"integer", `"-12.00"`, "-12", ""},
		{"integer", `"5."`, "5", ""},
		{"number", `3.50`, "3.50", ""},
		{"number", `1e3`, "1e3", ""},
		{"number", `".5"`, "0.5", ""},
		{"string", `"  two lines\nkept  "`, "  two lines\nkept  ", ""},
		{"", `" as sent "`, " as sent ", ""},
		{"boolean", `"maybe"`, "", `question "a": input.value "maybe" is not true or false`},
		{"boolean", `1`, "", `question "a": input.value "1" is not true or false`},
		{"integer", `3.5`, "", `question "a": input.value "3.5" is not a whole number`},
		{"integer", `true`, "", `question "a": input.value "true" is not a whole number`},
		{"integer", `3.01`, "", `question "a": input.value "3.01" is not a whole number`},
		{"integer", `".0"`, "", `question "a": input.value ".0" is not a whole number`},
		{"integer", `3e2`, "", `question "a": input.value "3e2" is not a whole number`},
		{"number", `"many"`, "", `question "a": input.value "many" is not a number`},
		{"number", `1e400`, "", `question "a": input.value "1e400" is not a number`},
	} {
		t.Run(tt.typ+" "+tt.value, func(t *testing.T) {
			q := parseQuestions(t, `{"questions":[{"id":"a","question":"x","input":{"type":"`+tt.typ+`","value":`+tt.value+`}}]}`)
			err := q.Validate()
			if tt.refused != "" {
				var se *Error
				if !errors.As(err, &se) || se.Code != CodeInvalidRequest || se.Field != "a" || err.Error() != tt.refused {
					t.Fatalf("Validate() = %v; want INVALID_REQUEST %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Questions[0].Input.Value; got != tt.want {
				t.Errorf("prefill stored as %q, want %q", got, tt.want)
			}
		})
	}
}

// TestIntentWithoutApprove: an intent without approve is told that
// approve is required and what it names, not that "" names no option.
func TestIntentWithoutApprove(t *testing.T) {
	var q Questions
	if err := json.Unmarshal([]byte(`{"questions":[{"id":"a","question":"x","detail":"# Plan","intent":{"kind":"plan-review"},"options":[{"label":"Approve"}]}]}`), &q); err != nil {
		t.Fatal(err)
	}
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "intent.approve is required: the label of the option that approves") {
		t.Errorf("Validate() = %v; want it to say intent.approve is required", err)
	}
}

func TestNormalize(t *testing.T) {
	q := parseQuestions(t, `{"questions":[
	  {"id":"single","question":"?","options":[{"label":"A (Recommended)"},{"label":"B"}]},
	  {"id":"multi","question":"?","multiSelect":true,"options":[{"label":"X"},{"label":"Y"},{"label":"Z"}]},
	  {"id":"count","question":"?","input":{"type":"integer"}},
	  {"id":"flag","question":"?","input":{"type":"boolean","required":true}},
	  {"id":"text","question":"?"}]}`)
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, answer, want string
		field              string // the question a refusal names
	}{
		{"reordered, options in their order, trimmed, custom overrides single, skips filled in",
			`{"answers":[{"id":"flag","selected":[],"custom":" Yes "},{"id":"multi","selected":["Z","X"],"custom":" more "},{"id":"single","selected":["B"],"custom":" other "}]}`,
			`{"answers":[{"id":"single","selected":[],"custom":"other"},{"id":"multi","selected":["X","Z"],"custom":"more"},{"id":"count","selected":[]},{"id":"flag","selected":[],"custom":"true"},{"id":"text","selected":[]}]}`, ""},
		{"verbatim label with suffix",
			`{"answers":[{"id":"single","selected":["A (Recommended)"]},{"id":"flag","custom":"no"},{"id":"count","custom":"-3"},{"id":"text","custom":"   "}]}`,
			`{"answers":[{"id":"single","selected":["A (Recommended)"]},{"id":"multi","selected":[]},{"id":"count","selected":[],"custom":"-3"},{"id":"flag","selected":[],"custom":"false"},{"id":"text","selected":[]}]}`, ""},
		{"label without suffix", `{"answers":[{"id":"single","selected":["A"]},{"id":"flag","custom":"y"}]}`, "", "single"},
		{"an option twice", `{"answers":[{"id":"multi","selected":["X","Z","X"]},{"id":"flag","custom":"y"}]}`, "", "multi"},
		{"an option twice, single-select", `{"answers":[{"id":"single","selected":["B","B"]},{"id":"flag","custom":"y"}]}`, "", "single"},
		{"two for single", `{"answers":[{"id":"single","selected":["A (Recommended)","B"]},{"id":"flag","custom":"y"}]}`, "", "single"},
		{"not an integer", `{"answers":[{"id":"count","custom":"3.5"},{"id":"flag","custom":"y"}]}`, "", "count"},
		{"required missing", `{"answers":[{"id":"single","selected":["B"]}]}`, "", "flag"},
		{"unknown question", `{"answers":[{"id":"nope","selected":[]},{"id":"flag","custom":"y"}]}`, "", "nope"},
		{"question twice", `{"answers":[{"id":"text","custom":"a"},{"id":"text","custom":"b"},{"id":"flag","custom":"y"}]}`, "", "text"},
		{"selection on free text", `{"answers":[{"id":"text","selected":["A"]},{"id":"flag","custom":"y"}]}`, "", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Answer
			if err := json.Unmarshal([]byte(tt.answer), &a); err != nil {
				t.Fatal(err)
			}
			got, err := q.Normalize(a)
			if tt.want == "" {
				var se *Error
				if !errors.As(err, &se) || se.Code != CodeInvalidRequest || se.Field != tt.field {
					t.Fatalf("Normalize() = %v; want INVALID_REQUEST naming %q", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out, _ := json.Marshal(got); string(out) != tt.want {
				t.Fatalf("got  %s\nwant %s", out, tt.want)
			}
		})
	}
}

// TestSelectedInOptionOrder: one set of options is one answer, whatever
// order the answerer listed them in (a select may list them in the order
// they were picked): selected comes back in the order of the options.
func TestSelectedInOptionOrder(t *testing.T) {
	q := parseQuestions(t, `{"questions":[{"id":"checks","question":"?","multiSelect":true,"options":[{"label":"lint"},{"label":"unit"},{"label":"e2e"},{"label":"smoke"}]}]}`)
	for _, picked := range [][]string{
		{"lint", "e2e", "smoke"}, {"smoke", "e2e", "lint"}, {"e2e", "lint", "smoke"},
	} {
		got, err := q.Normalize(Answer{Answers: []AnswerItem{{ID: "checks", Selected: picked}}})
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.Join(got.Answers[0].Selected, ","); s != "lint,e2e,smoke" {
			t.Errorf("%v came back as %s; want lint,e2e,smoke, the options' order", picked, s)
		}
	}
}

// An option selected twice is refused, naming it: no surface sends one
// twice, so an answerer that does has a bug, and dropping the repeat
// would hide it.
func TestRepeatedOptionIsNamed(t *testing.T) {
	q := parseQuestions(t, `{"questions":[{"id":"envs","question":"?","multiSelect":true,"options":[{"label":"prod"},{"label":"staging"}]}]}`)
	_, err := q.Normalize(Answer{Answers: []AnswerItem{{ID: "envs", Selected: []string{"staging", "prod", "staging"}}}})
	if want := `the answer to question "envs" selects "staging" twice; select each option once`; err == nil || err.Error() != want {
		t.Errorf("error %v; want %s", err, want)
	}
}

// An unknown label is refused with the labels there are: a person who
// typed "A" for "A (Recommended)" sees what to type. Long lists are cut.
func TestUnknownLabelListsTheOptions(t *testing.T) {
	q := parseQuestions(t, `{"questions":[{"id":"single","question":"?","options":[{"label":"A (Recommended)"},{"label":"B"}]}]}`)
	_, err := q.Normalize(Answer{Answers: []AnswerItem{{ID: "single", Selected: []string{"A"}}}})
	if want := `"A" is not an option of question "single"; its options: "A (Recommended)", "B"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v; want it to say %s", err, want)
	}
	var opts []string
	for i := range 12 {
		opts = append(opts, fmt.Sprintf(`{"label":"o%d"}`, i))
	}
	q = parseQuestions(t, `{"questions":[{"id":"many","question":"?","options":[`+strings.Join(opts, ",")+`]}]}`)
	_, err = q.Normalize(Answer{Answers: []AnswerItem{{ID: "many", Selected: []string{"x"}}}})
	if want := `"o8", "o9" and 2 more`; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %v; want it to end %s", err, want)
	}
}

// A label sent for a question without options says how such a question
// is answered, rather than list its options: none.
func TestLabelForAFreeTextQuestion(t *testing.T) {
	q := parseQuestions(t, `{"questions":[{"id":"why","question":"Why now?"}]}`)
	_, err := q.Normalize(Answer{Answers: []AnswerItem{{ID: "why", Selected: []string{"because"}}}})
	if want := `"because" is not an option of question "why", which has none: answer it in free text, with custom`; err == nil || err.Error() != want {
		t.Errorf("error %v; want %s", err, want)
	}
}

// A required field is named by its header, and by its id where the
// header is blank (spaces or controls alone, which the API takes, and
// which the surfaces show as none, surface.Header): not "  is required".
func TestRequiredNamesTheQuestion(t *testing.T) {
	for header, want := range map[string]string{"Count": "Count", "": "n", " ": "n", "\t \n": "n", "\x01 ": "n"} {
		q := Questions{Questions: []Question{{ID: "n", Question: "How many?", Header: header, Input: &Input{Type: InputInteger, Required: true}}}}
		if err := q.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := q.Normalize(Answer{Answers: []AnswerItem{{ID: "n"}}})
		if want += " is required"; err == nil || err.Error() != want {
			t.Errorf("header %q: error %v; want %s", header, err, want)
		}
		_, err = q.Normalize(Answer{Answers: []AnswerItem{{ID: "n", Custom: "many"}}})
		if want := strings.TrimSuffix(want, " is required") + `: "many" is not a whole number`; err == nil || err.Error() != want {
			t.Errorf("header %q: error %v; want %s", header, err, want)
		}
	}
}

// An answer item without an id says which item it is and what it lacks,
// not that the request has no question "".
func TestAnswerItemWithoutID(t *testing.T) {
	q := parseQuestions(t, `{"questions":[{"id":"why","question":"Why now?"},{"id":"when","question":"When?"}]}`)
	_, err := q.Normalize(Answer{Answers: []AnswerItem{{ID: "why", Custom: "because"}, {Custom: "now"}}})
	if want := `answers[1] has no id: name the question it answers ("why", "when")`; err == nil || err.Error() != want {
		t.Errorf("error %v; want %s", err, want)
	}
}

// TestParseInput: typed input takes what a person types and JSON or the
// web inbox would read, not Go's literal forms.
func TestParseInput(t *testing.T) {
	for _, tc := range []struct {
		typ, text, want string // want "" means refused
	}{
		{InputNumber, "3.5", "3.5"},
		{InputNumber, " -12 ", "-12"},
		{InputNumber, "+1e3", "1e3"},
		{InputNumber, "2.5E-3", "2.5E-3"},
		{InputNumber, ".5", "0.5"},
		{InputNumber, "-.50", "-0.50"},
		{InputNumber, "5.", "5"},
		{InputNumber, "007.10", "7.10"},
		{InputNumber, "-0", "-0"},
		{InputNumber, "000", "0"},
		{InputNumber, "1_000", ""},
		{InputNumber, "0x10", ""},
		{InputNumber, "0x1p4", ""},
		{InputNumber, "Inf", ""},
		{InputNumber, "infinity", ""},
		{InputNumber, "NaN", ""},
		{InputNumber, "1e400", ""},
		{InputNumber, "1,5", ""},
		{InputNumber, "", ""},
		{InputInteger, "42", "42"},
		{InputInteger, "-7", "-7"},
		{InputInteger, " +4 ", "4"},
		{InputInteger, "007", "7"},
		{InputInteger, "-0", "0"},
		{InputInteger, "42.0", "42"},
		{InputInteger, " -3.00 ", "-3"},
		{InputInteger, "3.01", ""},
		{InputInteger, ".0", ""},
		{InputInteger, "-.0", ""},
		{InputInteger, "1_000", ""},
		{InputInteger, "0x10", ""},
		{InputInteger, "1e3", ""},
		{InputInteger, "99999999999999999999", ""},
		{InputBoolean, "Yes", "true"},
		{InputBoolean, "1", ""},
	} {
		got, err := ParseInput(tc.typ, tc.text)
		if tc.want == "" && err == nil {
			t.Errorf("ParseInput(%s, %q) = %q; want it refused", tc.typ, tc.text, got)
		}
		if tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("ParseInput(%s, %q) = %q, %v; want %q", tc.typ, tc.text, got, err, tc.want)
		}
		if (tc.typ == InputNumber || tc.typ == InputInteger) && err == nil && !json.Valid([]byte(got)) {
			t.Errorf("ParseInput(%s, %q) = %q: not a JSON number", tc.typ, tc.text, got)
		}
	}
}

// An integer past 64 bits is refused with the range a field takes, on
// every surface: it reads as digits, and "not a whole number" would not say
// what is wrong.
func TestParseInputSaysTheIntegerRange(t *testing.T) {
	for _, text := range []string{"9223372036854775808", "-9223372036854775809"} {
		_, err := ParseInput(InputInteger, text)
		if want := " is not a whole number from -9223372036854775808 to 9223372036854775807"; err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("ParseInput(integer, %s) = %v; want it to end %q", text, err, want)
		}
	}
	if _, err := ParseInput(InputInteger, "4.2"); err == nil || strings.Contains(err.Error(), " from ") {
		t.Errorf("ParseInput(integer, 4.2) = %v; want plain \"not a whole number\"", err)
	}
}

// TestParseInputErrorQuotesLittle: the error of a refused value, shown
// beside the field it was typed in, quotes the start of a long one, not the
// thousands of characters a field takes.
func TestParseInputErrorQuotesLittle(t *testing.T) {
	for _, typ := range []string{InputInteger, InputNumber, InputBoolean} {
		_, err := ParseInput(typ, "three")
		if err == nil || !strings.HasPrefix(err.Error(), `"three" is not`) {
			t.Errorf("ParseInput(%s, three): %v; want it quoted whole", typ, err)
		}
		long := strings.Repeat("<é>", MaxCustomLen/3)
		_, err = ParseInput(typ, long)
		if err == nil || !strings.HasPrefix(err.Error(), strconv.Quote(long[:len("<é>")*13]+"<…")) || len(err.Error()) > 100 {
			t.Errorf("ParseInput(%s, %d characters): %.200v; want its first 40 quoted", typ, len(long), err)
		}
	}
}

// TestApprovalArguments: an approval's arguments are a JSON object, or none.
func TestApprovalArguments(t *testing.T) {
	for _, tc := range []struct {
		args string // "" leaves arguments out
		ok   bool
		want string // the arguments after Validate
	}{
		{"", true, ""},
		{`{"file":"prod.yaml","replicas":3}`, true, `{"file":"prod.yaml","replicas":3}`},
		{`{}`, true, `{}`},
		{`null`, true, ""},
		{`[1,2]`, false, ""},
		{`"str"`, false, ""},
		{`3`, false, ""},
		{`true`, false, ""},
	} {
		body := `{"tool_name":"kubectl_apply"}`
		if tc.args != "" {
			body = `{"tool_name":"kubectl_apply","arguments":` + tc.args + `}`
		}
		var a Approval
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatal(err)
		}
		err := a.Validate()
		var se *Error
		switch {
		case tc.ok && err != nil:
			t.Errorf("arguments %s: %v", tc.args, err)
		case tc.ok && string(a.Arguments) != tc.want:
			t.Errorf("arguments %s: after Validate %q, want %q", tc.args, a.Arguments, tc.want)
		case !tc.ok && (!errors.As(err, &se) || se.Code != CodeInvalidRequest || se.Field != "arguments"):
			t.Errorf("arguments %s: %v; want INVALID_REQUEST naming arguments", tc.args, err)
		}
	}
}

func TestDecisionNormalize(t *testing.T) {
	d, err := Decision{Outcome: OutcomeRejected, Note: "  no  "}.Normalize()
	if err != nil || d.Note != "no" {
		t.Fatalf("%+v %v", d, err)
	}
	if _, err := (Decision{Outcome: "cancelled"}).Normalize(); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("cancelled outcome: %v", err)
	}
}

func TestStatusCodes(t *testing.T) {
	for st, want := range map[Status]Code{StatusPending: "", StatusAnswered: "", StatusCancelled: CodeAborted, StatusDismissed: CodeCancelled, StatusExpired: CodeTimedOut} {
		if got := st.Code(); got != want {
			t.Errorf("%s.Code() = %q, want %q", st, got, want)
		}
	}
	if Messages[CodeNoProvider] != "no user-questions answerer accepted the request" {
		t.Error("NO_PROVIDER message differs from the seam's")
	}
}

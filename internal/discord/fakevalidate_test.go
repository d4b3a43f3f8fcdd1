package discord

// What Discord refuses with 400 Invalid Form Body (code 50035), as the
// fake checks it: the limits of a message (content, embeds, legacy action
// rows and their buttons and selects, allowed_mentions) and of a modal (Label or action row
// around a text input, a string select or a radio or checkbox group, and
// what they are filled with: a text input's value within its max_length,
// no more options chosen by default than a select or group takes), and
// of a thread's start (InvalidThreadStart).
// Lengths are counted in code points, as Discord counts them.
// (docs: developers/components/reference.mdx, developers/resources/message.mdx,
// developers/interactions/receiving-and-responding.mdx)

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// InvalidMessage lists what Discord would refuse in a message body: a
// create, an edit, or the data of a CHANNEL_MESSAGE_WITH_SOURCE or
// UPDATE_MESSAGE response. create: a new message, which must show
// something.
func InvalidMessage(body map[string]any, create bool) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	content, _ := body["content"].(string)
	if n := runes(content); n > 2000 {
		add("content: %d characters, more than 2000", n)
	}
	if n, _ := body["nonce"].(string); runes(n) > 25 {
		add("nonce: longer than 25")
	}
	bad = append(bad, invalidMentions(body["allowed_mentions"])...)
	embeds, _ := body["embeds"].([]any)
	rows, _ := body["components"].([]any)
	if create && content == "" && len(embeds) == 0 && len(rows) == 0 {
		add(msgEmpty)
	}
	if len(embeds) > 10 {
		add("embeds: %d, more than 10", len(embeds))
	}
	total := 0
	for i, e := range embeds {
		m, _ := e.(map[string]any)
		for k, max := range map[string]int{"title": 256, "description": 4096} {
			n := runes(str(m, k))
			total += n
			if n > max {
				add("embeds.%d.%s: %d characters, more than %d", i, k, n, max)
			}
		}
		fields, _ := m["fields"].([]any)
		if len(fields) > 25 {
			add("embeds.%d.fields: more than 25", i)
		}
		for j, f := range fields {
			fm, _ := f.(map[string]any)
			name, value := runes(str(fm, "name")), runes(str(fm, "value"))
			total += name + value
			if name == 0 || name > 256 || value == 0 || value > 1024 {
				add("embeds.%d.fields.%d: name %d, value %d characters", i, j, name, value)
			}
		}
		if ft, ok := m["footer"].(map[string]any); ok {
			n := runes(str(ft, "text"))
			total += n
			if n > 2048 {
				add("embeds.%d.footer.text: more than 2048", i)
			}
		}
		if au, ok := m["author"].(map[string]any); ok {
			n := runes(str(au, "name"))
			total += n
			if n > 256 {
				add("embeds.%d.author.name: more than 256", i)
			}
		}
	}
	if total > 6000 {
		add("embeds: %d characters in all, more than 6000", total)
	}
	if len(rows) > 5 {
		add("components: %d action rows, more than 5", len(rows))
	}
	ids := map[string]bool{}
	for i, r := range rows {
		row, _ := r.(map[string]any)
		if row["type"] != float64(componentRow) {
			add("components.%d: type %v where a legacy message takes action rows", i, row["type"])
			continue
		}
		cs, _ := row["components"].([]any)
		selects := 0
		for _, c := range cs {
			if m, _ := c.(map[string]any); m["type"] == float64(componentSelect) {
				selects++
			}
		}
		switch {
		case len(cs) == 0:
			add("components.%d: an empty action row", i)
		case selects > 0 && len(cs) != 1:
			add("components.%d: a select shares its row", i)
		case len(cs) > 5:
			add("components.%d: %d buttons, more than 5", i, len(cs))
		}
		for j, c := range cs {
			m, _ := c.(map[string]any)
			where := fmt.Sprintf("components.%d.components.%d", i, j)
			switch m["type"] {
			case float64(2):
				bad = append(bad, invalidButton(where, m, ids)...)
			case float64(componentSelect):
				bad = append(bad, invalidSelect(where, m, false)...)
				bad = append(bad, invalidCustomID(where, m, ids)...)
			default:
				add("%s: type %v can't be in a message's action row", where, m["type"])
			}
		}
	}
	return bad
}

// invalidMentions checks allowed_mentions: parse takes roles, users and
// everyone, and is exclusive with a list of the same kind (Discord's
// Allowed Mentions examples: parse ["users"] beside users is a
// validation error); roles and users hold at most 100 ids each.
func invalidMentions(v any) []string {
	am, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var bad []string
	parse, _ := am["parse"].([]any)
	for _, p := range parse {
		switch p {
		case "roles", "users", "everyone":
		default:
			bad = append(bad, fmt.Sprintf("allowed_mentions.parse: %v is not roles, users or everyone", p))
		}
	}
	for _, kind := range []string{"roles", "users"} {
		ids, _ := am[kind].([]any)
		if len(ids) > 100 {
			bad = append(bad, fmt.Sprintf("allowed_mentions.%s: %d ids, more than 100", kind, len(ids)))
		}
		if len(ids) > 0 && slices.Contains(parse, any(kind)) {
			bad = append(bad, fmt.Sprintf("allowed_mentions: parse %q and %s are mutually exclusive", kind, kind))
		}
	}
	return bad
}

func invalidCustomID(where string, m map[string]any, seen map[string]bool) []string {
	id, _ := m["custom_id"].(string)
	switch n := runes(id); {
	case n == 0 || n > 100:
		return []string{fmt.Sprintf("%s.custom_id: %d characters, not 1-100", where, n)}
	case seen[id]:
		return []string{fmt.Sprintf("%s.custom_id: %q is used twice", where, id)}
	}
	seen[id] = true
	return nil
}

func invalidButton(where string, m map[string]any, ids map[string]bool) []string {
	var bad []string
	if n := runes(str(m, "label")); n > 80 || n == 0 && m["emoji"] == nil {
		bad = append(bad, fmt.Sprintf("%s.label: %d characters, not 1-80 (and no emoji)", where, n))
	}
	style, _ := m["style"].(float64)
	switch {
	case style < 1 || style > 5:
		bad = append(bad, fmt.Sprintf("%s.style: %v", where, m["style"]))
	case style == 5:
		if u := str(m, "url"); u == "" || runes(u) > 512 || str(m, "custom_id") != "" {
			bad = append(bad, fmt.Sprintf("%s: a link button takes a url of 1-512 characters and no custom_id", where))
		}
	default:
		if str(m, "url") != "" {
			bad = append(bad, fmt.Sprintf("%s: only a link button takes a url", where))
		}
		bad = append(bad, invalidCustomID(where, m, ids)...)
	}
	return bad
}

// invalidSelect checks a string select; inModal: in a modal's Label,
// where required applies.
func invalidSelect(where string, m map[string]any, inModal bool) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, where+": "+fmt.Sprintf(format, a...)) }
	addAt := func(field, format string, a ...any) {
		bad = append(bad, where+"."+field+": "+fmt.Sprintf(format, a...))
	}
	opts, _ := m["options"].([]any)
	if len(opts) == 0 || len(opts) > 25 {
		add("%d options, not 1-25", len(opts))
	}
	values, defaults := map[string]bool{}, 0
	for k, o := range opts {
		om, _ := o.(map[string]any)
		l, v, d := runes(str(om, "label")), runes(str(om, "value")), runes(str(om, "description"))
		if l == 0 || l > 100 || v == 0 || v > 100 || d > 100 {
			addAt(fmt.Sprint("options.", k), "label %d, value %d, description %d characters", l, v, d)
		}
		if values[str(om, "value")] {
			addAt(fmt.Sprint("options.", k, ".value"), "%q is used twice", str(om, "value"))
		}
		values[str(om, "value")] = true
		if om["default"] == true {
			defaults++
		}
	}
	if n := runes(str(m, "placeholder")); n > 150 {
		addAt("placeholder", "%d characters, more than 150", n)
	}
	minV, maxV := 1, 1
	if v, ok := m["min_values"].(float64); ok {
		minV = int(v)
	}
	if v, ok := m["max_values"].(float64); ok {
		maxV = int(v)
	}
	if minV < 0 || minV > 25 || maxV < 1 || maxV > 25 || minV > maxV || maxV > len(opts) {
		add("min_values %d, max_values %d for %d options", minV, maxV, len(opts))
	}
	if defaults > maxV {
		add("%d options chosen by default, more than max_values %d", defaults, maxV)
	}
	required := true
	if r, ok := m["required"].(bool); ok {
		required = r
	}
	if inModal && required && minV < 1 {
		add("min_values must be at least 1 where required is true")
	}
	if inModal && m["disabled"] == true {
		add("a modal can't hold a disabled component")
	}
	return bad
}

// invalidGroup checks a radio group (2-10 options, at most one a default,
// no min or max) or a checkbox group (1-10 options; min_values 0-10,
// default 1, and 0 only where required is false; max_values 1-10, default
// the options' count). Their options take label, value and description,
// each up to 100 characters, and default.
func invalidGroup(where string, m map[string]any) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, where+": "+fmt.Sprintf(format, a...)) }
	addAt := func(field, format string, a ...any) {
		bad = append(bad, where+"."+field+": "+fmt.Sprintf(format, a...))
	}
	radio := m["type"] == float64(componentRadioGroup)
	opts, _ := m["options"].([]any)
	if least := map[bool]int{true: 2, false: 1}[radio]; len(opts) < least || len(opts) > 10 {
		add("%d options, not %d-10", len(opts), least)
	}
	values, defaults := map[string]bool{}, 0
	for k, o := range opts {
		om, _ := o.(map[string]any)
		l, v, d := runes(str(om, "label")), runes(str(om, "value")), runes(str(om, "description"))
		if l == 0 || l > 100 || v == 0 || v > 100 || d > 100 {
			addAt(fmt.Sprint("options.", k), "label %d, value %d, description %d characters", l, v, d)
		}
		for key := range om {
			if key != "label" && key != "value" && key != "description" && key != "default" {
				addAt(fmt.Sprint("options.", k), "a group's option takes no %s", key)
			}
		}
		if values[str(om, "value")] {
			addAt(fmt.Sprint("options.", k, ".value"), "%q is used twice", str(om, "value"))
		}
		values[str(om, "value")] = true
		if om["default"] == true {
			defaults++
		}
	}
	required := true
	if r, ok := m["required"].(bool); ok {
		required = r
	}
	_, hasMin := m["min_values"]
	_, hasMax := m["max_values"]
	if radio {
		if hasMin || hasMax {
			add("a radio group takes no min_values or max_values")
		}
		if defaults > 1 {
			add("%d options chosen by default in a radio group", defaults)
		}
		return bad
	}
	minV, maxV := 1, len(opts)
	if v, ok := m["min_values"].(float64); ok {
		minV = int(v)
	}
	if v, ok := m["max_values"].(float64); ok {
		maxV = int(v)
	}
	if minV < 0 || minV > 10 || maxV < 1 || maxV > 10 || minV > maxV || maxV > len(opts) {
		add("min_values %d, max_values %d for %d options", minV, maxV, len(opts))
	}
	if defaults > maxV {
		add("%d options chosen by default, more than max_values %d", defaults, maxV)
	}
	if minV == 0 && required {
		add("min_values 0 needs required false")
	}
	return bad
}

// InvalidModal lists what Discord would refuse in the data of a MODAL
// response.
func InvalidModal(data map[string]any) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	if n := runes(str(data, "custom_id")); n == 0 || n > 100 {
		add("custom_id: %d characters, not 1-100", n)
	}
	if n := runes(str(data, "title")); n == 0 || n > 45 {
		add("title: %d characters, not 1-45", n)
	}
	cs, _ := data["components"].([]any)
	if len(cs) == 0 || len(cs) > 5 {
		add("components: %d, not 1-5", len(cs))
	}
	ids := map[string]bool{}
	for i, c := range cs {
		m, _ := c.(map[string]any)
		where := fmt.Sprintf("components.%d", i)
		switch m["type"] {
		case float64(componentLabel):
			if n := runes(str(m, "label")); n == 0 || n > 45 {
				add("%s.label: %d characters, not 1-45", where, n)
			}
			if n := runes(str(m, "description")); n > 100 {
				add("%s.description: %d characters, more than 100", where, n)
			}
			inner, _ := m["component"].(map[string]any)
			where += ".component"
			switch inner["type"] {
			case float64(componentText):
				if _, has := inner["label"]; has {
					add("%s.label: a text input in a Label takes no label", where)
				}
				bad = append(bad, invalidTextInput(where, inner)...)
			case float64(componentSelect):
				bad = append(bad, invalidSelect(where, inner, true)...)
			case float64(componentRadioGroup), float64(componentCheckboxGroup):
				bad = append(bad, invalidGroup(where, inner)...)
			default:
				add("%s: type %v in a Label", where, inner["type"])
			}
			bad = append(bad, invalidCustomID(where, inner, ids)...)
		case float64(componentTextDisplay):
			if n := runes(str(m, "content")); n == 0 || n > 4000 {
				add("%s.content: %d characters, not 1-4000", where, n)
			}
		case float64(componentRow):
			row, _ := m["components"].([]any)
			if len(row) != 1 {
				add("%s: an action row in a modal holds one text input, not %d components", where, len(row))
				continue
			}
			inner, _ := row[0].(map[string]any)
			where += ".components.0"
			if inner["type"] != float64(componentText) {
				add("%s: type %v in a modal's action row", where, inner["type"])
				continue
			}
			if n := runes(str(inner, "label")); n == 0 || n > 45 {
				add("%s.label: %d characters, not 1-45", where, n)
			}
			bad = append(bad, invalidTextInput(where, inner)...)
			bad = append(bad, invalidCustomID(where, inner, ids)...)
		default:
			add("%s: type %v at the top of a modal", where, m["type"])
		}
	}
	return bad
}

func invalidTextInput(where string, m map[string]any) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, where+": "+fmt.Sprintf(format, a...)) }
	addAt := func(field, format string, a ...any) {
		bad = append(bad, where+"."+field+": "+fmt.Sprintf(format, a...))
	}
	if s := m["style"]; s != float64(1) && s != float64(2) {
		addAt("style", "%v is not 1 or 2", s)
	}
	minL, maxL := 0, 4000
	if v, ok := m["min_length"].(float64); ok {
		minL = int(v)
	}
	if v, ok := m["max_length"].(float64); ok {
		maxL = int(v)
	}
	if minL < 0 || minL > 4000 || maxL < 1 || maxL > 4000 || minL > maxL {
		add("min_length %d, max_length %d", minL, maxL)
	}
	if n := runes(str(m, "value")); n > maxL {
		addAt("value", "%d characters, more than max_length %d", n, maxL)
	}
	if n := runes(str(m, "placeholder")); n > 100 {
		addAt("placeholder", "%d characters, more than 100", n)
	}
	return bad
}

// InvalidResponse lists what Discord would refuse in an interaction
// response, its data's fields under data as Discord names them.
func InvalidResponse(resp map[string]any) []string {
	data, _ := resp["data"].(map[string]any)
	switch resp["type"] {
	case float64(respPong), float64(respDeferredUpdate):
		return nil
	case float64(respDeferredMsg):
		// Its data takes flags alone (64: the message to come is ephemeral).
		if f, _ := data["flags"].(float64); len(data) > 1 || (len(data) == 1 && int(f)&^flagEphemeral != 0) {
			return []string{fmt.Sprintf("data: a deferred message's data is its flags alone, not %v", data)}
		}
		return nil
	case float64(respMessage):
		return under("data", InvalidMessage(data, true))
	case float64(respUpdate):
		return under("data", InvalidMessage(data, false))
	case float64(respModal):
		return under("data", InvalidModal(data))
	}
	return []string{fmt.Sprintf("type: %v is not a response askbridge sends", resp["type"])}
}

// under puts the fields bad names (each "path: what") under field: a
// message's content is its response's data.content.
func under(field string, bad []string) []string {
	out := make([]string, len(bad))
	for i, b := range bad {
		if path, _, ok := strings.Cut(b, ": "); ok && formPath.MatchString(path) {
			b = field + "." + b
		}
		out[i] = b
	}
	return out
}

// formPath is the path of a field in a JSON body, its keys and indexes
// joined by dots: components.0.components.1.label.
var formPath = regexp.MustCompile(`^[a-z_]+(\.[a-z0-9_]+)*$`)

// msgEmpty is what the checks say of a message that shows nothing, which
// Discord refuses with an error of its own (50006), not a field's.
const msgEmpty = "Cannot send an empty message"

// FormErrors is the errors object of Discord's 400 Invalid Form Body
// (50035) for what the checks found, each "path: what": the path's keys
// nested, each field's errors in its _errors, as Discord's Error Messages
// reference shows them (docs: developers/reference.mdx; discord-api-docs#2519):
//
//	{"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "2001 characters, more than 2000"}]},
//	 "components": {"0": {"components": {"0": {"label": {"_errors": [...]}}}}}}
//
// The message is the check's, which says more than Discord's ("Must be
// 2000 or fewer in length."); the code is Discord's where the fake knows
// it (formCode). What names no field goes in the top level's _errors.
func FormErrors(bad []string) map[string]any {
	errs := map[string]any{}
	for _, b := range bad {
		path, what, ok := strings.Cut(b, ": ")
		if !ok || !formPath.MatchString(path) {
			path, what = "", b
		}
		node := errs
		if path != "" {
			for _, key := range strings.Split(path, ".") {
				next, _ := node[key].(map[string]any)
				if next == nil {
					next = map[string]any{}
					node[key] = next
				}
				node = next
			}
		}
		list, _ := node["_errors"].([]any)
		node["_errors"] = append(list, map[string]any{"code": formCode(path, what), "message": what})
	}
	return errs
}

// formCode is Discord's code for a field's error the checks found, where
// the fake knows it; FAKE_UNKNOWN_CODE where it does not.
func formCode(path, what string) string {
	switch {
	case strings.HasSuffix(path, "custom_id") && strings.Contains(what, "used twice"):
		return "COMPONENT_CUSTOM_ID_DUPLICATED"
	case strings.Contains(what, "shares its row"), strings.Contains(what, "buttons, more than 5"):
		return "COMPONENT_LAYOUT_WIDTH_EXCEEDED"
	case strings.HasPrefix(what, "Value must be one of"):
		return "BASE_TYPE_CHOICES"
	case strings.HasPrefix(what, "This field is required"):
		return "BASE_TYPE_REQUIRED"
	case strings.Contains(what, "more than"):
		return "BASE_TYPE_MAX_LENGTH"
	case badLength.MatchString(what):
		return "BASE_TYPE_BAD_LENGTH"
	}
	return "FAKE_UNKNOWN_CODE"
}

var badLength = regexp.MustCompile(`not \d+-\d+`)

// formError is Discord's answer to a body the checks refused for bad:
// 50006 for a message that shows nothing and has nothing else wrong,
// else 50035 Invalid Form Body with the fields' errors.
func formError(bad []string) map[string]any {
	if len(bad) == 1 && bad[0] == msgEmpty {
		return map[string]any{"message": msgEmpty, "code": 50006}
	}
	bad = slices.DeleteFunc(slices.Clone(bad), func(b string) bool { return b == msgEmpty })
	return map[string]any{"message": "Invalid Form Body", "code": 50035, "errors": FormErrors(bad)}
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// InvalidThreadStart lists what Discord would refuse in the body of a
// Start Thread from Message: a name of 1-100 characters, required, and an
// auto_archive_duration, when given, of 60, 1440, 4320 or 10080 minutes.
// (docs: developers/resources/channel.mdx, Start Thread from Message.)
func InvalidThreadStart(body map[string]any) []string {
	var bad []string
	switch name, ok := body["name"].(string); {
	case !ok:
		bad = append(bad, "name: This field is required")
	case runes(name) < 1 || runes(name) > 100:
		bad = append(bad, fmt.Sprintf("name: %d characters, not 1-100", runes(name)))
	}
	if d, ok := body["auto_archive_duration"]; ok && !slices.Contains([]any{60.0, 1440.0, 4320.0, 10080.0}, d) {
		bad = append(bad, fmt.Sprintf("auto_archive_duration: Value must be one of (60, 1440, 4320, 10080), not %v", d))
	}
	return bad
}

// The checks refuse what Discord refuses and pass what it takes.
func TestFakeRefusesWhatDiscordRefuses(t *testing.T) {
	row := func(cs ...any) any { return map[string]any{"type": 1, "components": cs} }
	btn := func(id string) any { return map[string]any{"type": 2, "style": 1, "label": "Go", "custom_id": id} }
	opts := func(n int) []any {
		var out []any
		for i := range n {
			out = append(out, map[string]any{"label": "o", "value": fmt.Sprint(i)})
		}
		return out
	}
	long := func(n int) string { return string(make([]rune, n)) }
	for name, tc := range map[string]struct {
		body map[string]any
		ok   bool
	}{
		"fine":                  {map[string]any{"content": "hi", "components": []any{row(btn("a"), btn("b"))}}, true},
		"empty":                 {map[string]any{"content": ""}, false},
		"content 2001":          {map[string]any{"content": long(2001)}, false},
		"description 4097":      {map[string]any{"embeds": []any{map[string]any{"description": long(4097)}}}, false},
		"6001 in all":           {map[string]any{"embeds": []any{map[string]any{"description": long(4000)}, map[string]any{"description": long(2001)}}}, false},
		"six rows":              {map[string]any{"content": "x", "components": []any{row(btn("a")), row(btn("b")), row(btn("c")), row(btn("d")), row(btn("e")), row(btn("f"))}}, false},
		"six buttons":           {map[string]any{"content": "x", "components": []any{row(btn("a"), btn("b"), btn("c"), btn("d"), btn("e"), btn("f"))}}, false},
		"repeated custom_id":    {map[string]any{"content": "x", "components": []any{row(btn("a"), btn("a"))}}, false},
		"select of 26":          {map[string]any{"content": "x", "components": []any{row(map[string]any{"type": 3, "custom_id": "s", "options": opts(26)})}}, false},
		"max_values over count": {map[string]any{"content": "x", "components": []any{row(map[string]any{"type": 3, "custom_id": "s", "max_values": 3, "options": opts(2)})}}, false},
		"a ping allowed":        {map[string]any{"content": "<@&1> hi", "allowed_mentions": map[string]any{"parse": []any{}, "roles": []any{"1"}}}, true},
		"parse beside its list": {map[string]any{"content": "<@&1> hi", "allowed_mentions": map[string]any{"parse": []any{"roles"}, "roles": []any{"1"}}}, false},
		"an unknown parse":      {map[string]any{"content": "hi", "allowed_mentions": map[string]any{"parse": []any{"here"}}}, false},
	} {
		var v map[string]any
		raw, _ := json.Marshal(tc.body)
		_ = json.Unmarshal(raw, &v)
		if bad := InvalidMessage(v, true); (len(bad) == 0) != tc.ok {
			t.Errorf("%s: %v; want ok %v", name, bad, tc.ok)
		}
	}
	modal := func(c any) map[string]any {
		var v map[string]any
		raw, _ := json.Marshal(map[string]any{"custom_id": "m", "title": "T", "components": []any{c}})
		_ = json.Unmarshal(raw, &v)
		return v
	}
	label := func(c any) any { return map[string]any{"type": 18, "label": "L", "component": c} }
	chosen := func(os []any, which ...int) []any {
		for _, k := range which {
			os[k].(map[string]any)["default"] = true
		}
		return os
	}
	for name, tc := range map[string]struct {
		data map[string]any
		ok   bool
	}{
		"text in a label":                {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 1})), true},
		"labelled text in a label":       {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 1, "label": "x"})), false},
		"optional select, min 0":         {modal(label(map[string]any{"type": 3, "custom_id": "s", "required": false, "min_values": 0, "options": opts(2)})), true},
		"required select, min 0":         {modal(label(map[string]any{"type": 3, "custom_id": "s", "min_values": 0, "options": opts(2)})), false},
		"text in a row without label":    {modal(row(map[string]any{"type": 4, "custom_id": "t", "style": 1})), false},
		"text display":                   {modal(map[string]any{"type": 10, "content": "Which volume?"}), true},
		"empty text display":             {modal(map[string]any{"type": 10, "content": ""}), false},
		"text display too long":          {modal(map[string]any{"type": 10, "content": strings.Repeat("x", 4001)}), false},
		"radio group":                    {modal(label(map[string]any{"type": 21, "custom_id": "r", "required": false, "options": opts(2)})), true},
		"radio group of one":             {modal(label(map[string]any{"type": 21, "custom_id": "r", "options": opts(1)})), false},
		"radio group of 11":              {modal(label(map[string]any{"type": 21, "custom_id": "r", "options": opts(11)})), false},
		"radio group with max_values":    {modal(label(map[string]any{"type": 21, "custom_id": "r", "max_values": 1, "options": opts(3)})), false},
		"radio option with an emoji":     {modal(label(map[string]any{"type": 21, "custom_id": "r", "options": []any{map[string]any{"label": "a", "value": "0", "emoji": nil}, map[string]any{"label": "b", "value": "1"}}})), false},
		"checkbox group, optional":       {modal(label(map[string]any{"type": 22, "custom_id": "c", "required": false, "min_values": 0, "max_values": 1, "options": opts(1)})), true},
		"checkbox group, min 0 required": {modal(label(map[string]any{"type": 22, "custom_id": "c", "min_values": 0, "options": opts(3)})), false},
		"checkbox group of 11":           {modal(label(map[string]any{"type": 22, "custom_id": "c", "required": false, "min_values": 0, "options": opts(11)})), false},
		"checkbox group in a row":        {modal(row(map[string]any{"type": 22, "custom_id": "c", "options": opts(2)})), false},
		"select with a default":          {modal(label(map[string]any{"type": 3, "custom_id": "s", "required": false, "min_values": 0, "options": chosen(opts(3), 1)})), true},
		"select of one, two defaults":    {modal(label(map[string]any{"type": 3, "custom_id": "s", "required": false, "min_values": 0, "options": chosen(opts(3), 0, 2)})), false},
		"radio group, two defaults":      {modal(label(map[string]any{"type": 21, "custom_id": "r", "required": false, "options": chosen(opts(3), 0, 2)})), false},
		"checkbox group, defaults":       {modal(label(map[string]any{"type": 22, "custom_id": "c", "required": false, "min_values": 0, "max_values": 2, "options": chosen(opts(3), 0, 2)})), true},
		"checkbox group, over max":       {modal(label(map[string]any{"type": 22, "custom_id": "c", "required": false, "min_values": 0, "max_values": 1, "options": chosen(opts(3), 0, 2)})), false},
		"text with a value":              {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 2, "value": "typed before", "max_length": 4000})), true},
		// Discord counts code points: 3000 emoji (6000 UTF-16 units) fit 4000.
		"text of 3000 emoji":          {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 2, "value": strings.Repeat("😀", 3000), "max_length": 4000})), true},
		"text of 4000 emoji":          {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 2, "value": strings.Repeat("😀", 4000), "max_length": 4000})), true},
		"text of 4001 emoji":          {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 2, "value": strings.Repeat("😀", 4001), "max_length": 4000})), false},
		"text of 4001, no max_length": {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 2, "value": strings.Repeat("😀", 4001)})), false},
		"text past its max_length":    {modal(label(map[string]any{"type": 4, "custom_id": "t", "style": 2, "value": strings.Repeat("😀", 11), "max_length": 10})), false},
	} {
		if bad := InvalidModal(tc.data); (len(bad) == 0) != tc.ok {
			t.Errorf("%s: %v; want ok %v", name, bad, tc.ok)
		}
	}
}

// The fake refuses the interaction responses Discord refuses for the
// interaction they answer, over the callback endpoint (a gateway
// interaction's) and in what Respond finds (an Interactions Endpoint
// URL's), and takes the rest.
func TestFakeRefusesResponsesTheInteractionDoesNotTake(t *testing.T) {
	msg := FakeCall{Channel: "1200000000000000001", MessageID: "1300000000000000001", Body: map[string]any{"content": "Ship it?"}}
	command := func() map[string]any {
		in := Click(msg, Member("1500000000000000001", "ada"), "", nil)
		in["type"], in["data"] = typeCommand, map[string]any{"id": "1", "name": "ask", "type": 1}
		delete(in, "message")
		return in
	}
	modal := map[string]any{"type": respModal, "data": map[string]any{"custom_id": "m", "title": "T", "components": []any{
		map[string]any{"type": componentLabel, "label": "L", "component": map[string]any{"type": componentText, "custom_id": "t", "style": 1}}}}}
	say := map[string]any{"type": respMessage, "data": map[string]any{"content": "hi", "flags": flagEphemeral}}
	for name, tc := range map[string]struct {
		in   map[string]any
		resp map[string]any
		code float64 // Discord's; 0: taken
	}{
		"a form to a form":                   {Submit(msg, nil, "ab:x"), modal, 50035},
		"a form to a PING":                   {Ping(), modal, 50035},
		"an update to a command":             {command(), map[string]any{"type": respUpdate, "data": map[string]any{"content": "x"}}, 50035},
		"a deferred update to a command":     {command(), map[string]any{"type": respDeferredUpdate}, 50035},
		"a deferred update to a PING":        {Ping(), map[string]any{"type": respDeferredUpdate}, 50035},
		"a deferred update to a lone form":   {func() map[string]any { in := Submit(msg, nil, "ab:x"); delete(in, "message"); return in }(), map[string]any{"type": respDeferredUpdate}, 50035},
		"a form to a click":                  {Click(msg, nil, "ab:x", nil), modal, 0},
		"an update to a click":               {Click(msg, nil, "ab:x", nil), map[string]any{"type": respUpdate, "data": map[string]any{"content": "x"}}, 0},
		"a deferred update to a form's send": {Submit(msg, nil, "ab:x"), map[string]any{"type": respDeferredUpdate}, 0},
		"a message to a command":             {command(), say, 0},
		"a PONG to a PING":                   {Ping(), map[string]any{"type": respPong}, 0},
		"a message to a PING":                {Ping(), say, 50035},
		"a PONG to a click":                  {Click(msg, nil, "ab:x", nil), map[string]any{"type": respPong}, 50035},
		"a PONG to a form's send":            {Submit(msg, nil, "ab:x"), map[string]any{"type": respPong}, 50035},
	} {
		t.Run(name, func(t *testing.T) {
			fake := NewFakeDiscord(t, "bot-token-of-the-response-test")
			if bad := fake.Respond(tc.in, tc.resp); (len(bad) == 0) != (tc.code == 0) {
				t.Errorf("Respond: %v; want refused %v", bad, tc.code != 0)
			}
			in := wire(tc.in)
			fake2 := NewFakeDiscord(t, "bot-token-of-the-response-test")
			fake2.dispatched(in)
			status, out := callback(t, fake2, in, tc.resp)
			switch {
			case tc.code == 0 && status != http.StatusNoContent:
				t.Errorf("callback: %d %v, want 204", status, out)
			case tc.code != 0 && (status != http.StatusBadRequest || out["code"] != tc.code):
				t.Errorf("callback: %d %v, want 400 code %v", status, out, tc.code)
			}
			// A second response to the token is refused, whichever way the
			// first went.
			if tc.code != 0 {
				return
			}
			if status, out := callback(t, fake2, in, tc.resp); status != http.StatusBadRequest || out["code"] != float64(40060) {
				t.Errorf("a second callback: %d %v, want 400 already acknowledged", status, out)
			}
			if status, out := callback(t, fake, in, tc.resp); status != http.StatusBadRequest || out["code"] != float64(40060) {
				t.Errorf("a callback after the endpoint's response: %d %v, want 400 already acknowledged", status, out)
			}
			if bad := fake2.Respond(tc.in, tc.resp); len(bad) == 0 {
				t.Error("Respond took a second response to one token")
			}
		})
	}
}

// A callback for an interaction Discord never sent, or on another
// interaction's token, is refused as Unknown interaction.
func TestFakeRefusesCallbacksOfUnknownInteractions(t *testing.T) {
	msg := FakeCall{Channel: "1200000000000000001", MessageID: "1300000000000000001", Body: map[string]any{"content": "Ship it?"}}
	resp := map[string]any{"type": respDeferredUpdate}
	fake := NewFakeDiscord(t, "bot-token-of-the-response-test")
	in, other := wire(Click(msg, nil, "ab:x", nil)), wire(Click(msg, nil, "ab:x", nil))
	fake.dispatched(in)
	for name, in := range map[string]map[string]any{
		"never sent":      other,
		"another's token": {"id": in["id"], "token": other["token"]},
	} {
		if status, out := callback(t, fake, in, resp); status != http.StatusNotFound || out["code"] != float64(10062) {
			t.Errorf("a callback for an interaction %s: %d %v, want 404 Unknown interaction", name, status, out)
		}
	}
	if status, out := callback(t, fake, in, resp); status != http.StatusNoContent {
		t.Errorf("the callback of the interaction sent: %d %v, want 204", status, out)
	}
}

// callback posts resp as the response to in, on the callback endpoint.
func callback(t *testing.T, f *FakeDiscord, in, resp map[string]any) (int, map[string]any) {
	t.Helper()
	return post(t, f, "interactions/"+in["id"].(string)+"/"+in["token"].(string)+"/callback", resp)
}

// post posts body to the fake's path, as the bot, and returns the status
// and what the fake answered.
func post(t *testing.T, f *FakeDiscord, path string, body map[string]any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.URL+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bot "+f.Token)
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(r.Body).Decode(&out)
	return r.StatusCode, out
}

// The fake answers a body Discord refuses as Discord does: 400, code
// 50035 Invalid Form Body, and in errors each bad field under its path,
// nested ({"content": {"_errors": [{"code", "message"}]}}, an index a
// key: components.0.components.0.label), a response's fields under its
// data; a message that shows nothing is 50006.
func TestFakeFormErrorsNestedAsDiscordNestsThem(t *testing.T) {
	f := NewFakeDiscord(t, "bot-token-of-the-form-errors-test")
	// at is the _errors at path in out's errors.
	at := func(out map[string]any, path string) []any {
		node, _ := out["errors"].(map[string]any)
		for _, key := range strings.Split(path, ".") {
			node, _ = node[key].(map[string]any)
		}
		list, _ := node["_errors"].([]any)
		return list
	}
	msgs := "channels/1200000000000000001/messages"
	button := map[string]any{"type": 2, "style": 1, "label": strings.Repeat("b", 81), "custom_id": "a"}
	for name, tc := range map[string]struct {
		body       map[string]any
		path, code string
		says       string
	}{
		"content of 2001":  {map[string]any{"content": strings.Repeat("😀", 2001)}, "content", "BASE_TYPE_MAX_LENGTH", "2001 characters, more than 2000"},
		"a button's label": {map[string]any{"content": "x", "components": []any{map[string]any{"type": 1, "components": []any{button}}}}, "components.0.components.0.label", "BASE_TYPE_BAD_LENGTH", "81 characters"},
		"an embed's title": {map[string]any{"embeds": []any{map[string]any{"description": "d"}, map[string]any{"title": strings.Repeat("t", 257)}}}, "embeds.1.title", "BASE_TYPE_MAX_LENGTH", "257 characters, more than 256"},
		"a repeated id":    {map[string]any{"content": "x", "components": []any{map[string]any{"type": 1, "components": []any{button, button}}}}, "components.0.components.1.custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", `"a" is used twice`},
		"an unknown parse": {map[string]any{"content": "x", "allowed_mentions": map[string]any{"parse": []any{"here"}}}, "allowed_mentions.parse", "FAKE_UNKNOWN_CODE", "here is not roles, users or everyone"},
	} {
		t.Run(name, func(t *testing.T) {
			status, out := post(t, f, msgs, tc.body)
			if status != http.StatusBadRequest || out["code"] != float64(50035) || out["message"] != "Invalid Form Body" {
				t.Fatalf("got %d %v; want 400 50035 Invalid Form Body", status, out)
			}
			errs := at(out, tc.path)
			if len(errs) == 0 {
				t.Fatalf("no _errors at %s in %v", tc.path, out["errors"])
			}
			e, _ := errs[0].(map[string]any)
			if msg, _ := e["message"].(string); e["code"] != tc.code || !strings.Contains(msg, tc.says) {
				t.Errorf("the error at %s is %v; want code %s, saying %q", tc.path, e, tc.code, tc.says)
			}
		})
	}
	if status, out := post(t, f, msgs, map[string]any{"content": ""}); status != http.StatusBadRequest || out["code"] != float64(50006) || out["errors"] != nil {
		t.Errorf("an empty message got %d %v; want 400 50006 Cannot send an empty message", status, out)
	}

	// A response's fields are under its data; its type, refused for the
	// interaction it answers, is a choice.
	msg := FakeCall{Channel: "1200000000000000001", MessageID: "1300000000000000001", Body: map[string]any{"content": "Ship it?"}}
	for name, tc := range map[string]struct {
		in, resp   map[string]any
		path, code string
	}{
		"a form's title": {Click(msg, nil, "ab:x", nil), map[string]any{"type": respModal, "data": map[string]any{"custom_id": "m", "title": strings.Repeat("T", 46),
			"components": []any{map[string]any{"type": componentTextDisplay, "content": "x"}}}}, "data.title", "BASE_TYPE_BAD_LENGTH"},
		"a form to a form": {Submit(msg, nil, "ab:x"), map[string]any{"type": respModal, "data": map[string]any{"custom_id": "m", "title": "T",
			"components": []any{map[string]any{"type": componentTextDisplay, "content": "x"}}}}, "type", "BASE_TYPE_CHOICES"},
	} {
		t.Run(name, func(t *testing.T) {
			in := wire(tc.in)
			f.dispatched(in)
			status, out := callback(t, f, in, tc.resp)
			if status != http.StatusBadRequest || out["code"] != float64(50035) {
				t.Fatalf("got %d %v; want 400 50035", status, out)
			}
			if errs := at(out, tc.path); len(errs) == 0 || errs[0].(map[string]any)["code"] != tc.code {
				t.Errorf("errors %v; want %s at %s", out["errors"], tc.code, tc.path)
			}
		})
	}
}

// The fake refuses a thread start Discord refuses: a name that is not
// 1-100 characters, an auto_archive_duration that is not 60, 1440, 4320
// or 10080 minutes; each with 400 Invalid Form Body naming the field.
func TestFakeRefusesBadThreadStarts(t *testing.T) {
	f := NewFakeDiscord(t, "bot-token-of-the-thread-test")
	ch := "channels/1200000000000000001/messages"
	for name, tc := range map[string]struct {
		body        map[string]any
		field, code string // "": started
	}{
		"a name and a week":   {map[string]any{"name": "deploy-bot · run-42", "auto_archive_duration": 10080}, "", ""},
		"no duration":         {map[string]any{"name": "deploy-bot"}, "", ""},
		"100 emoji":           {map[string]any{"name": strings.Repeat("😀", 100), "auto_archive_duration": 60}, "", ""},
		"an hour, a day, 3":   {map[string]any{"name": "x", "auto_archive_duration": 4320}, "", ""},
		"an empty name":       {map[string]any{"name": "", "auto_archive_duration": 10080}, "name", "BASE_TYPE_BAD_LENGTH"},
		"no name":             {map[string]any{"auto_archive_duration": 10080}, "name", "BASE_TYPE_REQUIRED"},
		"a name of 101":       {map[string]any{"name": strings.Repeat("n", 101), "auto_archive_duration": 10080}, "name", "BASE_TYPE_BAD_LENGTH"},
		"7 minutes":           {map[string]any{"name": "ok", "auto_archive_duration": 7}, "auto_archive_duration", "BASE_TYPE_CHOICES"},
		"a week and a minute": {map[string]any{"name": "ok", "auto_archive_duration": 10081}, "auto_archive_duration", "BASE_TYPE_CHOICES"},
	} {
		t.Run(name, func(t *testing.T) {
			status, msg := post(t, f, ch, map[string]any{"content": "root"})
			if status != http.StatusOK {
				t.Fatalf("posting the message: %d %v", status, msg)
			}
			status, out := post(t, f, ch+"/"+msg["id"].(string)+"/threads", tc.body)
			if tc.field == "" {
				if status != http.StatusOK || out["id"] != msg["id"] {
					t.Errorf("got %d %v; want the thread started", status, out)
				}
				return
			}
			errs, _ := out["errors"].(map[string]any)
			field, _ := errs[tc.field].(map[string]any)
			list, _ := field["_errors"].([]any)
			if status != http.StatusBadRequest || out["code"] != float64(50035) || len(list) != 1 || list[0].(map[string]any)["code"] != tc.code {
				t.Errorf("got %d %v; want 400 50035 with %s at %s", status, out, tc.code, tc.field)
			}
			if th := f.Calls("thread"); len(th) > 0 && th[len(th)-1].MessageID == msg["id"] {
				t.Errorf("the refused start started a thread")
			}
		})
	}
}

package slacktest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Block Kit's limits as Slack's reference states them
// (docs.slack.dev/reference/block-kit: blocks, block elements, composition
// objects, views). Slack refuses a message that breaks one with
// invalid_blocks, and a view with invalid_arguments, each with messages
// naming the JSON pointer of the fault; the fake does the same, so that a
// test of a message or view over a limit fails as it would against Slack.
const (
	limitMessageBlocks = 50
	limitModalBlocks   = 100
	limitTextObject    = 3000 // a section's text; any text object
	limitSectionField  = 2000
	limitSectionFields = 10
	limitHeaderText    = 150
	limitContextElems  = 10
	limitActionElems   = 25
	limitID            = 255 // block_id, action_id, callback_id
	limitButtonText    = 75
	limitButtonValue   = 2000
	limitButtonURL     = 3000
	limitConfirmTitle  = 100
	limitConfirmText   = 300
	limitConfirmButton = 30
	limitPlaceholder   = 150
	limitSelectOptions = 100
	limitChoiceOptions = 10 // checkboxes, radio_buttons
	limitOptionText    = 75
	limitOptionValue   = 150
	limitOptionDesc    = 75
	limitInputLabel    = 2000
	limitInputHint     = 2000
	limitInputLength   = 3000 // plain_text_input min_length and max_length
	limitViewTitle     = 24   // a view's title, submit and close
	limitMetadata      = 3000 // a view's private_metadata
)

// kit collects what is wrong with blocks, as Slack words it: "[ERROR] ...
// [json-pointer:/blocks/0/text/text]".
type kit struct{ errs []string }

func (k *kit) fail(ptr, format string, args ...any) {
	k.errs = append(k.errs, fmt.Sprintf("[ERROR] %s [json-pointer:%s]", fmt.Sprintf(format, args...), ptr))
}

// length is how Slack counts a limit: characters.
func length(s string) int { return utf8.RuneCountInString(s) }

func (k *kit) str(ptr string, v any, min, max int) string {
	s, ok := v.(string)
	switch {
	case v == nil && min == 0:
	case !ok:
		k.fail(ptr, "must be a string")
	case length(s) < min:
		k.fail(ptr, "must be at least %d characters", min)
	case length(s) > max:
		k.fail(ptr, "must be less than %d characters", max+1)
	}
	return s
}

// text checks a text object of at most max characters; plainOnly for the
// fields that take plain_text alone.
func (k *kit) text(ptr string, v any, max int, plainOnly bool) {
	o, ok := v.(map[string]any)
	if !ok {
		k.fail(ptr, "must be a text object")
		return
	}
	switch o["type"] {
	case "plain_text":
		if _, ok := o["verbatim"]; ok {
			k.fail(ptr+"/verbatim", "is not allowed on plain_text")
		}
	case "mrkdwn":
		if plainOnly {
			k.fail(ptr+"/type", "must be plain_text")
		}
		if _, ok := o["emoji"]; ok {
			k.fail(ptr+"/emoji", "is not allowed on mrkdwn")
		}
	default:
		k.fail(ptr+"/type", "must be plain_text or mrkdwn")
	}
	k.str(ptr+"/text", o["text"], 1, max)
}

func (k *kit) optText(ptr string, v any, max int, plainOnly bool) {
	if v != nil {
		k.text(ptr, v, max, plainOnly)
	}
}

func list(v any) []any { l, _ := v.([]any); return l }

// checkBlocks checks a message's or a view's blocks.
func (k *kit) checkBlocks(ptr string, v any, maxBlocks int) {
	blocks, ok := v.([]any)
	if !ok {
		if v != nil {
			k.fail(ptr, "must be an array")
		}
		return
	}
	if len(blocks) > maxBlocks {
		k.fail(ptr, "must contain at most %d items", maxBlocks)
	}
	ids := map[string]bool{}
	for i, raw := range blocks {
		bp := fmt.Sprintf("%s/%d", ptr, i)
		b, ok := raw.(map[string]any)
		if !ok {
			k.fail(bp, "must be an object")
			continue
		}
		if id, ok := b["block_id"]; ok {
			s := k.str(bp+"/block_id", id, 1, limitID)
			if ids[s] {
				k.fail(bp+"/block_id", "duplicate block_id %q", s)
			}
			ids[s] = true
		}
		k.block(bp, b)
	}
}

func (k *kit) block(ptr string, b map[string]any) {
	switch b["type"] {
	case "header":
		k.text(ptr+"/text", b["text"], limitHeaderText, true)
	case "section":
		fields := list(b["fields"])
		if b["text"] == nil && len(fields) == 0 {
			k.fail(ptr, "must provide text or fields")
		}
		k.optText(ptr+"/text", b["text"], limitTextObject, false)
		if len(fields) > limitSectionFields {
			k.fail(ptr+"/fields", "must contain at most %d items", limitSectionFields)
		}
		for i, f := range fields {
			k.text(fmt.Sprintf("%s/fields/%d", ptr, i), f, limitSectionField, false)
		}
		if a, ok := b["accessory"].(map[string]any); ok {
			k.element(ptr+"/accessory", a)
		}
	case "context":
		els := list(b["elements"])
		if len(els) == 0 || len(els) > limitContextElems {
			k.fail(ptr+"/elements", "must contain 1 to %d items", limitContextElems)
		}
		for i, e := range els {
			ep := fmt.Sprintf("%s/elements/%d", ptr, i)
			if m, ok := e.(map[string]any); ok && m["type"] == "image" {
				continue
			}
			k.text(ep, e, limitTextObject, false)
		}
	case "actions":
		els := list(b["elements"])
		if len(els) == 0 || len(els) > limitActionElems {
			k.fail(ptr+"/elements", "must contain 1 to %d items", limitActionElems)
		}
		k.elements(ptr+"/elements", els)
	case "input":
		k.text(ptr+"/label", b["label"], limitInputLabel, true)
		k.optText(ptr+"/hint", b["hint"], limitInputHint, true)
		el, ok := b["element"].(map[string]any)
		if !ok {
			k.fail(ptr+"/element", "is required")
			return
		}
		k.element(ptr+"/element", el)
	case "divider":
	default:
		k.fail(ptr+"/type", "unsupported block type %v", b["type"])
	}
}

// elements checks an actions block's elements, whose action_ids must
// differ.
func (k *kit) elements(ptr string, els []any) {
	seen := map[string]bool{}
	for i, raw := range els {
		ep := fmt.Sprintf("%s/%d", ptr, i)
		e, ok := raw.(map[string]any)
		if !ok {
			k.fail(ep, "must be an object")
			continue
		}
		if id, _ := e["action_id"].(string); id != "" {
			if seen[id] {
				k.fail(ep+"/action_id", "duplicate action_id %q", id)
			}
			seen[id] = true
		}
		k.element(ep, e)
	}
}

func (k *kit) element(ptr string, e map[string]any) {
	if id, ok := e["action_id"]; ok {
		k.str(ptr+"/action_id", id, 1, limitID)
	}
	k.optText(ptr+"/placeholder", e["placeholder"], limitPlaceholder, true)
	if c, ok := e["confirm"].(map[string]any); ok {
		k.text(ptr+"/confirm/title", c["title"], limitConfirmTitle, true)
		k.text(ptr+"/confirm/text", c["text"], limitConfirmText, false)
		k.text(ptr+"/confirm/confirm", c["confirm"], limitConfirmButton, true)
		k.text(ptr+"/confirm/deny", c["deny"], limitConfirmButton, true)
	}
	opts := list(e["options"])
	switch typ := e["type"]; typ {
	case "button":
		k.text(ptr+"/text", e["text"], limitButtonText, true)
		k.str(ptr+"/value", e["value"], 0, limitButtonValue)
		k.str(ptr+"/url", e["url"], 0, limitButtonURL)
		if s, ok := e["style"]; ok && s != "primary" && s != "danger" {
			k.fail(ptr+"/style", "must be primary or danger")
		}
	case "static_select", "multi_static_select":
		if len(opts) == 0 || len(opts) > limitSelectOptions {
			k.fail(ptr+"/options", "must contain 1 to %d items", limitSelectOptions)
		}
		k.options(ptr, e, opts, true)
	case "checkboxes", "radio_buttons":
		if len(opts) == 0 || len(opts) > limitChoiceOptions {
			k.fail(ptr+"/options", "must contain 1 to %d items", limitChoiceOptions)
		}
		k.options(ptr, e, opts, false)
	case "overflow":
		if len(opts) < 1 || len(opts) > 5 {
			k.fail(ptr+"/options", "must contain 1 to 5 items")
		}
		k.options(ptr, e, opts, true)
	case "plain_text_input":
		if v, ok := e["max_length"]; ok {
			if n, _ := v.(float64); n < 1 || n > limitInputLength {
				k.fail(ptr+"/max_length", "must be between 1 and %d", limitInputLength)
			}
		}
		if v, ok := e["min_length"]; ok {
			if n, _ := v.(float64); n < 0 || n > limitInputLength {
				k.fail(ptr+"/min_length", "must be between 0 and %d", limitInputLength)
			}
		}
		k.str(ptr+"/initial_value", e["initial_value"], 0, 1<<20)
	default:
		k.fail(ptr+"/type", "an element type the fake does not know: %v", typ)
	}
}

// options checks the options of a select or choice, and that its initial
// options are among them exactly.
func (k *kit) options(ptr string, e map[string]any, opts []any, plainOnly bool) {
	values := map[string]bool{}
	for i, raw := range opts {
		op := fmt.Sprintf("%s/options/%d", ptr, i)
		o, ok := raw.(map[string]any)
		if !ok {
			k.fail(op, "must be an object")
			continue
		}
		k.text(op+"/text", o["text"], limitOptionText, plainOnly)
		k.optText(op+"/description", o["description"], limitOptionDesc, plainOnly)
		v := k.str(op+"/value", o["value"], 1, limitOptionValue)
		if values[v] {
			k.fail(op+"/value", "duplicate option value %q", v)
		}
		values[v] = true
	}
	initial := list(e["initial_options"])
	if io, ok := e["initial_option"]; ok {
		initial = append(initial, io)
	}
	for i, in := range initial {
		found := false
		for _, o := range opts {
			if sameJSON(o, in) {
				found = true
				break
			}
		}
		if !found {
			k.fail(fmt.Sprintf("%s/initial_options/%d", ptr, i), "must match one of the options")
		}
	}
}

func sameJSON(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// messageErrors is what is wrong with a chat.* call's blocks.
func messageErrors(blocks any) []string {
	var k kit
	k.checkBlocks("/blocks", blocks, limitMessageBlocks)
	return k.errs
}

// viewErrors is what is wrong with a views.* call's view.
func viewErrors(v any) []string {
	var k kit
	view, ok := v.(map[string]any)
	if !ok {
		k.fail("/view", "must be an object")
		return k.errs
	}
	if view["type"] != "modal" {
		k.fail("/view/type", "must be modal")
	}
	k.text("/view/title", view["title"], limitViewTitle, true)
	k.optText("/view/close", view["close"], limitViewTitle, true)
	k.optText("/view/submit", view["submit"], limitViewTitle, true)
	k.str("/view/callback_id", view["callback_id"], 0, limitID)
	k.str("/view/private_metadata", view["private_metadata"], 0, limitMetadata)
	k.checkBlocks("/view/blocks", view["blocks"], limitModalBlocks)
	if view["submit"] == nil {
		for _, b := range list(view["blocks"]) {
			if m, _ := b.(map[string]any); m["type"] == "input" {
				k.fail("/view/submit", "a view with input blocks must have a submit button")
				break
			}
		}
	}
	return k.errs
}

// refusal is Slack's answer to a call whose blocks or view it refuses.
func refusal(code string, errs []string) map[string]any {
	f := failure(code)
	f["response_metadata"] = map[string]any{"messages": errs}
	return f
}

// ViewResponseErrors is what Slack would refuse in body, the answer to an
// interaction: nothing for an empty one; for a view_submission's
// response_action, an update or push whose view breaks a limit, errors
// that are not messages by block_id, or an action Slack does not know.
// A view_submission's answer is not a Web API call, so the fake does not
// see it; tests check the answers they get with this.
func ViewResponseErrors(body string) []string {
	if strings.TrimSpace(body) == "" {
		return nil
	}
	var resp map[string]any
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		return []string{"the answer is not JSON: " + err.Error()}
	}
	var k kit
	switch resp["response_action"] {
	case "update", "push":
		k.errs = viewErrors(resp["view"])
	case "errors":
		errs, ok := resp["errors"].(map[string]any)
		if !ok || len(errs) == 0 {
			k.fail("/errors", "must be an object of messages by block_id")
		}
		for id, msg := range errs {
			k.str("/errors/"+id, msg, 1, limitInputLabel)
		}
	case "clear":
	default:
		k.fail("/response_action", "unknown response_action %v", resp["response_action"])
	}
	return k.errs
}

// SubmissionErrors is ViewResponseErrors for body, the answer to the
// view_submission payload submitted, held to that view too: errors name
// the block_id of an input block the view has. Slack shows an error keyed
// otherwise (a section's, or none of the view's) as no field's, and the
// person sees only a generic failure ("We had some trouble connecting";
// slackapi/bolt-js#1267, slackapi/bolt-python#922). For any other payload
// it is ViewResponseErrors.
func SubmissionErrors(submitted any, body string) []string {
	errs := ViewResponseErrors(body)
	p, _ := submitted.(map[string]any)
	view, _ := p["view"].(map[string]any)
	if p["type"] != "view_submission" || view == nil || len(errs) > 0 {
		return errs
	}
	var resp struct {
		Action string         `json:"response_action"`
		Errors map[string]any `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &resp) != nil || resp.Action != "errors" {
		return nil
	}
	inputs := map[string]bool{}
	for _, b := range list(view["blocks"]) {
		if m, _ := b.(map[string]any); m["type"] == "input" {
			id, _ := m["block_id"].(string)
			inputs[id] = true
		}
	}
	var k kit
	for id := range resp.Errors {
		if !inputs[id] {
			k.fail("/errors/"+id, "names no input block of the view")
		}
	}
	return k.errs
}

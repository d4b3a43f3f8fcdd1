package slack

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
)

// A chat.* body is encoded by hand. Through encoding/json, slack-go's block
// types are encoded by reflection, and each action and context block
// marshals its elements with a MarshalJSON of its own, whose output
// encoding/json then validates and compacts again (BenchmarkChatCalls:
// a post and its edit take 0.83x the time written by hand). The blocks the
// renderer builds (header, section, context and action blocks of text
// objects and buttons) are written here directly; a message with anything
// else (a select, checkboxes, an accessory) goes through encoding/json
// whole. TestChatRequestJSON holds the two to the same JSON.

// appendJSON appends r as JSON to b.
func (r chatRequest) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"channel":`...)
	b = appendString(b, r.Channel)
	if r.TS != "" {
		b = append(b, `,"ts":`...)
		b = appendString(b, r.TS)
	}
	if r.ThreadTS != "" {
		b = append(b, `,"thread_ts":`...)
		b = appendString(b, r.ThreadTS)
	}
	if r.Broadcast {
		b = append(b, `,"reply_broadcast":true`...)
	}
	b = append(b, `,"text":`...)
	b = appendString(b, r.Text)
	if r.Parse != "" {
		b = append(b, `,"parse":`...)
		b = appendString(b, r.Parse)
	}
	if len(r.Blocks) > 0 {
		b = append(b, `,"blocks":`...)
		if out, ok := appendBlocks(b, r.Blocks); ok {
			b = out
		} else {
			raw, err := json.Marshal(r.Blocks)
			if err != nil {
				return nil, err
			}
			b = append(b, raw...)
		}
	}
	b = append(b, `,"unfurl_links":`...)
	b = strconv.AppendBool(b, r.UnfurlLinks)
	b = append(b, `,"unfurl_media":`...)
	b = strconv.AppendBool(b, r.UnfurlMedia)
	return append(b, '}'), nil
}

// appendBlocks appends blocks as a JSON array to b, or reports false when
// one of them is of a kind it does not write.
func appendBlocks(b []byte, blocks []slackapi.Block) ([]byte, bool) {
	b = append(b, '[')
	for i, bl := range blocks {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendBlock(b, bl); !ok {
			return nil, false
		}
	}
	return append(b, ']'), true
}

func appendBlock(b []byte, bl slackapi.Block) ([]byte, bool) {
	switch bl := bl.(type) {
	case *slackapi.HeaderBlock:
		if bl == nil {
			return nil, false
		}
		b = appendStart(b, string(bl.Type))
		b = appendTextField(b, "text", bl.Text, true)
		b = appendStringField(b, "block_id", bl.BlockID)
		if bl.Level != 0 {
			b = append(b, `,"level":`...)
			b = strconv.AppendInt(b, int64(bl.Level), 10)
		}
	case *slackapi.SectionBlock:
		if bl == nil || bl.Accessory != nil {
			return nil, false
		}
		b = appendStart(b, string(bl.Type))
		b = appendTextField(b, "text", bl.Text, true)
		b = appendStringField(b, "block_id", bl.BlockID)
		b = appendArray(b, "fields", bl.Fields, appendText)
		if bl.Expand {
			b = append(b, `,"expand":true`...)
		}
	case *slackapi.ContextBlock:
		if bl == nil {
			return nil, false
		}
		b = appendStart(b, string(bl.Type))
		b = appendStringField(b, "block_id", bl.BlockID)
		var ok bool
		if b, ok = appendElements(b, bl.ContextElements.Elements, appendText); !ok {
			return nil, false
		}
	case *slackapi.ActionBlock:
		if bl == nil {
			return nil, false
		}
		b = appendStart(b, string(bl.Type))
		b = appendStringField(b, "block_id", bl.BlockID)
		var els []slackapi.BlockElement
		if bl.Elements != nil {
			els = bl.Elements.ElementSet
		}
		var ok bool
		if b, ok = appendElements(b, els, appendButton); !ok {
			return nil, false
		}
	default:
		return nil, false
	}
	return append(b, '}'), true
}

func appendButton(b []byte, btn *slackapi.ButtonBlockElement) []byte {
	b = append(b, '{')
	if btn.Type != "" {
		b = append(b, `"type":`...)
		b = appendString(b, string(btn.Type))
		b = append(b, ',')
	}
	b = append(b, `"text":`...)
	b = appendText(b, btn.Text)
	b = appendStringField(b, "action_id", btn.ActionID)
	b = appendStringField(b, "url", btn.URL)
	b = appendStringField(b, "value", btn.Value)
	if c := btn.Confirm; c != nil {
		b = append(b, `,"confirm":{"title":`...)
		b = appendText(b, c.Title)
		b = appendTextField(b, "text", c.Text, false)
		b = appendTextField(b, "confirm", c.Confirm, false)
		b = appendTextField(b, "deny", c.Deny, true)
		b = appendStringField(b, "style", string(c.Style))
		b = append(b, '}')
	}
	b = appendStringField(b, "style", string(btn.Style))
	b = appendStringField(b, "accessibility_label", btn.AccessibilityLabel)
	b = appendStringField(b, "agent_prompt", btn.AgentPrompt)
	b = appendStringField(b, "agent_prompt_display", btn.AgentPromptDisplay)
	b = appendArray(b, "visible_to_user_ids", btn.VisibleToUserIDs, appendString)
	return append(b, '}')
}

// appendElements appends ,"elements":[...], each element written by each,
// or null for none; it reports false when an element is not a T, or is a
// nil one.
func appendElements[E any, T comparable](b []byte, els []E, each func([]byte, T) []byte) ([]byte, bool) {
	b = append(b, `,"elements":`...)
	if els == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	var none T
	for i, e := range els {
		t, ok := any(e).(T)
		if !ok || t == none {
			return nil, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, t)
	}
	return append(b, ']'), true
}

// appendArray appends ,"name":[...] with each of items, or nothing when
// there are none.
func appendArray[T any](b []byte, name string, items []T, each func([]byte, T) []byte) []byte {
	if len(items) == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':', '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, it)
	}
	return append(b, ']')
}

// appendStart opens a block of type typ.
func appendStart(b []byte, typ string) []byte {
	b = append(b, `{"type":`...)
	return appendString(b, typ)
}

// appendText appends a text object, or null.
func appendText(b []byte, t *slackapi.TextBlockObject) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"type":`...)
	b = appendString(b, t.Type)
	b = append(b, `,"text":`...)
	b = appendString(b, t.Text)
	if t.Emoji != nil {
		b = append(b, `,"emoji":`...)
		b = strconv.AppendBool(b, *t.Emoji)
	}
	if t.Verbatim {
		b = append(b, `,"verbatim":true`...)
	}
	return append(b, '}')
}

// appendTextField appends ,"name":t; with omitempty, nothing for a nil t.
func appendTextField(b []byte, name string, t *slackapi.TextBlockObject, omitempty bool) []byte {
	if t == nil && omitempty {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendText(b, t)
}

// appendStringField appends ,"name":s, or nothing for an empty s.
func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, s)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, as encoding/json would but for
// <, > and &, which it escapes for HTML and which decode the same either
// way: invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029 are escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

package slack

import (
	"regexp"
	"strings"
)

// Agents write Markdown, and Slack's mrkdwn reads little of it: a plan's
// "## Steps" and "**all** rows" showed their marks. fromMarkdown turns the
// two a reader misses most, headings and strong emphasis, into mrkdwn's
// bold, and leaves everything else as written: code (spans and fenced
// blocks) untouched, and links, which mrkdwn shows as typed anyway.
// Escaping (esc) comes after, as for any text.
func fromMarkdown(md string) string {
	if !strings.ContainsAny(md, "#*_") {
		return md
	}
	lines := strings.Split(md, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil {
			lines[i] = "*" + strongOutsideCode(m[1]) + "*"
			continue
		}
		lines[i] = strongOutsideCode(l)
	}
	return strings.Join(lines, "\n")
}

var (
	// An ATX heading: up to three spaces, 1-6 #, a space, the text, and
	// optionally closing #s.
	mdHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// Strong emphasis, ** or __, around text that neither starts nor ends
	// with a space.
	mdStrong = regexp.MustCompile(`\*\*([^\s*](?:[^*]*[^\s*])?)\*\*|__([^\s_](?:[^_]*[^\s_])?)__`)
)

// strongOutsideCode is l with its strong emphasis as mrkdwn's bold, code
// spans (between backticks) left as they are.
func strongOutsideCode(l string) string {
	if !strings.Contains(l, "**") && !strings.Contains(l, "__") {
		return l
	}
	parts := strings.Split(l, "`")
	for i := 0; i < len(parts); i += 2 { // the even parts are outside code spans
		parts[i] = mdStrong.ReplaceAllStringFunc(parts[i], func(m string) string {
			return "*" + m[2:len(m)-2] + "*"
		})
	}
	return strings.Join(parts, "`")
}

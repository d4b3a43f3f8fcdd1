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
	if !strings.ContainsAny(md, "#*_") && !strings.Contains(md, "```") {
		return md
	}
	lines := strings.Split(md, "\n")
	fence := "" // the open fence's marks, ``` or ~~~
	for i, l := range lines {
		switch t := strings.TrimLeft(l, " "); {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			if fence == "```" && len(strings.TrimSpace(t)) > 3 && !strings.Contains(t[3:], "`") {
				// mrkdwn highlights nothing: "```go" would show "go"
				// as the code's first line.
				lines[i] = l[:len(l)-len(t)] + "```"
			}
			continue
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil {
			// Bold already: strong emphasis inside it is dropped, not
			// nested (mrkdwn's bold does not nest).
			lines[i] = "*" + unstrongOutsideCode(m[1]) + "*"
			continue
		}
		lines[i] = strongOutsideCode(l)
	}
	return strings.Join(lines, "\n")
}

var (
	// An ATX heading with text: up to three spaces, 1-6 #, a space, the
	// text, and optionally closing #s.
	mdHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(\S.*?)(?:[ \t]+#+)?[ \t]*$`)
	// Strong emphasis, ** or __, around text that neither starts nor ends
	// with a space.
	mdStrong = regexp.MustCompile(`\*\*([^\s*](?:[^*]*[^\s*])?)\*\*|__([^\s_](?:[^_]*[^\s_])?)__`)
)

// strongOutsideCode is l with its strong emphasis as mrkdwn's bold, code
// spans (between backticks) left as they are.
func strongOutsideCode(l string) string { return replaceStrong(l, "*") }

// unstrongOutsideCode is l with its strong emphasis marks dropped.
func unstrongOutsideCode(l string) string { return replaceStrong(l, "") }

func replaceStrong(l, mark string) string {
	if !strings.Contains(l, "**") && !strings.Contains(l, "__") {
		return l
	}
	parts := strings.Split(l, "`")
	for i := 0; i < len(parts); i += 2 { // the even parts are outside code spans
		p := parts[i]
		var b strings.Builder
		last := 0
		for _, m := range mdStrong.FindAllStringSubmatchIndex(p, -1) {
			var inner string
			switch {
			case m[2] >= 0: // **
				inner = p[m[2]:m[3]]
			case wordAt(p, m[0]-1) || wordAt(p, m[1]):
				// __ only at a word's edges, as CommonMark has it:
				// Logging__LogLevel__Default is one word.
				continue
			default:
				inner = p[m[4]:m[5]]
			}
			b.WriteString(p[last:m[0]] + mark + inner + mark)
			last = m[1]
		}
		parts[i] = b.String() + p[last:]
	}
	return strings.Join(parts, "`")
}

// wordAt reports whether the byte at i of s is part of a word: a letter,
// a digit or an underscore (ASCII; any other byte of a UTF-8 rune counts
// as a letter).
func wordAt(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

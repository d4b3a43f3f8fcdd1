package web

import (
	"html"
	"html/template"
	"net/url"
	"regexp"
	"strings"
)

// Markdown renders agent-written markdown (a question's detail, a plan, an
// approval's reason) as HTML that is safe to insert in a page: every piece
// of text is escaped, and the only elements it emits are a whitelist that
// carries no script: p, br, h3-h6, ul, ol, li, pre, code, strong, em, and
// a with an http or https href (rel=noopener noreferrer nofollow). Raw HTML
// in the input is shown as text, never interpreted; a link to any other
// scheme (javascript:, data:, vbscript:) stays text.
//
// It is a deliberately small subset of CommonMark: ATX headings, fenced
// code blocks, bullet and numbered lists (nested by indentation),
// paragraphs, code spans, **strong**, *emphasis*, [links](https://…) and
// bare https:// URLs.
func Markdown(src string) template.HTML {
	var r mdRenderer
	r.blocks(strings.ReplaceAll(src, "\r\n", "\n"))
	return template.HTML(r.out.String()) // every byte of it was written by this file, text escaped
}

type mdList struct {
	indent  int
	ordered bool
}

type mdRenderer struct {
	out   strings.Builder
	para  []string
	lists []mdList
}

var (
	mdFence   = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	mdHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$`)
	mdItem    = regexp.MustCompile(`^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$`)
)

func indentOf(s string) int {
	n := 0
	for _, c := range s {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

func (r *mdRenderer) blocks(src string) {
	lines := strings.Split(src, "\n")
	blank := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := mdFence.FindStringSubmatch(line); m != nil {
			r.flush()
			r.closeLists(-1)
			fence := m[1]
			var code []string
			for i++; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence[:3]) && strings.Trim(strings.TrimSpace(lines[i]), fence[:1]) == "" {
					break
				}
				code = append(code, lines[i])
			}
			r.out.WriteString("<pre><code>" + html.EscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
			blank = false
			continue
		}
		if strings.TrimSpace(line) == "" {
			r.flush()
			blank = true
			continue
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			r.flush()
			r.closeLists(-1)
			level := min(len(m[1])+2, 6)
			tag := "h" + string(rune('0'+level))
			r.out.WriteString("<" + tag + ">" + inline(m[2], 0) + "</" + tag + ">\n")
			blank = false
			continue
		}
		if m := mdItem.FindStringSubmatch(line); m != nil {
			r.flush()
			r.item(indentOf(m[1]), m[2][len(m[2])-1] == '.' || m[2][len(m[2])-1] == ')', m[3])
			blank = false
			continue
		}
		if len(r.lists) > 0 && !blank && indentOf(line) > 0 {
			r.out.WriteString("<br>" + inline(strings.TrimSpace(line), 0)) // a continuation of the item
			continue
		}
		r.closeLists(-1)
		r.para = append(r.para, strings.TrimSpace(line))
		blank = false
	}
	r.flush()
	r.closeLists(-1)
}

// item writes one list item, opening and closing lists by indentation.
func (r *mdRenderer) item(indent int, ordered bool, text string) {
	r.closeLists(indent)
	switch top := len(r.lists) - 1; {
	case top < 0 || indent >= r.lists[top].indent+2:
		r.openList(indent, ordered)
	case r.lists[top].ordered != ordered:
		r.closeLists(-1)
		r.openList(indent, ordered)
	default:
		r.out.WriteString("</li>\n")
	}
	r.out.WriteString("<li>" + inline(text, 0))
}

func (r *mdRenderer) openList(indent int, ordered bool) {
	if ordered {
		r.out.WriteString("<ol>\n")
	} else {
		r.out.WriteString("<ul>\n")
	}
	r.lists = append(r.lists, mdList{indent, ordered})
}

// closeLists closes the lists nested deeper than indent; -1 closes all.
func (r *mdRenderer) closeLists(indent int) {
	for len(r.lists) > 0 {
		top := r.lists[len(r.lists)-1]
		if indent >= 0 && top.indent <= indent+1 {
			return
		}
		if top.ordered {
			r.out.WriteString("</li>\n</ol>\n")
		} else {
			r.out.WriteString("</li>\n</ul>\n")
		}
		r.lists = r.lists[:len(r.lists)-1]
	}
}

func (r *mdRenderer) flush() {
	if len(r.para) == 0 {
		return
	}
	parts := make([]string, len(r.para))
	for i, p := range r.para {
		parts[i] = inline(p, 0)
	}
	r.out.WriteString("<p>" + strings.Join(parts, "<br>\n") + "</p>\n")
	r.para = r.para[:0]
}

// maxInlineDepth bounds nesting of emphasis inside emphasis or links.
const maxInlineDepth = 3

// inLink is the depth a link's text is rendered at: past every nesting,
// and with no link in it, bare URLs included (an a inside an a is taken
// apart by the browser).
const inLink = maxInlineDepth + 1

// inline renders the inline markup of one line or span, escaping all text.
// Each delimiter's failed search for a closer is remembered, so that text
// full of unmatched delimiters takes linear time, not quadratic.
func inline(s string, depth int) string {
	var b strings.Builder
	noCloser := map[string]int{} // delimiter -> the position from which no closer exists
	find := func(delim string, from int) int {
		if p, ok := noCloser[delim]; ok && from >= p {
			return -1
		}
		k := strings.Index(s[from:], delim)
		if k < 0 {
			noCloser[delim] = from
			return -1
		}
		return from + k
	}
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_[]()#+-.!<>", s[i+1]) >= 0:
			b.WriteString(html.EscapeString(s[i+1 : i+2]))
			i += 2
			continue
		case c == '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			delim := s[i : i+n]
			if end := find(delim, i+n); end >= 0 {
				b.WriteString("<code>" + html.EscapeString(strings.TrimSpace(s[i+n:end])) + "</code>")
				i = end + n
				continue
			}
			b.WriteString(delim)
			i += n
			continue
		case (c == '*' || c == '_') && depth < maxInlineDepth:
			delim := string(c)
			if i+1 < len(s) && s[i+1] == c {
				delim += string(c)
			}
			start := i + len(delim)
			// An opener is followed by a non-space; _ must also start a
			// word, so snake_case_names stay as they are.
			if start < len(s) && s[start] != ' ' && (c == '*' || i == 0 || !isWord(s[i-1])) {
				if end := find(delim, start+1); end >= 0 && s[end-1] != ' ' && (c == '*' || end+len(delim) >= len(s) || !isWord(s[end+len(delim)])) {
					tag := "em"
					if len(delim) == 2 {
						tag = "strong"
					}
					b.WriteString("<" + tag + ">" + inline(s[start:end], depth+1) + "</" + tag + ">")
					i = end + len(delim)
					continue
				}
			}
			b.WriteString(delim)
			i += len(delim)
			continue
		case c == '[' && depth < maxInlineDepth:
			if close := find("](", i+1); close >= 0 {
				if end := linkEnd(s[close+2 : min(len(s), close+2+maxLinkLen)]); end >= 0 {
					text, href := s[i+1:close], strings.TrimSpace(s[close+2:close+2+end])
					if u, ok := safeURL(href); ok && !strings.Contains(text, "](") {
						b.WriteString(anchor(u, inline(text, inLink)))
						i = close + 2 + end + 1
						continue
					}
				}
			}
		case c == 'h' && depth < inLink && (i == 0 || !isWord(s[i-1])) && (strings.HasPrefix(s[i:], "https://") || strings.HasPrefix(s[i:], "http://")):
			end := i
			for end < len(s) && !strings.ContainsRune(" \t<>\"'`", rune(s[end])) {
				end++
			}
			raw := strings.TrimRight(s[i:end], ".,;:!?)]*_")
			// A ")" that closes a "(" of the URL is the URL's
			// (wiki/Rust_(language)), as GitHub reads bare links.
			for open := strings.Count(raw, "(") - strings.Count(raw, ")"); open > 0 && i+len(raw) < end && s[i+len(raw)] == ')'; open-- {
				raw = s[i : i+len(raw)+1]
			}
			if u, ok := safeURL(raw); ok {
				b.WriteString(anchor(u, html.EscapeString(raw)))
				i += len(raw)
				continue
			}
		}
		b.WriteString(html.EscapeString(s[i : i+1]))
		i++
	}
	return b.String()
}

// maxLinkLen bounds a link's destination, in bytes: a "](" with no ")"
// within it is text. Each "[" looks that far for its ")" at most, so that
// a line full of them renders in linear time.
const maxLinkLen = 4096

// maxLinkParens bounds the parentheses nested in a link's destination, as
// CommonMark's 32 do: past it the first ")" ends the link, so that a long
// run of "(" costs no more than a scan of 32.
const maxLinkParens = 32

// linkEnd returns the index in s, what follows a link's "](", of the ")"
// that ends the destination: the first that closes no "(" of the
// destination itself (wiki/Rust_(language)), else the first; -1 if none.
func linkEnd(s string) int {
	first := strings.IndexByte(s, ')')
	if first < 0 || strings.IndexByte(s[:first], '(') < 0 {
		return first
	}
	depth := 0
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '(':
			if depth++; depth > maxLinkParens {
				return first
			}
		case ')':
			if depth == 0 {
				return j
			}
			depth--
		case ' ', '\t':
			return first // a destination holds no space (safeURL)
		}
	}
	return first
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// safeURL returns href normalised when it is an absolute http or https URL
// with a host; anything else (javascript:, data:, relative paths, URLs with
// control characters) is refused.
func safeURL(href string) (string, bool) {
	if href == "" || strings.ContainsAny(href, " \t\n\r\x00") {
		return "", false
	}
	u, err := url.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return u.String(), true
}

func anchor(href, text string) string {
	return `<a href="` + html.EscapeString(href) + `" rel="noopener noreferrer nofollow" target="_blank">` + text + `</a>`
}

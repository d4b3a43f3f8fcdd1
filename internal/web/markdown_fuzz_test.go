package web

import (
	"errors"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// mdSeeds are markdown as agents write it: plans with headings, nested
// lists, fenced code and links, and the hostile and broken input a page
// must survive (raw HTML, script links, unbalanced delimiters).
var mdSeeds = []string{
	"## Plan: roll out v2.3 to prod-eu\n\n" +
		"1. Drain **eu-west-1** (`kubectl drain --ignore-daemonsets`)\n" +
		"2. Apply the manifests:\n" +
		"   - `deploy.yaml`\n" +
		"   - `svc.yaml` *(new port 8443)*\n" +
		"3. Watch the [dashboard](https://grafana.example.com/d/prod?orgId=1&var-env=prod) for 10 min\n\n" +
		"```bash\nkubectl apply -f deploy.yaml && kubectl rollout status deploy/api --timeout=5m\n```\n\n" +
		"Rollback: see https://runbooks.example.com/api#rollback.",
	"# Risk\n\n### Blast radius\n\n* api (3 replicas)\n\t* worker_pool_size: 8 -> 16\n+ cron\n\n" +
		"#### Notes ####\nThe migration `0042_add_index` locks `orders` for ~2s.\n" +
		"Downtime: _none expected_, but __if__ it fails: ***page on-call***.",
	"Steps:\r\n1) back up `/var/lib/postgres`\r\n2) run `pg_upgrade`\r\n   continued on this line\r\n\r\n~~~\r\n$ echo done\r\n~~~",
	"<script>alert(document.cookie)</script>\n<img src=x onerror=alert(1)>\n" +
		`<a href="javascript:alert(1)">click</a> <!-- note --> <![CDATA[x]]> </p><p onclick="x">`,
	"[click](javascript:alert(1)) [x](JAVASCRIPT:alert(1)) [x](java\tscript:alert(1)) [x]( https://ok.example/a ) " +
		`[x](https://a.example/"><script>alert(1)</script>) [x](//evil.example) [x](data:text/html,<script>alert(1)</script>) ` +
		"[x](vbscript:msgbox) [x](https://user:pw@host.example:8443/p?q=1&r='2'#f)",
	"**bold *mixed** end* `unclosed code [unclosed link(https://x.example _a *b_ c* __x ** y__ **",
	"```\nunclosed fence <b>\n- not a list\n",
	"AT&T &amp; &lt;b&gt; &#x3c;script&#x3e; &#60; &nbsp; & ; &#;",
	"####### seven\n#\n##   \n# `code` in a [heading](http://example.com/h)",
	`C:\Users\ops\deploy.ps1 and \*not em\* and \<b\> and \[not a link\](https://x.example)`,
	"- a\n  - b\n    - c\n      1. d\n  - e\n- f\n\n  after a blank\n1. g\n- h",
	"see http://example.com/a_b_(c), https://example.com/x*y* and ftp://example.com/f and xhttps://example.com",
	"snake_case_name and __dunder__ and *a*b*c* and **`code in strong`** and `` a ` b ``",
	// A link whose text is a URL: the text's URL was linked too, an a
	// inside an a, which a browser splits into two links (found by this
	// target; testdata/fuzz/FuzzMarkdown holds the input it found).
	"Dashboards: [https://grafana.example.com/d/prod](https://grafana.example.com/d/prod?orgId=1) and " +
		"[the runbook at https://runbooks.example.com/api](https://runbooks.example.com/api#rollback).",
}

// FuzzMarkdown renders arbitrary markdown and checks the HTML against what
// Markdown promises: see checkMarkdownHTML.
func FuzzMarkdown(f *testing.F) {
	for _, s := range mdSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := string(Markdown(src))
		if err := checkMarkdownHTML(src, out); err != nil {
			t.Fatalf("Markdown(%.300q)\n= %.600q\n%v", src, out, err)
		}
	})
}

// phrasing is what inline elements hold.
const phrasing = "a strong em code br"

// mdContent is what each element Markdown emits may hold: its child
// elements, and whether text other than whitespace. "" is the top level.
// A tree outside these rules is one a browser rebuilds on its own terms
// (an a in an a, a list in a paragraph).
var mdContent = map[string]struct {
	children string
	text     bool
}{
	"":       {"p h3 h4 h5 h6 ul ol pre", false},
	"p":      {phrasing, true},
	"h3":     {phrasing, true},
	"h4":     {phrasing, true},
	"h5":     {phrasing, true},
	"h6":     {phrasing, true},
	"ul":     {"li", false},
	"ol":     {"li", false},
	"li":     {phrasing + " ul ol", true},
	"pre":    {"code", false},
	"code":   {"", true},
	"strong": {phrasing, true},
	"em":     {phrasing, true},
	"a":      {phrasing, true}, // but never an a inside an a, at any depth
}

var (
	mdTag    = regexp.MustCompile(`^<(/?)([a-z][a-z0-9]*)((?: [a-z]+="[^"]*")*)>$`)
	mdAttr   = regexp.MustCompile(` ([a-z]+)="([^"]*)"`)
	mdEntity = regexp.MustCompile(`^&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});`)
)

// checkMarkdownHTML checks out, Markdown's rendering of src, as a browser
// would read it:
//   - every < begins a tag of the whitelist, with exactly its attributes:
//     none, or for a: an http(s) href, rel="noopener noreferrer nofollow"
//     and target="_blank", values double-quoted and escaped;
//   - every & begins a character reference, and no >, " or ' is bare:
//     text is escaped, so none of it can become markup;
//   - tags are balanced and nested as mdContent allows, br is void;
//   - the text, unescaped, is src's text in src's order, less markup and
//     whitespace: nothing is invented, duplicated or moved.
func checkMarkdownHTML(src, out string) error {
	stack := []string{""}
	var text strings.Builder
	for i := 0; i < len(out); {
		top := stack[len(stack)-1]
		switch c := out[i]; c {
		case '<':
			end := strings.IndexByte(out[i:], '>')
			if end < 0 {
				return fmt.Errorf("at %d: a < that begins no tag", i)
			}
			tag := out[i : i+end+1]
			m := mdTag.FindStringSubmatch(tag)
			if m == nil {
				return fmt.Errorf("at %d: %q is not a tag of the whitelist", i, tag)
			}
			closing, name, attrs := m[1] == "/", m[2], m[3]
			if _, ok := mdContent[name]; !ok && name != "br" {
				return fmt.Errorf("at %d: element %s is not on the whitelist", i, name)
			}
			switch {
			case closing:
				if attrs != "" || name == "br" {
					return fmt.Errorf("at %d: %q", i, tag)
				}
				if name != top {
					return fmt.Errorf("at %d: %s closes while %q is open", i, tag, top)
				}
				stack = stack[:len(stack)-1]
			default:
				if !strings.Contains(" "+mdContent[top].children+" ", " "+name+" ") {
					return fmt.Errorf("at %d: <%s> inside %q", i, name, top)
				}
				if name == "a" && strings.Contains(strings.Join(stack, " ")+" ", " a ") {
					return fmt.Errorf("at %d: an a inside an a", i)
				}
				if err := checkAttrs(name, attrs); err != nil {
					return fmt.Errorf("at %d: %s: %w", i, tag, err)
				}
				if name != "br" {
					stack = append(stack, name)
				}
			}
			i += end + 1
		case '&':
			ent := charRef(out[i:])
			if ent == "" {
				return fmt.Errorf("at %d: a & that begins no character reference: %.20q", i, out[i:])
			}
			if !mdContent[top].text {
				return fmt.Errorf("at %d: text inside %q", i, top)
			}
			text.WriteString(html.UnescapeString(ent))
			i += len(ent)
		case '>', '"', '\'':
			return fmt.Errorf("at %d: a bare %c in text", i, c)
		default:
			if !isSpace(c) {
				if !mdContent[top].text {
					return fmt.Errorf("at %d: text inside %q: %.20q", i, top, out[i:])
				}
				text.WriteByte(c)
			}
			i++
		}
	}
	if len(stack) > 1 {
		return fmt.Errorf("left open: %v", stack[1:])
	}
	if !subsequence(text.String(), src) {
		return fmt.Errorf("the text %.300q is not the input's, in its order", text.String())
	}
	return nil
}

// checkAttrs checks the attributes of an element's start tag.
func checkAttrs(name, attrs string) error {
	if name != "a" {
		if attrs != "" {
			return errors.New("attributes on an element that has none")
		}
		return nil
	}
	got := map[string]string{}
	for _, m := range mdAttr.FindAllStringSubmatch(attrs, -1) {
		if _, dup := got[m[1]]; dup {
			return fmt.Errorf("%s twice", m[1])
		}
		v := m[2]
		if strings.ContainsAny(v, "<>'") {
			return fmt.Errorf("%s=%q is not escaped", m[1], v)
		}
		for j := range len(v) {
			if v[j] == '&' && charRef(v[j:]) == "" {
				return fmt.Errorf("%s=%q: a & that begins no character reference", m[1], v)
			}
		}
		got[m[1]] = html.UnescapeString(v)
	}
	if len(got) != 3 || got["rel"] != "noopener noreferrer nofollow" || got["target"] != "_blank" {
		return fmt.Errorf("attributes %q, want href, rel and target", got)
	}
	return checkHref(got["href"])
}

// checkHref checks a link's href, unescaped, as a browser reads it: an
// absolute http or https URL with a host, with no byte a browser strips
// or skips before it reads the scheme (controls, spaces, tab, newline).
func checkHref(href string) error {
	if !strings.HasPrefix(href, "http://") && !strings.HasPrefix(href, "https://") {
		return fmt.Errorf("href %q is not http or https", href)
	}
	for i := 0; i < len(href); i++ {
		if href[i] <= ' ' || href[i] == 0x7f {
			return fmt.Errorf("href %q holds byte %#x", href, href[i])
		}
	}
	if u, err := url.Parse(href); err != nil || u.Host == "" {
		return fmt.Errorf("href %q is not an absolute URL with a host", href)
	}
	return nil
}

// charRef returns the character reference that s begins with, or "".
func charRef(s string) string {
	ref := mdEntity.FindString(s)
	if html.UnescapeString(ref) == ref {
		return ""
	}
	return ref
}

// isSpace reports whether c is whitespace to HTML.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// subsequence reports whether sub's bytes occur in s in order.
func subsequence(sub, s string) bool {
	j := 0
	for i := 0; i < len(s) && j < len(sub); i++ {
		if s[i] == sub[j] {
			j++
		}
	}
	return j == len(sub)
}

package web

import (
	"regexp"
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"paragraphs", "one\ntwo\n\nthree", "<p>one<br>\ntwo</p>\n<p>three</p>\n"},
		{"heading", "# Plan", "<h3>Plan</h3>\n"},
		{"emphasis", "**bold** and *it* and _it_ but snake_case_name", "<p><strong>bold</strong> and <em>it</em> and <em>it</em> but snake_case_name</p>\n"},
		{"code span", "run `rm -rf <dir>`", "<p>run <code>rm -rf &lt;dir&gt;</code></p>\n"},
		{"fenced code", "```go\nif a < b {}\n```", "<pre><code>if a &lt; b {}</code></pre>\n"},
		{"list", "- a\n- b\n  - c\n1. d", "<ul>\n<li>a</li>\n<li>b<ul>\n<li>c</li>\n</ul>\n</li>\n</ul>\n<ol>\n<li>d</li>\n</ol>\n"},
		{"https link", "[docs](https://example.com/x)", `<p><a href="https://example.com/x" rel="noopener noreferrer nofollow" target="_blank">docs</a></p>` + "\n"},
		{"bare link", "see https://example.com/a.", `<p>see <a href="https://example.com/a" rel="noopener noreferrer nofollow" target="_blank">https://example.com/a</a>.</p>` + "\n"},
		{"javascript link stays text", "[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>\n"},
		{"data link stays text", "[x](data:text/html;base64,PHNjcmlwdD4=)", "<p>[x](data:text/html;base64,PHNjcmlwdD4=)</p>\n"},
		{"relative link stays text", "[x](/admin)", "<p>[x](/admin)</p>\n"},
		{"raw html is text", "<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		{"img onerror is text", `<img src=x onerror="alert(1)">`, "<p>&lt;img src=x onerror=&#34;alert(1)&#34;&gt;</p>\n"},
		{"bare link in a link's text", "[https://e.com/d](https://e.com/d?org=1)", `<p><a href="https://e.com/d?org=1" rel="noopener noreferrer nofollow" target="_blank">https://e.com/d</a></p>` + "\n"},
		{"bare link deep in emphasis", "**a _b *see https://e.com/x c* d_ e**", `<p><strong>a <em>b <em>see <a href="https://e.com/x" rel="noopener noreferrer nofollow" target="_blank">https://e.com/x</a> c</em> d</em> e</strong></p>` + "\n"},
		{"escape in link text", "[<b>x</b>](https://e.com)", `<p><a href="https://e.com" rel="noopener noreferrer nofollow" target="_blank">&lt;b&gt;x&lt;/b&gt;</a></p>` + "\n"},
		{"parentheses in a link", "[Rust](https://en.wikipedia.org/wiki/Rust_(programming_language)) (see)",
			`<p><a href="https://en.wikipedia.org/wiki/Rust_(programming_language)" rel="noopener noreferrer nofollow" target="_blank">Rust</a> (see)</p>` + "\n"},
		{"parentheses in a bare link", "see https://en.wikipedia.org/wiki/Rust_(programming_language). (Or https://e.com/a.)",
			`<p>see <a href="https://en.wikipedia.org/wiki/Rust_(programming_language)" rel="noopener noreferrer nofollow" target="_blank">https://en.wikipedia.org/wiki/Rust_(programming_language)</a>. (Or <a href="https://e.com/a" rel="noopener noreferrer nofollow" target="_blank">https://e.com/a</a>.)</p>` + "\n"},
		{"quote in href", `[x](https://e.com/"onmouseover="alert(1))`, `<p><a href="https://e.com/%22onmouseover=%22alert%281%29" rel="noopener noreferrer nofollow" target="_blank">x</a></p>` + "\n"},
		// Past maxLinkLen a "[...](" is text (its URL is still a bare link):
		// each "[" looks no further for its ")", and a line full of them
		// renders in linear time, not in seconds.
		{"a link longer than 4 KB", "[x](https://e.com/" + strings.Repeat("a", 4096) + ")",
			`<p>[x](<a href="https://e.com/` + strings.Repeat("a", 4096) + `" rel="noopener noreferrer nofollow" target="_blank">https://e.com/` + strings.Repeat("a", 4096) + "</a>)</p>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Markdown(tc.in)); got != tc.want {
				t.Errorf("Markdown(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

var allowedTag = regexp.MustCompile(`^</?(p|br|h[3-6]|ul|ol|li|pre|code|strong|em)>$|^<a href="https?://[^"<>]*" rel="noopener noreferrer nofollow" target="_blank">$|^</a>$`)

// TestMarkdownWhitelist feeds hostile and malformed input and checks that
// every tag in the output is on the whitelist.
func TestMarkdownWhitelist(t *testing.T) {
	inputs := []string{
		"<svg onload=alert(1)>", "[a](javascript:alert(1))", "[a](JaVaScRiPt:alert(1))", "[a](  javascript:alert(1))",
		"[a](https://x.com\" onclick=\"alert(1))", "**<i>x</i>**", "`<`>`", "*[x](https://a.b)*", "# <h1>x</h1>",
		"- [a](http://x)\n  - <iframe src=//evil>", "```\n</code></pre><script>x</script>\n```", "\\<script\\>",
		strings.Repeat("*", 5000) + strings.Repeat("_", 5000) + strings.Repeat("[", 3000) + strings.Repeat("`", 3000),
		strings.Repeat("**a ", 2000), "http://a.b/<script>", "https://<script>", "[x](https://a.b/<x>)",
	}
	for _, in := range inputs {
		out := string(Markdown(in))
		for _, tag := range regexp.MustCompile(`<[^>]*>`).FindAllString(out, -1) {
			if !allowedTag.MatchString(tag) {
				t.Errorf("Markdown(%.60q) emitted %s", in, tag)
			}
		}
	}
}

package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/surface"
	"github.com/askbridge/askbridge/internal/web"
)

// chromium finds a Chromium or Chrome binary: $BRIDGE_CHROMIUM, else the
// usual names on PATH.
func chromium() string {
	if p := os.Getenv("BRIDGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifacts is where screenshots go: $ARTIFACTS, else artifacts/ at the
// repository's root (git-ignored).
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	dir = filepath.Join(dir, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// inboxConfig is a replica with an asking token, an answering one (ada's)
// and the inbox's secret: the browser tests' and FuzzForms'.
const inboxConfig = `
api:
  tokens:
    - {name: agent, token: agent-token-7f3c9e21b4, scopes: [ask]}
    - {name: ada, token: ada-token-7f3c9e21b4, scopes: [answer]}
web:
  secret: 0123456789abcdef0123456789abcdef
`

// TestBrowser answers every kind of form in a real headless Chromium: a
// single-select, a multi-select with free text, a typed field after a
// validation error, a required text field sent blank, and an approval; it watches a request answered
// elsewhere leave the page, and saves screenshots at phone and desktop
// sizes. Without a Chromium it skips, unless BRIDGE_BROWSER_TESTS=1 (CI).
func TestBrowser(t *testing.T) {
	bin := needChromium(t)
	url, prefix := apptest.Redis(t)
	a := apptest.Start(t, apptest.Config(t, inboxConfig, url, prefix), app.Options{})
	base := a.URL()
	shots := artifacts(t)

	// Oldest first: the inbox shows the newest on top.
	approval := create(t, base, "/v1/approvals", map[string]any{
		"tool_name": "kubectl_apply", "display_reason": "Apply the **v2.3** manifests to `prod-eu`.",
		"arguments": map[string]any{"namespace": "prod-eu", "files": []string{"deploy.yaml", "svc.yaml"}},
		"caller":    map[string]any{"name": "deploy-bot", "session": "run-42"},
	})
	typed := create(t, base, "/v1/questions", questions(seam.Question{ID: "replicas", Header: "Replicas", Question: "How many replicas should prod run?",
		Input: &seam.Input{Type: "integer", Required: true}}))
	multi := create(t, base, "/v1/questions", questions(seam.Question{ID: "regions", Header: "Regions", Question: "Which regions get the release?", MultiSelect: true,
		Options: []seam.Option{{Label: "eu-west", Description: "Frankfurt and Dublin"}, {Label: "us-east"}, {Label: "ap-south"}}}))
	single := create(t, base, "/v1/questions", questions(seam.Question{ID: "deploy", Header: "Deploy", Question: "Deploy v2.3 to prod?",
		Detail:  "## Plan\n\n1. Drain **eu-west**\n2. Roll out `v2.3`\n3. Watch the [dashboard](https://grafana.example.com/d/prod)\n\n<script>window.pwned = 1</script>",
		Options: []seam.Option{{Label: "Yes, ship it (Recommended)", Description: "Rolls out in 10 minutes."}, {Label: "No, wait"}}}))

	bctx := startBrowser(t, bin)
	do := func(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browse(t, bctx, what, steps...)
	}
	eval := func(t *testing.T, expr string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	shot := func(t *testing.T, name string, full bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		var png []byte
		var err error
		if full {
			png, err = chromedp.Run(ctx, chromedp.FullScreenshot(90))
		} else {
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	card := func(rec map[string]any) string { return "#req-" + rec["id"].(string) }

	do(t, "sign in", signIn(base, card(single))...)
	if got := eval(t, `String(window.pwned)`); got != "undefined" {
		t.Errorf("a script in a question's detail ran: window.pwned = %s", got)
	}
	shot(t, "inbox-375x812.png", false)
	shot(t, "inbox-375-full.png", true)
	do(t, "desktop", chromedp.EmulateViewport(1280, 800))
	shot(t, "inbox-1280x800.png", false)
	do(t, "dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}), chromedp.EmulateViewport(375, 812))
	shot(t, "inbox-375x812-dark.png", false)
	do(t, "light", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		return err
	}))

	t.Run("a screen reader hears each question", func(t *testing.T) {
		// Each question is a heading, and its group of options (or its
		// field) is named by it: a radio read alone says what it answers.
		names := func(role string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
			defer cancel()
			var out []string
			err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				res, err := cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
				if err != nil {
					return err
				}
				for _, n := range res.Nodes {
					if n.Ignored || n.Role == nil || n.Name == nil || strings.Trim(string(n.Role.Value), `"`) != role {
						continue
					}
					var name string
					if err := json.Unmarshal(n.Name.Value, &name); err == nil {
						out = append(out, name)
					}
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, " | ")
		}
		groups, headings := names("group"), names("heading")
		// An option is read with its number, as Slack and Discord show
		// it, and apart from it: "1. eu-west", not "1.eu-west".
		if radios, boxes := names("radio"), names("checkbox"); !strings.Contains(radios, "1. Yes, ship it Recommended Rolls out in 10 minutes. | 2. No, wait") ||
			!strings.Contains(boxes, "1. eu-west Frankfurt and Dublin | 2. us-east | 3. ap-south") {
			t.Errorf("options read as %s and %s", radios, boxes)
		}
		for _, q := range []string{"Deploy v2.3 to prod?", "Which regions get the release?", "How many replicas should prod run?"} {
			if !strings.Contains(groups, q) {
				t.Errorf("no group of options is named %q; groups: %s", q, groups)
			}
			if !strings.Contains(headings, q) {
				t.Errorf("no heading %q; headings: %s", q, headings)
			}
		}
	})
	t.Run("single-select", func(t *testing.T) {
		c := card(single)
		do(t, "answer", chromedp.Click(c+` input[value="Yes, ship it (Recommended)"]`), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), single, `[{deploy [Yes, ship it (Recommended)] }]`)
	})
	t.Run("multi-select with custom text", func(t *testing.T) {
		c := card(multi)
		do(t, "answer",
			chromedp.Click(c+` input[value="eu-west"]`), chromedp.Click(c+` input[value="ap-south"]`),
			chromedp.SendKeys(c+" textarea.custom", "and staging first"),
			chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), multi, `[{regions [eu-west ap-south] and staging first}]`)
	})
	t.Run("on a single choice, something else replaces the option, visibly", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "plan", Question: "Approve the plan?", Detail: "1. Drain\n2. Roll out",
			Options: []seam.Option{{Label: "Approve"}, {Label: "Keep planning"}}, Intent: &seam.Intent{Kind: "plan-review", Approve: "Approve"}}))
		c := card(rec)
		approve := c + ` input[value="Approve"]`
		checked := func() string { return eval(t, `String(document.querySelector('`+approve+`').checked)`) }
		do(t, "see it", chromedp.WaitVisible(c+" form.answer"))
		if got := eval(t, `document.querySelector("`+c+` label.field span").textContent`); got != "Or ask for changes instead (optional)" {
			t.Errorf("the text field is labelled %q", got)
		}
		do(t, "approve, then write", chromedp.Click(approve), chromedp.SendKeys(c+" textarea.custom", "drain us-east too"))
		if checked() != "false" {
			t.Error("writing changes left Approve chosen; they replace it")
		}
		do(t, "approve again and send", chromedp.Click(approve), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" fieldset .err"))
		if msg := eval(t, `document.querySelector("`+c+` fieldset .err").textContent`); !strings.Contains(msg, "not both") {
			t.Errorf("validation message %q", msg)
		}
		if got := get(t, a.Store(), rec); got.Status != seam.StatusPending {
			t.Fatalf("an answer whose choice would be dropped was sent: %s", got.Status)
		}
		// A deliberate tap, not the second of a double tap: the choice was
		// made long enough ago.
		eval(t, `(document.querySelector('`+approve+`').dataset.chosenAt = "0", "")`)
		do(t, "tap Approve again to clear it", chromedp.Click(approve))
		if checked() != "false" {
			t.Fatal("tapping the chosen option again left it chosen")
		}
		do(t, "choose it with the keyboard, then clear it with Delete", chromedp.Click(approve), chromedp.Focus(approve), chromedp.KeyEvent("\u007f"))
		if checked() != "false" {
			t.Fatal("Delete on the chosen option left it chosen")
		}
		do(t, "send", chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{plan [] drain us-east too}]`)
	})
	t.Run("an answer's lines stay lines", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "steps", Question: "Which steps?"}, seam.Question{ID: "ok", Question: "Go?", Options: []seam.Option{{Label: "Go"}}}))
		c := card(rec)
		do(t, "type two lines", chromedp.WaitVisible(c+" form.answer"), chromedp.SendKeys(c+" textarea.custom", "drain first\nthen roll out"),
			chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome dd"))
		wantAnswer(t, a.Store(), rec, "[{steps [] drain first\nthen roll out} {ok [] }]")
		if got := eval(t, `document.querySelector("`+c+` .outcome dd").innerText`); got != "“drain first\nthen roll out”" {
			t.Errorf("the answer shows as %q", got)
		}
	})
	t.Run("a string field keeps its prefill's lines", func(t *testing.T) {
		// A one-line input strips a value's line breaks (the HTML value
		// sanitization): a draft sent back as it was would come back
		// with its lines run together. Slack and Discord give a string
		// field a paragraph too.
		const draft = "Fix the retry loop\n\nIt gave up after one 5xx."
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "msg", Header: "Commit message", Question: "Edit the commit message?",
			Input: &seam.Input{Type: "string", Value: draft, Required: true}}))
		c := card(rec)
		do(t, "send it as it is", chromedp.WaitVisible(c+" form.answer"), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, "[{msg [] "+draft+"}]")
	})
	t.Run("typed field with a validation error", func(t *testing.T) {
		c := card(typed)
		do(t, "type a bad value", chromedp.SendKeys(c+" input.custom", "three"), chromedp.Click(c+" button[type=submit]"),
			chromedp.WaitVisible(c+` input.custom[aria-invalid="true"]`))
		if msg := eval(t, `document.querySelector("`+c+` fieldset .err").textContent`); !strings.Contains(msg, "whole number") {
			t.Errorf("validation message %q", msg)
		}
		do(t, "scroll", chromedp.ScrollIntoView(c))
		shot(t, "typed-error-375x812.png", false)
		if rec := get(t, a.Store(), typed); rec.Status != seam.StatusPending {
			t.Fatalf("an invalid answer was sent: %s", rec.Status)
		}
		eval(t, `(document.querySelector("`+c+` input.custom").value = "", "")`)
		// A phone's numeric keypad has no minus key: the field's own
		// button changes the sign, both ways.
		do(t, "fix it", chromedp.SendKeys(c+" input.custom", "42"), chromedp.Click(c+" button[data-sign]"))
		if v := eval(t, `document.querySelector("`+c+` input.custom").value`); v != "-42" {
			t.Errorf("after the sign button: %q; want -42", v)
		}
		do(t, "the sign back", chromedp.Click(c+" button[data-sign]"))
		if v := eval(t, `document.querySelector("`+c+` input.custom").value`); v != "42" {
			t.Errorf("after the sign button twice: %q; want 42", v)
		}
		// A plus sign becomes a minus; the field keeps the focus, so a
		// number not yet typed is not validated.
		eval(t, `(document.querySelector("`+c+` input.custom").value = "+7", "")`)
		do(t, "the sign of +7", chromedp.Focus(c+" input.custom"), chromedp.Click(c+" button[data-sign]"))
		if v := eval(t, `document.querySelector("`+c+` input.custom").value + " " + (document.activeElement === document.querySelector("`+c+` input.custom"))`); v != "-7 true" {
			t.Errorf("after the sign button on +7: %q; want -7, the field focused", v)
		}
		// Zeros after a point still make a whole number, sent as one.
		eval(t, `(document.querySelector("`+c+` input.custom").value = "42.0", "")`)
		do(t, "send it", chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), typed, `[{replicas [] 42}]`)
	})
	t.Run("a number typed with a decimal comma", func(t *testing.T) {
		// Where a region writes 0,5, a phone's decimal keypad (iOS's) has a
		// comma and no point: the comma is read as the point. A separator
		// before exactly three digits that could group thousands (a comma
		// in English, a point in German) is refused.
		cores := func() map[string]any {
			return create(t, base, "/v1/questions", questions(seam.Question{ID: "cpu", Header: "CPU", Question: "How many cores?",
				Input: &seam.Input{Type: "number", Required: true}}))
		}
		rec := cores()
		c := card(rec)
		do(t, "thousands or a decimal?", chromedp.WaitVisible(c+" input.custom"), chromedp.SendKeys(c+" input.custom", "1,000"),
			chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+` input.custom[aria-invalid="true"]`))
		if msg := eval(t, `document.querySelector("`+c+` fieldset .err").textContent`); !strings.Contains(msg, "1000") || !strings.Contains(msg, "1.000") {
			t.Errorf("1,000 is refused with %q, want it to offer 1000 and 1.000", msg)
		}
		if got := get(t, a.Store(), rec); got.Status != seam.StatusPending {
			t.Fatalf("an ambiguous number was sent: %s", got.Status)
		}
		eval(t, `(document.querySelector("`+c+` input.custom").value = "", "")`)
		do(t, "a decimal comma", chromedp.SendKeys(c+" input.custom", "0,5"), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{cpu [] 0.5}]`)

		rec = cores()
		c = card(rec)
		tab, cancelTab := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		defer cancelTab()
		ctx, cancel := context.WithTimeout(tab, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "de-DE"})
			return err
		}), chromedp.Navigate(base+a.Web().Links().Path(get(t, a.Store(), rec))), chromedp.WaitVisible(c+" input.custom"), chromedp.WaitReady(`html[data-ready="1"]`),
			// There a point groups thousands: 1.000 is a thousand or one.
			chromedp.SendKeys(c+" input.custom", "1.000"), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+` input.custom[aria-invalid="true"]`)); err != nil {
			t.Fatalf("in German, 1.000 was not refused: %v", err)
		}
		if msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("`+c+` fieldset .err").textContent`)); err != nil || !strings.Contains(msg, "1000") || !strings.Contains(msg, "1,000") {
			t.Errorf("in German, 1.000 is refused with %q (%v), want it to offer 1000 and 1,000", msg, err)
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("`+c+` input.custom").value = ""`),
			chromedp.SendKeys(c+" input.custom", "1,250"), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Fatalf("in German, answer 1,250: %v", err)
		}
		if got := get(t, a.Store(), rec); got.Answer == nil || fmtAnswer(got.Answer) != "[{cpu [] 1.250}]" {
			t.Errorf("in German, 1,250 was answered as %+v, want 1.250", got.Answer)
		}
	})
	t.Run("an hour is shown without a leading zero", func(t *testing.T) {
		// In a zone where it is now about 5 o'clock, in English: "Dec 6,
		// 5:07 AM", not "05:07 AM".
		off := 5 - time.Now().UTC().Hour()
		if off < -12 {
			off += 24
		}
		zone := fmt.Sprintf("Etc/GMT%+d", -off) // Etc/GMT-5 is 5 hours ahead of UTC
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Which zone?"}))
		tab, cancelTab := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		defer cancelTab()
		ctx, cancel := context.WithTimeout(tab, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
			return err
		}), chromedp.Navigate(base+a.Web().Links().Path(get(t, a.Store(), rec))), chromedp.WaitReady(`html[data-ready="1"]`)); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".meta time").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`, [56]:\d\d\W+AM$`).MatchString(got) {
			t.Errorf("in %s, a time about 5 AM is shown as %q, want its hour without a leading zero", zone, got)
		}
	})
	t.Run("a lone free-text question refuses a blank answer", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "why", Question: "What is the rollback plan?"}))
		c := card(rec)
		do(t, "send spaces", chromedp.WaitVisible(c+" form.answer"), chromedp.SendKeys(c+" textarea.custom", "   "),
			chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+` textarea.custom[aria-invalid="true"]`))
		if msg := eval(t, `document.querySelector("`+c+` fieldset .err").textContent`); msg != "Type an answer." {
			t.Errorf("validation message %q", msg)
		}
		if got := get(t, a.Store(), rec); got.Status != seam.StatusPending {
			t.Fatalf("a blank answer was sent: %s", got.Status)
		}
		do(t, "type one", chromedp.SendKeys(c+" textarea.custom", "restore the snapshot"),
			chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{why [] restore the snapshot}]`)
	})
	t.Run("a required boolean's error clears when it is chosen", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "dry", Question: "Dry run first?", Input: &seam.Input{Type: "boolean", Required: true}}))
		c := card(rec)
		do(t, "send unchosen", chromedp.WaitVisible(c+" form.answer"), chromedp.Click(c+" button[type=submit]"),
			chromedp.WaitVisible(c+" fieldset .err"))
		if msg := eval(t, `document.querySelector("`+c+` fieldset .err").textContent`); msg != "Choose Yes or No." {
			t.Errorf("validation message %q", msg)
		}
		if got := eval(t, `document.activeElement.value`); got != "true" {
			t.Errorf("focus is on %q, want the first choice", got)
		}
		do(t, "choose Yes", chromedp.Click(c+` .opts.two input[value="true"]`), chromedp.WaitNotVisible(c+" fieldset .err"))
		do(t, "send", chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{dry [] true}]`)
	})
	t.Run("an optional boolean can be left unanswered again", func(t *testing.T) {
		// Prefilled Yes: tapping Yes again clears it, and the question is
		// skipped, as an optional question may be.
		rec := create(t, base, "/v1/questions", questions(
			seam.Question{ID: "urgent", Question: "Mark it urgent?", Input: &seam.Input{Type: "boolean", Value: "true"}},
			seam.Question{ID: "to", Question: "Who gets it?"}))
		c := card(rec)
		yes := c + ` .opts.two input[value="true"]`
		do(t, "see it", chromedp.WaitVisible(c+" form.answer"))
		if got := eval(t, `String(document.querySelector('`+yes+`').checked)`); got != "true" {
			t.Fatalf("the prefilled Yes is not chosen: %s", got)
		}
		do(t, "tap Yes again to clear it", chromedp.Click(yes))
		if got := eval(t, `String(document.querySelector('`+yes+`').checked)`); got != "false" {
			t.Fatal("tapping the chosen Yes again left it chosen")
		}
		do(t, "answer the other and send", chromedp.SendKeys(c+" textarea.custom", "ops"),
			chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{urgent [] } {to [] ops}]`)
	})
	t.Run("a double tap on an option keeps it chosen", func(t *testing.T) {
		// Tapping the chosen option again clears it, but not as the second
		// tap of a double tap (a phone sends both): among several questions
		// the one double-tapped would be sent skipped.
		rec := create(t, base, "/v1/questions", questions(
			seam.Question{ID: "go", Question: "Start the migration?", Options: []seam.Option{{Label: "Start"}, {Label: "Hold"}}},
			seam.Question{ID: "note", Question: "Anything to add?"}))
		c := card(rec)
		start := c + ` input[value="Start"]`
		do(t, "arrives", chromedp.WaitVisible(c+" form.answer"))
		// Two taps in one instant, each a pointerdown and a click on the
		// option's label, as a double tap sends them.
		tap := `(() => { const l = document.querySelector('` + start + `').closest("label");
			l.dispatchEvent(new PointerEvent("pointerdown", { bubbles: true })); l.click(); })();`
		if got := eval(t, `(() => { `+tap+tap+` return String(document.querySelector('`+start+`').checked) })()`); got != "true" {
			t.Fatalf("after a double tap on Start it is chosen: %s, want true", got)
		}
		// A deliberate second tap, long enough after, clears it.
		if got := eval(t, `(() => { document.querySelector('`+start+`').dataset.chosenAt = "0"; `+tap+` return String(document.querySelector('`+start+`').checked) })()`); got != "false" {
			t.Fatalf("a deliberate tap on the chosen Start left it chosen: %s", got)
		}
		do(t, "choose and send", chromedp.Click(start), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{go [Start] } {note [] }]`)
	})
	t.Run("right-to-left text reads right to left", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", map[string]any{"caller": map[string]any{"name": "بوت النشر"}, "questions": []seam.Question{{ID: "q", Header: "نشر",
			Question: "هل تريد النشر إلى الإنتاج؟", Options: []seam.Option{{Label: "نعم (Recommended)", Description: "ينشر الإصدار 2.3"}, {Label: "No"}}}}})
		c := card(rec)
		do(t, "arrives", chromedp.WaitVisible(c+" form.answer"), chromedp.ScrollIntoView(c))
		shot(t, "rtl-375x812.png", false)
		got := eval(t, `["legend", "h2.qtext", ".label", ".desc", "textarea.custom"].map((s) => getComputedStyle(document.querySelector("`+c+` " + s)).direction).join(" ") + " / " +
			getComputedStyle(document.querySelectorAll("`+c+` .label")[1]).direction`)
		if got != "rtl rtl rtl rtl ltr / ltr" {
			t.Errorf("directions of header, question, label, description, empty field / an English label: %s, want rtl rtl rtl rtl ltr / ltr", got)
		}
		do(t, "answer", chromedp.Click(c+` input[value="نعم (Recommended)"]`), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome"))
		wantAnswer(t, a.Store(), rec, `[{q [نعم (Recommended)] }]`)
	})
	t.Run("approval", func(t *testing.T) {
		c := card(approval)
		do(t, "allow", chromedp.SendKeys(c+" textarea[name=note]", "ok after the freeze"),
			chromedp.Click(c+` button[data-outcome="allowed-once"]`), chromedp.WaitVisible(c+" .outcome"))
		rec := get(t, a.Store(), approval)
		if rec.Decision == nil || *rec.Decision != (seam.Decision{Outcome: "allowed-once", Note: "ok after the freeze"}) || rec.ResolvedBy.Surface != "web" {
			t.Errorf("decision %+v by %+v", rec.Decision, rec.ResolvedBy)
		}
	})
	t.Run("large arguments scroll in their box", func(t *testing.T) {
		args := map[string]any{}
		for i := range 300 {
			args[fmt.Sprintf("key-%03d", i)] = strings.Repeat("v", 40)
		}
		rec := create(t, base, "/v1/approvals", map[string]any{"tool_name": "bulk_apply", "arguments": args})
		c := card(rec)
		do(t, "arrives", chromedp.WaitVisible(c+" details.args pre"), chromedp.ScrollIntoView(c+" details.args"))
		shot(t, "approval-large-args-375x812.png", false)
		// The buttons are at most a screen below the arguments' start, and
		// every argument can still be scrolled to.
		got := eval(t, `(() => {
			const pre = document.querySelector("`+c+` details.args pre");
			const btn = document.querySelector("`+c+` button[data-outcome]");
			const gap = btn.getBoundingClientRect().bottom - pre.getBoundingClientRect().top;
			return gap <= innerHeight && pre.scrollHeight > pre.clientHeight ? "ok" : "gap " + gap + ", box " + pre.clientHeight + " of " + pre.scrollHeight;
		})()`)
		if got != "ok" {
			t.Errorf("with 300 arguments, the decision's buttons are far below: %s (viewport 812)", got)
		}
		do(t, "reject", chromedp.Click(c+` button[data-outcome="rejected"]`), chromedp.WaitVisible(c+" .outcome"))
		// Answered, but no yes: not marked with the green ✓.
		if got := eval(t, `getComputedStyle(document.querySelector("`+c+` .outcome .line"), "::before").content`); strings.Contains(got, "✓") {
			t.Errorf("a rejection is marked %s", got)
		}
		// Nor shown in the box of a yes.
		if got := eval(t, `(() => {
			const yes = document.createElement("div");
			yes.className = "outcome status-answered";
			document.body.append(yes);
			const a = getComputedStyle(yes).backgroundColor, b = getComputedStyle(document.querySelector("`+c+` .outcome")).backgroundColor;
			yes.remove();
			return a === b ? "the same " + a : "ok";
		})()`); got != "ok" {
			t.Errorf("a rejection's box and a yes's have %s", got)
		}
	})
	t.Run("answered elsewhere, it leaves the page", func(t *testing.T) {
		later := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Rotate the keys now?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}))
		do(t, "arrives", chromedp.WaitVisible(card(later)))
		call(t, base, http.MethodPost, "/v1/questions/"+later["id"].(string)+"/answer", "ada-token-7f3c9e21b4", map[string]any{"answers": []any{map[string]any{"id": "q", "selected": []string{"No"}}}})
		do(t, "leaves", chromedp.WaitNotPresent(card(later)))
	})
	t.Run("answered elsewhere while being filled in, it says how", func(t *testing.T) {
		later := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Rotate the keys tonight?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}))
		c := card(later)
		do(t, "begin to answer", chromedp.WaitVisible(c), chromedp.Click(c+` input[value="Yes"]`))
		call(t, base, http.MethodPost, "/v1/questions/"+later["id"].(string)+"/answer", "ada-token-7f3c9e21b4", map[string]any{"answers": []any{map[string]any{"id": "q", "selected": []string{"No"}}}})
		do(t, "says how it ended", chromedp.WaitVisible(c+" .outcome"))
		if got := eval(t, `document.querySelector("`+c+` .outcome").innerText`); !strings.Contains(got, "No") {
			t.Errorf("the card says %q, want the answer given elsewhere", got)
		}
		do(t, "then leaves", chromedp.WaitNotPresent(c))
	})
	t.Run("a double tap does not dismiss", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Archive the old logs?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}))
		c := card(rec)
		do(t, "arrives", chromedp.WaitVisible(c+" button[data-dismiss]"))
		// Two taps in one instant, as a double tap sends them: the second
		// would dismiss if it counted (act marks the form busy at once).
		if got := eval(t, `(() => { const b = document.querySelector("`+c+` button[data-dismiss]"); b.click(); b.click(); return b.disabled + " " + b.textContent })()`); got != "false Tap again to dismiss" {
			t.Fatalf("after a double tap the button is %q, want it armed and not dismissing", got)
		}
		// A deliberate second tap (its first was long enough ago) dismisses.
		eval(t, `(() => { const b = document.querySelector("`+c+` button[data-dismiss]"); b.dataset.armedAt = "0"; b.click(); return "" })()`)
		do(t, "dismissed", chromedp.WaitVisible(c+" .outcome"))
		if got := call(t, base, http.MethodGet, "/v1/questions/"+rec["id"].(string), "ada-token-7f3c9e21b4", nil); got["status"] != "dismissed" {
			t.Errorf("status %v, want dismissed", got["status"])
		}
	})
	t.Run("with a keyboard, focus stays where the person is", func(t *testing.T) {
		// The answer goes out while the network is down, then again: the
		// choice and the text stay, and focus stays on Send, so that Enter
		// tries again. Once sent, focus is on the outcome, and when the
		// card leaves the inbox, on the card below it: never lost to the
		// top of the page.
		older := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Renew the certificate?", Options: []seam.Option{{Label: "Renew"}, {Label: "Later"}}}))
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Which secrets to rotate?", MultiSelect: true, Options: []seam.Option{{Label: "Rotate"}, {Label: "Keep"}}}))
		c := card(rec)
		tab, cancelTab := chromedp.NewContext(bctx)
		defer cancelTab()
		ctx, cancel := context.WithTimeout(tab, 30*time.Second)
		defer cancel()
		// The first answer sent fails as an unreachable network does; the
		// answers sent are counted.
		sent := make(chan int, 8)
		paused := make(chan fetch.RequestID, 4)
		if err := chromedp.Listen(ctx, func(ev any) {
			if e, ok := ev.(*fetch.EventRequestPaused); ok {
				paused <- e.RequestID
			}
		}); err != nil {
			t.Fatal(err)
		}
		go func() {
			for n := 0; ; n++ {
				var id fetch.RequestID
				select {
				case <-ctx.Done():
					return
				case id = <-paused:
				}
				sent <- n + 1
				chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					if n == 0 {
						_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonInternetDisconnected})
						return err
					}
					_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
					return err
				}))
			}
		}()
		focused := func(t *testing.T) string {
			t.Helper()
			v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.activeElement, c = e.closest(".card");
				return e.tagName.toLowerCase() + (e.type ? "[" + e.type + "]" : "") + (c ? " in " + c.id : "") })()`))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), pause(&fetch.RequestPattern{URLPattern: "*/web/requests/*/answer"}), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`), chromedp.WaitVisible(c+" form.answer"),
			chromedp.Click(c+` input[value="Rotate"]`), chromedp.SendKeys(c+" textarea.custom", "after the backup"),
			chromedp.Focus(c+" button[type=submit]"), chromedp.KeyEvent("\r"), chromedp.WaitVisible(c+" .form-err")); err != nil {
			t.Fatalf("send while offline: %v", err)
		}
		if got, want := focused(t), "button[submit] in "+c[1:]; got != want {
			t.Errorf("after a failed send, focus is on %s, want %s", got, want)
		}
		kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("`+c+` input[value=Rotate]").checked + " " + document.querySelector("`+c+` textarea.custom").value`))
		if err != nil || kept != "true after the backup" {
			t.Errorf("after a failed send the form holds %q (%v)", kept, err)
		}
		// Again, with a double press, as an impatient thumb sends it.
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\r\r"), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Fatalf("send again: %v", err)
		}
		wantAnswer(t, a.Store(), rec, `[{q [Rotate] after the backup}]`)
		if n := len(sent); n != 2 {
			t.Errorf("%d answers went out, want 2: the failed one, then one for the double press", n)
		}
		if got := focused(t); !strings.HasSuffix(got, " in "+c[1:]) {
			t.Errorf("once sent, focus is on %s, want the card's outcome", got)
		}
		if err := chromedp.Do(ctx, chromedp.WaitNotPresent(c)); err != nil {
			t.Fatal(err)
		}
		if got := focused(t); !strings.Contains(got, " in req-") {
			t.Errorf("once the card left, focus is on %s, want the next card", got)
		}
		call(t, base, http.MethodDelete, "/v1/questions/"+older["id"].(string), "agent-token-7f3c9e21b4", nil)
	})
	t.Run("on a slow network, a decision's card stays to say it was taken", func(t *testing.T) {
		// The decision is taken, but its reply is slow to come back; the
		// live list, meanwhile, no longer has the request. The card must
		// wait for its reply and say "Allowed once", not vanish unconfirmed.
		rec := create(t, base, "/v1/approvals", map[string]any{"tool_name": "drain_node", "arguments": map[string]any{"node": "eu-7"}})
		c := card(rec)
		ctx, replies := heldReplies(t, bctx, "*/web/requests/*/decision")
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`), chromedp.WaitVisible(c+" form.decide"),
			chromedp.Click(c+` button[data-outcome="allowed-once"]`)); err != nil {
			t.Fatalf("allow: %v", err)
		}
		var reply fetch.RequestID
		select {
		case reply = <-replies:
		case <-ctx.Done():
			t.Fatal("the decision never went out")
		}
		// A new request makes the list change; once it shows, the page has
		// read the list without the one decided.
		next := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Cordon eu-8 too?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}))
		if err := chromedp.Do(ctx, chromedp.WaitVisible(card(next))); err != nil {
			t.Fatalf("the list never changed: %v", err)
		}
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(document.querySelector("`+c+`:not(.leaving)") !== null)`)); err != nil || v != "true" {
			t.Errorf("the card went before its reply came (%v)", err)
		}
		if err := chromedp.Do(ctx, resume(reply), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Errorf("the decided card never said how it ended: %v", err)
		}
		call(t, base, http.MethodDelete, "/v1/questions/"+next["id"].(string), "agent-token-7f3c9e21b4", nil)
	})
	t.Run("a stream the bridge refused is opened again", func(t *testing.T) {
		// The bridge answers the inbox's first stream with 503, as it does
		// while Redis is away: EventSource gives up for good on an error
		// status, so the page must open a new stream itself.
		ctx, paused := pausedTab(t, bctx)
		go func() {
			for n := 0; ; n++ {
				var e *fetch.EventRequestPaused
				select {
				case <-ctx.Done():
					return
				case e = <-paused:
				}
				chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					if n == 0 {
						_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: 503,
							ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/plain"}}, Body: []byte("redis is unavailable")})
						return err
					}
					_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
					return err
				}))
			}
		}()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), pause(&fetch.RequestPattern{URLPattern: "*/web/events*"}), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`)); err != nil {
			t.Fatalf("open the inbox: %v", err)
		}
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Still live?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}))
		if err := chromedp.Do(ctx, chromedp.WaitVisible(card(rec)), chromedp.WaitVisible(`#live:not(.off)`)); err != nil {
			t.Fatalf("a request created after the refused stream never showed: %v", err)
		}
		call(t, base, http.MethodDelete, "/v1/questions/"+rec["id"].(string), "agent-token-7f3c9e21b4", nil)
	})
	t.Run("back in view, the page opens its stream again", func(t *testing.T) {
		// A phone that locks, or leaves the browser, freezes the page, and
		// may kill its stream's connection without the page hearing of it
		// (iOS Safari): the page looks live and is not. Here the first
		// stream is held, never sent, as such a dead one is quiet: back in
		// view, the page opens a new one, and the card answered meanwhile
		// goes.
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Flip the switch?", Options: []seam.Option{{Label: "Flip"}, {Label: "Leave"}}}))
		ctx, paused := pausedTab(t, bctx)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), pause(&fetch.RequestPattern{URLPattern: "*/web/events*"}), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`), chromedp.WaitVisible(card(rec))); err != nil {
			t.Fatalf("open the inbox: %v", err)
		}
		select {
		case <-paused: // the first stream: held for good
		case <-ctx.Done():
			t.Fatal("the inbox opened no stream")
		}
		call(t, base, http.MethodPost, "/v1/questions/"+rec["id"].(string)+"/answer", "ada-token-7f3c9e21b4", map[string]any{"answers": []any{map[string]any{"id": "q", "selected": []string{"Leave"}}}})
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.dispatchEvent(new Event("visibilitychange")), document.visibilityState)`)); err != nil || v != "visible" {
			t.Fatalf("back in view: %q, %v", v, err)
		}
		var again *fetch.EventRequestPaused
		select {
		case again = <-paused:
		case <-time.After(10 * time.Second):
			t.Fatal("back in view, the page opened no new stream")
		}
		if err := chromedp.Do(ctx, resume(again.RequestID), chromedp.WaitNotPresent(card(rec))); err != nil {
			t.Fatalf("the card answered while the page was away stayed: %v", err)
		}
	})
	t.Run("a list read that crosses a newer one does not put a card back", func(t *testing.T) {
		// Two reads of the list cross: the first, read while the request
		// was pending, comes back after the second, read once it was
		// answered. Applied last, the first would put the answered card
		// back on the page.
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Roll back eu-3?", Options: []seam.Option{{Label: "Roll back"}, {Label: "Keep"}}}))
		c := card(rec)
		ctx, replies := heldReplies(t, bctx, "*/web/cards*")
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`), chromedp.WaitVisible(c),
			// Each list read marks the page once the page has taken it in
			// (what awaits its text runs before the timer).
			chromedp.Evaluate[chromedp.Void](`(() => {
				const text = Response.prototype.text;
				Response.prototype.text = function () {
					const list = this.url.includes("/web/cards");
					return text.call(this).then((body) => {
						if (list) setTimeout(() => { const d = document.documentElement.dataset; d.lists = String(Number(d.lists || 0) + 1); });
						return body;
					});
				};
			})()`)); err != nil {
			t.Fatalf("open the inbox: %v", err)
		}
		held := func(what string) fetch.RequestID {
			t.Helper()
			select {
			case id := <-replies:
				return id
			case <-ctx.Done():
				t.Fatalf("the page never read the list %s", what)
				panic("unreachable")
			}
		}
		older := held("as its stream opened") // the card in it, pending
		call(t, base, http.MethodPost, "/v1/questions/"+rec["id"].(string)+"/answer", "ada-token-7f3c9e21b4", map[string]any{"answers": []any{map[string]any{"id": "q", "selected": []string{"Keep"}}}})
		newer := held("once the request was answered")
		if err := chromedp.Do(ctx, resume(newer), chromedp.WaitNotPresent(c)); err != nil {
			t.Fatalf("the answered card never left: %v", err)
		}
		if err := chromedp.Do(ctx, resume(older), chromedp.WaitReady(`html[data-lists="2"]`)); err != nil {
			t.Fatalf("the older list was never read: %v", err)
		}
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(document.querySelector("`+c+`") !== null)`)); err != nil || v != "false" {
			t.Errorf("the older list put the answered card back (%q, %v)", v, err)
		}
	})
	t.Run("a slow list read does not put back a card answered on the page", func(t *testing.T) {
		// One read of the list, started while the request was pending, is
		// slow: it comes back after the card, answered on this page, has
		// left (about 3 s later). No newer list has been shown to tell it
		// is old; applied, it would put the answered card back until the
		// next change.
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Purge the CDN?", Options: []seam.Option{{Label: "Purge"}, {Label: "Wait"}}}))
		c := card(rec)
		ctx, replies := heldReplies(t, bctx, "*/web/cards*")
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`), chromedp.WaitVisible(c+" form.answer"),
			// Each list read marks the page once the page has taken it in
			// (what awaits its text runs before the timer).
			chromedp.Evaluate[chromedp.Void](`(() => {
				const text = Response.prototype.text;
				Response.prototype.text = function () {
					const list = this.url.includes("/web/cards");
					return text.call(this).then((body) => {
						if (list) setTimeout(() => { const d = document.documentElement.dataset; d.lists = String(Number(d.lists || 0) + 1); });
						return body;
					});
				};
			})()`)); err != nil {
			t.Fatalf("open the inbox: %v", err)
		}
		held := func(what string) fetch.RequestID {
			t.Helper()
			select {
			case id := <-replies:
				return id
			case <-ctx.Done():
				t.Fatalf("the page never read the list %s", what)
				panic("unreachable")
			}
		}
		slow := held("as its stream opened") // the card in it, pending
		if err := chromedp.Do(ctx, chromedp.Click(c+` input[value="Wait"]`), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Fatalf("answer: %v", err)
		}
		held("once the request was answered") // held for good
		if err := chromedp.Do(ctx, chromedp.WaitNotPresent(c)); err != nil {
			t.Fatalf("the answered card never left: %v", err)
		}
		if err := chromedp.Do(ctx, resume(slow), chromedp.WaitReady(`html[data-lists="1"]`)); err != nil {
			t.Fatalf("the slow list was never read: %v", err)
		}
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(document.querySelector("`+c+`") !== null)`)); err != nil || v != "false" {
			t.Errorf("the slow list put the answered card back (%q, %v)", v, err)
		}
	})
	t.Run("back in view while a refused stream waits to open again, the page opens one stream", func(t *testing.T) {
		// The bridge refuses the inbox's stream; the page reads the list
		// before it opens a new one, and comes back in view meanwhile,
		// which opens a new one at once. When the list comes, the retry
		// it waited for must not open a second: the bridge counts them
		// (TOO_MANY_STREAMS), and the first would be left open for good.
		ctx, paused := pausedTab(t, bctx)
		lists := make(chan fetch.RequestID, 1)
		streams := make(chan int, 8)
		go func() {
			for n, read := 0, 0; ; {
				var e *fetch.EventRequestPaused
				select {
				case <-ctx.Done():
					return
				case e = <-paused:
				}
				switch {
				case strings.Contains(e.Request.URL, "/web/cards") && read == 0:
					read++
					lists <- e.RequestID // held until the test lets it go
				case strings.Contains(e.Request.URL, "/web/cards"):
					chromedp.Do(ctx, resume(e.RequestID))
				case n == 0:
					n++
					streams <- n
					chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
						_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: 503,
							ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/plain"}}, Body: []byte("redis is unavailable")})
						return err
					}))
				default:
					n++
					streams <- n // held: on its way, as long as the test runs
				}
			}
		}()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), pause(&fetch.RequestPattern{URLPattern: "*/web/events*"}, &fetch.RequestPattern{URLPattern: "*/web/cards*"}),
			chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`),
			// The page's streams from here on are kept, and each list read
			// marks the page once the page has taken it in.
			chromedp.Evaluate[chromedp.Void](`(() => {
				window.streams = [];
				window.EventSource = class extends EventSource {
					constructor(...args) { super(...args); window.streams.push(this); }
				};
				const text = Response.prototype.text;
				Response.prototype.text = function () {
					const list = this.url.includes("/web/cards");
					return text.call(this).then((body) => {
						if (list) setTimeout(() => { document.documentElement.dataset.listed = "1"; });
						return body;
					});
				};
			})()`)); err != nil {
			t.Fatalf("open the inbox: %v", err)
		}
		wait := func(what string, ch <-chan fetch.RequestID) fetch.RequestID {
			t.Helper()
			select {
			case id := <-ch:
				return id
			case <-ctx.Done():
				t.Fatalf("the page never %s", what)
				panic("unreachable")
			}
		}
		list := wait("read the list after its stream was refused", lists)
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.dispatchEvent(new Event("visibilitychange")), document.visibilityState)`)); err != nil || v != "visible" {
			t.Fatalf("back in view: %q, %v", v, err)
		}
		for n := 0; n < 2; {
			select {
			case n = <-streams:
			case <-ctx.Done():
				t.Fatal("back in view, the page opened no new stream")
			}
		}
		if err := chromedp.Do(ctx, resume(list), chromedp.WaitReady(`html[data-listed="1"]`)); err != nil {
			t.Fatalf("the list was never read: %v", err)
		}
		// One opened since it came back in view, and it is open (on its
		// way): the retry neither adds one nor replaces it.
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.streams.length + " opened, " + window.streams.filter((s) => s.readyState !== EventSource.CLOSED).length + " open"`)); err != nil || v != "1 opened, 1 open" {
			t.Errorf("since back in view, %s; want 1 opened, 1 open (%v)", v, err)
		}
	})
	t.Run("bidi controls and right-to-left text reorder nothing around them", func(t *testing.T) {
		// An override (U+202E) in an agent's or a person's text would show
		// the rest of its line reversed: "report<RLO>fdp.exe" read as
		// "reportexe.pdf", an option as another, "Answered by eve · txet";
		// and a right-to-left name beside a number ("Answered by דני ·
		// 3") moves the number before it with no control at all. Every
		// word of agent and person text must read in the order it was
		// written, and an option must still answer with its label as the
		// agent wrote it.
		const rlo = "\u202e"
		caller := map[string]any{"name": "deploy" + rlo + "bot", "session": "run" + rlo + "42"}
		rec := create(t, base, "/v1/questions", map[string]any{"caller": caller, "expires_in": "1h", "questions": []seam.Question{
			{ID: "s", Header: "Sca" + rlo + "le", Question: "Scale " + rlo + "eu west now?", Detail: "Plan: " + rlo + "step one, then two",
				Options: []seam.Option{{Label: "Keep " + rlo + "old", Description: "was " + rlo + "new"}, {Label: "Scale"}}},
			{ID: "n", Header: "Rep" + rlo + "licas", Question: "How many " + rlo + "replicas?", Input: &seam.Input{Type: "integer", Required: true}},
		}})
		approval := create(t, base, "/v1/approvals", map[string]any{"caller": caller, "tool_name": "kubectl" + rlo + "_apply",
			"reason": "Apply " + rlo + "the manifests", "arguments": map[string]any{"file": "report" + rlo + "fdp.exe"}})
		rtl := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "How many?"}))

		tab, cancelTab := chromedp.NewContext(bctx) // signed in: the browser's cookies
		t.Cleanup(cancelTab)
		ctx, cancel := context.WithTimeout(tab, 30*time.Second)
		t.Cleanup(cancel)
		inOrder := func(what, scope string) {
			t.Helper()
			v, err := chromedp.Run(ctx, chromedp.Evaluate[string](readsInOrder+`(`+strconv.Quote(scope)+`)`))
			if err != nil || v != "" {
				t.Errorf("%s does not read in the order it was written: %s (%v)", what, v, err)
			}
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitReady(`html[data-ready="1"]`),
			chromedp.WaitVisible(card(rec)+" form.answer"), chromedp.WaitVisible(card(approval)+" form.decide")); err != nil {
			t.Fatalf("open the inbox: %v", err)
		}
		inOrder("the question's card", card(rec))
		inOrder("the approval's card", card(approval))
		if err := chromedp.Do(ctx, chromedp.Click(card(rec)+` input[value="Keep `+rlo+`old"]`), chromedp.SendKeys(card(rec)+" input.custom", "3"),
			chromedp.Click(card(rec)+" button[type=submit]"), chromedp.WaitVisible(card(rec)+" .outcome")); err != nil {
			t.Fatalf("answer: %v", err)
		}
		wantAnswer(t, a.Store(), rec, "[{s [Keep "+rlo+"old] } {n [] 3}]")
		inOrder("the answered card", card(rec))

		// Ended elsewhere: the pages of their links say by whom.
		for _, end := range []struct {
			what string
			rec  map[string]any
			res  pending.Resolution
		}{
			{"a rejection by a name with an override", approval, pending.Resolution{Status: seam.StatusAnswered,
				Decision: &seam.Decision{Outcome: seam.OutcomeRejected, Note: "not " + rlo + "now"}, By: &pending.Responder{Surface: "slack", UserID: "U1", Name: "eve" + rlo}}},
			{"an answer by a right-to-left name", rtl, pending.Resolution{Status: seam.StatusAnswered,
				Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "q", Selected: []string{}, Custom: "3"}}}, By: &pending.Responder{Surface: "web", UserID: "dani", Name: "דני"}}},
		} {
			if _, err := a.Store().Resolve(context.Background(), end.rec["id"].(string), end.res); err != nil {
				t.Fatal(err)
			}
			c := card(end.rec)
			if err := chromedp.Do(ctx, chromedp.Navigate(base+a.Web().Links().Path(get(t, a.Store(), end.rec))), chromedp.WaitVisible(c+" .outcome")); err != nil {
				t.Fatalf("%s: open its page: %v", end.what, err)
			}
			inOrder(end.what, c)
		}
	})
	t.Run("signed link page", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Open the gate?", Options: []seam.Option{{Label: "Open"}, {Label: "Keep closed"}}}))
		r := get(t, a.Store(), rec)
		link := a.Web().Links().Path(r)
		// Send before choosing says what is missing, and choosing clears it.
		do(t, "send too soon", chromedp.Navigate(base+link), chromedp.WaitVisible(card(rec)+" form.answer"), chromedp.WaitVisible(`#live:not(.off)`),
			chromedp.Click(card(rec)+" button[type=submit]"), chromedp.WaitVisible(card(rec)+` .err`))
		if got := eval(t, `document.querySelector("`+card(rec)+` .err").textContent`); got != surface.MsgChooseOrWrite {
			t.Errorf("sent with nothing chosen, the form says %q", got)
		}
		do(t, "choose and send", chromedp.Click(card(rec)+` input[value="Open"]`))
		if got := eval(t, `document.querySelector("`+card(rec)+` .err").textContent`); got != "" {
			t.Errorf("once an option is chosen, the form still says %q", got)
		}
		do(t, "send", chromedp.Click(card(rec)+" button[type=submit]"), chromedp.WaitVisible(card(rec)+" .outcome"))
		shot(t, "link-answered-375x812.png", false)
		if got := get(t, a.Store(), rec); got.ResolvedBy == nil || got.ResolvedBy.UserID != "link" {
			t.Errorf("resolved by %+v", got.ResolvedBy)
		}
	})
	t.Run("a link page whose request ends while its answer is on the way keeps the page", func(t *testing.T) {
		// The answer is taken, but its reply is slow to come back; the
		// page's live stream, meanwhile, says the request ended. A reload
		// then would cut the send off: the page must wait for its reply.
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Drain eu-9?", Options: []seam.Option{{Label: "Drain"}, {Label: "Leave it"}}}))
		link := base + a.Web().Links().Path(get(t, a.Store(), rec))
		c := card(rec)
		ctx, replies := heldReplies(t, bctx, "*/web/requests/*/answer")
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Navigate(link), chromedp.WaitVisible(c+" form.answer"), chromedp.WaitVisible(`#live:not(.off)`),
			chromedp.Evaluate[chromedp.Void](`window.samePage = "yes"`),
			chromedp.Click(c+` input[value="Drain"]`), chromedp.Click(c+" button[type=submit]")); err != nil {
			t.Fatalf("send: %v", err)
		}
		var reply fetch.RequestID
		select {
		case reply = <-replies:
		case <-ctx.Done():
			t.Fatal("the answer never went out")
		}
		if err := chromedp.Do(ctx, chromedp.WaitReady(c+"[data-ended]")); err != nil {
			t.Fatalf("the page never marked the ending it heard of while sending: %v", err)
		}
		if err := chromedp.Do(ctx, resume(reply), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Fatalf("the page never said how it ended: %v", err)
		}
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.samePage)`)); err != nil || v != "yes" {
			t.Errorf("the page was reloaded under its send (%q, %v)", v, err)
		}
		if got := get(t, a.Store(), rec); got.Answer == nil || fmtAnswer(got.Answer) != "[{q [Drain] }]" || got.ResolvedBy.UserID != "link" {
			t.Errorf("answer %+v by %+v, want Drain through the link", got.Answer, got.ResolvedBy)
		}

		// Again, with the reply lost on the way back: the page reloads, and
		// says how the request ended.
		rec = create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Drain eu-10?", Options: []seam.Option{{Label: "Drain"}, {Label: "Leave it"}}}))
		c = card(rec)
		if err := chromedp.Do(ctx, chromedp.Navigate(base+a.Web().Links().Path(get(t, a.Store(), rec))), chromedp.WaitVisible(c+" form.answer"),
			chromedp.WaitVisible(`#live:not(.off)`), chromedp.Evaluate[chromedp.Void](`window.samePage = "yes"`),
			chromedp.Click(c+` input[value="Leave it"]`), chromedp.Click(c+" button[type=submit]")); err != nil {
			t.Fatalf("send: %v", err)
		}
		select {
		case reply = <-replies:
		case <-ctx.Done():
			t.Fatal("the answer never went out")
		}
		if err := chromedp.Do(ctx, chromedp.WaitReady(c+"[data-ended]"), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: reply, ErrorReason: network.ErrorReasonConnectionReset})
			return err
		}), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Fatalf("with its reply lost, the page never said how it ended: %v", err)
		}
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.samePage)`)); err != nil || v != "undefined" {
			t.Errorf("with its reply lost, the page was not reloaded (%q, %v)", v, err)
		}
	})
	t.Run("personal link page", func(t *testing.T) {
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Rotate the keys?", Options: []seam.Option{{Label: "Rotate"}, {Label: "Wait"}}}))
		r := get(t, a.Store(), rec)
		ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}
		link, _ := a.Web().Links().ForPerson(r, ada, time.Now())
		link = link[strings.Index(link, "/r/"):]
		// Live: the page's stream is let in by the personal link too.
		do(t, "open and answer", chromedp.Navigate(base+link), chromedp.WaitVisible(card(rec)+" form.answer"), chromedp.WaitVisible(`#live:not(.off)`),
			chromedp.Click(card(rec)+` input[value="Rotate"]`), chromedp.Click(card(rec)+" button[type=submit]"), chromedp.WaitVisible(card(rec)+" .outcome"))
		if got := get(t, a.Store(), rec); got.ResolvedBy == nil || *got.ResolvedBy != ada {
			t.Errorf("resolved by %+v, want %+v", got.ResolvedBy, ada)
		}
		// The page, showing how it ended, closes its stream: a waiter on
		// the bridge for as long as it is open.
		apptest.WaitWaiting(t, a, 0)
	})
	t.Run("a personal link's page says so when the link expires", func(t *testing.T) {
		// The bridge ends the page's stream as the link expires and
		// refuses it from then on; the page, refused, reloads into
		// the page of an expired link.
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Flush the caches?", Options: []seam.Option{{Label: "Flush"}, {Label: "Keep"}}}))
		ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}
		ctx := liveBefore(t, func(life time.Duration) (context.Context, time.Time, error) {
			link, until := a.Web().Links().ForPerson(get(t, a.Store(), rec), ada, time.Now().Add(life-web.PersonalTTL))
			// A browser of its own, not signed in: a session would let
			// the stream in after the link expired.
			tab, cancelTab := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
			t.Cleanup(cancelTab)
			ctx, cancel := context.WithTimeout(tab, 30*time.Second)
			t.Cleanup(cancel)
			return ctx, until, chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Navigate(base+link[strings.Index(link, "/r/"):]),
				chromedp.WaitVisible(card(rec)+" form.answer, body.narrow h2"), chromedp.WaitVisible(`#live:not(.off), body.narrow h2`))
		})
		if err := chromedp.Do(ctx, chromedp.WaitVisible(`body.narrow h2`)); err != nil {
			t.Fatalf("the page of an expired link never said so: %v", err)
		}
		title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("body.narrow h2").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if title != "This link has expired" {
			t.Errorf("the page says %q, want This link has expired", title)
		}
		call(t, base, http.MethodDelete, "/v1/questions/"+rec["id"].(string), "agent-token-7f3c9e21b4", nil)
	})
	t.Run("a signed-in browser's page outlives its link", func(t *testing.T) {
		// This browser signed in at the start, and opens a personal link:
		// the bridge ends the page's stream as the link expires, the
		// stream opens again under the session, and so does the answer,
		// sent through the expired link: it goes by the session.
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Purge the queue?", Options: []seam.Option{{Label: "Purge"}, {Label: "Keep"}}}))
		ada := pending.Responder{Surface: "slack", UserID: "UADA", Name: "ada"}
		c := card(rec)
		ctx := liveBefore(t, func(life time.Duration) (context.Context, time.Time, error) {
			link, until := a.Web().Links().ForPerson(get(t, a.Store(), rec), ada, time.Now().Add(life-web.PersonalTTL))
			tab, cancelTab := chromedp.NewContext(bctx)
			t.Cleanup(cancelTab)
			ctx, cancel := context.WithTimeout(tab, 30*time.Second)
			t.Cleanup(cancel)
			return ctx, until, chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Navigate(base+link[strings.Index(link, "/r/"):]),
				chromedp.WaitVisible(c+" form.answer"), chromedp.WaitVisible(`#live:not(.off)`),
				chromedp.WaitVisible(`header .who[title="answering as"]`),
				// The page marks the stream's end, which the link's expiry brings.
				chromedp.Evaluate[chromedp.Void](`new MutationObserver(() => {
				if (document.getElementById("live").classList.contains("off")) document.documentElement.dataset.dropped = "1";
			}).observe(document.getElementById("live"), { attributes: true })`))
		})
		if err := chromedp.Do(ctx, chromedp.WaitReady(`html[data-dropped="1"]`), chromedp.WaitVisible(`#live:not(.off)`)); err != nil {
			t.Fatalf("the page's stream never ended with its link and opened again: %v", err)
		}
		// The header says whom the page now answers as: the session, no
		// longer the person the link named.
		if err := chromedp.Do(ctx, chromedp.WaitReady(`header .who[title="signed in as"]`)); err != nil {
			t.Fatalf("the header still names the link's person: %v", err)
		}
		// How the answer went: its outcome, or the form's error.
		if err := chromedp.Do(ctx, chromedp.Click(c+` input[value="Purge"]`), chromedp.Click(c+" button[type=submit]"),
			chromedp.WaitVisible(c+" .outcome, "+c+" .form-err:not(:empty)")); err != nil {
			t.Fatalf("the answer never came back: %v", err)
		}
		if msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("`+c+` .form-err")?.textContent ?? ""`)); err != nil || msg != "" {
			t.Fatalf("the answer through the expired link was refused: %q, %v", msg, err)
		}
		if got := get(t, a.Store(), rec); got.ResolvedBy == nil || *got.ResolvedBy != (pending.Responder{Surface: "web", UserID: "ada", Name: "ada"}) {
			t.Errorf("resolved by %+v, want the session's ada", got.ResolvedBy)
		}
	})
	t.Run("a Send tapped before the script arrives keeps the page", func(t *testing.T) {
		// On a slow network the form shows before app.js has run. A tap on
		// Send then must not submit the form natively: a GET to the page's
		// own URL would replace the signed link's e and s with the form's
		// fields (a sign-in page instead of the question, the choice lost).
		rec := create(t, base, "/v1/questions", questions(seam.Question{ID: "q", Question: "Restart the workers?", Options: []seam.Option{{Label: "Restart"}, {Label: "Leave"}}}))
		link := base + a.Web().Links().Path(get(t, a.Store(), rec))
		c := card(rec)
		tab, cancelTab := chromedp.NewContext(bctx)
		defer cancelTab()
		ctx, cancel := context.WithTimeout(tab, 30*time.Second)
		defer cancel()
		// The page's script is held back until released; every page the
		// tab asks for is recorded.
		paused := make(chan *fetch.EventRequestPaused, 8)
		if err := chromedp.Listen(ctx, func(ev any) {
			if e, ok := ev.(*fetch.EventRequestPaused); ok {
				paused <- e
			}
		}); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		docs := make(chan string, 8)
		go func() {
			for held := false; ; {
				var e *fetch.EventRequestPaused
				select {
				case <-ctx.Done():
					return
				case e = <-paused:
				}
				if e.ResourceType == network.ResourceTypeDocument {
					docs <- e.Request.URL
				} else if !held {
					held = true
					select {
					case <-ctx.Done():
						return
					case <-release:
					}
				}
				chromedp.Do(ctx, resume(e.RequestID))
			}
		}()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := pause(&fetch.RequestPattern{URLPattern: "*/assets/app.js"}, &fetch.RequestPattern{URLPattern: "*", ResourceType: network.ResourceTypeDocument})(ctx, tg); err != nil {
				return err
			}
			// Not chromedp.Navigate: it waits for a load the held script holds up.
			_, err := cdp.Call(ctx, tg, page.Navigate, page.NavigateParams{URL: link})
			return err
		}), chromedp.WaitVisible(c+" form.answer"),
			chromedp.Click(c+` input[value="Restart"]`), chromedp.Click(c+" button[type=submit]")); err != nil {
			t.Fatalf("tap Send before the script: %v", err)
		}
		close(release)
		if err := chromedp.Do(ctx, chromedp.WaitReady(`html[data-ready="1"]`), chromedp.Click(c+" button[type=submit]"), chromedp.WaitVisible(c+" .outcome")); err != nil {
			t.Fatalf("send once the script ran: %v", err)
		}
		for len(docs) > 0 {
			// The page itself, and again should it reload once answered.
			if u := <-docs; u != link {
				t.Errorf("the early tap went to %s", u)
			}
		}
		if got := get(t, a.Store(), rec); got.Answer == nil || fmtAnswer(got.Answer) != "[{q [Restart] }]" || got.ResolvedBy.UserID != "link" {
			t.Errorf("answer %+v by %+v, want Restart through the link", got.Answer, got.ResolvedBy)
		}
	})
	t.Run("on a phone, nothing is too wide or too small to tap", func(t *testing.T) {
		// Words longer than the screen is wide, where the seam allows
		// them: a header (100 characters), a typed field's label, option
		// labels, a tool's and a caller's name, a URL; the page must not
		// scroll sideways, before or after the answer.
		word := strings.Repeat("W", 100)
		url := "https://grafana.example.com/" + strings.Repeat("d/prod-eu-west", 12)
		rec := create(t, base, "/v1/questions", map[string]any{"caller": map[string]any{"name": word, "session": word}, "questions": []seam.Question{
			{ID: "plan", Header: word, Question: word + "?", Detail: "See " + url + " and `" + word + "`.",
				Options: []seam.Option{{Label: word, Description: url}, {Label: "Revise"}}, Intent: &seam.Intent{Kind: "plan-review", Approve: word}},
			{ID: "n", Header: word, Question: "How many?", Input: &seam.Input{Type: "integer"}},
			{ID: "go", Header: word, Question: "Dry run?", Input: &seam.Input{Type: "boolean"}},
		}})
		appr := create(t, base, "/v1/approvals", map[string]any{"tool_name": "mcp__" + word, "display_reason": url, "caller": map[string]any{"name": word},
			"arguments": map[string]any{"url": url}})
		wide := func(t *testing.T, where string) {
			t.Helper()
			got := eval(t, `(() => {
				const w = document.documentElement.scrollWidth;
				if (w <= innerWidth) return "";
				const out = [...document.querySelectorAll("body *")].filter((el) => el.scrollWidth > el.clientWidth + 1 &&
					getComputedStyle(el).overflowX === "visible").map((el) => el.tagName.toLowerCase() + "." + el.className);
				return w + " px wide in " + innerWidth + ", overflowing: " + out.join(" ");
			})()`)
			if got != "" {
				t.Errorf("%s: the page scrolls sideways: %s", where, got)
			}
		}
		do(t, "a phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"), chromedp.WaitVisible(card(rec)+" form.answer"), chromedp.WaitVisible(card(appr)+" form.decide"))
		wide(t, "the inbox")
		// And what a thumb taps is at least 44 px tall (Apple's and
		// Android's guidance), the arguments' toggle and Sign out included.
		small := eval(t, `[...document.querySelectorAll("button, summary, .opt, input:not([type=radio]):not([type=checkbox]):not([type=hidden]), textarea")]
			.filter((e) => e.getBoundingClientRect().height < 44).map((e) => e.tagName.toLowerCase() + " " + JSON.stringify(e.textContent.trim()) + " " + e.getBoundingClientRect().height).join(", ")`)
		if small != "" {
			t.Errorf("tap targets under 44 px: %s", small)
		}
		link := a.Web().Links().Path(get(t, a.Store(), rec))
		do(t, "its page", chromedp.Navigate(base+link), chromedp.WaitVisible(card(rec)+" form.answer"))
		wide(t, "the request's page")
		do(t, "answer", chromedp.Click(card(rec)+` input[value="`+word+`"]`), chromedp.Click(card(rec)+" button[type=submit]"),
			chromedp.WaitVisible(card(rec)+" .outcome dl"))
		shot(t, "long-words-answered-390x844.png", false)
		wide(t, "its outcome")
		do(t, "back", chromedp.EmulateViewport(375, 812))
	})
	t.Logf("screenshots in %s", shots)
}

// readsInOrder is a script's function that checks that the words (runs
// of letters and digits) of the agent and person text in the element
// scope selects read in the order they are written: each word after the
// one before it on its line, or on a line below; and in a word, each
// letter right of the one before it (left, in a Hebrew word). It returns
// what it found out of order, or "".
const readsInOrder = `((scope) => {
	const bad = [];
	const texts = ".meta, .qtext, .header, .md, .opt .label, .opt .desc, .field > span, pre, .outcome .line, .outcome dt, .outcome dd";
	for (const el of document.querySelector(scope).querySelectorAll(texts)) {
		const words = [];
		const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
		for (let n; (n = walk.nextNode()); ) {
			const re = /[\p{L}\p{N}]+/gu;
			for (let m; (m = re.exec(n.data)); ) {
				const boxes = [];
				for (let i = m.index; i < m.index + m[0].length; i++) { // Latin and Hebrew: one code unit each
					const r = document.createRange();
					r.setStart(n, i);
					r.setEnd(n, i + 1);
					const b = r.getBoundingClientRect();
					if (b.width > 0) boxes.push(b);
				}
				if (!boxes.length) continue;
				const rtl = /\p{Script=Hebrew}/u.test(m[0]);
				for (let i = 1; i < boxes.length; i++) {
					if (rtl ? boxes[i].left > boxes[i - 1].left : boxes[i].left < boxes[i - 1].left) {
						bad.push(JSON.stringify(m[0]) + " reads backwards in " + el.localName + "." + el.className);
						break;
					}
				}
				words.push({ w: m[0], left: Math.min(...boxes.map((b) => b.left)), right: Math.max(...boxes.map((b) => b.right)), top: boxes[0].top, bottom: boxes[0].bottom });
			}
		}
		for (let i = 1; i < words.length; i++) {
			const a = words[i - 1], b = words[i];
			const sameLine = b.top < a.bottom && a.top < b.bottom;
			if (sameLine ? b.left < a.right - 1 : b.top < a.top) bad.push(JSON.stringify(b.w) + " shows before " + JSON.stringify(a.w) + " in " + el.localName + "." + el.className);
		}
	}
	return bad.join("; ");
})`

// heldReplies opens a tab of bctx (for 30 s at most) in which the replies
// to requests matching pattern are held back: each one's id comes on the
// channel, and it goes on once the test continues it (fetch.ContinueRequest)
// or fails it.
func heldReplies(t *testing.T, bctx context.Context, pattern string) (context.Context, <-chan fetch.RequestID) {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(bctx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	t.Cleanup(cancel)
	replies := make(chan fetch.RequestID, 1)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			replies <- e.RequestID
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, pause(&fetch.RequestPattern{URLPattern: pattern, RequestStage: fetch.RequestStageResponse})); err != nil {
		t.Fatal(err)
	}
	return ctx, replies
}

// pausedTab opens a tab of bctx, for 30 s at most, and returns it with the
// requests it pauses (see pause) as they come.
func pausedTab(t *testing.T, bctx context.Context) (context.Context, <-chan *fetch.EventRequestPaused) {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(bctx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	t.Cleanup(cancel)
	paused := make(chan *fetch.EventRequestPaused, 64)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e
		}
	}); err != nil {
		t.Fatal(err)
	}
	return ctx, paused
}

// pause has the tab hold every request that matches one of patterns until
// it is resumed (or answered through the fetch domain).
func pause(patterns ...*fetch.RequestPattern) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: patterns})
		return err
	})
}

// resume lets a request pause held go on.
func resume(id fetch.RequestID) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
		return err
	})
}

// needChromium returns the Chromium to run, or skips t without one (fails
// it with BRIDGE_BROWSER_TESTS=1, as in CI).
func needChromium(t *testing.T) string {
	t.Helper()
	bin := chromium()
	if bin == "" {
		if os.Getenv("BRIDGE_BROWSER_TESTS") == "1" {
			t.Fatal("BRIDGE_BROWSER_TESTS=1 but no chromium binary was found: install it (apt-get install -y chromium) or set BRIDGE_CHROMIUM")
		}
		t.Skip("no chromium binary found (looked for $BRIDGE_CHROMIUM, chromium, chromium-browser, google-chrome); install chromium to run the browser test, BRIDGE_BROWSER_TESTS=1 makes its absence a failure")
	}
	return bin
}

// startBrowser starts a headless bin with a phone's viewport until t ends.
func startBrowser(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(375, 812)); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	return bctx
}

// signIn opens the inbox at base, signs in as ada and waits for the
// card (a selector) with its form and the script ready.
func signIn(base, card string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(base + "/"),
		chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", "ada-token-7f3c9e21b4"),
		chromedp.Click("form.signin button"),
		chromedp.WaitVisible(card + " form.answer"),
		chromedp.WaitReady(`html[data-ready="1"]`),
	}
}

// browse runs steps in the browser, failing t after 20 s.
func browse(t *testing.T, bctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestBrowserUnderAPath: behind a proxy that serves the bridge under a
// path (base_url https://tools.example.com/askbridge), the inbox and a
// request's page load their script and styles, sign in, stay live and
// answer, all under that path.
func TestBrowserUnderAPath(t *testing.T) {
	bin := needChromium(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := "http://" + ln.Addr().String() + "/askbridge"
	redisURL, prefix := apptest.Redis(t)
	a := apptest.Start(t, apptest.Config(t, "base_url: "+front+"/\n"+inboxConfig, redisURL, prefix), app.Options{})
	target, _ := neturl.Parse(a.URL())
	proxy := &http.Server{Handler: http.StripPrefix("/askbridge", httputil.NewSingleHostReverseProxy(target))}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })

	first := create(t, a.URL(), "/v1/questions", questions(seam.Question{ID: "q", Question: "Ship it?", Options: []seam.Option{{Label: "Ship"}, {Label: "Hold"}}}))
	second := create(t, a.URL(), "/v1/questions", questions(seam.Question{ID: "q", Question: "Tag it?", Options: []seam.Option{{Label: "Tag"}, {Label: "Skip"}}}))
	bctx := startBrowser(t, bin)
	card := func(rec map[string]any) string { return "#req-" + rec["id"].(string) }
	browse(t, bctx, "sign in and answer under the path", append(signIn(front, card(first)),
		chromedp.WaitVisible(`#live:not(.off)`),
		chromedp.Click(card(first)+` input[value="Ship"]`),
		chromedp.Click(card(first)+" button[type=submit]"),
		chromedp.WaitVisible(card(first)+" .outcome"),
	)...)
	wantAnswer(t, a.Store(), first, "[{q [Ship] }]")

	link := a.Web().Links().For(get(t, a.Store(), second))
	if !strings.HasPrefix(link, front+"/r/") {
		t.Fatalf("the link %s is not under %s", link, front)
	}
	browse(t, bctx, "a signed link under the path",
		chromedp.Navigate(link), chromedp.WaitVisible(card(second)+" form.answer"), chromedp.WaitVisible(`#live:not(.off)`),
		chromedp.Click(card(second)+` input[value="Skip"]`), chromedp.Click(card(second)+" button[type=submit]"),
		chromedp.WaitVisible(card(second)+" .outcome"))
	if got := get(t, a.Store(), second); got.Answer == nil || got.Answer.Answers[0].Selected[0] != "Skip" || got.ResolvedBy.UserID != "link" {
		t.Errorf("answered through the link: %+v by %+v", got.Answer, got.ResolvedBy)
	}
}

func questions(qs ...seam.Question) map[string]any {
	return map[string]any{"questions": qs, "caller": map[string]any{"name": "deploy-bot", "session": "run-42"}, "expires_in": "1h"}
}

func create(t *testing.T, base, path string, body any) map[string]any {
	t.Helper()
	return call(t, base, http.MethodPost, path, "agent-token-7f3c9e21b4", body)
}

func call(t *testing.T, base, method, path, token string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, data)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// fmtAnswer is an answer as "[{id [selected] custom} ...]".
func fmtAnswer(a *seam.Answer) string {
	var parts []string
	for _, it := range a.Answers {
		parts = append(parts, "{"+it.ID+" ["+strings.Join(it.Selected, " ")+"] "+it.Custom+"}")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func get(t *testing.T, s *pending.Store, rec map[string]any) *pending.Record {
	t.Helper()
	r, err := s.Get(context.Background(), rec["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantAnswer(t *testing.T, s *pending.Store, rec map[string]any, want string) {
	t.Helper()
	r := get(t, s, rec)
	if r.Status != seam.StatusAnswered || r.Answer == nil {
		t.Fatalf("status %s", r.Status)
	}
	if got := fmtAnswer(r.Answer); got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	if r.ResolvedBy == nil || *r.ResolvedBy != (pending.Responder{Surface: "web", UserID: "ada", Name: "ada"}) {
		t.Errorf("resolved by %+v", r.ResolvedBy)
	}
}

// web.max_link_streams caps the streams links open on a replica: with 1,
// a second stream through a link is refused, and counted in
// askbridge_web_streams_refused_total.
func TestMaxLinkStreamsFromConfig(t *testing.T) {
	url, prefix := apptest.Redis(t)
	a := apptest.Start(t, apptest.Config(t, inboxConfig+"  max_link_streams: 1\n", url, prefix), app.Options{})
	rec := create(t, a.URL(), "/v1/questions", questions(seam.Question{ID: "q", Question: "Scale up?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}))
	u, err := neturl.Parse(a.Web().Links().For(get(t, a.Store(), rec)))
	if err != nil {
		t.Fatal(err)
	}
	path := "/web/events?" + neturl.Values{"id": {rec["id"].(string)}, "e": {web.LinkParams(u).Get("e")}, "s": {web.LinkParams(u).Get("s")}}.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func() int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL()+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res.StatusCode
	}
	if got := open(); got != http.StatusOK {
		t.Fatalf("the first stream: %d", got)
	}
	if got := open(); got != http.StatusTooManyRequests {
		t.Fatalf("the second stream, over web.max_link_streams: %d, want 429", got)
	}
	// The refusal is counted, by its cap, in the replica's metrics.
	res, err := http.Get(a.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var got []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "askbridge_web_streams_refused_total{") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	want := []string{`askbridge_web_streams_refused_total{cap="link"} 0`, `askbridge_web_streams_refused_total{cap="replica"} 1`, `askbridge_web_streams_refused_total{cap="session"} 0`}
	if !slices.Equal(got, want) {
		t.Errorf("/metrics: %q, want %q", got, want)
	}
}

// liveBefore opens a personal link that lives life with open, which
// returns the context to go on in, the link's expiry and whether the
// page loaded and was watched. A test of what the page does as its link
// expires needs that done before: on a machine too busy for it (CI, the
// race detector), the link is opened again with twice the life, from 3 s.
func liveBefore(t *testing.T, open func(life time.Duration) (context.Context, time.Time, error)) context.Context {
	t.Helper()
	for life := 3 * time.Second; life <= 48*time.Second; life *= 2 {
		ctx, until, err := open(life)
		if time.Now().Before(until) {
			if err != nil {
				t.Fatalf("open the link: %v", err)
			}
			return ctx
		}
		t.Logf("a link that lived %v expired before its page was watched (%v); again, with twice the life", life, err)
	}
	t.Fatal("a link that lived 48 s expired before its page was watched")
	return nil
}

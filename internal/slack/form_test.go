package slack

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
)

func TestFormValue(t *testing.T) {
	for _, c := range []struct {
		body, want string
		absent     bool
		bad        bool
	}{
		{body: "payload=%7B%22a%22%3A1%7D", want: `{"a":1}`},
		{body: "payload=a+b%2Bc", want: "a b+c"},
		{body: "x=1&payload=%E2%9C%93&y=2", want: "✓"},
		{body: "payload=first&payload=second", want: "first"},
		{body: "payload=", want: ""},
		{body: "payload", want: ""},
		{body: "other=1", absent: true},
		{body: "", absent: true},
		{body: "payload=%4", bad: true},
		{body: "payload=%zz", bad: true},
		{body: "payload=100%", bad: true},
		{body: "a=%zz&payload=ok", want: "ok"}, // the bad escape is not the payload's
	} {
		got, err := formValue([]byte(c.body), "payload")
		switch {
		case c.bad:
			if err == nil {
				t.Errorf("formValue(%q) = %q; want an error", c.body, got)
			}
		case err != nil:
			t.Errorf("formValue(%q): %v", c.body, err)
		case c.absent && got != nil:
			t.Errorf("formValue(%q) = %q; want nil", c.body, got)
		case !c.absent && string(got) != c.want:
			t.Errorf("formValue(%q) = %q; want %q", c.body, got, c.want)
		}
	}
}

// FuzzFormValue checks formValue against url.ParseQuery, on every form
// ParseQuery reads without an error and whose keys need no decoding.
func FuzzFormValue(f *testing.F) {
	for _, s := range []string{"payload=%7B%7D", "a=1&payload=x+y", "payload=%", "payload=%e2%9c%93&payload=2", "payload"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, err := formValue([]byte(body), "payload")
		form, perr := url.ParseQuery(body)
		if perr != nil || strings.ContainsAny(body, "%+") && keysEscaped(body) {
			return
		}
		if err != nil {
			t.Fatalf("formValue(%q): %v; url.ParseQuery reads it", body, err)
		}
		want, ok := form["payload"]
		if !ok {
			if got != nil {
				t.Fatalf("formValue(%q) = %q; url.ParseQuery has no payload", body, got)
			}
			return
		}
		if !bytes.Equal(got, []byte(want[0])) {
			t.Fatalf("formValue(%q) = %q; url.ParseQuery: %q", body, got, want[0])
		}
	})
}

// keysEscaped reports whether a key of body holds an escape.
func keysEscaped(body string) bool {
	for pair := range strings.SplitSeq(body, "&") {
		k, _, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			return true
		}
	}
	return false
}

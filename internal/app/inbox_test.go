package app_test

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
)

// The one-time sign-in link of a bridge with no API tokens is the way
// into its web inbox: it reaches the log whatever log.level says, in
// both formats, as an INFO line. Other INFO lines stay filtered.
func TestSignInLinkPastLogLevel(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		json  bool
	}{{slog.LevelWarn, false}, {slog.LevelError, false}, {slog.LevelError, true}} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var logs apptest.LogBuffer
			opts := &slog.HandlerOptions{Level: tc.level}
			h := slog.Handler(slog.NewTextHandler(&logs, opts))
			want := regexp.MustCompile(`level=INFO msg="web inbox: open this one-time sign-in link in a browser to answer questions \(bridge signin-link prints another\)" url=http://127\.0\.0\.1:\d+/web/signin/\S+`)
			if tc.json {
				h = slog.NewJSONHandler(&logs, opts)
				want = regexp.MustCompile(`"level":"INFO","msg":"web inbox: open this one-time sign-in link[^"]*","url":"http://127\.0\.0\.1:\d+/web/signin/[^"]+"`)
			}
			cfg := apptest.Config(t, "", "", "abtest:inbox:")
			apptest.StartLogged(t, cfg, app.Options{}, slog.New(h))
			logs.WaitFor(t, "one-time sign-in link", 5*time.Second)
			if got := logs.String(); !want.MatchString(got) || strings.Contains(got, "askbridge listening") {
				t.Errorf("log:\n%s\nwant the sign-in link as %v, and no other INFO line", got, want)
			}
		})
	}
}

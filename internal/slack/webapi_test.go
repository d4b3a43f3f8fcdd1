package slack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

func TestReadChatReply(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     chatReply
		err      bool
	}{
		{
			name: "Slack's order, the message left unread",
			in:   `{"ok":true,"channel":"C1","ts":"1.2","message":{"blocks":[` + strings.Repeat(`{"type":"divider"},`, 50) + `not JSON, never read`,
			want: chatReply{OK: true, Channel: "C1", TS: "1.2"},
		},
		{
			name: "the message first",
			in:   `{"message":{"text":"x","blocks":[{"type":"section"}]},"ts":"1.2","ok":true,"warning":"missing_charset","channel":"C1"}`,
			want: chatReply{OK: true, Channel: "C1", TS: "1.2"},
		},
		{
			name: "a failure",
			in:   `{"ok":false,"error":"invalid_blocks","response_metadata":{"messages":["[ERROR] must be more than 0 characters [json-pointer:/blocks/0/text]"]}}`,
			want: chatReply{Error: "invalid_blocks", Meta: struct {
				Messages []string `json:"messages"`
			}{[]string{"[ERROR] must be more than 0 characters [json-pointer:/blocks/0/text]"}}},
		},
		{name: "not an object", in: `["ok"]`, err: true},
		{name: "HTML", in: `<html>502 Bad Gateway</html>`, err: true},
		{name: "cut short", in: `{"ok":true,"channel":"C1"`, err: true},
		{name: "a wrong type", in: `{"ok":"yes"}`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readChatReply(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v; want an error: %v", err, tc.err)
			}
			if !tc.err && (got.OK != tc.want.OK || got.Channel != tc.want.Channel || got.TS != tc.want.TS ||
				got.Error != tc.want.Error || strings.Join(got.Meta.Messages, "|") != strings.Join(tc.want.Meta.Messages, "|")) {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}

// The fake refuses a JSON body that does not parse, as Slack does.
func TestFakeSlackRefusesBadJSON(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	req, _ := http.NewRequest(http.MethodPost, fake.URL+"chat.postMessage", strings.NewReader(`{"channel":"C1","text":`))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := readChatReply(resp.Body)
	if err != nil || got.OK || got.Error != "invalid_json" {
		t.Errorf("a cut-off JSON body was answered %+v, %v; want invalid_json", got, err)
	}
}

// hooked keeps the bridge's HTTP client to Slack's response_urls.
func TestHooked(t *testing.T) {
	s := &Surface{apiURL: "http://127.0.0.1:4321/api/"}
	for u, want := range map[string]bool{
		"https://hooks.slack.com/actions/T0001/1/abc":     true,
		"https://hooks.slack-gov.com/actions/T0001/1/abc": true,
		"http://127.0.0.1:4321/actions/T0001/UEVE/1":      true, // the configured API's origin
		"": false,
		"http://hooks.slack.com/actions/T0001/1/abc":    false,
		"https://hooks.slack.com.example.com/actions":   false,
		"https://user:pw@hooks.slack.com/actions/T0001": false,
		"https://slack.com/api/chat.postMessage":        false,
		"http://127.0.0.1:4322/actions/T0001/UEVE/1":    false,
		"http://169.254.169.254/latest/meta-data/":      false,
		"::not a url": false,
	} {
		if got := s.hooked(u); got != want {
			t.Errorf("hooked(%q) = %v, want %v", u, got, want)
		}
	}
}

package slack

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
	"github.com/askbridge/askbridge/internal/surface"
)

// checkConfig has a route per channel: C1 open, C2 restricted to a group.
func checkConfig(fake *slacktest.FakeSlack, token config.Secret) *config.Config {
	return &config.Config{
		Slack: &config.Slack{BotToken: token, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{
			{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}},
			{Name: "ops", Targets: []config.Target{
				{Slack: &config.SlackTarget{Channel: "C2", Responders: config.SlackResponders{Groups: []string{"S1"}}}},
				{Slack: &config.SlackTarget{Channel: "C1"}}, // checked once
			}},
		},
	}
}

// findings prints fs one per line, for failure messages and matching.
func findings(fs surface.Findings) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(*slacktest.FakeSlack)
		token config.Secret
		want  []string // lines, in order, each a substring of its finding
	}{{
		name: "all set",
		setup: func(f *slacktest.FakeSlack) {
			f.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
			f.SetChannel("C2", slacktest.FakeChannel{Name: "ops", Member: true, Private: true})
			f.SetGroup("S1", "U1", "U2")
		},
		want: []string{
			"ok      slack: signed in to Fake Workspace (T0FAKETEAM) as askbridge (U0FAKEBOT1)",
			"ok      slack channel C1: #deploys, and @askbridge is in it",
			"ok      slack channel C2: #ops, and @askbridge is in it",
			"ok      slack group S1: 2 members may answer",
		},
	}, {
		name: "bot missing, channel archived or unknown, group unknown",
		setup: func(f *slacktest.FakeSlack) {
			f.SetChannel("C1", slacktest.FakeChannel{Name: "deploys"})
		},
		want: []string{
			"ok      slack: signed in",
			"PROBLEM slack channel C1: @askbridge is not in #deploys, so its posts there fail (not_in_channel): type /invite @askbridge",
			"PROBLEM slack channel C2: Slack knows no such channel, or it is private and @askbridge is not in it",
			"PROBLEM slack group S1: Slack knows no such user group",
		},
	}, {
		name: "scopes the bridge does not ask for",
		setup: func(f *slacktest.FakeSlack) {
			f.Scopes = "chat:write,channels:history,groups:history,groups:read" // no channels:read, no usergroups:read
			f.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
			f.SetChannel("C2", slacktest.FakeChannel{Name: "ops", Private: true, Archived: true, Member: true})
			f.SetGroup("S1", "U1")
		},
		want: []string{
			"ok      slack: signed in",
			"note    slack channel C1: not checked: reading a channel needs the channels:read scope",
			"PROBLEM slack channel C2: #ops is archived",
			"PROBLEM slack group S1: reading its members needs the usergroups:read scope",
		},
	}, {
		name: "a token without chat:write",
		setup: func(f *slacktest.FakeSlack) {
			f.Scopes = "usergroups:read,channels:read"
			f.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
			f.SetChannel("C2", slacktest.FakeChannel{Name: "ops", Member: true})
			f.SetGroup("S1", "U1")
		},
		want: []string{
			"ok      slack: signed in",
			"PROBLEM slack: the token lacks the chat:write scope, so the bridge can't post: add it (OAuth & Permissions, Bot Token Scopes) and reinstall the app",
			"ok      slack channel C1",
			"note    slack channel C1: the token lacks channels:history, needed to read this public channel: when Slack fails a post it has made here (internal_error, or an answer lost), the bridge can't find the message",
			"ok      slack channel C2",
			"note    slack channel C2: the token lacks channels:history",
			"ok      slack group S1",
		},
	}, {
		name:  "a wrong token",
		token: "xoxb-wrong",
		want:  []string{"PROBLEM slack: auth.test with slack.bot_token failed: invalid_auth: Slack knows no such token; copy the Bot User OAuth Token (xoxb-…) again from OAuth & Permissions"},
	}, {
		// Each of Slack's refusals of a token has its own cause and fix.
		name: "a revoked token",
		setup: func(f *slacktest.FakeSlack) {
			f.FailNext("auth.test", slacktest.FakeFail{Error: "token_revoked"})
		},
		want: []string{"PROBLEM slack: auth.test with slack.bot_token failed: token_revoked: the token was revoked, or the app uninstalled; reinstall the app (Install App) and copy its new Bot User OAuth Token"},
	}, {
		name: "an inactive account",
		setup: func(f *slacktest.FakeSlack) {
			f.FailNext("auth.test", slacktest.FakeFail{Error: "account_inactive"})
		},
		want: []string{"PROBLEM slack: auth.test with slack.bot_token failed: account_inactive: the token was revoked, or the app uninstalled; reinstall"},
	}, {
		name: "an expired token",
		setup: func(f *slacktest.FakeSlack) {
			f.FailNext("auth.test", slacktest.FakeFail{Error: "token_expired"})
		},
		want: []string{"PROBLEM slack: auth.test with slack.bot_token failed: token_expired: the bot token expired: use a Slack app without token rotation, as the bridge does not renew tokens"},
	}, {
		name: "Slack failing",
		setup: func(f *slacktest.FakeSlack) {
			f.FailNext("auth.test", slacktest.FakeFail{Status: http.StatusServiceUnavailable})
		},
		want: []string{"PROBLEM slack: auth.test with slack.bot_token failed: HTTP 503"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			fake.Scopes += ",channels:read,groups:read" // the channels can be read
			if tc.setup != nil {
				tc.setup(fake)
			}
			token := testToken
			if tc.token != "" {
				token = string(tc.token)
			}
			got := findings(Check(ctx, checkConfig(fake, config.Secret(token)), http.DefaultClient, false))
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d lines", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) && !strings.Contains(lines[i], w) {
					t.Errorf("finding %d = %q; want %q", i, lines[i], w)
				}
			}
			if strings.Contains(got, testToken) || strings.Contains(got, "xoxb-wrong") {
				t.Errorf("a token is in the findings:\n%s", got)
			}
		})
	}
}

// A refused app token is named with what to do, as bridge serve says
// when it stops for it; trouble that may pass is named as it is.
func TestCheckSocketMode(t *testing.T) {
	const appToken = "xapp-1-A1-2-abc"
	for _, tc := range []struct {
		name   string
		socket bool   // the fake takes appToken on apps.connections.open
		refuse string // and then refuses it with this error
		want   string
	}{
		{"another app's token", false, "", "PROBLEM slack: Slack refused slack.app_token (invalid_auth): generate a new one (Basic Information → App-Level Tokens, scope connections:write)\n"},
		{"without connections:write", true, "missing_scope", "PROBLEM slack: Slack refused slack.app_token (missing_scope): the app-level token needs the connections:write scope\n"},
		{"Slack busy", true, "internal_error", "PROBLEM slack: apps.connections.open with slack.app_token failed: internal_error\n"},
		{"accepted", true, "", "ok      slack: slack.app_token opens a Socket Mode connection\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			fake.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
			if tc.socket {
				fake.SocketMode(appToken).Refuse(tc.refuse)
			}
			cfg := &config.Config{
				Slack:  &config.Slack{BotToken: testToken, AppToken: appToken, APIURL: fake.URL},
				Routes: []config.Route{{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}}},
			}
			got := findings(Check(context.Background(), cfg, http.DefaultClient, false))
			if !strings.Contains(got, tc.want) {
				t.Errorf("findings:\n%s\nwant %q", got, tc.want)
			}
			if strings.Contains(got, appToken) {
				t.Errorf("the app token is in the findings:\n%s", got)
			}
		})
	}
}

// With post, each channel is checked by posting to it: the only way to
// know without the channels:read scope. The message is deleted at once.
func TestCheckPost(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	fake.SetChannel("C2", slacktest.FakeChannel{Name: "ops"}) // the bot is not in it
	fake.SetGroup("S1", "U1")
	got := findings(Check(context.Background(), checkConfig(fake, testToken), http.DefaultClient, true))
	for _, w := range []string{
		"ok      slack channel C1: posted a test message and deleted it\n",
		"PROBLEM slack channel C2: @askbridge is not in it: type /invite @askbridge in the channel\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	posts, deletes := fake.Calls("chat.postMessage"), fake.Calls("chat.delete")
	if len(posts) != 2 || len(deletes) != 1 || !deletes[0].OK || deletes[0].Field("ts") != posts[0].TS || posts[0].Field("text") != surface.CheckText {
		t.Errorf("posts %+v, deletes %+v; want the test message posted to both, deleted where it was posted", posts, deletes)
	}
	if n := len(fake.Calls("conversations.info")); n != 0 {
		t.Errorf("%d conversations.info calls; with post the post is the check", n)
	}

	fake.FailNext("chat.delete", slacktest.FakeFail{Error: "cant_delete_message"})
	got = findings(Check(context.Background(), checkConfig(fake, testToken), http.DefaultClient, true))
	if !strings.Contains(got, "note    slack channel C1: posted a test message, but deleting it failed (cant_delete_message): delete it by hand") {
		t.Errorf("findings:\n%s\nwant the message left behind named", got)
	}
}

// TestCheckPostRefused: a post Slack refuses says in one line what to
// do: an archived channel, a channel where a setting keeps the bot from
// posting, a token without chat:write (naming it, as Slack does).
func TestCheckPostRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*slacktest.FakeSlack)
		want  string
	}{{
		name: "archived",
		setup: func(f *slacktest.FakeSlack) {
			f.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true, Archived: true})
		},
		want: "PROBLEM slack channel C1: it is archived (is_archived): nothing can be posted there; unarchive it, or name another channel\n",
	}, {
		name: "posting restricted",
		setup: func(f *slacktest.FakeSlack) {
			f.FailNext("chat.postMessage", slacktest.FakeFail{Error: "restricted_action"})
		},
		want: "PROBLEM slack channel C1: a setting of the channel or the workspace keeps @askbridge from posting there (restricted_action): allow it to post",
	}, {
		name: "a read-only channel",
		setup: func(f *slacktest.FakeSlack) {
			f.FailNext("chat.postMessage", slacktest.FakeFail{Error: "restricted_action_read_only_channel"})
		},
		want: "PROBLEM slack channel C1: a setting of the channel or the workspace keeps @askbridge from posting there (restricted_action_read_only_channel)",
	}, {
		name:  "no chat:write",
		setup: func(f *slacktest.FakeSlack) { f.Scopes = "usergroups:read,channels:history,groups:history" },
		want:  "PROBLEM slack channel C1: posting failed: missing_scope (needs chat:write)\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			tc.setup(fake)
			cfg := &config.Config{
				Slack:  &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
				Routes: []config.Route{{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}}},
			}
			if got := findings(Check(context.Background(), cfg, http.DefaultClient, true)); !strings.Contains(got, tc.want) {
				t.Errorf("findings:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

// A message posted to a user's id lands in a DM whose id Slack answers
// with; it is deleted there, as the bridge edits its messages where
// chat.postMessage says they went.
// Without --post, a target that names a person is a note: conversations.info
// knows the DM by its D… id, not the person's, and would say no such
// channel.
func TestCheckAUser(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	cfg := &config.Config{
		Slack:  &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "U0ADA"}}}}},
	}
	got := findings(Check(context.Background(), cfg, http.DefaultClient, false))
	if !strings.Contains(got, "note    slack channel U0ADA: a person: messages go to @askbridge's DM with them, which only --post can check\n") || strings.Contains(got, "PROBLEM") {
		t.Errorf("findings:\n%s", got)
	}
}

func TestCheckPostToAUser(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	cfg := &config.Config{
		Slack:  &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "U0ADA"}}}}},
	}
	got := findings(Check(context.Background(), cfg, http.DefaultClient, true))
	if !strings.Contains(got, "ok      slack channel U0ADA: posted a test message and deleted it\n") {
		t.Errorf("findings:\n%s\nwant the test message deleted", got)
	}
	if deletes := fake.Calls("chat.delete"); len(deletes) != 1 || !deletes[0].OK || deletes[0].Field("channel") != "D0ADA" {
		t.Errorf("deletes %+v; want one, in the DM the message went to", deletes)
	}
}

// TestCheckHistoryScopes: a target's channel whose history the token
// can't read is a note naming the scope it takes, which depends on the
// conversation's kind: when Slack fails a post it has made, the bridge
// can't look there for the message and posts the request again. The kind
// is what conversations.info says; where the channel was not read, every
// kind its id allows counts. A scope no target needs is not asked for.
func TestCheckHistoryScopes(t *testing.T) {
	const manifest = "chat:write,usergroups:read,channels:history,groups:history" // deploy/slack-app-manifest.yaml's
	const read = ",channels:read,groups:read,im:read,mpim:read"
	lacks := func(channel, scopes, read string) string {
		return "note    slack channel " + channel + ": the token lacks " + scopes + ", needed to read " + read +
			": when Slack fails a post it has made here (internal_error, or an answer lost), the bridge can't find the message and posts the request again, which may then show twice; add " +
			scopes + " (OAuth & Permissions, Bot Token Scopes) and reinstall the app\n"
	}
	for _, tc := range []struct {
		name     string
		scopes   string
		channels []string // the targets' channels, one route
		post     bool
		want     []string // the history notes, in order
	}{{
		name:     "a person, without im:history",
		scopes:   manifest,
		channels: []string{"U0ADA"},
		want:     []string{lacks("U0ADA", "im:history", "this DM")},
	}, {
		name:     "a person, posted to, without im:history",
		scopes:   manifest,
		channels: []string{"U0ADA"},
		post:     true,
		want:     []string{lacks("U0ADA", "im:history", "this DM")},
	}, {
		name:     "a person, with im:history",
		scopes:   manifest + ",im:history",
		channels: []string{"U0ADA"},
	}, {
		name:     "a DM read, without im:history",
		scopes:   manifest + read,
		channels: []string{"D0ADA"},
		want:     []string{lacks("D0ADA", "im:history", "this DM")},
	}, {
		name:     "a group DM read, without mpim:history",
		scopes:   manifest + read,
		channels: []string{"G0TEAM", "CPUBLIC", "CPRIVATE"},
		want:     []string{lacks("G0TEAM", "mpim:history", "this group DM")},
	}, {
		name:     "channels read, each lacking its own scope",
		scopes:   "chat:write,channels:history" + read,
		channels: []string{"CPUBLIC", "CPRIVATE"},
		want:     []string{lacks("CPRIVATE", "groups:history", "this private channel")},
	}, {
		name:     "a public channel read, without channels:history",
		scopes:   "chat:write,groups:history" + read,
		channels: []string{"CPUBLIC", "CPRIVATE"},
		want:     []string{lacks("CPUBLIC", "channels:history", "this public channel")},
	}, {
		name:     "channels not read, with both scopes",
		scopes:   manifest,
		channels: []string{"CPUBLIC", "CPRIVATE"},
	}, {
		name:     "a channel not read, lacking one kind's scope",
		scopes:   "chat:write,channels:history",
		channels: []string{"CPUBLIC"},
		want:     []string{lacks("CPUBLIC", "groups:history", "it if it is a private channel (not checked)")},
	}, {
		name:     "a channel posted to, lacking both kinds' scopes",
		scopes:   "chat:write" + read,
		channels: []string{"CPUBLIC"},
		post:     true,
		want:     []string{lacks("CPUBLIC", "channels:history and groups:history", "it if it is a public channel or a private channel (not checked)")},
	}, {
		name:     "an older private channel's or a group DM's id, not read",
		scopes:   manifest,
		channels: []string{"G0UNKNOWN"},
		post:     true,
		want:     []string{lacks("G0UNKNOWN", "mpim:history", "it if it is a group DM (not checked)")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.NewFakeSlack(t, testToken)
			fake.Scopes = tc.scopes
			fake.SetChannel("CPUBLIC", slacktest.FakeChannel{Name: "deploys", Member: true})
			fake.SetChannel("CPRIVATE", slacktest.FakeChannel{Name: "ops", Member: true, Private: true})
			fake.SetChannel("G0TEAM", slacktest.FakeChannel{Name: "mpdm-ada--bo--askbridge-1", Member: true, GroupDM: true})
			fake.SetChannel("G0UNKNOWN", slacktest.FakeChannel{Name: "old-ops", Member: true, Private: true})
			fake.SetChannel("D0ADA", slacktest.FakeChannel{Member: true})
			var targets []config.Target
			for _, ch := range tc.channels {
				targets = append(targets, config.Target{Slack: &config.SlackTarget{Channel: ch}})
			}
			cfg := &config.Config{
				Slack:  &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
				Routes: []config.Route{{Name: "default", Targets: targets}},
			}
			fs := Check(context.Background(), cfg, http.DefaultClient, tc.post)
			var notes []string
			for _, f := range fs {
				if f.Level == surface.Problem {
					t.Errorf("a problem: %s", f)
				}
				if strings.Contains(f.Text, "history") {
					notes = append(notes, f.String()+"\n")
				}
			}
			if !slices.Equal(notes, tc.want) {
				t.Errorf("history notes:\n%s\nwant:\n%s\nall findings:\n%s", strings.Join(notes, ""), strings.Join(tc.want, ""), findings(fs))
			}
		})
	}
}

// A conversation the token may not read is not checked, and the note
// names the read scope its kind of id needs: a DM's is im:read, not
// channels:read.
func TestCheckNamesTheReadScopeOfTheKind(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	fake.Scopes = "chat:write"
	fake.SetChannel("D0ADA", slacktest.FakeChannel{Member: true})
	fake.SetChannel("G0TEAM", slacktest.FakeChannel{Name: "mpdm-ada--bo--askbridge-1", Member: true, GroupDM: true})
	fake.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{
			{Slack: &config.SlackTarget{Channel: "D0ADA"}}, {Slack: &config.SlackTarget{Channel: "G0TEAM"}}, {Slack: &config.SlackTarget{Channel: "C1"}},
		}}},
	}
	got := findings(Check(context.Background(), cfg, http.DefaultClient, false))
	for _, want := range []string{
		"slack channel D0ADA: not checked: reading a DM needs the im:read scope,",
		"slack channel G0TEAM: not checked: reading it needs the groups:read scope (mpim:read for a group DM),",
		"slack channel C1: not checked: reading a channel needs the channels:read scope (groups:read for a private one),",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

// A responders group with no members leaves nobody to answer where it is
// the only responder; beside responders.users it is worth a note only.
func TestCheckEmptyGroup(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	fake.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
	fake.SetChannel("C2", slacktest.FakeChannel{Name: "ops", Member: true})
	fake.SetGroup("S1")
	fake.SetGroup("S2")
	fake.SetGroup("S3", "U1")
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{
			{Slack: &config.SlackTarget{Channel: "C1", Responders: config.SlackResponders{Groups: []string{"S1"}}}},
			{Slack: &config.SlackTarget{Channel: "C2", Responders: config.SlackResponders{Users: []string{"U2"}, Groups: []string{"S2", "S3"}}}},
		}}, {Name: "ops", Targets: []config.Target{
			{Slack: &config.SlackTarget{Channel: "C3", Responders: config.SlackResponders{Groups: []string{"S1"}}}},
		}}},
	}
	got := findings(Check(context.Background(), cfg, http.DefaultClient, false))
	for _, w := range []string{
		"PROBLEM slack group S1: it has no members, and nobody else may answer in channels C1, C3:",
		"note    slack group S2: it has no members: nobody in it can answer\n",
		"ok      slack group S3: 1 members may answer\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
}

// TestCheckMention: a target's mention of a user group is checked for a
// group with members, as its ping reaches only them: an id Slack doesn't
// know, or an empty group, pings nobody. A mention may ping several
// groups, and each is checked. Each group is read once, also when
// responders.groups names it; other mentions are not checked. (Until
// 2026-12-06 only a mention's first group was checked, and a group both
// named and mentioned was read twice.)
func TestCheckMention(t *testing.T) {
	fake := slacktest.NewFakeSlack(t, testToken)
	fake.Scopes += ",channels:read"
	fake.SetChannel("C1", slacktest.FakeChannel{Name: "deploys", Member: true})
	fake.SetChannel("C2", slacktest.FakeChannel{Name: "ops", Member: true})
	fake.SetGroup("S1", "U1", "U2")
	fake.SetGroup("S2")
	target := func(ch, mention string) config.Target {
		return config.Target{Slack: &config.SlackTarget{Channel: ch, Mention: mention}}
	}
	oncall := target("C1", "<!subteam^S1|@oncall>")
	oncall.Slack.Responders.Groups = []string{"S1"}
	cfg := &config.Config{
		Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{
			oncall, target("C2", "<!subteam^S9>"),
		}}, {Name: "ops", Targets: []config.Target{
			target("C2", "<!subteam^S2>"), target("C1", "<!subteam^S1>"), target("C1", "<@U1>"), target("C2", "<!here>"),
			target("C2", "<!subteam^S1> and <!subteam^S8|@typo>"),
		}}},
	}
	got := findings(Check(context.Background(), cfg, http.DefaultClient, false))
	want := "ok      slack channel C1: #deploys, and @askbridge is in it\n" +
		"ok      slack group S1: 2 members may answer\n" +
		"ok      slack mention <!subteam^S1>: pings the user group's 2 members\n" +
		"ok      slack channel C2: #ops, and @askbridge is in it\n" +
		"PROBLEM slack mention <!subteam^S9>: Slack knows no such user group, so the mention pings nobody: check the group's id\n" +
		"PROBLEM slack mention <!subteam^S2>: the user group has no members, so the mention pings nobody\n" +
		"PROBLEM slack mention <!subteam^S8>: Slack knows no such user group, so the mention pings nobody: check the group's id\n"
	if _, rest, _ := strings.Cut(got, "\n"); rest != want {
		t.Errorf("findings:\n%s\nwant, after signing in:\n%s", got, want)
	}
	var read []string
	for _, c := range fake.Calls("usergroups.users.list") {
		read = append(read, c.Field("usergroup"))
	}
	if want := []string{"S1", "S9", "S2", "S8"}; !slices.Equal(read, want) {
		t.Errorf("usergroups.users.list read %v; want each group once: %v", read, want)
	}

	fake.Scopes = "chat:write,channels:read" // no usergroups:read
	got = findings(Check(context.Background(), cfg, http.DefaultClient, false))
	if w := "note    slack mention <!subteam^S1>: not checked: reading the user group needs the usergroups:read scope, which the mention itself does not\n"; !strings.Contains(got, w) {
		t.Errorf("without usergroups:read, findings:\n%s\nwant %q", got, w)
	}
}

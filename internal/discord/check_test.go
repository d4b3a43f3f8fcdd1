package discord_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/surface"
)

// checkConfig is a config for fake with a route per list of channel ids,
// routed "r0", "r1", ...
func checkConfig(fake *discord.FakeDiscord, routes ...[]string) *config.Config {
	cfg := &config.Config{
		BaseURL: "https://bridge.example.com",
		Discord: &config.Discord{BotToken: botToken, PublicKey: discord.PublicKeyHex(), ApplicationID: discord.FakeAppID, APIURL: fake.URL},
	}
	for i, channels := range routes {
		r := config.Route{Name: fmt.Sprintf("r%d", i)}
		for _, ch := range channels {
			r.Targets = append(r.Targets, config.Target{Discord: &config.DiscordTarget{Channel: ch}})
		}
		cfg.Routes = append(cfg.Routes, r)
	}
	return cfg
}

// checkLines runs the check of cfg and returns its findings, a line each.
func checkLines(cfg *config.Config, post bool) []string {
	var lines []string
	for _, f := range discord.Check(context.Background(), cfg, http.DefaultClient, post) {
		lines = append(lines, f.String())
	}
	return lines
}

// channelLines runs the check of cfg, without posting, and returns its
// findings about channels, a line each.
func channelLines(cfg *config.Config) []string {
	var lines []string
	for _, l := range checkLines(cfg, false) {
		if strings.Contains(l, "discord channel ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// matchLines fails t unless there are as many lines as want, each holding
// its want.
func matchLines(t *testing.T, lines, want []string) {
	t.Helper()
	if len(lines) != len(want) {
		t.Fatalf("findings:\n%s\nwant %d lines", strings.Join(lines, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("finding %d = %q; want %q", i, lines[i], w)
		}
	}
}

func TestCheck(t *testing.T) {
	const endpoint = "https://bridge.example.com/discord/interactions"
	for _, tc := range []struct {
		name  string
		setup func(*discord.FakeDiscord, *config.Config)
		want  []string // each a substring of its finding, in order
	}{{
		name: "all set",
		setup: func(f *discord.FakeDiscord, _ *config.Config) {
			f.App.InteractionsURL = endpoint
			f.SetChannel("111", "deploys", true)
			f.SetChannel("222", "ops", true)
		},
		want: []string{
			"ok      discord: signed in as askbridge (1200000000000000002)",
			"ok      discord application: askbridge (" + discord.FakeAppID + ")",
			"ok      discord application: discord.public_key is its public key",
			"ok      discord application: interactions are sent to " + endpoint,
			"ok      discord channel 111: #deploys: the bot may View Channel, Send Messages, Embed Links and Read Message History there (a test post: --post)",
			"ok      discord channel 222: #ops: the bot may View Channel",
		},
	}, {
		name: "another application, no endpoint, channels out of reach",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			f.App.ID, f.App.VerifyKey = "1299999999999999999", strings.Repeat("ab", 32)
			f.SetChannel("111", "deploys", false)
		},
		want: []string{
			"ok      discord: signed in",
			"PROBLEM discord application: discord.application_id is " + discord.FakeAppID + ", but the bot belongs to askbridge (1299999999999999999)",
			"PROBLEM discord application: discord.public_key is not its public key (" + strings.Repeat("ab", 32) + "): every interaction Discord sends would be refused",
			"PROBLEM discord application: no Interactions Endpoint URL, and gateway is off: no click reaches the bridge; set it to " + endpoint,
			"PROBLEM discord channel 111: the bot can't see it (Missing Access): add the bot to the channel's server (https://discord.com/oauth2/authorize?client_id=" + discord.FakeAppID + "&scope=bot&permissions=309237730304) and let it View Channel, Send Messages, Embed Links and Read Message History there (and Create Public Threads and Send Messages in Threads, for thread_by_session)",
			"PROBLEM discord channel 222: Discord knows no such channel",
		},
	}, {
		name: "gateway with an endpoint URL",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			cfg.Discord.Gateway, cfg.Discord.PublicKey = true, ""
			f.App.InteractionsURL = "https://elsewhere.example.com/i"
			f.SetChannel("111", "deploys", true)
			f.SetChannel("222", "ops", true)
		},
		want: []string{
			"ok      discord: signed in",
			"ok      discord application: askbridge",
			"PROBLEM discord application: gateway is on, but the application has an Interactions Endpoint URL (https://elsewhere.example.com/i)",
			"ok      discord channel 111",
			"ok      discord channel 222",
		},
	}, {
		// Over the gateway interactions come unsigned: a stale public_key
		// verifies nothing, and is no reason to exit 1.
		name: "gateway with another public key",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			cfg.Discord.Gateway = true
			f.App.VerifyKey = strings.Repeat("ab", 32)
			f.SetChannel("111", "deploys", true)
			f.SetChannel("222", "ops", true)
		},
		want: []string{
			"ok      discord: signed in",
			"ok      discord application: askbridge",
			"note    discord application: discord.public_key is not its public key (" + strings.Repeat("ab", 32) + "); with gateway on and no Interactions Endpoint URL it is not used",
			"ok      discord application: no Interactions Endpoint URL: interactions come over the gateway",
			"ok      discord channel 111",
			"ok      discord channel 222",
		},
	}, {
		name: "endpoint behind another address",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			f.App.InteractionsURL = "https://proxy.example.com/askbridge/discord/interactions"
			f.SetChannel("111", "deploys", true)
			f.FailNext("channel", discord.FakeFail{Status: http.StatusInternalServerError})
		},
		want: []string{
			"ok      discord: signed in",
			"ok      discord application: askbridge",
			"ok      discord application: discord.public_key",
			"note    discord application: interactions are sent to https://proxy.example.com/askbridge/discord/interactions; base_url makes it " + endpoint,
			"PROBLEM discord channel 111: reading it failed: Internal Server Error (HTTP 500, code 0)",
			"PROBLEM discord channel 222: Discord knows no such channel",
		},
	}, {
		// Without base_url the bridge's address is http://<listen>, which
		// Discord can't reach: not an endpoint URL to advise.
		name: "no base_url",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			cfg.BaseURL, cfg.Listen = "", ":8080"
			f.SetChannel("111", "deploys", true)
			f.SetChannel("222", "ops", true)
		},
		want: []string{
			"ok      discord: signed in",
			"ok      discord application: askbridge",
			"ok      discord application: discord.public_key",
			"PROBLEM discord application: no Interactions Endpoint URL, and gateway is off: no click reaches the bridge; set it to the bridge's public HTTPS address followed by /discord/interactions",
			"ok      discord channel 111",
			"ok      discord channel 222",
		},
	}, {
		name: "a category and a forum",
		setup: func(f *discord.FakeDiscord, _ *config.Config) {
			f.App.InteractionsURL = endpoint
			f.SetChannelType("111", "Operations", 4)
			f.SetChannelType("222", "deploy-requests", 15)
		},
		want: []string{
			"ok      discord: signed in",
			"ok      discord application: askbridge",
			"ok      discord application: discord.public_key",
			"ok      discord application: interactions are sent to",
			"PROBLEM discord channel 111: #Operations is a category, where messages can't be posted: name a text channel",
			"PROBLEM discord channel 222: #deploy-requests is a forum channel, where messages can't be posted: name a text channel",
		},
	}, {
		name: "a wrong token",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			cfg.Discord.BotToken = "not-the-bot-token"
		},
		want: []string{"PROBLEM discord: signing in with discord.bot_token failed: 401: Unauthorized (HTTP 401, code 0): Discord knows no such token (it was mistyped, or reset since); copy it again, or reset it (Developer Portal → your app → Bot → Reset Token)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := discord.NewFakeDiscord(t, botToken)
			cfg := checkConfig(fake, []string{"111"}, []string{"222", "111"}) // 111 is checked once
			tc.setup(fake, cfg)
			lines := checkLines(cfg, false)
			matchLines(t, lines, tc.want)
			if got := strings.Join(lines, "\n"); strings.Contains(got, botToken) || strings.Contains(got, "not-the-bot-token") {
				t.Errorf("a token is in the findings:\n%s", got)
			}
		})
	}
}

// With post, each channel the bot can see is posted a message, deleted at
// once: seeing a channel does not mean being allowed to post there.
func TestCheckPost(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	fake.App.InteractionsURL = "https://bridge.example.com/discord/interactions"
	for _, id := range []string{"111", "222", "333"} {
		fake.SetChannel(id, "c"+id, true)
	}
	fake.SetChannel("444", "hidden", false)
	cfg := checkConfig(fake, []string{"111", "222", "333", "444"})
	fake.FailNext("create", discord.FakeFail{Status: http.StatusInternalServerError}, discord.FakeFail{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions"})
	fake.FailNext("delete", discord.FakeFail{Status: http.StatusInternalServerError})
	got := strings.Join(checkLines(cfg, true), "\n")
	for _, w := range []string{
		"PROBLEM discord channel 111: #c111: posting failed: Internal Server Error (HTTP 500, code 0)",
		"PROBLEM discord channel 222: #c222: the bot may not post there (Missing Permissions): let it Send Messages in the channel",
		"note    discord channel 333: #c333: posted a test message, but deleting it failed (Internal Server Error (HTTP 500, code 0)): delete it by hand",
		"PROBLEM discord channel 444: the bot can't see it (Missing Access)",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	got = strings.Join(checkLines(cfg, true), "\n") // again, with nothing failing
	for _, id := range []string{"111", "222", "333"} {
		if w := "ok      discord channel " + id + ": #c" + id + ": posted a test message and deleted it"; !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	creates, deletes := fake.AllCalls("create"), fake.AllCalls("delete")
	if len(creates) != 6 || len(deletes) != 4 || deletes[0].MessageID != creates[2].MessageID || deletes[1].MessageID != creates[3].MessageID ||
		creates[3].Body["content"] != surface.CheckText {
		t.Errorf("creates %+v\ndeletes %+v; want 3 posts a run (never to the hidden channel), each one that went deleted", creates, deletes)
	}
	if am, _ := creates[0].Body["allowed_mentions"].(map[string]any); am == nil {
		t.Errorf("a test message allows mentions: %v", creates[0].Body)
	}
}

// TestCheckPostWithoutEmbedLinks: where the bot lacks Embed Links,
// Discord posts its messages without their embeds, and the bridge's hold
// each question's text: people would see buttons under no question. The
// test message carries an embed, and one that comes back without it is a
// problem naming the permission. (Until 2026-12-05 the test message had
// none, and the check said all was well.)
func TestCheckPostWithoutEmbedLinks(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	fake.App.InteractionsURL = "https://bridge.example.com/discord/interactions"
	fake.SetChannel("111", "deploys", true)
	fake.SetChannel("222", "ops", true)
	fake.DenyEmbeds("222")
	got := strings.Join(checkLines(checkConfig(fake, []string{"111", "222"}), true), "\n")
	for _, w := range []string{
		"ok      discord channel 111: #deploys: posted a test message and deleted it",
		"PROBLEM discord channel 222: #ops: the bot may post there, but Discord drops its embeds, which hold each question's text (it lacks Embed Links): let it Embed Links in the channel",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	if deletes := fake.Calls("delete"); len(deletes) != 2 {
		t.Errorf("deletes %+v; want both test messages deleted", deletes)
	}
}

// TestCheckAccess: without posting, the check works out from Discord's
// REST data (the channel's overwrites, the server's roles and owner, the
// bot's roles) what the bot may do in each target's channel, and says
// what it lacks of what the bridge needs there, which mention would ping
// nobody, and which responders role the server does not have. (Until
// 2026-12-07 it said only that the bot could see the channel: a channel
// where it may not post, or an @here that pings nobody, showed when
// questions went unanswered.)
func TestCheckAccess(t *testing.T) {
	const (
		oncall = "1200000000000000010" // a role of the server
		typo   = "1200000000000000011" // none
		lacks  = "PROBLEM discord channel 111: #deploys: the bot lacks "
	)
	all := "ok      discord channel 111: #deploys: the bot may View Channel, Send Messages, Embed Links, Read Message History, Create Public Threads and Send Messages in Threads there (a test post: --post)"
	timedOut := time.Now().Add(24 * time.Hour) // Discord times out for up to 28 days
	for _, tc := range []struct {
		name  string
		setup func(*discord.FakeDiscord, *config.DiscordTarget)
		want  []string // the channel's findings, each a substring of its line, in order
	}{{
		name: "all fine",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles = append(f.Guild.Roles, discord.FakeRole{ID: oncall, Name: "oncall", Mentionable: true})
			t.Mention, t.ThreadBySession, t.Responders.Roles = "<@&"+oncall+">", true, []string{oncall}
		},
		want: []string{all},
	}, {
		// A read-only channel: @everyone may not Send Messages there,
		// which takes it from the bot's role too.
		name: "send messages denied by the channel",
		setup: func(f *discord.FakeDiscord, _ *config.DiscordTarget) {
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeGuildID, Type: 0, Deny: discordgo.PermissionSendMessages})
		},
		want: []string{lacks + "Send Messages (to post the questions) there: allow Send Messages to the bot's role in the channel, whose permissions deny it to @everyone or to the bot's roles (Edit Channel → Permissions)"},
	}, {
		name: "embed links not granted, threads denied to the bot's role",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles[1].Permissions &^= discordgo.PermissionEmbedLinks
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Deny: discordgo.PermissionCreatePublicThreads | discordgo.PermissionSendMessagesInThreads})
			t.ThreadBySession = true
		},
		want: []string{lacks + "Embed Links (the questions' text is in embeds), Create Public Threads (thread_by_session's threads) and Send Messages in Threads (to post in them) there: " +
			"allow Create Public Threads and Send Messages in Threads to the bot's role in the channel, whose permissions deny them to @everyone or to the bot's roles (Edit Channel → Permissions); " +
			"grant Embed Links to the bot's role (Server Settings → Roles, or in the channel)"},
	}, {
		// Adding a bot to a private channel gives it an overwrite of its
		// own, which Discord applies after the roles': its denies are
		// allowed there, not to the bot's role (whose allow of Embed
		// Links here does not undo them).
		name: "denied by the bot's own overwrite",
		setup: func(f *discord.FakeDiscord, _ *config.DiscordTarget) {
			f.SetOverwrites("111",
				discord.FakeOverwrite{ID: discord.FakeGuildID, Type: 0, Deny: discordgo.PermissionSendMessages},
				discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Allow: discordgo.PermissionEmbedLinks, Deny: discordgo.PermissionReadMessageHistory},
				discord.FakeOverwrite{ID: discord.FakeBotID, Type: 1, Deny: discordgo.PermissionSendMessages | discordgo.PermissionEmbedLinks})
		},
		want: []string{lacks + "Send Messages (to post the questions), Embed Links (the questions' text is in embeds) and Read Message History (a long request's further messages are replies) there: " +
			"allow Send Messages and Embed Links to the bot itself in the channel, whose permissions deny them to the bot by name, which no role's allow undoes (Edit Channel → Permissions → the bot); " +
			"allow Read Message History to the bot's role in the channel, whose permissions deny it to @everyone or to the bot's roles (Edit Channel → Permissions)"},
	}, {
		// Administrator allows everything, overwrites or not.
		name: "administrator",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles[1].Permissions = discordgo.PermissionAdministrator
			f.SetOverwrites("111",
				discord.FakeOverwrite{ID: discord.FakeGuildID, Type: 0, Deny: discordgo.PermissionSendMessages | discordgo.PermissionMentionEveryone},
				discord.FakeOverwrite{ID: discord.FakeBotID, Type: 1, Deny: discordgo.PermissionEmbedLinks | discordgo.PermissionSendMessagesInThreads})
			t.Mention, t.ThreadBySession = "@here", true
		},
		want: []string{all},
	}, {
		name: "the server's owner",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.OwnerID, f.Guild.BotRoles = discord.FakeBotID, nil
			t.Mention, t.ThreadBySession = "@everyone", true
		},
		want: []string{all},
	}, {
		name: "@here without Mention Everyone",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			t.Mention = "@here"
		},
		want: []string{
			"ok      discord channel 111: #deploys: the bot may View Channel",
			"PROBLEM discord channel 111: #deploys: mention @here is posted but pings nobody: the bot lacks Mention @everyone, @here, and All Roles there: grant Mention @everyone, @here, and All Roles to the bot's role (Server Settings → Roles, or in the channel)",
		},
	}, {
		// Where Mention Everyone is denied is said as for the permissions
		// above: the bot's own overwrite, which its role's allow does not
		// undo. (Until 2026-12-06 the advice was to grant it to the bot's
		// role, which it already had.)
		name: "@here denied by the bot's own overwrite",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.SetOverwrites("111",
				discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Allow: discordgo.PermissionMentionEveryone},
				discord.FakeOverwrite{ID: discord.FakeBotID, Type: 1, Deny: discordgo.PermissionMentionEveryone})
			t.Mention = "@here"
		},
		want: []string{
			"ok      discord channel 111: #deploys: the bot may View Channel",
			"PROBLEM discord channel 111: #deploys: mention @here is posted but pings nobody: the bot lacks Mention @everyone, @here, and All Roles there: allow Mention @everyone, @here, and All Roles to the bot itself in the channel, whose permissions deny it to the bot by name, which no role's allow undoes (Edit Channel → Permissions → the bot)",
		},
	}, {
		name: "@everyone with Mention Everyone allowed in the channel",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Allow: discordgo.PermissionMentionEveryone})
			t.Mention = "@everyone"
		},
		want: []string{"ok      discord channel 111: #deploys: the bot may View Channel"},
	}, {
		name: "a role that is not mentionable",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles = append(f.Guild.Roles, discord.FakeRole{ID: oncall, Name: "oncall"})
			t.Mention = "<@&" + oncall + ">"
		},
		want: []string{
			"ok      discord channel 111: #deploys: the bot may View Channel",
			"PROBLEM discord channel 111: #deploys: mention <@&" + oncall + "> (@oncall) is posted but pings nobody: the role is not mentionable and the bot lacks Mention @everyone, @here, and All Roles there: turn on Allow anyone to @mention this role (Server Settings → Roles → oncall), or grant Mention @everyone, @here, and All Roles to the bot's role (Server Settings → Roles, or in the channel)",
		},
	}, {
		name: "a role that is not mentionable, Mention Everyone denied by the channel",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles = append(f.Guild.Roles, discord.FakeRole{ID: oncall, Name: "oncall"})
			f.Guild.Roles[1].Permissions |= discordgo.PermissionMentionEveryone
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Deny: discordgo.PermissionMentionEveryone})
			t.Mention = "<@&" + oncall + ">"
		},
		want: []string{
			"ok      discord channel 111: #deploys: the bot may View Channel",
			"PROBLEM discord channel 111: #deploys: mention <@&" + oncall + "> (@oncall) is posted but pings nobody: the role is not mentionable and the bot lacks Mention @everyone, @here, and All Roles there: turn on Allow anyone to @mention this role (Server Settings → Roles → oncall), or allow Mention @everyone, @here, and All Roles to the bot's role in the channel, whose permissions deny it to @everyone or to the bot's roles (Edit Channel → Permissions)",
		},
	}, {
		name: "a role that is not mentionable, by a bot that may Mention Everyone",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles = append(f.Guild.Roles, discord.FakeRole{ID: oncall, Name: "oncall"})
			f.Guild.Roles[1].Permissions |= discordgo.PermissionMentionEveryone
			t.Mention = "<@&" + oncall + ">"
		},
		want: []string{"ok      discord channel 111: #deploys: the bot may View Channel"},
	}, {
		name: "a role the server does not have",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			t.Mention, t.Responders.Users, t.Responders.Roles = "<@&"+typo+">", []string{"1000000000000000007"}, []string{typo}
		},
		want: []string{
			"ok      discord channel 111: #deploys: the bot may View Channel",
			"PROBLEM discord channel 111: #deploys: mention <@&" + typo + "> pings nobody: the server Acme has no such role; check the ID (Developer Mode on, right-click the role, Copy Role ID)",
			"PROBLEM discord channel 111: #deploys: responders.roles names " + typo + ", a role the server Acme does not have: nobody with it can answer; check the ID (Developer Mode on, right-click the role, Copy Role ID)",
		},
	}, {
		name: "responders' roles, one not in the server",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.Roles = append(f.Guild.Roles, discord.FakeRole{ID: oncall, Name: "oncall"})
			t.Responders.Roles = []string{oncall, typo}
		},
		want: []string{
			"ok      discord channel 111: #deploys: the bot may View Channel",
			"PROBLEM discord channel 111: #deploys: responders.roles names " + typo + ", a role the server Acme does not have: nobody with it can answer",
		},
	}, {
		// A timeout leaves the bot View Channel and Read Message History
		// (Discord's Permissions topic): it posts nothing until it ends,
		// and no mention is posted either. (Until 2026-12-06 the check
		// said it might post, and named the mention.)
		name: "timed out",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.BotTimedOutUntil = timedOut
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Deny: discordgo.PermissionEmbedLinks})
			t.Mention = "@here"
		},
		want: []string{lacks + "Send Messages (to post the questions) and Embed Links (the questions' text is in embeds) there: " +
			"the bot is timed out until " + timedOut.UTC().Format("2006-01-02 15:04 UTC") + ", which takes Send Messages and Embed Links from it: remove its timeout (a moderator: right-click the bot → Remove Timeout), or wait; " +
			"allow Embed Links to the bot's role in the channel, whose permissions deny it to @everyone or to the bot's roles (Edit Channel → Permissions)"},
	}, {
		name: "a timeout that has ended",
		setup: func(f *discord.FakeDiscord, _ *config.DiscordTarget) {
			f.Guild.BotTimedOutUntil = time.Now().Add(-time.Hour)
		},
		want: []string{"ok      discord channel 111: #deploys: the bot may View Channel, Send Messages, Embed Links and Read Message History there"},
	}, {
		// Administrator (and the owner) are exempt from timeouts.
		name: "timed out, but administrator",
		setup: func(f *discord.FakeDiscord, t *config.DiscordTarget) {
			f.Guild.BotTimedOutUntil = timedOut
			f.Guild.Roles[1].Permissions |= discordgo.PermissionAdministrator
			t.ThreadBySession = true
		},
		want: []string{all},
	}, {
		name: "reading the server fails",
		setup: func(f *discord.FakeDiscord, _ *config.DiscordTarget) {
			f.FailNext("guild", discord.FakeFail{Status: http.StatusInternalServerError})
		},
		want: []string{"PROBLEM discord channel 111: #deploys: the bot can see it, but reading its server failed: Internal Server Error (HTTP 500, code 0): what it may do there is not checked"},
	}, {
		name: "reading the bot's member fails",
		setup: func(f *discord.FakeDiscord, _ *config.DiscordTarget) {
			f.FailNext("member", discord.FakeFail{Status: http.StatusForbidden, Code: 50001, Message: "Missing Access"})
		},
		want: []string{"PROBLEM discord channel 111: #deploys: the bot can see it, but reading the bot's roles in its server failed: Missing Access (HTTP 403, code 50001): what it may do there is not checked"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := discord.NewFakeDiscord(t, botToken)
			fake.App.InteractionsURL = "https://bridge.example.com/discord/interactions"
			fake.SetChannel("111", "deploys", true)
			cfg := checkConfig(fake, []string{"111"})
			tc.setup(fake, cfg.Routes[0].Targets[0].Discord)
			matchLines(t, channelLines(cfg), tc.want)
		})
	}
}

// TestCheckAccessOnce: channels of one server read it once, and a channel
// named by several targets is checked for all they need there.
func TestCheckAccessOnce(t *testing.T) {
	fake := discord.NewFakeDiscord(t, botToken)
	fake.App.InteractionsURL = "https://bridge.example.com/discord/interactions"
	fake.SetChannel("111", "deploys", true)
	fake.SetChannel("222", "ops", true)
	cfg := checkConfig(fake, []string{"111", "222"}, []string{"111"})
	cfg.Routes[1].Targets[0].Discord.Mention = "@here"
	cfg.Routes[1].Targets[0].Discord.ThreadBySession = true
	got := strings.Join(checkLines(cfg, false), "\n")
	for _, w := range []string{
		"ok      discord channel 111: #deploys: the bot may View Channel, Send Messages, Embed Links, Read Message History, Create Public Threads and Send Messages in Threads there",
		"PROBLEM discord channel 111: #deploys: mention @here is posted but pings nobody",
		"ok      discord channel 222: #ops: the bot may View Channel, Send Messages, Embed Links and Read Message History there",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("findings:\n%s\nwant %q", got, w)
		}
	}
	if g, m := fake.Calls("guild"), fake.Calls("member"); len(g) != 1 || len(m) != 1 || g[0].Guild != discord.FakeGuildID || m[0].User != discord.FakeBotID {
		t.Errorf("guild reads %+v, member reads %+v; want one of each, of the channels' server and the bot", g, m)
	}
}

// TestCheckThread: a target's channel may be a thread, which takes the
// permissions of its channel, where posting needs Send Messages in
// Threads, not Send Messages (Discord's Threads topic, Permissions). The
// check reads the thread's channel for its overwrites, works out what the
// bot may do there, and says what keeps it from posting: a lock, a
// private thread it is not in (which Discord hides from it). (Until
// 2026-12-06 it said only that the bot could see the thread.)
func TestCheckThread(t *testing.T) {
	const (
		lacks = "PROBLEM discord channel 333: #deploy-requests: the bot lacks "
		all   = "ok      discord channel 333: #deploy-requests: the bot may View Channel, Send Messages in Threads, Embed Links and Read Message History there (a test post: --post)"
	)
	for _, tc := range []struct {
		name  string
		setup func(*discord.FakeDiscord, *discord.FakeThread, *config.DiscordTarget)
		want  []string // the thread's findings, each a substring of its line, in order
	}{{
		name:  "a public thread",
		setup: func(*discord.FakeDiscord, *discord.FakeThread, *config.DiscordTarget) {},
		want:  []string{all},
	}, {
		// A channel read-only but for its threads: Send Messages does
		// nothing there.
		name: "send messages denied in its channel",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, _ *config.DiscordTarget) {
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeGuildID, Type: 0, Deny: discordgo.PermissionSendMessages})
		},
		want: []string{all},
	}, {
		name: "send messages in threads and embed links denied in its channel",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, _ *config.DiscordTarget) {
			f.SetOverwrites("111",
				discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Deny: discordgo.PermissionEmbedLinks},
				discord.FakeOverwrite{ID: discord.FakeBotID, Type: 1, Deny: discordgo.PermissionSendMessagesInThreads})
		},
		want: []string{lacks + "Send Messages in Threads (to post the questions) and Embed Links (the questions' text is in embeds) there: " +
			"allow Send Messages in Threads to the bot itself in #deploys, the thread's channel, whose permissions deny it to the bot by name, which no role's allow undoes (Edit Channel → Permissions → the bot); " +
			"allow Embed Links to the bot's role in #deploys, the thread's channel, whose permissions deny it to @everyone or to the bot's roles (Edit Channel → Permissions)"},
	}, {
		name: "send messages in threads not granted",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, _ *config.DiscordTarget) {
			f.Guild.Roles[1].Permissions &^= discordgo.PermissionSendMessagesInThreads
		},
		want: []string{lacks + "Send Messages in Threads (to post the questions) there: grant Send Messages in Threads to the bot's role (Server Settings → Roles, or in #deploys, the thread's channel)"},
	}, {
		// Discord shows a thread only to those who may view its channel.
		name: "its channel out of view",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, _ *config.DiscordTarget) {
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeGuildID, Type: 0, Deny: discordgo.PermissionViewChannel})
		},
		want: []string{"PROBLEM discord channel 333: the bot can't see it (Missing Access): add the bot to the channel's server"},
	}, {
		name: "a private thread the bot is in",
		setup: func(_ *discord.FakeDiscord, th *discord.FakeThread, _ *config.DiscordTarget) {
			th.Private, th.Joined = true, true
		},
		want: []string{all},
	}, {
		name: "a private thread the bot is not in",
		setup: func(_ *discord.FakeDiscord, th *discord.FakeThread, _ *config.DiscordTarget) {
			th.Private = true
		},
		want: []string{"PROBLEM discord channel 333: the bot can't see it (Missing Access): add the bot to the channel's server (https://discord.com/oauth2/authorize?client_id=" + discord.FakeAppID + "&scope=bot&permissions=309237730304) and let it View Channel, Send Messages, Embed Links and Read Message History there (and Create Public Threads and Send Messages in Threads, for thread_by_session); for a private thread, add the bot to the thread too (@mention it there)"},
	}, {
		name: "a private thread the bot is not in, but may manage",
		setup: func(f *discord.FakeDiscord, th *discord.FakeThread, _ *config.DiscordTarget) {
			th.Private = true
			f.Guild.Roles[1].Permissions |= discordgo.PermissionManageThreads
		},
		want: []string{all},
	}, {
		// The bot's message opens an archived thread again.
		name: "an archived thread",
		setup: func(_ *discord.FakeDiscord, th *discord.FakeThread, _ *config.DiscordTarget) {
			th.Archived = true
		},
		want: []string{all},
	}, {
		name: "a locked thread",
		setup: func(f *discord.FakeDiscord, th *discord.FakeThread, _ *config.DiscordTarget) {
			th.Archived, th.Locked = true, true
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeBotID, Type: 1, Deny: discordgo.PermissionManageThreads})
		},
		want: []string{"PROBLEM discord channel 333: #deploy-requests: the thread is locked: a bot without Manage Threads may neither post nor edit messages there: unlock it, or allow Manage Threads to the bot itself in #deploys, the thread's channel, whose permissions deny it to the bot by name, which no role's allow undoes (Edit Channel → Permissions → the bot)"},
	}, {
		name: "a locked thread the bot may manage",
		setup: func(f *discord.FakeDiscord, th *discord.FakeThread, _ *config.DiscordTarget) {
			th.Archived, th.Locked = true, true
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeBotRoleID, Type: 0, Allow: discordgo.PermissionManageThreads})
		},
		want: []string{all},
	}, {
		name: "thread_by_session",
		setup: func(_ *discord.FakeDiscord, _ *discord.FakeThread, t *config.DiscordTarget) {
			t.ThreadBySession = true
		},
		want: []string{all, "note    discord channel 333: #deploy-requests is a thread, where thread_by_session starts none: each request is posted in it, and the bridge logs that starting its thread failed; name its channel (111) to have a thread per session"},
	}, {
		name: "@here with Mention Everyone denied in its channel",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, t *config.DiscordTarget) {
			f.Guild.Roles[1].Permissions |= discordgo.PermissionMentionEveryone
			f.SetOverwrites("111", discord.FakeOverwrite{ID: discord.FakeGuildID, Type: 0, Deny: discordgo.PermissionMentionEveryone})
			t.Mention = "@here"
		},
		want: []string{all, "PROBLEM discord channel 333: #deploy-requests: mention @here is posted but pings nobody: the bot lacks Mention @everyone, @here, and All Roles there: allow Mention @everyone, @here, and All Roles to the bot's role in #deploys, the thread's channel, whose permissions deny it to @everyone or to the bot's roles (Edit Channel → Permissions)"},
	}, {
		name: "timed out",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, _ *config.DiscordTarget) {
			f.Guild.BotTimedOutUntil = time.Now().Add(24 * time.Hour)
		},
		want: []string{lacks + "Send Messages in Threads (to post the questions) and Embed Links (the questions' text is in embeds) there: the bot is timed out until "},
	}, {
		name: "reading its channel fails",
		setup: func(f *discord.FakeDiscord, _ *discord.FakeThread, _ *config.DiscordTarget) {
			f.FailNext("channel", discord.FakeFail{Pass: true}, discord.FakeFail{Status: http.StatusInternalServerError})
		},
		want: []string{"PROBLEM discord channel 333: #deploy-requests: the bot can see it, but reading its channel 111 failed: Internal Server Error (HTTP 500, code 0): what it may do there is not checked"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := discord.NewFakeDiscord(t, botToken)
			fake.App.InteractionsURL = "https://bridge.example.com/discord/interactions"
			fake.SetChannel("111", "deploys", true)
			cfg := checkConfig(fake, []string{"333"})
			th := discord.FakeThread{Name: "deploy-requests", Parent: "111"}
			tc.setup(fake, &th, cfg.Routes[0].Targets[0].Discord)
			fake.SetThread("333", th)
			matchLines(t, channelLines(cfg), tc.want)
		})
	}
}

package discord_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/discord"
)

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
			"ok      discord channel 111: #deploys: the bot can see it",
			"ok      discord channel 222: #ops",
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
			"PROBLEM discord channel 111: the bot can't see it (Missing Access)",
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
		name: "a wrong token",
		setup: func(f *discord.FakeDiscord, cfg *config.Config) {
			cfg.Discord.BotToken = "not-the-bot-token"
		},
		want: []string{"PROBLEM discord: signing in with discord.bot_token failed: 401: Unauthorized (HTTP 401, code 0)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := discord.NewFakeDiscord(t, botToken)
			cfg := &config.Config{
				BaseURL: "https://bridge.example.com",
				Discord: &config.Discord{BotToken: botToken, PublicKey: discord.PublicKeyHex(), ApplicationID: discord.FakeAppID, APIURL: fake.URL},
				Routes: []config.Route{
					{Name: "default", Targets: []config.Target{{Discord: &config.DiscordTarget{Channel: "111"}}}},
					{Name: "ops", Targets: []config.Target{{Discord: &config.DiscordTarget{Channel: "222"}}, {Discord: &config.DiscordTarget{Channel: "111"}}}},
				},
			}
			tc.setup(fake, cfg)
			var lines []string
			for _, f := range discord.Check(context.Background(), cfg, http.DefaultClient) {
				lines = append(lines, f.String())
			}
			got := strings.Join(lines, "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d lines", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("finding %d = %q; want %q", i, lines[i], w)
				}
			}
			if strings.Contains(got, botToken) || strings.Contains(got, "not-the-bot-token") {
				t.Errorf("a token is in the findings:\n%s", got)
			}
		})
	}
}

package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestCallErrorNamesAPIURL: a call that could not be made names the host
// it was sent to, discord.api_url's, not the discord.com of discordgo's
// fixed endpoints: an operator whose api_url is a proxy is told the
// proxy can't be reached, not Discord.
func TestCallErrorNamesAPIURL(t *testing.T) {
	s, _ := fuzzSurface(t, "MTEwMDAwMDAwMDAwMDAwMDAwMg.test.bot-token", &answers{dialFails: true})
	_, err := s.create(context.Background(), "1100000000000000010", &discordgo.MessageSend{Content: "hi", AllowedMentions: mentions("")}, "ab0123456789abcdef0123456")
	if err == nil {
		t.Fatal("a create whose connection was refused succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, `"https://discord.test/…"`) || strings.Contains(msg, "discord.com") {
		t.Errorf("error %q; want it to name discord.api_url's host, https://discord.test/…, and not discord.com", msg)
	}
}

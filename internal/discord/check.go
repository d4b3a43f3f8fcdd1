package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/surface"
)

// Check signs in to Discord with cfg's bot token and looks at what the
// bridge needs of the application (its id, its public key, where it sends
// interactions) and of each Discord target's channel. With post, each
// channel the bot can see is also posted a message that is deleted at
// once; without, nothing in Discord changes.
func Check(ctx context.Context, cfg *config.Config, client *http.Client, post bool) surface.Findings {
	dc := cfg.Discord
	if dc == nil {
		return nil
	}
	var fs surface.Findings
	api, err := newSession(dc, client)
	if err != nil {
		fs.Add(surface.Problem, "discord", "%v", err)
		return fs
	}
	get := func(endpoint string, v any) error {
		raw, err := api.RequestWithBucketID(http.MethodGet, endpoint, nil, endpoint, discordgo.WithContext(ctx))
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, v)
	}

	var me struct {
		ID       string `json:"id"`
		Username string `json:"username"`
	}
	if err := get(discordgo.EndpointUser("@me"), &me); err != nil {
		fix := ""
		if tokenRefused(err) {
			fix = ": Discord knows no such token (it was mistyped, or reset since); copy it again, or reset it (Developer Portal → your app → Bot → Reset Token)"
		}
		fs.Add(surface.Problem, "discord", "signing in with discord.bot_token failed: %s%s", checkReason(err, dc.APIURL), fix)
		return fs // every other call would fail the same way
	}
	fs.Add(surface.Fine, "discord", "signed in as %s (%s)", me.Username, me.ID)

	var app struct {
		ID           string `json:"id"`
		Name         string `json:"name"`
		VerifyKey    string `json:"verify_key"`
		Interactions string `json:"interactions_endpoint_url"`
	}
	if err := get(discordgo.EndpointApplication("@me"), &app); err != nil {
		fs.Add(surface.Problem, "discord application", "reading the bot's application failed: %s", checkReason(err, dc.APIURL))
	} else {
		checkApp(cfg, app.ID, app.Name, app.VerifyKey, app.Interactions, &fs)
	}

	seen := map[string]bool{}
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			if t.Discord == nil || seen[t.Discord.Channel] {
				continue
			}
			seen[t.Discord.Channel] = true
			what := "discord channel " + t.Discord.Channel
			var ch struct {
				Name string                `json:"name"`
				Type discordgo.ChannelType `json:"type"`
			}
			err := get(discordgo.EndpointChannel(t.Discord.Channel), &ch)
			var re *discordgo.RESTError
			errors.As(err, &re)
			switch {
			case err == nil && !takesMessages(ch.Type):
				fs.Add(surface.Problem, what, "#%s is a %s, where messages can't be posted: name a text channel", ch.Name, kindName(ch.Type))
			case err == nil && post:
				postTo(ctx, api, t.Discord.Channel, ch.Name, dc.APIURL, &fs)
			case err == nil:
				fs.Add(surface.Fine, what, "#%s: the bot can see it (whether it may post there: --post)", ch.Name)
			case re != nil && re.Message != nil && re.Message.Code == discordgo.ErrCodeMissingAccess:
				fs.Add(surface.Problem, what, "the bot can't see it (Missing Access): add the bot to the channel's server (%s) and let it View Channel, Send Messages, Embed Links and Read Message History there (and Create Public Threads and Send Messages in Threads, for thread_by_session)", inviteURL(dc.ApplicationID))
			case re != nil && re.Response != nil && re.Response.StatusCode == http.StatusNotFound:
				fs.Add(surface.Problem, what, "Discord knows no such channel: check the ID (Developer Mode on, right-click the channel, Copy Channel ID)")
			default:
				fs.Add(surface.Problem, what, "reading it failed: %s", checkReason(err, dc.APIURL))
			}
		}
	}
	if len(seen) == 0 {
		fs.Add(surface.Note, "discord", "no route has a Discord target: nothing is posted to Discord")
	}
	return fs
}

// checkEmbed is the embed of the message a check with post posts: the
// bridge's messages hold each request's text in embeds, which Discord
// drops without a word where the bot lacks Embed Links.
var checkEmbed = &discordgo.MessageEmbed{Description: "Questions are posted in embeds like this one."}

// postTo posts surface.CheckText to channel id, named name, with an
// embed, and deletes it.
func postTo(ctx context.Context, api *discordgo.Session, id, name, apiURL string, fs *surface.Findings) {
	what := "discord channel " + id
	m, err := api.ChannelMessageSendComplex(id, &discordgo.MessageSend{Content: surface.CheckText, Embeds: []*discordgo.MessageEmbed{checkEmbed}, AllowedMentions: mentions("")}, discordgo.WithContext(ctx))
	var re *discordgo.RESTError
	switch {
	case errors.As(err, &re) && re.Message != nil && (re.Message.Code == discordgo.ErrCodeMissingPermissions || re.Message.Code == discordgo.ErrCodeMissingAccess):
		fs.Add(surface.Problem, what, "#%s: the bot may not post there (%s): let it Send Messages in the channel", name, re.Message.Message)
		return
	case err != nil:
		fs.Add(surface.Problem, what, "#%s: posting failed: %s", name, checkReason(err, apiURL))
		return
	}
	err = api.ChannelMessageDelete(id, m.ID, discordgo.WithContext(ctx))
	if err != nil {
		fs.Add(surface.Note, what, "#%s: posted a test message, but deleting it failed (%s): delete it by hand", name, checkReason(err, apiURL))
	}
	switch {
	case len(m.Embeds) == 0:
		fs.Add(surface.Problem, what, "#%s: the bot may post there, but Discord drops its embeds, which hold each question's text (it lacks Embed Links): let it Embed Links in the channel", name)
	case err == nil:
		fs.Add(surface.Fine, what, "#%s: posted a test message and deleted it", name)
	}
}

// takesMessages reports whether a channel of type t takes messages: not
// a category, a forum or media channel (only posts, which are threads), or
// a directory.
func takesMessages(t discordgo.ChannelType) bool {
	switch t {
	case discordgo.ChannelTypeGuildCategory, discordgo.ChannelTypeGuildForum, discordgo.ChannelTypeGuildMedia, discordgo.ChannelTypeGuildDirectory:
		return false
	}
	return true
}

// kindName names the channel types takesMessages refuses.
func kindName(t discordgo.ChannelType) string {
	switch t {
	case discordgo.ChannelTypeGuildCategory:
		return "category"
	case discordgo.ChannelTypeGuildForum:
		return "forum channel"
	case discordgo.ChannelTypeGuildMedia:
		return "media channel"
	default:
		return "directory"
	}
}

// inviteURL is the link that adds application id's bot to a server with
// the permissions docs/discord.md lists: View Channel, Send Messages, Send
// Messages in Threads, Create Public Threads, Embed Links, Read Message
// History.
func inviteURL(id string) string {
	return "https://discord.com/oauth2/authorize?client_id=" + url.QueryEscape(id) + "&scope=bot&permissions=309237730304"
}

// checkApp compares the bot's application with the config: the id, the
// key that verifies interactions, and where Discord sends them.
func checkApp(cfg *config.Config, id, name, key, endpoint string, fs *surface.Findings) {
	const what = "discord application"
	dc := cfg.Discord
	if id != dc.ApplicationID {
		fs.Add(surface.Problem, what, "discord.application_id is %s, but the bot belongs to %s (%s)", dc.ApplicationID, name, id)
	} else {
		fs.Add(surface.Fine, what, "%s (%s)", name, id)
	}
	switch {
	case dc.PublicKey == "":
	case strings.EqualFold(dc.PublicKey, key):
		fs.Add(surface.Fine, what, "discord.public_key is its public key")
	case dc.Gateway && endpoint == "":
		// Interactions come over the gateway, unsigned: the key verifies nothing.
		fs.Add(surface.Note, what, "discord.public_key is not its public key (%s); with gateway on and no Interactions Endpoint URL it is not used: correct it from the Developer Portal, General Information, or leave it out", key)
	default:
		fs.Add(surface.Problem, what, "discord.public_key is not its public key (%s): every interaction Discord sends would be refused as unsigned; copy it from the Developer Portal, General Information", key)
	}
	want := cfg.PublicURL() + "/discord/interactions"
	switch {
	case dc.Gateway && endpoint != "":
		fs.Add(surface.Problem, what, "gateway is on, but the application has an Interactions Endpoint URL (%s): while it has one, Discord sends interactions there and not over the gateway; clear it in the Developer Portal, General Information", endpoint)
	case dc.Gateway:
		fs.Add(surface.Fine, what, "no Interactions Endpoint URL: interactions come over the gateway")
	case endpoint == "" && cfg.BaseURL == "":
		// want is then http://<listen>, which Discord can't reach.
		fs.Add(surface.Problem, what, "no Interactions Endpoint URL, and gateway is off: no click reaches the bridge; set it to the bridge's public HTTPS address followed by /discord/interactions in the Developer Portal, General Information (and base_url to that address), or set gateway: true")
	case endpoint == "":
		fs.Add(surface.Problem, what, "no Interactions Endpoint URL, and gateway is off: no click reaches the bridge; set it to %s in the Developer Portal, General Information", want)
	case endpoint == want:
		fs.Add(surface.Fine, what, "interactions are sent to %s", endpoint)
	default:
		fs.Add(surface.Note, what, "interactions are sent to %s; base_url makes it %s: fine if one reaches the other", endpoint, want)
	}
}

// checkReason says why a Discord call failed: Discord's message and code,
// an HTTP status, or what stopped the connection to apiURL (discordgo's
// errors name discord.com whatever discord.api_url says), with no token
// or path.
func checkReason(err error, apiURL string) string {
	var re *discordgo.RESTError
	var ue *url.Error
	switch {
	case errors.As(err, &re) && re.Message != nil && re.Message.Message != "":
		return fmt.Sprintf("%s (HTTP %d, code %d)", re.Message.Message, re.Response.StatusCode, re.Message.Code)
	case errors.As(err, &re) && re.Response != nil:
		return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
	case errors.As(err, &ue):
		return surface.Unreachable(apiURL, ue.Err)
	default:
		return err.Error()
	}
}

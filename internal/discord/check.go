package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

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

	// The Discord targets by channel, in the order the config names them:
	// each channel is read once, and checked for what all its targets need.
	var channels []string
	targets := map[string][]*config.DiscordTarget{}
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			if t.Discord == nil {
				continue
			}
			id := t.Discord.Channel
			if targets[id] == nil {
				channels = append(channels, id)
			}
			targets[id] = append(targets[id], t.Discord)
		}
	}
	servers := map[string]string{} // the servers read into api.State, by id: what failed, or ""
	for _, id := range channels {
		what := "discord channel " + id
		var ch discordgo.Channel
		err := get(discordgo.EndpointChannel(id), &ch)
		var re *discordgo.RESTError
		errors.As(err, &re)
		switch {
		case err == nil && !takesMessages(ch.Type):
			fs.Add(surface.Problem, what, "#%s is a %s, where messages can't be posted: name a text channel", ch.Name, kindName(ch.Type))
		case err == nil && ch.GuildID == "":
			// A DM: no server's permissions to work out.
			if post {
				postTo(ctx, api, id, ch.Name, dc.APIURL, &fs)
			} else {
				fs.Add(surface.Fine, what, "#%s: the bot can see it (whether it may post there: --post)", ch.Name)
			}
		case err == nil:
			failed, read := servers[ch.GuildID]
			if !read {
				failed = readServer(get, ch.GuildID, me.ID, api.State, dc.APIURL)
				servers[ch.GuildID] = failed
			}
			// A thread takes the permissions of its channel (Discord's
			// Permissions topic, Inherited Permissions (Threads)).
			var parent *discordgo.Channel
			if failed == "" && ch.IsThread() {
				parent = new(discordgo.Channel)
				if err := get(discordgo.EndpointChannel(ch.ParentID), parent); err != nil {
					failed = "reading its channel " + ch.ParentID + " failed: " + checkReason(err, dc.APIURL)
				}
			}
			if failed != "" {
				fs.Add(surface.Problem, what, "#%s: the bot can see it, but %s: what it may do there is not checked", ch.Name, failed)
			} else {
				checkAccess(api.State, me.ID, &ch, parent, targets[id], post, &fs)
			}
			if post {
				postTo(ctx, api, id, ch.Name, dc.APIURL, &fs)
			}
		case re != nil && re.Message != nil && re.Message.Code == discordgo.ErrCodeMissingAccess:
			// Discord shows a private thread only to its members and to
			// those who may Manage Threads (Threads topic, Permissions):
			// to the bot, a thread it is not in is out of sight too.
			fs.Add(surface.Problem, what, "the bot can't see it (Missing Access): add the bot to the channel's server (%s) and let it View Channel, Send Messages, Embed Links and Read Message History there (and Create Public Threads and Send Messages in Threads, for thread_by_session); for a private thread, add the bot to the thread too (@mention it there)", inviteURL(dc.ApplicationID))
		case re != nil && re.Response != nil && re.Response.StatusCode == http.StatusNotFound:
			fs.Add(surface.Problem, what, "Discord knows no such channel: check the ID (Developer Mode on, right-click the channel, Copy Channel ID)")
		default:
			fs.Add(surface.Problem, what, "reading it failed: %s", checkReason(err, dc.APIURL))
		}
	}
	if len(channels) == 0 {
		fs.Add(surface.Note, "discord", "no route has a Discord target: nothing is posted to Discord")
	}
	return fs
}

// readServer reads the server (guild) id, its owner and roles, and the
// bot's member in it, its roles, into st: from them and a channel's
// permission overwrites discordgo computes the bot's permissions in the
// channel as Discord does. It returns what failed, or "".
func readServer(get func(endpoint string, v any) error, id, botID string, st *discordgo.State, apiURL string) string {
	var g discordgo.Guild
	if err := get(discordgo.EndpointGuild(id), &g); err != nil {
		return "reading its server failed: " + checkReason(err, apiURL)
	}
	var m discordgo.Member
	if err := get(discordgo.EndpointGuildMember(id, botID), &m); err != nil {
		return "reading the bot's roles in its server failed: " + checkReason(err, apiURL)
	}
	// Discord's member names no guild; State keeps members by guild and
	// user.
	m.GuildID = id
	if m.User == nil {
		m.User = &discordgo.User{ID: botID}
	}
	if err := errors.Join(st.GuildAdd(&g), st.MemberAdd(&m)); err != nil {
		return "keeping its server failed: " + err.Error()
	}
	return ""
}

// permission is one the bridge needs in a target's channel, with what the
// bridge needs it for, and which targets need it.
type permission struct {
	bit int64
	why string
	in  int // anywhere, inChannel, inThread or forSessions
}

// Which targets need a permission: all; those posting in a channel, or in
// a thread; those posting in a channel with thread_by_session.
const (
	anywhere = iota
	inChannel
	inThread
	forSessions
)

// needed are the permissions docs/discord.md asks for, those the invite
// link grants. In a thread Send Messages does nothing: posting there
// takes Send Messages in Threads, in its channel (Discord's Threads
// topic, Permissions).
var needed = []permission{
	{discordgo.PermissionViewChannel, "to see it", anywhere},
	{discordgo.PermissionSendMessages, "to post the questions", inChannel},
	{discordgo.PermissionSendMessagesInThreads, "to post the questions", inThread},
	{discordgo.PermissionEmbedLinks, "the questions' text is in embeds", anywhere},
	// Discord's Create Message: a reply needs Read Message History.
	{discordgo.PermissionReadMessageHistory, "a long request's further messages are replies", anywhere},
	{discordgo.PermissionCreatePublicThreads, "thread_by_session's threads", forSessions},
	{discordgo.PermissionSendMessagesInThreads, "to post in them", forSessions},
}

// neededIn reports whether p is needed by a target posting in a thread
// or not, with thread_by_session or not.
func (p permission) neededIn(thread, sessions bool) bool {
	switch p.in {
	case inChannel:
		return !thread
	case inThread:
		return thread
	case forSessions:
		return sessions && !thread
	}
	return true
}

// permNames names the permissions the check speaks of as Discord's app
// names them.
var permNames = map[int64]string{
	discordgo.PermissionViewChannel:           "View Channel",
	discordgo.PermissionSendMessages:          "Send Messages",
	discordgo.PermissionEmbedLinks:            "Embed Links",
	discordgo.PermissionReadMessageHistory:    "Read Message History",
	discordgo.PermissionMentionEveryone:       "Mention @everyone, @here, and All Roles",
	discordgo.PermissionManageThreads:         "Manage Threads",
	discordgo.PermissionCreatePublicThreads:   "Create Public Threads",
	discordgo.PermissionSendMessagesInThreads: "Send Messages in Threads",
}

// checkAccess says what the bot lacks in ch of what its targets need
// there: the permissions the bridge uses, a mention that would ping
// nobody, and a role in responders.roles the server does not have. ch is
// a thread when parent, its channel, is not nil. The channel's server
// and the bot's member are in st (readServer).
func checkAccess(st *discordgo.State, botID string, ch, parent *discordgo.Channel, targets []*config.DiscordTarget, post bool, fs *surface.Findings) {
	what := "discord channel " + ch.ID
	a := access{st: st, botID: botID, in: ch, where: "the channel"}
	if parent != nil {
		a.in, a.where = parent, "#"+parent.Name+", the thread's channel"
	}
	guild, err := st.Guild(ch.GuildID)
	if err == nil {
		a.guildID = guild.ID
		err = st.ChannelAdd(a.in)
	}
	var perms int64
	if err == nil {
		perms, err = st.UserChannelPermissions(botID, a.in.ID)
	}
	if err != nil {
		fs.Add(surface.Problem, what, "#%s: working out what the bot may do there failed: %v", ch.Name, err)
		return
	}
	a.granted = perms
	if perms&discordgo.PermissionAdministrator != 0 {
		// Administrator allows every permission, whatever the channel's
		// overwrites (Discord's Permissions topic); the PermissionAll
		// discordgo gives it predates the thread permissions.
		perms, a.granted = ^int64(0), ^int64(0)
	} else if m, err := st.Member(guild.ID, botID); err == nil && m.CommunicationDisabledUntil != nil && m.CommunicationDisabledUntil.After(time.Now()) {
		// A member timed out keeps only View Channel and Read Message
		// History until the timeout ends; the owner and Administrator
		// are exempt (Permissions topic, Permissions For Timed Out
		// Members). discordgo does not count it.
		a.until = *m.CommunicationDisabledUntil
		perms &= timeoutKeeps
	}

	thread := parent != nil
	sessions := slices.ContainsFunc(targets, func(t *config.DiscordTarget) bool { return t.ThreadBySession })
	var has, lacks []string
	var lacking int64
	for _, p := range needed {
		switch {
		case !p.neededIn(thread, sessions):
		case perms&p.bit != 0:
			has = append(has, permNames[p.bit])
		default:
			lacks = append(lacks, permNames[p.bit]+" ("+p.why+")")
			lacking |= p.bit
		}
	}
	// In a thread a moderator locked, only those who may Manage Threads
	// post or edit messages (Threads topic, Locked Threads). One that is
	// only archived is opened again by the bot's message.
	locked := thread && ch.ThreadMetadata != nil && ch.ThreadMetadata.Locked && perms&discordgo.PermissionManageThreads == 0
	if locked {
		fs.Add(surface.Problem, what, "#%s: the thread is locked: a bot without Manage Threads may neither post nor edit messages there: unlock it, or %s", ch.Name, a.fix(discordgo.PermissionManageThreads))
	}
	switch {
	case lacking == 0 && locked:
	case lacking == 0 && post:
		fs.Add(surface.Fine, what, "#%s: the bot may %s there", ch.Name, surface.List(has))
	case lacking == 0:
		fs.Add(surface.Fine, what, "#%s: the bot may %s there (a test post: --post)", ch.Name, surface.List(has))
	default:
		fs.Add(surface.Problem, what, "#%s: the bot lacks %s there: %s", ch.Name, surface.List(lacks), a.fix(lacking))
	}
	if thread && sessions {
		// The bridge posts in the thread, and starting a thread from its
		// message fails (Discord starts threads in text and
		// announcement channels, Threads topic): the request stays.
		instead := ""
		if takesMessages(parent.Type) {
			instead = fmt.Sprintf("; name its channel (%s) to have a thread per session", parent.ID)
		}
		fs.Add(surface.Note, what, "#%s is a thread, where thread_by_session starts none: each request is posted in it, and the bridge logs that starting its thread failed%s", ch.Name, instead)
	}

	// A mention pings as mentions() lets it through: @here and @everyone
	// only where the bot may Mention Everyone, a role where it may or
	// where the role is mentionable. A message the bot can't post pings
	// nobody either, which is said above.
	send := int64(discordgo.PermissionSendMessages)
	if thread {
		send = discordgo.PermissionSendMessagesInThreads
	}
	posts := perms&discordgo.PermissionViewChannel != 0 && perms&send != 0 && !locked
	pingsAll := perms&discordgo.PermissionMentionEveryone != 0
	seen := map[string]bool{}
	for _, t := range targets {
		m := strings.TrimSpace(t.Mention)
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		var r *discordgo.Role
		sub := mentionRE.FindStringSubmatch(m)
		if sub != nil && sub[1] == "&" {
			r = role(guild, sub[2])
		}
		switch {
		case (m == "@here" || m == "@everyone") && posts && !pingsAll:
			fs.Add(surface.Problem, what, "#%s: mention %s is posted but pings nobody: the bot lacks %s there: %s", ch.Name, m, names(discordgo.PermissionMentionEveryone), a.fix(discordgo.PermissionMentionEveryone))
		case sub == nil || sub[1] != "&":
			// A user's mention pings them wherever they may see it.
		case r == nil:
			fs.Add(surface.Problem, what, "#%s: mention %s pings nobody: the server %s has no such role; check the ID (Developer Mode on, right-click the role, Copy Role ID)", ch.Name, m, guild.Name)
		case posts && !r.Mentionable && !pingsAll:
			fs.Add(surface.Problem, what, "#%s: mention %s (@%s) is posted but pings nobody: the role is not mentionable and the bot lacks %s there: turn on Allow anyone to @mention this role (Server Settings → Roles → %s), or %s", ch.Name, m, r.Name, names(discordgo.PermissionMentionEveryone), r.Name, a.fix(discordgo.PermissionMentionEveryone))
		}
	}
	// A role that is not there lets nobody answer, and says nothing.
	missing := map[string]bool{}
	for _, t := range targets {
		for _, id := range t.Responders.Roles {
			if !missing[id] && role(guild, id) == nil {
				missing[id] = true
				fs.Add(surface.Problem, what, "#%s: responders.roles names %s, a role the server %s does not have: nobody with it can answer; check the ID (Developer Mode on, right-click the role, Copy Role ID)", ch.Name, id, guild.Name)
			}
		}
	}
}

// timeoutKeeps is what a timed-out member may still do.
const timeoutKeeps = discordgo.PermissionViewChannel | discordgo.PermissionReadMessageHistory

// access is where the bot's permissions in a target's channel come from.
type access struct {
	st             *discordgo.State // holding the server and the bot's member (readServer)
	guildID, botID string
	in             *discordgo.Channel // whose permission overwrites apply: the channel, or a thread's
	where          string             // names in for the advice
	granted        int64              // what the bot may do in a.in but for a timeout
	until          time.Time          // when the bot's timeout ends; zero when it is not timed out
}

// fix says where to grant the bot the permissions in bits, which it lacks
// in a.in: a timeout takes them until it ends. In the channel, what its
// overwrites deny, else in the bot's role or the channel: Discord applies
// the bot's own overwrite last, over @everyone's and the roles', so what
// it denies only it can allow.
func (a access) fix(bits int64) string {
	var fix []string
	if !a.until.IsZero() {
		if timed := bits &^ timeoutKeeps; timed != 0 {
			fix = append(fix, fmt.Sprintf("the bot is timed out until %s, which takes %s from it: remove its timeout (a moderator: right-click the bot → Remove Timeout), or wait", a.until.UTC().Format("2006-01-02 15:04 UTC"), names(timed)))
		}
		bits &^= a.granted // lacking for the timeout alone
	}
	byRoles, byBot := deniedIn(a.st, a.guildID, a.botID, a.in)
	if denied := byBot & bits; denied != 0 {
		fix = append(fix, fmt.Sprintf("allow %s to the bot itself in %s, whose permissions deny %s to the bot by name, which no role's allow undoes (Edit Channel → Permissions → the bot)", names(denied), a.where, pronoun(denied)))
		bits &^= denied
	}
	if denied := byRoles & bits; denied != 0 {
		fix = append(fix, fmt.Sprintf("allow %s to the bot's role in %s, whose permissions deny %s to @everyone or to the bot's roles (Edit Channel → Permissions)", names(denied), a.where, pronoun(denied)))
		bits &^= denied
	}
	if bits != 0 {
		fix = append(fix, fmt.Sprintf("grant %s to the bot's role (Server Settings → Roles, or in %s)", names(bits), a.where))
	}
	return strings.Join(fix, "; ")
}

// deniedIn is what the overwrites of ch deny the bot: byRoles those of
// @everyone (whose id is the server's) and of the bot's roles, byBot
// the bot's own (a member overwrite).
func deniedIn(st *discordgo.State, guildID, botID string, ch *discordgo.Channel) (byRoles, byBot int64) {
	m, err := st.Member(guildID, botID)
	if err != nil {
		return 0, 0
	}
	for _, o := range ch.PermissionOverwrites {
		switch {
		case o.ID == guildID || o.Type == discordgo.PermissionOverwriteTypeRole && slices.Contains(m.Roles, o.ID):
			byRoles |= o.Deny
		case o.Type == discordgo.PermissionOverwriteTypeMember && o.ID == botID:
			byBot |= o.Deny
		}
	}
	return byRoles, byBot
}

// names names the permissions in bits, in the order of their bits.
func names(bits int64) string {
	var out []string
	for i := range 64 {
		if bit := int64(1) << i; bits&bit != 0 {
			out = append(out, permNames[bit])
		}
	}
	return surface.List(out)
}

// pronoun is "it" for one permission in bits, "them" for more.
func pronoun(bits int64) string {
	if bits&(bits-1) == 0 {
		return "it"
	}
	return "them"
}

// role is g's role id, or nil.
func role(g *discordgo.Guild, id string) *discordgo.Role {
	for _, r := range g.Roles {
		if r.ID == id {
			return r
		}
	}
	return nil
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

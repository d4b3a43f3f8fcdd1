package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/surface"
)

// Check signs in to Slack with cfg's tokens and looks at what the Slack
// targets of its routes need: each channel (the bot must be in it to post
// there) and each responders group (the bot must be allowed to read its
// members). With post, each channel is checked by posting a message to it
// and deleting it; without, by reading the channel, and nothing in Slack
// changes. A check Slack does not let the token make (a scope the bridge
// itself does not need) is a note, not a problem; so is a channel whose
// history the token can't read (checkHistory).
func Check(ctx context.Context, cfg *config.Config, client *http.Client, post bool) surface.Findings {
	var fs surface.Findings
	sc := cfg.Slack
	if sc == nil {
		return nil
	}
	// Slack lists a token's scopes in the X-OAuth-Scopes header of its
	// answers; auth.test's is kept.
	scopes := &scopesHeader{next: client.Transport}
	if scopes.next == nil {
		scopes.next = http.DefaultTransport
	}
	c := *client
	c.Transport = scopes
	opts := []slackapi.Option{slackapi.OptionHTTPClient(&c)}
	if sc.APIURL != "" {
		opts = append(opts, slackapi.OptionAPIURL(withSlash(sc.APIURL)))
	}
	if tok := sc.AppToken.Reveal(); tok != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(tok))
	}
	api := slackapi.New(sc.BotToken.Reveal(), opts...)

	who, err := api.AuthTestContext(ctx)
	if err != nil {
		fs.Add(surface.Problem, "slack", "auth.test with slack.bot_token failed: %s%s", checkReason(err), botTokenFix(err))
		return fs // every other call would fail the same way
	}
	fs.Add(surface.Fine, "slack", "signed in to %s (%s) as %s (%s)", who.Team, who.TeamID, who.User, who.UserID)
	granted, scoped := scopes.get()
	if scoped && !slices.Contains(granted, "chat:write") {
		fs.Add(surface.Problem, "slack", "the token lacks the chat:write scope, so the bridge can't post: add it (OAuth & Permissions, Bot Token Scopes) and reinstall the app")
	}
	if sc.AppToken.Reveal() != "" {
		if _, _, err := api.StartSocketModeContext(ctx); err != nil {
			if reason, ok := appTokenRefused(err); ok {
				// What bridge serve would stop with, and what to do.
				fs.Add(surface.Problem, "slack", "%s", appTokenProblem(reason))
			} else {
				fs.Add(surface.Problem, "slack", "apps.connections.open with slack.app_token failed: %s", checkReason(err))
			}
		} else {
			fs.Add(surface.Fine, "slack", "slack.app_token opens a Socket Mode connection")
		}
	}

	channels, groups, mentions := map[string]bool{}, map[string]bool{}, map[string]bool{}
	empty := map[string]int{} // the finding of each group with no members, by group
	// Each user group is read once, whether responders.groups names it,
	// a mention pings it, or both.
	type read struct {
		users []string
		err   error
	}
	reads := map[string]read{}
	members := func(id string) ([]string, error) {
		r, ok := reads[id]
		if !ok {
			r.users, r.err = api.GetUserGroupMembersContext(ctx, id)
			reads[id] = r
		}
		return r.users, r.err
	}
	var targets []*config.SlackTarget
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			if t.Slack == nil {
				continue
			}
			targets = append(targets, t.Slack)
			if ch := t.Slack.Channel; !channels[ch] {
				channels[ch] = true
				var info *slackapi.Channel
				if post {
					postTo(ctx, api, ch, who.User, &fs)
				} else {
					info = checkChannel(ctx, api, ch, who.User, &fs)
				}
				if scoped {
					checkHistory(ch, info, granted, &fs)
				}
			}
			for _, g := range t.Slack.Responders.Groups {
				if !groups[g] {
					groups[g] = true
					users, err := members(g)
					checkGroup(g, users, err, &fs)
					if err == nil && len(users) == 0 {
						empty[g] = len(fs) - 1
					}
				}
			}
			for _, g := range mentionedGroup.FindAllStringSubmatch(t.Slack.Mention, -1) {
				if !mentions[g[1]] {
					mentions[g[1]] = true
					users, err := members(g[1])
					checkMention(g[1], users, err, &fs)
				}
			}
		}
	}
	// An empty group is a problem where nobody else may answer: a target
	// with no responders.users and no other group with members.
	stranded := map[string][]string{} // the channels each empty group leaves with nobody to answer
	for _, t := range targets {
		notEmpty := func(g string) bool { _, ok := empty[g]; return !ok }
		if len(t.Responders.Users) > 0 || len(t.Responders.Groups) == 0 || slices.ContainsFunc(t.Responders.Groups, notEmpty) {
			continue
		}
		for _, g := range t.Responders.Groups {
			if !slices.Contains(stranded[g], t.Channel) {
				stranded[g] = append(stranded[g], t.Channel)
			}
		}
	}
	for g, chans := range stranded {
		where := "channel "
		if len(chans) > 1 {
			where = "channels "
		}
		f := &fs[empty[g]]
		f.Level = surface.Problem
		f.Text = fmt.Sprintf("it has no members, and nobody else may answer in %s%s: add people to the group, or name responders.users", where, strings.Join(chans, ", "))
	}
	if len(channels) == 0 {
		fs.Add(surface.Note, "slack", "no route has a Slack target: nothing is posted to Slack")
	}
	return fs
}

// person reports whether a target's channel is a person's id (U…, or W…
// on Enterprise Grid): chat.postMessage posts in the app's DM with them,
// a conversation with an id of its own (D…).
func person(channel string) bool {
	return strings.HasPrefix(channel, "U") || strings.HasPrefix(channel, "W")
}

// readScopes says which scope conversations.info needs to read channel id,
// by the kinds of conversation its id may be.
func readScopes(id string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "a DM needs the im:read scope"
	case strings.HasPrefix(id, "G"):
		return "it needs the groups:read scope (mpim:read for a group DM)"
	}
	return "a channel needs the channels:read scope (groups:read for a private one)"
}

// channelNotFound is the finding for channel_not_found, with the bot's name.
const channelNotFound = "Slack knows no such channel, or it is private and @%s is not in it: check the ID (channel details, at the bottom) and invite the bot"

// checkChannel reads channel id (conversations.info) and says whether
// the bot can post there. It returns what Slack said of the channel, nil
// when it did not read it.
func checkChannel(ctx context.Context, api *slackapi.Client, id, bot string, fs *surface.Findings) *slackapi.Channel {
	what := "slack channel " + id
	if person(id) {
		// A person's id: chat.postMessage posts in the app's DM with
		// them, which conversations.info does not know by that id.
		fs.Add(surface.Note, what, "a person: messages go to @%s's DM with them, which only --post can check", bot)
		return nil
	}
	ch, err := api.GetConversationInfoContext(ctx, &slackapi.GetConversationInfoInput{ChannelID: id})
	switch {
	case refusedWith(err, "missing_scope"):
		fs.Add(surface.Note, what, "not checked: reading %s, which the bridge does not; make sure @%s is in it", readScopes(id), bot)
	case refusedWith(err, "channel_not_found"):
		fs.Add(surface.Problem, what, channelNotFound, bot)
	case err != nil:
		fs.Add(surface.Problem, what, "conversations.info failed: %s", checkReason(err))
	case ch.IsIM:
		// A DM has no name, and Slack does not say is_member of it.
		fs.Add(surface.Fine, what, "@%s's DM with %s", bot, ch.User)
	case ch.IsArchived:
		fs.Add(surface.Problem, what, "#%s is archived: nothing can be posted there", ch.Name)
	case !ch.IsMember:
		fs.Add(surface.Problem, what, "@%s is not in #%s, so its posts there fail (not_in_channel): type /invite @%s in the channel", bot, ch.Name, bot)
	default:
		fs.Add(surface.Fine, what, "#%s, and @%s is in it", ch.Name, bot)
	}
	if err != nil {
		return nil
	}
	return ch
}

// conversationKind is a kind of Slack conversation, with the scope that
// reads its history (conversations.history, conversations.replies).
type conversationKind struct{ name, history string }

var (
	publicChannel  = conversationKind{"public channel", "channels:history"}
	privateChannel = conversationKind{"private channel", "groups:history"}
	groupDM        = conversationKind{"group DM", "mpim:history"}
	directMessage  = conversationKind{"DM", "im:history"}
)

// kindsOf returns the kinds of conversation a target's channel id may
// be: the one Slack said (ch, from conversations.info), else each that
// its id allows.
func kindsOf(id string, ch *slackapi.Channel) []conversationKind {
	switch {
	case ch != nil && ch.IsIM:
		return []conversationKind{directMessage}
	case ch != nil && ch.IsMpIM:
		return []conversationKind{groupDM}
	case ch != nil && (ch.IsPrivate || ch.IsGroup):
		return []conversationKind{privateChannel}
	case ch != nil:
		return []conversationKind{publicChannel}
	case person(id) || strings.HasPrefix(id, "D"):
		return []conversationKind{directMessage} // a person's posts go to the app's DM with them
	case strings.HasPrefix(id, "G"):
		return []conversationKind{privateChannel, groupDM} // a group DM's id, or an older private channel's
	default:
		return []conversationKind{publicChannel, privateChannel} // C…, or a channel's name
	}
}

// checkHistory notes a target's channel whose history the token (with
// the scopes granted) can't read. When Slack fails a post it has made
// (internal_error, or its answer lost), the bridge looks there for the
// message before posting again; it can't without the history scope of
// the conversation's kind, and the request may then show twice. ch is
// what Slack said of the channel, nil when it was not read: then every
// kind its id allows counts.
func checkHistory(id string, ch *slackapi.Channel, granted []string, fs *surface.Findings) {
	kinds := kindsOf(id, ch)
	var lacks, of []string
	for _, k := range kinds {
		if !slices.Contains(granted, k.history) {
			lacks, of = append(lacks, k.history), append(of, k.name)
		}
	}
	if len(lacks) == 0 {
		return
	}
	scopes := strings.Join(lacks, " and ")
	read := "this " + of[0]
	if len(kinds) > 1 {
		read = "it if it is a " + strings.Join(of, " or a ") + " (not checked)"
	}
	fs.Add(surface.Note, "slack channel "+id, "the token lacks %s, needed to read %s: when Slack fails a post it has made here (internal_error, or an answer lost), the bridge can't find the message and posts the request again, which may then show twice; add %s (OAuth & Permissions, Bot Token Scopes) and reinstall the app", scopes, read, scopes)
}

// postTo posts surface.CheckText to channel id and deletes it.
func postTo(ctx context.Context, api *slackapi.Client, id, bot string, fs *surface.Findings) {
	what := "slack channel " + id
	// Deleted where Slack says it went: a user's id posts in a DM with
	// its own id, as the bridge's own posts do.
	posted, ts, err := api.PostMessageContext(ctx, id, slackapi.MsgOptionText(surface.CheckText, true))
	switch {
	case refusedWith(err, "not_in_channel"):
		fs.Add(surface.Problem, what, "@%s is not in it: type /invite @%s in the channel", bot, bot)
		return
	case refusedWith(err, "channel_not_found"):
		fs.Add(surface.Problem, what, channelNotFound, bot)
		return
	case refusedWith(err, "is_archived"):
		fs.Add(surface.Problem, what, "it is archived (is_archived): nothing can be posted there; unarchive it, or name another channel")
		return
	case restricted(err):
		fs.Add(surface.Problem, what, "a setting of the channel or the workspace keeps @%s from posting there (%s): allow it to post (the channel's posting permissions), or name another channel", bot, checkReason(err))
		return
	case err != nil:
		fs.Add(surface.Problem, what, "posting failed: %s", checkReason(err))
		return
	}
	if _, _, err := api.DeleteMessageContext(ctx, posted, ts); err != nil {
		fs.Add(surface.Note, what, "posted a test message, but deleting it failed (%s): delete it by hand", checkReason(err))
		return
	}
	fs.Add(surface.Fine, what, "posted a test message and deleted it")
}

// checkGroup says whether anyone in responders group id may answer:
// users are its members, err why reading them (usergroups.users.list)
// failed.
func checkGroup(id string, users []string, err error, fs *surface.Findings) {
	what := "slack group " + id
	switch {
	case refusedWith(err, "missing_scope"):
		fs.Add(surface.Problem, what, "reading its members needs the usergroups:read scope: add it to the app and reinstall it, or nobody in the group can answer")
	case refusedWith(err, "no_such_subteam"):
		fs.Add(surface.Problem, what, "Slack knows no such user group: nobody in it can answer")
	case err != nil:
		fs.Add(surface.Problem, what, "usergroups.users.list failed: %s", checkReason(err))
	case len(users) == 0:
		fs.Add(surface.Note, what, "it has no members: nobody in it can answer")
	default:
		fs.Add(surface.Fine, what, "%d members may answer", len(users))
	}
}

// mentionedGroup finds the user groups a target's mention pings, if any:
// config validation lets a mention ping several.
var mentionedGroup = regexp.MustCompile(`<!subteam\^(S[A-Z0-9]+)`)

// checkMention says whether the user group id, which a target's mention
// pings, has anyone in it: a mistyped id, or a group emptied since,
// leaves every request posted with a ping that reaches nobody. users are
// its members, err why reading them failed. The mention needs no scope;
// reading the group takes usergroups:read.
func checkMention(id string, users []string, err error, fs *surface.Findings) {
	what := "slack mention <!subteam^" + id + ">"
	switch {
	case refusedWith(err, "missing_scope"):
		fs.Add(surface.Note, what, "not checked: reading the user group needs the usergroups:read scope, which the mention itself does not")
	case refusedWith(err, "no_such_subteam"):
		fs.Add(surface.Problem, what, "Slack knows no such user group, so the mention pings nobody: check the group's id")
	case err != nil:
		fs.Add(surface.Problem, what, "usergroups.users.list failed: %s", checkReason(err))
	case len(users) == 0:
		fs.Add(surface.Problem, what, "the user group has no members, so the mention pings nobody")
	default:
		fs.Add(surface.Fine, what, "pings the user group's %d members", len(users))
	}
}

// restricted reports whether Slack refused a post for a setting that
// keeps the bot from posting where it is a member: who may post in the
// channel (restricted_action), or a read-only, thread-only or
// non-threadable channel (restricted_action_…).
func restricted(err error) bool {
	var se slackapi.SlackErrorResponse
	return errors.As(err, &se) && strings.HasPrefix(se.Err, "restricted_action")
}

// botTokenFix says what to do about Slack refusing slack.bot_token with
// the error err, "" when err is not such a refusal: each of Slack's
// codes has its own cause, and a team setting up sees the code alone.
func botTokenFix(err error) string {
	var se slackapi.SlackErrorResponse
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Err {
	case "invalid_auth", "not_authed":
		return ": Slack knows no such token; copy the Bot User OAuth Token (xoxb-…) again from OAuth & Permissions (reinstalling the app changes it)"
	case "token_revoked", "account_inactive":
		return ": the token was revoked, or the app uninstalled; reinstall the app (Install App) and copy its new Bot User OAuth Token"
	case "token_expired":
		// The token of an app with token rotation on (xoxe.xoxb-), 12
		// hours after Slack issued it. What to do comes first, why after.
		return ": the bot token expired: use a Slack app without token rotation, as the bridge does not renew tokens and an app can't turn rotation off once on"
	}
	return ""
}

// checkReason says why a call failed, without the call's URL's query or
// anything a token could be in: Slack's error code (with the scope it
// needs, for missing_scope), an HTTP status, or what stopped the
// connection.
func checkReason(err error) string {
	var se slackapi.SlackErrorResponse
	var sc slackapi.StatusCodeError
	var ue *url.Error
	switch {
	case errors.As(err, &se) && se.Err == "missing_scope" && se.Needed != "":
		return se.Err + " (needs " + se.Needed + ")"
	case errors.As(err, &se):
		return se.Err
	case errors.As(err, &sc):
		return fmt.Sprintf("HTTP %d", sc.Code)
	case errors.As(err, &ue):
		return surface.Unreachable(ue.URL, ue.Err)
	default:
		return err.Error()
	}
}

// scopesHeader keeps the X-OAuth-Scopes header of the first answer that
// has one: the scopes of the token of the call.
type scopesHeader struct {
	next   http.RoundTripper
	mu     sync.Mutex
	scopes []string
	seen   bool
}

func (h *scopesHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if v, ok := resp.Header["X-Oauth-Scopes"]; ok && len(v) > 0 {
		h.mu.Lock()
		if !h.seen {
			h.seen = true
			for sc := range strings.SplitSeq(v[0], ",") {
				if sc = strings.TrimSpace(sc); sc != "" {
					h.scopes = append(h.scopes, sc)
				}
			}
		}
		h.mu.Unlock()
	}
	return resp, nil
}

// get returns the scopes, ok false when no answer listed them.
func (h *scopesHeader) get() ([]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.scopes, h.seen
}

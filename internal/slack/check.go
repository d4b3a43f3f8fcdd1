package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
// itself does not need) is a note, not a problem.
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
		fs.Add(surface.Problem, "slack", "auth.test with slack.bot_token failed: %s", checkReason(err))
		return fs // every other call would fail the same way
	}
	fs.Add(surface.Fine, "slack", "signed in to %s (%s) as %s (%s)", who.Team, who.TeamID, who.User, who.UserID)
	if granted, ok := scopes.get(); ok {
		if !slices.Contains(granted, "chat:write") {
			fs.Add(surface.Problem, "slack", "the token lacks the chat:write scope, so the bridge can't post: add it (OAuth & Permissions, Bot Token Scopes) and reinstall the app")
		}
		var lacks []string
		for _, s := range []string{"channels:history", "groups:history"} {
			if !slices.Contains(granted, s) {
				lacks = append(lacks, s)
			}
		}
		if len(lacks) > 0 {
			fs.Add(surface.Note, "slack", "the token lacks %s: when Slack fails a post it has made (internal_error), the bridge can't find the message in the channel and posts the request again, which may then show twice; add it and reinstall the app", strings.Join(lacks, " and "))
		}
	}
	if sc.AppToken.Reveal() != "" {
		if _, _, err := api.StartSocketModeContext(ctx); err != nil {
			fs.Add(surface.Problem, "slack", "apps.connections.open with slack.app_token failed: %s", checkReason(err))
		} else {
			fs.Add(surface.Fine, "slack", "slack.app_token opens a Socket Mode connection")
		}
	}

	channels, groups := map[string]bool{}, map[string]bool{}
	empty := map[string]int{} // the finding of each group with no members, by group
	var targets []*config.SlackTarget
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			if t.Slack == nil {
				continue
			}
			targets = append(targets, t.Slack)
			if ch := t.Slack.Channel; !channels[ch] {
				channels[ch] = true
				if post {
					postTo(ctx, api, ch, who.User, &fs)
				} else {
					checkChannel(ctx, api, ch, who.User, &fs)
				}
			}
			for _, g := range t.Slack.Responders.Groups {
				if !groups[g] {
					groups[g] = true
					if n, ok := checkGroup(ctx, api, g, &fs); ok && n == 0 {
						empty[g] = len(fs) - 1
					}
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

// channelNotFound is the finding for channel_not_found, with the bot's name.
const channelNotFound = "Slack knows no such channel, or it is private and @%s is not in it: check the ID (channel details, at the bottom) and invite the bot"

func checkChannel(ctx context.Context, api *slackapi.Client, id, bot string, fs *surface.Findings) {
	what := "slack channel " + id
	if person(id) {
		// A person's id: chat.postMessage posts in the app's DM with
		// them, which conversations.info does not know by that id.
		fs.Add(surface.Note, what, "a person: messages go to @%s's DM with them, which only --post can check", bot)
		return
	}
	ch, err := api.GetConversationInfoContext(ctx, &slackapi.GetConversationInfoInput{ChannelID: id})
	switch {
	case refusedWith(err, "missing_scope"):
		fs.Add(surface.Note, what, "not checked: reading a channel needs the channels:read scope (groups:read for a private one), which the bridge does not; make sure @%s is in it", bot)
	case refusedWith(err, "channel_not_found"):
		fs.Add(surface.Problem, what, channelNotFound, bot)
	case err != nil:
		fs.Add(surface.Problem, what, "conversations.info failed: %s", checkReason(err))
	case ch.IsArchived:
		fs.Add(surface.Problem, what, "#%s is archived: nothing can be posted there", ch.Name)
	case !ch.IsMember:
		fs.Add(surface.Problem, what, "@%s is not in #%s, so its posts there fail (not_in_channel): type /invite @%s in the channel", bot, ch.Name, bot)
	default:
		fs.Add(surface.Fine, what, "#%s, and @%s is in it", ch.Name, bot)
	}
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

// checkGroup reports how many members group id has, ok false when Slack
// did not say.
func checkGroup(ctx context.Context, api *slackapi.Client, id string, fs *surface.Findings) (n int, ok bool) {
	what := "slack group " + id
	users, err := api.GetUserGroupMembersContext(ctx, id)
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
	return len(users), err == nil
}

// checkReason says why a call failed, without the call's URL's query or
// anything a token could be in: Slack's error code, an HTTP status, or
// what stopped the connection.
func checkReason(err error) string {
	var se slackapi.SlackErrorResponse
	var sc slackapi.StatusCodeError
	var ue *url.Error
	switch {
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

package discord

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/surface"
)

// Interaction types Discord sends, and the response types askbridge uses.
const (
	typePing           = 1
	typeCommand        = 2
	typeComponent      = 3
	typeModalSubmit    = 5
	respPong           = 1
	respMessage        = 4 // CHANNEL_MESSAGE_WITH_SOURCE
	respDeferredMsg    = 5 // DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
	respDeferredUpdate = 6
	respUpdate         = 7 // UPDATE_MESSAGE
	respModal          = 9

	flagEphemeral      = 64
	flagSuppressEmbeds = 4 // no link previews

	// Channel types of threads: announcement, public, private.
	channelAnnouncementThread = 10
	channelPublicThread       = 11
	channelPrivateThread      = 12

	componentRow         = 1
	componentSelect      = 3
	componentText        = 4
	componentTextDisplay = 10
	componentLabel       = 18
	// A form's radio group (one of 2-10 options) and checkbox group (any
	// of 1-10), in a Label: on a phone every option shows in the form,
	// where a select opens a list over it.
	componentRadioGroup    = 21
	componentCheckboxGroup = 22
)

// interaction is an interaction as Discord sends it, over the endpoint or
// the gateway. askbridge decodes it itself: discordgo v0.29.0 fails on the
// whole interaction when a modal holds a component it does not know.
type interaction struct {
	ID            string          `json:"id"`
	ApplicationID string          `json:"application_id"`
	Type          int             `json:"type"`
	Token         string          `json:"token"`
	ChannelID     string          `json:"channel_id"` // deprecated by Discord: see where
	Channel       *partialChannel `json:"channel"`
	GuildID       string          `json:"guild_id"`
	Member        *member         `json:"member"` // in a guild
	User          *user           `json:"user"`   // in a DM
	Message       *sourceMessage  `json:"message"`
	Data          json.RawMessage `json:"data"`
}

type member struct {
	User  user     `json:"user"`
	Roles []string `json:"roles"`
	Nick  string   `json:"nick"`
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
}

// sourceMessage is the message a component (or the button that opened a
// modal) is on.
type sourceMessage struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
	Content   string `json:"content"`
	Flags     int    `json:"flags"`
	// Embeds: none on a request's message where Discord drops the
	// bot's embeds (it lacks Embed Links in the channel).
	Embeds []json.RawMessage `json:"embeds"`
}

// partialChannel is the channel an interaction was sent from, as the
// interaction carries it.
type partialChannel struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	ParentID string `json:"parent_id"` // of a thread: the channel it is in
}

// where is the channel the interaction was sent from: channel_id, or,
// without it, the partial channel's id. Discord marks channel_id
// deprecated in favour of the channel field (change log, April 2023) and
// may stop sending it; a click read without its channel would be refused
// on every target.
func (in *interaction) where() string {
	if in.ChannelID == "" && in.Channel != nil {
		return in.Channel.ID
	}
	return in.ChannelID
}

// parent is the channel that holds the thread the interaction was sent
// from, or "" when it was not sent from a thread. (A channel that is not a
// thread has a parent_id too: its category.)
func (in *interaction) parent() string {
	c := in.Channel
	if c == nil || c.ID != in.where() {
		return ""
	}
	switch c.Type {
	case channelAnnouncementThread, channelPublicThread, channelPrivateThread:
		return c.ParentID
	}
	return ""
}

// who is the person who interacted, and the roles they have here.
func (in *interaction) who() (user, []string) {
	if in.Member != nil {
		u := in.Member.User
		if in.Member.Nick != "" {
			u.GlobalName = in.Member.Nick
		}
		return u, in.Member.Roles
	}
	if in.User != nil {
		return *in.User, nil
	}
	return user{}, nil
}

// componentData is the data of a MESSAGE_COMPONENT interaction.
type componentData struct {
	CustomID      string   `json:"custom_id"`
	ComponentType int      `json:"component_type"`
	Values        []string `json:"values"`
}

// modalData is the data of a MODAL_SUBMIT interaction.
type modalData struct {
	CustomID   string          `json:"custom_id"`
	Components []wireComponent `json:"components"`
}

// wireComponent is any component of a submitted modal: an action row or a
// Label (type 18) around a text input, a select or a group. A radio group
// with nothing chosen sends a null value.
type wireComponent struct {
	Type       int             `json:"type"`
	CustomID   string          `json:"custom_id"`
	Value      string          `json:"value"`
	Values     []string        `json:"values"`
	Component  *wireComponent  `json:"component"`
	Components []wireComponent `json:"components"`
}

// field is what one input of a submitted modal holds.
type field struct {
	value  string   // a text input's
	values []string // a select's or a group's: a radio group's choice, if any
}

// fields collects a modal's inputs by custom_id, whatever wraps them.
func fields(cs []wireComponent) map[string]field {
	out := map[string]field{}
	var walk func(c wireComponent)
	walk = func(c wireComponent) {
		if c.CustomID != "" {
			switch c.Type {
			case componentText, componentSelect, componentCheckboxGroup:
				out[c.CustomID] = field{value: c.Value, values: c.Values}
			case componentRadioGroup:
				f := field{values: []string{}}
				if c.Value != "" {
					f.values = append(f.values, c.Value)
				}
				out[c.CustomID] = f
			}
		}
		if c.Component != nil {
			walk(*c.Component)
		}
		for _, sub := range c.Components {
			walk(sub)
		}
	}
	for _, c := range cs {
		walk(c)
	}
	return out
}

// response is an interaction response.
type response struct {
	Type int           `json:"type"`
	Data *responseData `json:"data,omitempty"`
	// sent, when set, is told whether the response reached Discord: an
	// outcome delivered in place (see inPlace) counts as edited only then.
	sent func(error)
}

// delivered tells r's sender, if it waits, whether r reached Discord.
func (r *response) delivered(err error) {
	if r != nil && r.sent != nil {
		r.sent(err)
	}
}

type responseData struct {
	Content         *string                           `json:"content,omitempty"`
	Embeds          *[]*discordgo.MessageEmbed        `json:"embeds,omitempty"`
	Components      any                               `json:"components,omitempty"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
	Flags           int                               `json:"flags,omitempty"`
	CustomID        string                            `json:"custom_id,omitempty"`
	Title           string                            `json:"title,omitempty"`
}

func pong() *response { return &response{Type: respPong} }

// ephemeral tells the person who interacted, and only them, text.
func ephemeral(text string) *response {
	text = surface.Truncate(text, maxContent)
	return &response{Type: respMessage, Data: &responseData{
		Content: &text, Flags: flagEphemeral, AllowedMentions: mentions(""),
	}}
}

// update replaces the message interacted with by rec as it ended.
func update(m message) *response {
	return &response{Type: respUpdate, Data: &responseData{
		Content: &m.content, Embeds: &m.embeds, Components: m.components, AllowedMentions: mentions(""),
	}}
}

func deferredUpdate() *response { return &response{Type: respDeferredUpdate} }

// followUp sends data, an ephemeral message, to the person of interaction
// in after its response: a follow-up message on the interaction's token,
// which Discord takes for 15 minutes after the interaction.
func (s *Surface) followUp(ctx context.Context, in *interaction, data *responseData) error {
	return s.webhook(ctx, "interaction follow-up", http.MethodPost,
		discordgo.EndpointFollowupMessage(in.ApplicationID, in.Token), discordgo.EndpointFollowupMessage(in.ApplicationID, ""), data)
}

// editOriginal edits the message of interaction in's response with data:
// after a DEFERRED_UPDATE_MESSAGE, the message the component was on
// (Edit Original Interaction Response).
func (s *Surface) editOriginal(ctx context.Context, in *interaction, data *responseData) error {
	return s.webhook(ctx, "edit interaction response", http.MethodPatch,
		discordgo.EndpointInteractionResponseActions(in.ApplicationID, in.Token), discordgo.EndpointInteractionResponseActions(in.ApplicationID, ""), data)
}

// webhook makes a call on an interaction's token, endpoint, with body.
// Right after a response through the Interactions Endpoint URL, Discord
// may not know the token yet (404 Unknown Webhook, discord-api-docs#7220):
// that is retried for about 8 s. A 5xx is not: it may have carried the
// call out (429s and failures to connect are, as every call's).
func (s *Surface) webhook(ctx context.Context, name, method, endpoint, bucket string, body *responseData) error {
	once := s.retry
	once.Once = true
	wait := followUpWait
	for attempt := 1; ; attempt++ {
		err := s.callWith(ctx, once, name, func(opts ...discordgo.RequestOption) error {
			_, err := s.api.RequestWithBucketID(method, endpoint, body, bucket, opts...)
			return err
		})
		if err == nil || attempt == followUpAttempts || !refusedWith(err, codeUnknownWebhook) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// A call on an interaction's token refused as Unknown Webhook is tried followUpAttempts times
// in all, followUpWait after the first, doubling: 250 ms to 4 s, about 8 s.
const (
	followUpAttempts   = 6
	followUpWait       = 250 * time.Millisecond
	codeUnknownWebhook = 10015
)

// gone answers an interaction on a message whose request the store no
// longer has (its post's reply was lost, so the request was discarded):
// nothing else would edit that message, so the answer does. Its content
// stays, its controls go, and a line says the request no longer exists.
// Without the message, the person alone is told.
func gone(in *interaction) *response {
	if in.Message == nil {
		return ephemeral(surface.MsgGone)
	}
	line := "*" + surface.MsgGone + "*"
	content := line
	if in.Message.Content != "" {
		content = surface.Truncate(in.Message.Content, maxContent-len(line)-1) + "\n" + line
	}
	return &response{Type: respUpdate, Data: &responseData{
		Content: &content, Components: []any{}, AllowedMentions: mentions(""),
	}}
}

// Modal components, written by hand: discordgo's TextInput always sends a
// label, which a text input inside a Label must not have, and it has no
// Label component.
// textDisplay is a Text Display component (type 10): markdown, up to 4000
// characters, at the top level of a modal among its Labels.
type textDisplay struct {
	Type    int    `json:"type"` // 10
	Content string `json:"content"`
}

type labelComponent struct {
	Type        int    `json:"type"` // 18
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	Component   any    `json:"component"`
}

type modalSelect struct {
	Type      int                          `json:"type"` // 3
	CustomID  string                       `json:"custom_id"`
	MinValues int                          `json:"min_values"`
	MaxValues int                          `json:"max_values"`
	Required  bool                         `json:"required"`
	Options   []discordgo.SelectMenuOption `json:"options"`
}

// groupOption is an option of a radio or checkbox group: unlike a
// select's, it takes no emoji.
type groupOption struct {
	Label       string `json:"label"`
	Value       string `json:"value"`
	Description string `json:"description,omitempty"`
	Default     bool   `json:"default,omitempty"`
}

type radioGroup struct {
	Type     int           `json:"type"` // 21
	CustomID string        `json:"custom_id"`
	Required bool          `json:"required"` // always sent: Discord's default is true
	Options  []groupOption `json:"options"`
}

type checkboxGroup struct {
	Type      int           `json:"type"` // 22
	CustomID  string        `json:"custom_id"`
	MinValues int           `json:"min_values"` // 0 needs required false
	MaxValues int           `json:"max_values"`
	Required  bool          `json:"required"`
	Options   []groupOption `json:"options"`
}

type modalText struct {
	Type        int    `json:"type"` // 4
	CustomID    string `json:"custom_id"`
	Style       int    `json:"style"`
	Placeholder string `json:"placeholder,omitempty"`
	Value       string `json:"value,omitempty"`
	Required    bool   `json:"required"` // always sent: Discord's default is true
	MaxLength   int    `json:"max_length"`
}

package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/surface"
)

// The two calls every request makes, chat.postMessage and chat.update, go
// through chatCall rather than slack-go: Slack answers both with the whole
// message, blocks and bot profile included, and slack-go decodes all of it,
// each block through reflection, for the bridge to read two strings. With
// answers shaped as Slack's, that was a quarter of a replica's CPU under
// bridge bench. The request is the one slack-go sends (a form, the blocks
// as JSON), but with the token in the Authorization header.

// chatMessage is what a posted or edited message says.
type chatMessage struct {
	text   string
	blocks []slackapi.Block
	thread string // thread_ts, to post into a thread
}

// chatReply is the part of a chat.* answer the bridge reads.
type chatReply struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	Meta    struct {
		Messages []string `json:"messages"`
	} `json:"response_metadata"`
}

// postMessage posts m to channel and returns where it went.
func (s *Surface) postMessage(ctx context.Context, channel string, m chatMessage) (ch, ts string, err error) {
	form, err := m.form(channel)
	if err != nil {
		return "", "", err
	}
	r, err := s.chatCall(ctx, "chat.postMessage", form)
	return r.Channel, r.TS, err
}

// updateMessage replaces the message ts in channel with m.
func (s *Surface) updateMessage(ctx context.Context, channel, ts string, m chatMessage) error {
	form, err := m.form(channel)
	if err != nil {
		return err
	}
	form.Set("ts", ts)
	_, err = s.chatCall(ctx, "chat.update", form)
	return err
}

func (m chatMessage) form(channel string) (url.Values, error) {
	blocks, err := json.Marshal(m.blocks)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"channel":      {channel},
		"text":         {m.text},
		"blocks":       {string(blocks)},
		"unfurl_links": {"false"},
		"unfurl_media": {"false"},
	}
	if m.thread != "" {
		form.Set("thread_ts", m.thread)
	}
	return form, nil
}

// chatCall makes one attempt at a chat.* method. Its errors are those
// surface.StatusOf classifies: *surface.HTTPError for an HTTP failure (429
// with its Retry-After), slackapi.SlackErrorResponse for {"ok": false}.
func (s *Surface) chatCall(ctx context.Context, method string, form url.Values) (chatReply, error) {
	var r chatReply
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apiURL+method, strings.NewReader(form.Encode()))
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+s.cfg.BotToken.Reveal())
	resp, err := s.http.Do(req)
	if err != nil {
		return r, err
	}
	defer func() {
		// Read to the end, so that the connection goes back to the pool.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if err := surface.CheckResponse(resp); err != nil {
		return r, err
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("reading the answer: %w", err)
	}
	if !r.OK {
		return r, slackapi.SlackErrorResponse{Err: r.Error, ResponseMetadata: slackapi.ResponseMetadata{Messages: r.Meta.Messages}}
	}
	return r, nil
}

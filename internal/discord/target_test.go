package discord

import (
	"testing"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
)

// TestUnlistedMessageInAChannelTwoTargetsShare: one route posts to one
// channel twice, through a target open to anyone in it and through one
// limited to its responders. A click on a message the request does not
// list among its posts (clicked before its post was recorded, or its
// recording failed) can't say which of the two posted it: it must not pass
// as the open one's, which would let anyone answer the restricted one's
// message. A message that is listed is checked against its own target.
func TestUnlistedMessageInAChannelTwoTargetsShare(t *testing.T) {
	open := &config.DiscordTarget{Channel: "100"}
	restricted := &config.DiscordTarget{Channel: "100", Responders: config.DiscordResponders{Users: []string{"1"}}}
	s := &Surface{
		targets: map[string]*config.DiscordTarget{dispatch.TargetKey("prod", 0): open, dispatch.TargetKey("prod", 1): restricted},
		routes:  map[string][]*config.DiscordTarget{"prod": {open, restricted}},
	}
	openPost := pending.Post{Surface: surfaceName, Channel: "100", MessageID: "500", Target: dispatch.TargetKey("prod", 0)}
	restrictedPost := pending.Post{Surface: surfaceName, Channel: "100", MessageID: "501", Target: dispatch.TargetKey("prod", 1)}
	for _, tc := range []struct {
		name  string
		posts []pending.Post
		msg   string
		want  bool // may eve (no role, not listed) answer?
	}{
		{"nothing recorded yet", nil, "501", false},
		{"the open target's post recorded, not the clicked one", []pending.Post{openPost}, "501", false},
		{"the clicked message is the open target's, listed", []pending.Post{openPost, restrictedPost}, "500", true},
		{"the clicked message is the restricted target's, listed", []pending.Post{openPost, restrictedPost}, "501", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &pending.Record{ID: "r1", Route: "prod", Posts: tc.posts}
			if got := allowed(s.target(rec, "100", "", tc.msg), "2", nil); got != tc.want {
				t.Errorf("eve may answer: %v, want %v", got, tc.want)
			}
		})
	}
	// Targets that agree on who may answer are told apart by none of this.
	same := &config.DiscordTarget{Channel: "100", Responders: config.DiscordResponders{Users: []string{"1"}}}
	s.routes["prod"] = []*config.DiscordTarget{same, restricted}
	if !allowed(s.target(&pending.Record{ID: "r1", Route: "prod"}, "100", "", "501"), "1", nil) {
		t.Error("a responder of both targets was refused on an unlisted message")
	}
}

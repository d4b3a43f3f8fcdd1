package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/apptest"
	"github.com/askbridge/askbridge/internal/discord"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// TestUneditedEndIsEditedByFinisher: Redis ran the resolve script (the
// request is answered and its agent woken) but the replica that ran it
// never edited the Discord message: Redis went away before its reply, say.
// A replica's finisher edits it once pending.FinishGrace has passed.
func TestUneditedEndIsEditedByFinisher(t *testing.T) {
	clk := apptest.NewClock(time.Now())
	rs := startReplicasWith(t, 2, defaultTarget, app.Options{Now: clk.Now})
	id := rs[0].create(t, "/v1/questions", cleanupQuestion())
	msg := rs[0].fake.WaitCalls(t, "create", 1)[0]

	// What the lost reply leaves: the script ran; nobody edits.
	_, err := rs[0].Store().Resolve(context.Background(), id, pending.Resolution{
		Status: seam.StatusAnswered,
		Answer: &seam.Answer{Answers: []seam.AnswerItem{{ID: "cleanup", Selected: []string{"No, keep them"}}}},
		By:     &pending.Responder{Surface: "discord", UserID: "200000000000000002", Name: "bob"},
		Kind:   seam.KindQuestion,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := rs[1].wait(t, "/v1/questions", id); rec.M["status"] != "answered" {
		t.Fatalf("the agent got %v; want answered", rec.M)
	}
	if n := len(rs[0].fake.Calls("edit")); n != 0 {
		t.Fatalf("%d edits within the grace; want none (nothing has taken it over)", n)
	}

	clk.Advance(pending.FinishGrace)
	edit := rs[0].fake.WaitCalls(t, "edit", 1)[0]
	if edit.MessageID != msg.MessageID || !noControls(edit.Body) {
		t.Errorf("edit of %s with %v; want message %s without controls", edit.MessageID, edit.Body, msg.MessageID)
	}
	if txt := discord.Text(edit.Body); !strings.Contains(txt, "bob") || !strings.Contains(txt, "No, keep them") {
		t.Errorf("the edited message does not say who answered what:\n%s", txt)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := rs[0].Store().Count(context.Background(), 0)
		n := c.Unedited
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ended requests still unedited after 10s (%v)", n, err)
		}
		time.Sleep(10 * time.Millisecond) // nothing signals the store's index
	}
	if n := len(rs[0].fake.Calls("edit")); n != 1 {
		t.Errorf("%d edits; want 1 (one finisher took it over)", n)
	}
}

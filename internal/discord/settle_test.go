package discord

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Once another ending on this replica has handed its outcome to a clicked
// message, the click answers with that outcome, whatever its own resolve
// answered, and tells the ending's Finish that it was shown: otherwise
// Finish waits inPlaceWait and edits the message a second time.
func TestSettledShowsAHandedOutcome(t *testing.T) {
	now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	rec := &pending.Record{ID: "abcdefghijklmnop", Kind: seam.KindQuestion, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		Questions: &seam.Questions{Questions: []seam.Question{{ID: "go", Question: "Ship it?", Header: "Ship",
			Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}}
	ended := *rec
	ended.Status, ended.ResolvedAt = seam.StatusCancelled, now
	ended.ResolvedBy = &pending.Responder{Surface: "api", Name: "ci"}
	want := render(&ended, "", false).content

	for name, r := range map[string]resolved{
		"resolved":         {rec: &ended},
		"already resolved": {rec: &ended, err: pending.ErrAlreadyResolved},
		"not found":        {err: pending.ErrNotFound},
		"Redis failed":     {err: errors.New("LOADING Redis is loading the dataset in memory")},
	} {
		t.Run(name, func(t *testing.T) {
			h := &Interactions{s: &Surface{inPlace: newInPlace()}, log: slog.New(slog.DiscardHandler)}
			in := &interaction{Message: &sourceMessage{ID: "1200000000000000001"}}
			sl := h.s.inPlace.register(in.Message.ID)
			sent := h.s.inPlace.deliver(in.Message.ID, &ended)

			resp := h.settled(rec, pending.Resolution{Status: seam.StatusAnswered}, in, sl, r)
			if resp.Type != respUpdate || resp.Data == nil || resp.Data.Content == nil || *resp.Data.Content != want {
				t.Fatalf("answered %+v, want the handed outcome in place", resp)
			}
			resp.delivered(nil)
			select {
			case err := <-sent:
				if err != nil {
					t.Errorf("Finish heard %v", err)
				}
			default:
				t.Error("Finish was not told that the outcome was shown")
			}
		})
	}
}

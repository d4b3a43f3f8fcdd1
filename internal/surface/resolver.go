package surface

import (
	"context"

	"github.com/askbridge/askbridge/internal/pending"
)

// Resolver ends a request, first writer wins, and edits every message
// posted for it; a lost race returns the record as it ended and
// pending.ErrAlreadyResolved. *dispatch.Dispatcher is one. The surfaces'
// callbacks resolve through it.
type Resolver interface {
	Resolve(ctx context.Context, id string, res pending.Resolution) (*pending.Record, error)
}

// What a person is told, ephemerally, on any surface.
const (
	MsgCantAnswer = "You can't answer this: only the people this request is routed to can."
	MsgGone       = "This request no longer exists."
	MsgTrouble    = "The bridge could not record that just now; please try again."
)

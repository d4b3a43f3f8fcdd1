package surface

import (
	"time"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// Links makes the web links of requests that chat messages carry on a
// bridge with a public URL. *web.Links is one.
type Links interface {
	// For is the link of rec that anyone holding it may answer through:
	// the "Open in browser" button of a target that lets anyone in its
	// channel answer.
	For(rec *pending.Record) string
	// ForPerson is a link of rec that answers as who, whom the surface
	// has checked may answer, and when it stops doing so: what a target
	// that limits its responders hands the one person who taps "Open in
	// browser", privately.
	ForPerson(rec *pending.Record, who pending.Responder, now time.Time) (link string, until time.Time)
}

// Overdue reports whether rec, still pending, is past its expiry at now
// (the store's clock, which its times are read against):
// no sweeper has expired it yet, and a link handed out for it would
// already have stopped working.
func Overdue(rec *pending.Record, now time.Time) bool {
	return rec.Status == seam.StatusPending && !rec.ExpiresAt.IsZero() && !now.Before(rec.ExpiresAt)
}

// MsgOverdue is what someone asking for a link to an overdue request is
// told: what they would be told once a sweeper has expired it.
var MsgOverdue = LateReply(&pending.Record{Status: seam.StatusExpired}, Format{})

// WholeIn is where request id is read whole past what its chat messages
// hold, in two parts, as a line names it: where (in) and how to get there
// (how, to follow in). With browser, the message carries an "Open in
// browser" button, which opens the request's page; else the bridge has
// no public URL, and it is in the bridge's web inbox. A person reading
// chat on a phone has no idea where that inbox is.
func WholeIn(id string, browser bool) (in, how string) {
	if browser {
		return "the browser", " (the message's Open in browser button)"
	}
	return "the bridge's web inbox", ", at /r/" + id
}

// MsgNoPublicURL is what someone asking for a personal link is told by a
// bridge that has lost its base_url since it posted the button.
const MsgNoPublicURL = "This bridge has no public URL (base_url) to open requests in a browser."

// PersonalLinkText is what comes with a personal link good until until,
// as the surface writes a time.
func PersonalLinkText(until string) string {
	return "Your own link to this request, good until " + until + ": an answer sent through it is recorded as yours, so keep it to yourself."
}

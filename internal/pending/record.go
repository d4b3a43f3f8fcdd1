package pending

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/internal/seam"
)

// Record is one request as the store keeps it.
type Record struct {
	ID         string
	Kind       seam.Kind
	Status     seam.Status
	Client     string // name of the API token that created it
	ToolCallID string
	Route      string
	Caller     *seam.Caller
	Questions  *seam.Questions // set when Kind is question
	Approval   *seam.Approval  // set when Kind is approval
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never
	// Hash tells this request from another under the same tool_call_id:
	// a hash of what it asks (kind, route, questions or approval, expiry).
	Hash string
	// Withdrawn says the request was withdrawn before it was created (see
	// Store.Withdraw): no request of its client's asked anything under it,
	// unless a create landed since, and found it cancelled.
	Withdrawn bool

	Answer     *seam.Answer   // set when an answered question
	Decision   *seam.Decision // set when a decided approval
	ResolvedAt time.Time
	ResolvedBy *Responder // who answered, decided or dismissed; nil for cancel and expiry

	Posts []Post // messages posted for it, oldest first

	// Lease is the posting lease (unix ms) that the Create or ClaimPosting
	// that returned the record holds, 0 otherwise: DiscardUnposted
	// discards only while it is still the record's.
	Lease int64
}

// Responder is who resolved a request and from where.
type Responder struct {
	Surface string `json:"surface"` // "slack", "discord", "api", "web"
	UserID  string `json:"user_id,omitempty"`
	Name    string `json:"name,omitempty"`
}

// Post is one message posted for a request on a surface.
type Post struct {
	Surface   string    `json:"surface"`
	Target    string    `json:"target,omitempty"` // which route target posted it, for edits
	Channel   string    `json:"channel"`
	MessageID string    `json:"message_id"` // Slack ts, Discord message id
	Thread    string    `json:"thread,omitempty"`
	PostedAt  time.Time `json:"posted_at"`
	// Bare: Discord showed the message without its embeds (the bot
	// lacks Embed Links in its channel), and its content holds the
	// request's text instead; the edit that ends it keeps it so.
	Bare bool `json:"bare,omitempty"`
	// Short says the message went out shorter than its request renders
	// whole, the rest of its text in its thread (Slack refused it whole):
	// its edits keep that shorter text, which the thread goes on from.
	// A post recorded before posts said so reads as false.
	Short bool `json:"short,omitempty"`
	// To is the channel its target was configured with as it posted
	// (Slack: a channel's id or name, or a person's id), or "" for a post
	// recorded before posts said. Routes edited since may have given
	// Target, "route/index", to another target: To tells the one that
	// posted.
	To string `json:"to,omitempty"`
}

func (p Post) field() string {
	return "post:" + p.Surface + ":" + p.Channel + ":" + p.MessageID
}

// Record hash fields.
const (
	fID         = "id"
	fKind       = "kind"
	fStatus     = "status"
	fClient     = "client"
	fToolCallID = "tool_call_id"
	fRoute      = "route"
	fCaller     = "caller"
	fBody       = "body"
	fHash       = "hash"
	fCreated    = "created"
	fExpires    = "expires"
	fResult     = "result"
	fResolved   = "resolved"
	fBy         = "by"
	fPosting    = "posting"         // unix ms until which one replica holds the right to post it
	fCreatedBy  = "created_by_call" // a token of the Create call that stored it
	fWithdrawn  = "withdrawn"       // "1": see Record.Withdrawn
	postPrefix  = "post:"
)

// decodeRecord builds a Record from HGETALL's flat field/value list, as a
// script returns it.
func decodeRecord(flat []any) (*Record, error) {
	return recordFromHash(fieldList(flat))
}

// PostOf is r's recorded post of message msgID on surface, in channel
// when channel is not "" (Slack's message ids are unique per channel;
// Discord's are unique, and its channel may be a thread).
func (r *Record) PostOf(surface, channel, msgID string) (Post, bool) {
	for _, p := range r.Posts {
		if p.Surface == surface && p.MessageID == msgID && (channel == "" || p.Channel == channel) {
			return p, true
		}
	}
	return Post{}, false
}

// fields are a record's hash as the store reads it, where it lies:
// go-redis's map of an HGETALL (fieldMap), or the flat field/value list of
// one that a script returns (fieldList), read without a map made of it: a
// map of a record's twenty-odd fields takes a kilobyte.
type fields struct {
	m    map[string]string
	flat []any // field, value, field, value...; HGETALL names each field once
}

func fieldMap(m map[string]string) fields { return fields{m: m} }

func fieldList(flat []any) fields { return fields{flat: flat} }

func (h fields) get(name string) string {
	if h.m != nil {
		return h.m[name]
	}
	for i := 0; i+1 < len(h.flat); i += 2 {
		if k, _ := h.flat[i].(string); k == name {
			v, _ := h.flat[i+1].(string)
			return v
		}
	}
	return ""
}

// all yields every field and its value.
func (h fields) all(yield func(name, value string) bool) {
	for k, v := range h.m {
		if !yield(k, v) {
			return
		}
	}
	for i := 0; i+1 < len(h.flat); i += 2 {
		k, _ := h.flat[i].(string)
		v, _ := h.flat[i+1].(string)
		if !yield(k, v) {
			return
		}
	}
}

// resolved returns a copy of the pending record r as res ended it at now,
// with the posts in postFields, a flat field/value list.
func (r *Record) resolved(res Resolution, now time.Time, postFields []any) (*Record, error) {
	posts, err := decodePosts(fieldList(postFields))
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", r.ID, err)
	}
	out := *r
	out.Status, out.ResolvedAt = res.Status, time.UnixMilli(now.UnixMilli()).UTC()
	out.Answer, out.Decision, out.ResolvedBy = res.Answer, res.Decision, res.By
	out.Posts = posts
	return &out, nil
}

func recordFromHash(h fields) (*Record, error) {
	if h.get(fID) == "" {
		return nil, ErrNotFound
	}
	r := &Record{
		ID:         h.get(fID),
		Kind:       seam.Kind(h.get(fKind)),
		Status:     seam.Status(h.get(fStatus)),
		Client:     h.get(fClient),
		ToolCallID: h.get(fToolCallID),
		Route:      h.get(fRoute),
		Hash:       h.get(fHash),
		CreatedAt:  msTime(h.get(fCreated)),
		ExpiresAt:  msTime(h.get(fExpires)),
		ResolvedAt: msTime(h.get(fResolved)),
		Withdrawn:  h.get(fWithdrawn) == "1",
	}
	if err := r.decode(h); err != nil {
		return nil, fmt.Errorf("record %s: %w", r.ID, err)
	}
	return r, nil
}

// decodeEnd reads how a request ended: its answer or decision and who.
func (r *Record) decodeEnd(h fields) error {
	if res := h.get(fResult); res != "" && r.Status == seam.StatusAnswered {
		var into any
		switch r.Kind {
		case seam.KindQuestion:
			r.Answer = new(seam.Answer)
			into = r.Answer
		case seam.KindApproval:
			r.Decision = new(seam.Decision)
			into = r.Decision
		}
		if err := json.Unmarshal([]byte(res), into); err != nil {
			return fmt.Errorf("result: %w", err)
		}
	}
	if by := h.get(fBy); by != "" {
		r.ResolvedBy = new(Responder)
		if err := json.Unmarshal([]byte(by), r.ResolvedBy); err != nil {
			return fmt.Errorf("by: %w", err)
		}
	}
	return nil
}

// storedQuestion is seam.Question without its UnmarshalJSON, which also
// takes the model-facing multi_select spelling and so reads each question
// three times: the store writes only what seam.Question marshals to, and
// decodes it on every read of a record.
type storedQuestion seam.Question

func (r *Record) decode(h fields) error {
	if c := h.get(fCaller); c != "" {
		r.Caller = new(seam.Caller)
		if err := json.Unmarshal([]byte(c), r.Caller); err != nil {
			return fmt.Errorf("caller: %w", err)
		}
	}
	switch r.Kind {
	case seam.KindQuestion:
		var stored struct {
			Questions []storedQuestion `json:"questions"`
		}
		if err := json.Unmarshal([]byte(h.get(fBody)), &stored); err != nil {
			return fmt.Errorf("body: %w", err)
		}
		r.Questions = &seam.Questions{Questions: make([]seam.Question, len(stored.Questions))}
		for i, q := range stored.Questions {
			r.Questions.Questions[i] = seam.Question(q)
		}
	case seam.KindApproval:
		r.Approval = new(seam.Approval)
		if err := json.Unmarshal([]byte(h.get(fBody)), r.Approval); err != nil {
			return fmt.Errorf("body: %w", err)
		}
	default:
		return fmt.Errorf("unknown kind %q", r.Kind)
	}
	if err := r.decodeEnd(h); err != nil {
		return err
	}
	posts, err := decodePosts(h)
	r.Posts = posts
	return err
}

// decodePosts returns the posts among a record's fields, oldest first.
func decodePosts(h fields) ([]Post, error) {
	var posts []Post
	for k, v := range h.all {
		if !strings.HasPrefix(k, postPrefix) {
			continue
		}
		var p Post
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		posts = append(posts, p)
	}
	SortPosts(posts)
	return posts, nil
}

// SortPosts puts posts in the order a record lists them: oldest first.
func SortPosts(posts []Post) {
	sort.Slice(posts, func(i, j int) bool {
		if !posts[i].PostedAt.Equal(posts[j].PostedAt) {
			return posts[i].PostedAt.Before(posts[j].PostedAt)
		}
		return posts[i].field() < posts[j].field()
	})
}

func msTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Package pending keeps pending requests in Redis: creating them
// idempotently, resolving them exactly once across replicas, recording the
// messages posted for them, expiring them, and waking the agents that wait.
package pending

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

// Errors the store returns; test them with errors.Is.
var (
	ErrNotFound        = errors.New("no such request")
	ErrAlreadyResolved = errors.New("request is already resolved")
	ErrConflict        = errors.New("tool_call_id is already used by a different request")
	ErrNotDue          = errors.New("request is not due to expire")
	ErrExists          = errors.New("the request exists")
	// ErrExpired is ErrAlreadyResolved for a resolution that came after
	// the request's expiry, before any sweeper: the request was expired by
	// it. Whoever gets it does what a sweeper does for an expiry.
	ErrExpired     = fmt.Errorf("%w: it expired before this resolution", ErrAlreadyResolved)
	ErrUnavailable = errors.New("redis is unavailable")
	// ErrNotOffered is a Resolution whose Offered label is none of the
	// request's options: nothing was changed.
	ErrNotOffered = errors.New("the answer is not one the request offers")
	// ErrOtherRoute is a Resolution whose Route is not the request's:
	// nothing was changed.
	ErrOtherRoute = errors.New("the request is not on the route the answer came through")
)

// Options tune a Store. The zero value of every field has a default.
type Options struct {
	Prefix      string           // key prefix; default "askbridge:"
	Retention   time.Duration    // how long finished records stay; default 7 days
	AuditMaxLen int64            // approximate cap of each audit stream shard; default 10,000
	Recheck     time.Duration    // how often a waiter re-reads its record without a wake-up; default 10 s
	Linger      time.Duration    // under load, how long a write that can wait does for others to share its round trip; default 2 ms
	Now         func() time.Time // the clock; default time.Now
	Logger      *slog.Logger
	// Outage reports whether a Redis outage is under way and logged for
	// the whole process (app's redisHealth): failures of it then log at
	// debug (LogLevel), and Ready says not ready. Nil: never.
	Outage func() bool
}

// Store is the pending-request store on one Redis deployment. Any number of
// Stores, in any number of processes, may share it.
type Store struct {
	rdb  redis.UniversalClient
	keys keys
	opt  Options
	log  *slog.Logger
	w    *waiters
	// sharded: on a Redis Cluster, wake-ups go through sharded pub/sub,
	// one channel per shard (keys.shardWake).
	sharded bool

	// subscribed counts the times Run has subscribed to every wake-up
	// channel, woken the waiters they serve and loaded the scripts since:
	// once when all are first up, then once per channel that comes back.
	subscribed atomic.Int64

	batch *batcher
	// closedSaid is when a subscription's connection that the server
	// closed was last logged at info (listen), in Unix nanoseconds.
	closedSaid atomic.Int64
}

// New returns a Store on rdb. Call Run to receive wake-ups from other
// replicas; until it runs, waiters fall back to re-reading.
func New(rdb redis.UniversalClient, opt Options) *Store {
	if opt.Prefix == "" {
		opt.Prefix = "askbridge:"
	}
	if opt.Retention <= 0 {
		opt.Retention = 7 * 24 * time.Hour
	}
	if opt.AuditMaxLen <= 0 {
		opt.AuditMaxLen = 10000
	}
	if opt.Recheck <= 0 {
		opt.Recheck = 10 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Linger <= 0 {
		opt.Linger = 2 * time.Millisecond
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	_, sharded := rdb.(*redis.ClusterClient)
	return &Store{rdb: rdb, keys: newKeys(opt.Prefix), opt: opt, log: opt.Logger, w: newWaiters(), sharded: sharded,
		batch: &batcher{rdb: rdb, linger: opt.Linger, timeout: batchSendTimeout}}
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return unavailable(s.rdb.Ping(ctx).Err())
}

// Ready checks that the store serves calls: Redis answers, and no outage
// is under way (Options.Outage). A PING alone says too little after an
// outage: once as many dials have failed as it has connections, go-redis's
// pool answers every call that needs a new connection with its last dial
// error until a background dial (once a second) succeeds, while a
// connection it already holds, dialed as Redis came back, answers a PING.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	if s.outage() {
		return fmt.Errorf("%w: calls are not yet served again", ErrUnavailable)
	}
	return nil
}

// scripts are every Lua script the Store runs.
var scripts = []*redis.Script{
	createScript, resolveScript, addPostScript, discardScript, claimPostingScript,
	editedScript, claimFinishScript, leaseScript, releaseScript, setThreadScript, forgetThreadScript, withdrawScript,
	releasePostingScript, dropGoneScript,
}

// LoadScripts loads the Store's scripts into Redis, on every master of a
// cluster. Without it, the first run of a script on each node (and after each
// restart or failover) costs a NOSCRIPT reply and a second round trip.
func (s *Store) LoadScripts(ctx context.Context) error {
	return loadScripts(ctx, s.rdb)
}

func loadScripts(ctx context.Context, rdb redis.Scripter) error {
	for _, sc := range scripts {
		if err := sc.Load(ctx, rdb).Err(); err != nil {
			return unavailable(fmt.Errorf("load scripts: %w", err))
		}
	}
	return nil
}

// unavailable marks a Redis transport error so the API can answer 503.
func unavailable(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// A dial or read that timed out: Redis did not answer. Go's
		// network timeouts also read as context.DeadlineExceeded.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var reply redis.Error
	if errors.As(err, &reply) && !transientReply(reply.Error()) {
		return err // Redis answered, and the answer is a bug of ours (a script error, a wrong type)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// transientReply reports whether an error reply of Redis means "not now":
// loading, failing over, busy, out of memory, or refusing writes until it
// can save a snapshot again (MISCONF, stop-writes-on-bgsave-error).
func transientReply(msg string) bool {
	return replyIs(msg, "LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "MASTERDOWN", "OOM", "NOREPLICAS", "MISCONF", "MOVED", "ASK")
}

// NotNow reports whether err is a reply of Redis that means "not now"
// (transientReply), which the Store's calls report as ErrUnavailable:
// not a setting to change. MISCONF answers even PING while Redis can't
// save.
func NotNow(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && transientReply(reply.Error())
}

// replyIs reports whether the error reply msg starts with one of codes.
// Redis before 7.0 wraps the error of a command a script ran in one of
// its own ("ERR Error running script (call to f_…): @user_script:1:
// @user_script: 1: -OOM command not allowed …"): the command's is read.
func replyIs(msg string, codes ...string) bool {
	if strings.HasPrefix(msg, "ERR Error running script") {
		if i := strings.LastIndex(msg, ": -"); i >= 0 {
			msg = msg[i+len(": -"):]
		}
	}
	for _, c := range codes {
		if strings.HasPrefix(msg, c) {
			return true
		}
	}
	return false
}

// NewRequest is what Create stores.
type NewRequest struct {
	ID         string // optional: NewID's, for a caller that must know the id first
	Kind       seam.Kind
	Client     string // API token name; idempotency is per client
	ToolCallID string // optional; makes Create idempotent
	Route      string
	Caller     *seam.Caller
	Questions  *seam.Questions // for KindQuestion, validated
	Approval   *seam.Approval  // for KindApproval, validated
	ExpiresIn  time.Duration   // as the request set it; 0: DefaultExpiresIn
	// DefaultExpiresIn is the expiry of a request that sets none (its
	// route's, or the store's default); 0: never. The same request sent
	// again under its tool_call_id after the default changed (a config
	// change and a restart) is still the same request (see sameDefaulted).
	DefaultExpiresIn time.Duration
}

// expiresIn is the expiry nr's request gets; 0: never.
func (nr NewRequest) expiresIn() time.Duration {
	if nr.ExpiresIn == 0 {
		return nr.DefaultExpiresIn
	}
	return nr.ExpiresIn
}

// createScript stores a new request unless its id exists.
//
// KEYS[1] record, KEYS[2] due index, KEYS[3] audit stream, KEYS[4] finish
// index (unused), KEYS[5] open index of the request's kind.
// ARGV[1] id, ARGV[2] body hash, ARGV[3] now ms, ARGV[4] expires ms (0: never),
// ARGV[5] audit cap, ARGV[6] client, ARGV[7] route, ARGV[8..] field/value pairs.
// Returns {0} when created, {1, HGETALL} when the same request exists or
// the id was withdrawn before it was created (see Withdraw), {2} when the
// id holds a different request. A withdrawn record, which names no route
// until a create lands, takes the route of the first create that does.
var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  local held = redis.call('HMGET', KEYS[1], 'hash', 'withdrawn')
  if held[2] == '1' then
    redis.call('HSETNX', KEYS[1], 'route', ARGV[7])
  end
  if held[1] == ARGV[2] or held[2] == '1' then
    return {1, redis.call('HGETALL', KEYS[1])}
  end
  return {2}
end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
if ARGV[4] ~= '0' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'event', 'created', 'id', ARGV[1], 'client', ARGV[6], 'route', ARGV[7])
return {0}
`)

// Create stores a pending request in one round trip. With a ToolCallID,
// the same client creating the same request again gets the existing record
// and created == false; a different request under that ToolCallID is
// ErrConflict. A call whose script go-redis sent again, its first reply
// lost, still gets created == true.
func (s *Store) Create(ctx context.Context, nr NewRequest) (rec *Record, created bool, err error) {
	body, hash, earlier, err := nr.encode()
	if err != nil {
		return nil, false, err
	}
	id := nr.ID
	if id == "" {
		id = NewID(nr)
	}
	// call tells this call's create from another's: go-redis sends the
	// script again when its reply is lost, and the run that finds the
	// request created by call is still this call's create.
	call := callToken()
	now := s.opt.Now()
	lease := now.Add(PostingLease).UnixMilli()
	var expires int64
	if d := nr.expiresIn(); d > 0 {
		expires = now.Add(d).UnixMilli()
	}
	var caller []byte
	if nr.Caller != nil {
		caller, _ = json.Marshal(nr.Caller)
	}
	args := []any{id, hash, now.UnixMilli(), expires, s.opt.AuditMaxLen, nr.Client, nr.Route,
		fID, id, fKind, string(nr.Kind), fStatus, string(seam.StatusPending), fClient, nr.Client,
		fToolCallID, nr.ToolCallID, fRoute, nr.Route, fCaller, caller, fBody, body, fHash, hash,
		fCreated, now.UnixMilli(), fExpires, expires, fPosting, lease, fCreatedBy, call}
	cmd, over := s.batch.runOrLeave(ctx, createScript, s.keys.request(id, nr.Kind), args...)
	res, err := cmd.Slice()
	if err != nil {
		err = fmt.Errorf("create %s: %w", id, unavailable(err))
		if IsUnavailable(err) || over != nil {
			return nil, false, &LostCreateError{ID: id, Lease: lease, Over: over, err: err}
		}
		return nil, false, err
	}
	switch code(res) {
	case 0:
		// What the script stored, without reading it back.
		rec := &Record{
			ID: id, Kind: nr.Kind, Status: seam.StatusPending, Client: nr.Client,
			ToolCallID: nr.ToolCallID, Route: nr.Route, Caller: nr.Caller,
			Questions: nr.Questions, Approval: nr.Approval, Hash: hash,
			CreatedAt: time.UnixMilli(now.UnixMilli()).UTC(),
			Lease:     lease,
		}
		if expires > 0 {
			rec.ExpiresAt = time.UnixMilli(expires).UTC()
		}
		return rec, true, nil
	case 1:
		flat := res[1].([]any)
		rec, err := decodeRecord(flat)
		// Created by this call: go-redis sent it again after a lost reply.
		h := fieldList(flat)
		created := h.get(fCreatedBy) == call
		if created && rec != nil {
			rec.Lease, _ = strconv.ParseInt(h.get(fPosting), 10, 64)
		}
		return rec, created, err
	}
	if len(earlier) > 0 || nr.ExpiresIn == 0 {
		// The request may have been created by a bridge that hashed it
		// otherwise (before canonical hashing), or that had another
		// default expiry: the same request, if one of those hashes
		// matches.
		rec, err := s.Get(ctx, id)
		switch {
		case err == nil && (slices.Contains(earlier, rec.Hash) || nr.sameDefaulted(rec)):
			return rec, false, nil
		case err != nil && !errors.Is(err, ErrNotFound):
			return nil, false, fmt.Errorf("create %s: %w", id, err)
		}
	}
	return nil, false, fmt.Errorf("create %s (tool_call_id %q): %w", id, nr.ToolCallID, ErrConflict)
}

// encode returns the request body and the hash that tells one request from
// another under the same tool_call_id. The caller is left out of the hash:
// it only says who asks, and an agent restarted under a new agent id must
// still re-attach to its question.
//
// An approval's arguments are hashed in canonical form (keys sorted at
// every depth, numbers as written), so that a repeated create whose
// arguments differ only in key order, as a re-serialised map's may, is the
// same request. earlier are the hashes bridges before that may have given
// the same request, where they differ from hash: of the arguments in the
// order they came, and, for arguments absent, of "arguments": null, which
// they kept as sent and Validate now drops; of a question's typed prefill
// as sent ("yes"), which Validate now makes canonical ("true").
func (nr NewRequest) encode() (body []byte, hash string, earlier []string, err error) {
	var hashed []byte // body, with an approval's arguments canonical
	switch nr.Kind {
	case seam.KindQuestion:
		body, err = json.Marshal(nr.Questions)
		hashed = body
	case seam.KindApproval:
		if body, err = json.Marshal(nr.Approval); err != nil {
			break
		}
		a := *nr.Approval
		if a.Arguments, err = canonicalJSON(a.Arguments); err != nil {
			break
		}
		hashed, err = json.Marshal(&a)
	default:
		return nil, "", nil, fmt.Errorf("unknown kind %q", nr.Kind)
	}
	if err != nil {
		return nil, "", nil, err
	}
	if hash, err = nr.hash(hashed); err != nil {
		return nil, "", nil, err
	}
	// also adds the hash of b, a body an earlier bridge hashed, to
	// earlier; err is b's encoding's.
	also := func(b []byte, err error) error {
		if err != nil {
			return err
		}
		h, err := nr.hash(b)
		earlier = append(earlier, h)
		return err
	}
	if !bytes.Equal(hashed, body) {
		if err := also(body, nil); err != nil {
			return nil, "", nil, err
		}
	}
	if nr.Kind == seam.KindApproval && nr.Approval.Arguments == nil {
		a := *nr.Approval
		a.Arguments = json.RawMessage("null")
		if err := also(json.Marshal(&a)); err != nil {
			return nil, "", nil, err
		}
	}
	if nr.Kind == seam.KindQuestion && slices.ContainsFunc(nr.Questions.Questions, func(q seam.Question) bool { return q.Input != nil && q.Input.Sent() != q.Input.Value }) {
		qs := seam.Questions{Questions: slices.Clone(nr.Questions.Questions)}
		for i, q := range qs.Questions {
			if q.Input != nil {
				in := *q.Input
				in.Value = in.Sent()
				qs.Questions[i].Input = &in
			}
		}
		if err := also(json.Marshal(&qs)); err != nil {
			return nil, "", nil, err
		}
	}
	return body, hash, earlier, nil
}

// sameDefaulted reports whether rec is nr's request, which sets no expiry,
// as created with the default expiry it got then: the hash holds the
// expiry a request gets, and a default may change between a create and
// its retry (a config change and a restart, or replicas part-way through
// one) while what the agent sends stays the same.
func (nr NewRequest) sameDefaulted(rec *Record) bool {
	if nr.ExpiresIn != 0 {
		return false
	}
	then := nr
	then.DefaultExpiresIn = 0
	if !rec.ExpiresAt.IsZero() {
		then.DefaultExpiresIn = rec.ExpiresAt.Sub(rec.CreatedAt)
	}
	if then.DefaultExpiresIn == nr.DefaultExpiresIn {
		return false // hashed so already
	}
	_, hash, earlier, err := then.encode()
	return err == nil && (hash == rec.Hash || slices.Contains(earlier, rec.Hash))
}

func (nr NewRequest) hash(body []byte) (string, error) {
	whole, err := json.Marshal(struct {
		Kind      seam.Kind       `json:"kind"`
		Route     string          `json:"route"`
		Body      json.RawMessage `json:"body"`
		ExpiresIn time.Duration   `json:"expires_in"`
	}{nr.Kind, nr.Route, body, nr.expiresIn()})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(whole)
	return hex.EncodeToString(sum[:16]), nil
}

// canonicalJSON returns raw with the keys of every object sorted, as
// encoding/json writes a map. Numbers keep their text (UseNumber), so that
// integers past 2^53 that differ still differ.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns the id Create gives nr: short and URL-safe, derived from
// the client, kind and tool_call_id when there is one, so that a retried
// create finds its record without a second key; random otherwise.
func NewID(nr NewRequest) string {
	if nr.ToolCallID != "" {
		return IDFor(nr.Client, nr.Kind, nr.ToolCallID)
	}
	var b [10]byte // 80 bits, 16 characters
	rand.Read(b[:])
	return idEncoding.EncodeToString(b[:])
}

// IDFor returns the id of the request a client creates under toolCallID,
// whether or not it exists: an agent that lost a create's reply can read or
// cancel the request by its tool_call_id without creating it.
func IDFor(client string, kind seam.Kind, toolCallID string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + string(kind) + "\x00" + toolCallID))
	return idEncoding.EncodeToString(sum[:10])
}

// withdrawScript records a request withdrawn before it was created: a
// record cancelled at once, kept as long as an ended request, which a
// create of the id finds ended (createScript). It has no route: the
// create names it, if one lands.
//
// KEYS[1] record, KEYS[3] audit stream (as createScript's keys).
// ARGV[1] id, ARGV[2] kind, ARGV[3] client, ARGV[4] tool_call_id,
// ARGV[5] now ms, ARGV[6] retention ms, ARGV[7] audit cap.
// Returns 1 when recorded, 0 when the id holds a request already.
var withdrawScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'kind', ARGV[2], 'status', 'cancelled', 'client', ARGV[3],
  'tool_call_id', ARGV[4], 'body', '{}', 'created', ARGV[5], 'resolved', ARGV[5], 'withdrawn', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[7], '*', 'event', 'withdrawn', 'id', ARGV[1], 'client', ARGV[3])
return 1
`)

// Withdraw records that client withdrew the request of kind under
// toolCallID before it exists: the agent's turn ended while its create
// was still on the way, before its reply told the agent the id. A create
// of it that lands later finds it cancelled, and nothing is posted. It
// returns the withdrawn record, or ErrExists when the request exists
// (created in the meantime): the caller cancels it as any other.
func (s *Store) Withdraw(ctx context.Context, client string, kind seam.Kind, toolCallID string) (*Record, error) {
	id := IDFor(client, kind, toolCallID)
	now := s.opt.Now()
	n, err := withdrawScript.Run(ctx, s.rdb, s.keys.request(id), id, string(kind), client, toolCallID,
		now.UnixMilli(), s.opt.Retention.Milliseconds(), s.opt.AuditMaxLen).Int()
	switch {
	case err != nil:
		return nil, fmt.Errorf("withdraw %s: %w", id, unavailable(err))
	case n == 0:
		return nil, fmt.Errorf("withdraw %s: %w", id, ErrExists)
	}
	at := time.UnixMilli(now.UnixMilli()).UTC()
	rec := &Record{ID: id, Kind: kind, Status: seam.StatusCancelled, Client: client, ToolCallID: toolCallID,
		CreatedAt: at, ResolvedAt: at, Withdrawn: true}
	switch kind {
	case seam.KindQuestion:
		rec.Questions = &seam.Questions{Questions: []seam.Question{}}
	case seam.KindApproval:
		rec.Approval = &seam.Approval{}
	}
	return rec, nil
}

// Now is the store's clock: what a record's times (created, expires) are
// read against.
func (s *Store) Now() time.Time { return s.opt.Now() }

// Get reads a request. One discarded by DiscardUnposted within
// DiscardedFor is a *DiscardedError, which is ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.record(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", id, unavailable(err))
	}
	rec, err := recordFromHash(fieldMap(h))
	if errors.Is(err, ErrNotFound) {
		return nil, s.gone(ctx, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", id, err)
	}
	return rec, nil
}

// gone is the error of reading request id, which is not there.
func (s *Store) gone(ctx context.Context, id string) error {
	note, err := s.rdb.Get(ctx, s.keys.gone(id)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("get %s: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("get %s: %w", id, unavailable(err))
	}
	client, why, _ := strings.Cut(note, "\n")
	return fmt.Errorf("get %s: %w", id, &DiscardedError{Client: client, Why: why})
}

// DiscardedError is the ErrNotFound of a request that DiscardUnposted
// discarded, within DiscardedFor.
type DiscardedError struct {
	Client string // who created it
	Why    string // the message of the seam.ErrNoProvider its create returned
}

func (e *DiscardedError) Error() string { return ErrNotFound.Error() + " (discarded: " + e.Why + ")" }

func (e *DiscardedError) Unwrap() error { return ErrNotFound }

// Resolution ends a pending request.
type Resolution struct {
	Status   seam.Status    // answered, cancelled, dismissed or expired
	Answer   *seam.Answer   // for an answered question, normalised
	Decision *seam.Decision // for a decided approval, normalised
	By       *Responder     // who; nil for cancel and expiry
	Kind     seam.Kind      // when set, a request of another kind is ErrNotFound
	Owner    string         // when set, a request of another client is ErrNotFound
	IfDue    bool           // resolve only if its expiry has passed (the sweeper)
	// From, when set, is the record of the request as the caller last read
	// it: Resolve then returns it as this resolution ended it, with its
	// posts as they are now, instead of reading the whole record back.
	From *Record
	// Hash, when set, is Record.Hash of the request the caller means: a
	// request under the id that asks anything else (the one meant ended,
	// and another was created under its tool_call_id) is ErrNotFound. It
	// lets a caller that has not read the request, only what it posted,
	// resolve it knowing that its answer fits.
	Hash string
	// Offered, when set, is the option label the answer picks, taken from
	// a click's own payload (Slack's one-click buttons carry it, with the
	// question's id) rather than from the stored request: unless the
	// request asks one single-choice question with no typed field, the
	// Answer's one item names it and Offered is one of its options,
	// nothing changes and Resolve returns ErrNotOffered.
	Offered string
	// Route, when set, is the route the answer came through, taken from a
	// click's own payload (the target a Slack button names) rather than
	// from the stored request: a request on another route is not
	// changed, and Resolve returns ErrOtherRoute. Hash alone does not
	// bind the click to its route's responders: a request's hash is no
	// secret to whoever can see its message.
	Route string
}

// resolveScript ends a pending request: first writer wins. A request with
// posted messages goes into the finish index in the same step, so that its
// messages are edited even if whoever ended it never does (see Edited).
//
// KEYS[1] record, KEYS[2] due index, KEYS[3] audit stream, KEYS[4] finish
// index, KEYS[5..] the open index of every kind (the caller need not know
// the request's kind).
// ARGV[1] id, ARGV[2] status, ARGV[3] result JSON, ARGV[4] responder JSON,
// ARGV[5] now ms, ARGV[6] retention ms, ARGV[7] required kind or empty,
// ARGV[8] required owner or empty, ARGV[9] '1' to resolve only when due,
// ARGV[10] wake channel, ARGV[11] audit cap, ARGV[12] responder surface,
// ARGV[13] responder user id, ARGV[14] when a sweeper may take over the
// edits, ms, ARGV[15] '1' to return only the post fields when resolved now,
// ARGV[16] the required hash, or empty, ARGV[17] on a cluster the shard's
// wake channel, or empty, ARGV[18] a token of this call, kept on the
// record it ends, ARGV[19] an option's label, or empty: the request must
// then ask one single-choice question with no typed field, whose id is
// ARGV[21] and which offers that label, ARGV[20] the required route, or
// empty.
// Publishes "id\nstatus\nresolved ms\nresponder JSON\nresult JSON", so
// waiters need not read the record again: with SPUBLISH on the shard's
// channel on a cluster, else (or where SPUBLISH is unknown: Redis before
// 7.0) with PUBLISH on the wake channel.
// A request past its expiry that no sweeper has expired yet is expired
// here instead, as the sweeper would have: a resolution that comes after
// the expiry comes too late, however soon the sweep would have been.
// A request this very call ended (its token is on the record) is answered
// as that run was: the reply was lost and go-redis sent the script again.
// Returns {0} not found, {1, HGETALL or the post fields} resolved now,
// {2, HGETALL} already resolved, {3} not due, {4, HGETALL} expired now,
// {5} not an option of the request (ARGV[19]), {6} not on the route
// ARGV[20].
var resolveScript = redis.NewScript(`
local function ended(done, fresh)
  local all = redis.call('HGETALL', KEYS[1])
  local posts = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 5) == 'post:' then
      posts[#posts + 1] = all[i]
      posts[#posts + 1] = all[i + 1]
    end
  end
  if fresh and #posts > 0 then redis.call('ZADD', KEYS[4], ARGV[14], ARGV[1]) end
  if done == 1 and ARGV[15] == '1' then return {1, posts} end
  return {done, all}
end
local rec = redis.call('HMGET', KEYS[1], 'status', 'kind', 'client', 'expires', 'hash', 'ended_by_call', 'route')
if not rec[1] then return {0} end
if ARGV[7] ~= '' and rec[2] ~= ARGV[7] then return {0} end
if ARGV[8] ~= '' and rec[3] ~= ARGV[8] then return {0} end
if ARGV[16] ~= '' and rec[5] ~= ARGV[16] then return {0} end
if ARGV[20] ~= '' and rec[7] ~= ARGV[20] then return {6} end
if ARGV[19] ~= '' then
  local ok, body = pcall(cjson.decode, redis.call('HGET', KEYS[1], 'body') or '')
  local qs = ok and type(body) == 'table' and body['questions']
  local q = type(qs) == 'table' and #qs == 1 and qs[1]
  local offered = false
  if type(q) == 'table' and q['id'] == ARGV[21] and q['multiSelect'] ~= true
      and (q['input'] == nil or q['input'] == cjson.null) and type(q['options']) == 'table' then
    for _, o in ipairs(q['options']) do
      if type(o) == 'table' and o['label'] == ARGV[19] then offered = true break end
    end
  end
  if not offered then return {5} end
end
if rec[1] ~= 'pending' then
  if ARGV[18] ~= '' and rec[6] == ARGV[18] then
    if rec[1] == ARGV[2] then return ended(1, false) end
    return ended(4, false)
  end
  return {2, redis.call('HGETALL', KEYS[1])}
end
local status, result, by, surface, user, done = ARGV[2], ARGV[3], ARGV[4], ARGV[12], ARGV[13], 1
local exp = tonumber(rec[4])
if ARGV[9] == '1' then
  if exp == 0 or exp > tonumber(ARGV[5]) then return {3} end
elseif exp ~= 0 and exp <= tonumber(ARGV[5]) then
  status, result, by, surface, user, done = 'expired', '', '', '', '', 4
end
redis.call('HSET', KEYS[1], 'status', status, 'result', result, 'by', by, 'resolved', ARGV[5], 'ended_by_call', ARGV[18])
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 5, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[11], '*', 'event', status, 'id', ARGV[1], 'surface', surface, 'user', user)
local wake = ARGV[1] .. '\n' .. status .. '\n' .. ARGV[5] .. '\n' .. by .. '\n' .. result
local sent = ARGV[17] ~= '' and redis.pcall('SPUBLISH', ARGV[17], wake)
if type(sent) ~= 'number' then redis.call('PUBLISH', ARGV[10], wake) end
return ended(done, true)
`)

// Resolve ends a pending request in one round trip and wakes its waiters in
// every replica. Exactly one of any number of concurrent calls for one id
// succeeds; the others get the record as it ended and ErrAlreadyResolved.
// The caller that succeeds edits the request's posted messages and then
// calls Edited; if that hasn't happened FinishGrace later, a sweeper edits
// them (see Unfinished). That holds even when the reply is lost on the way
// and the caller sees an error. A resolution that comes after the
// request's expiry, before a sweeper expired it, expires it instead and
// gets the record with ErrExpired; its caller then counts and edits the
// expiry, as the sweeper would have. A call whose script go-redis sent
// again, its first reply lost, gets what the first run ended, not
// ErrAlreadyResolved for its own resolution.
func (s *Store) Resolve(ctx context.Context, id string, res Resolution) (*Record, error) {
	if !res.Status.Final() {
		return nil, fmt.Errorf("resolve %s: %q is not a final status", id, res.Status)
	}
	var result, by []byte
	switch {
	case res.Answer != nil:
		result, _ = json.Marshal(res.Answer)
	case res.Decision != nil:
		result, _ = json.Marshal(res.Decision)
	}
	var surface, user string
	if res.By != nil {
		by, _ = json.Marshal(res.By)
		surface, user = res.By.Surface, res.By.UserID
	}
	due, postsOnly := "", ""
	if res.IfDue {
		due = "1"
	}
	if res.From != nil && res.From.ID == id {
		postsOnly = "1"
	}
	shardWake := ""
	if s.sharded {
		shardWake = s.keys.shardWake(shard(id))
	}
	// call tells this call's script from another's: go-redis sends the
	// script again when its reply is lost, and the run that finds the
	// request ended by call answers as the first run did.
	call := callToken()
	var offeredQ string // the question Offered must be an option of
	if res.Offered != "" {
		if res.Answer == nil || len(res.Answer.Answers) != 1 {
			return nil, fmt.Errorf("resolve %s: %w", id, ErrNotOffered)
		}
		offeredQ = res.Answer.Answers[0].ID
	}
	now := s.opt.Now()
	out, err := resolveScript.Run(ctx, s.rdb, s.keys.request(id, kinds...),
		id, string(res.Status), result, by, now.UnixMilli(), s.opt.Retention.Milliseconds(),
		string(res.Kind), res.Owner, due, s.keys.wake(), s.opt.AuditMaxLen, surface, user,
		now.Add(FinishGrace).UnixMilli(), postsOnly, res.Hash, shardWake, call, res.Offered, res.Route, offeredQ).Slice()
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", id, unavailable(err))
	}
	switch code(out) {
	case 0:
		return nil, fmt.Errorf("resolve %s: %w", id, ErrNotFound)
	case 1:
		// Local waiters need not wait for the round trip through pub/sub,
		// nor for the record to be decoded: the ending is all they read.
		s.w.wake(id, &ending{string(res.Status), strconv.FormatInt(now.UnixMilli(), 10), string(by), string(result)})
	case 3:
		return nil, fmt.Errorf("resolve %s: %w", id, ErrNotDue)
	case 5:
		return nil, fmt.Errorf("resolve %s: %w", id, ErrNotOffered)
	case 6:
		return nil, fmt.Errorf("resolve %s: %w", id, ErrOtherRoute)
	case 4:
		s.w.wake(id, &ending{string(seam.StatusExpired), strconv.FormatInt(now.UnixMilli(), 10), "", ""})
	}
	var rec *Record
	if code(out) == 1 && postsOnly != "" {
		rec, err = res.From.resolved(res, now, out[1].([]any))
	} else {
		rec, err = decodeRecord(out[1].([]any))
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", id, err)
	}
	switch code(out) {
	case 2:
		return rec, fmt.Errorf("resolve %s: %w", id, ErrAlreadyResolved)
	case 4:
		return rec, fmt.Errorf("resolve %s: %w", id, ErrExpired)
	}
	return rec, nil
}

// addPostScript records a posted message on its request. A message posted
// for a request that has already ended puts the request in the finish
// index, as ending it does: nothing else would edit that message.
//
// KEYS[1] record, KEYS[2] due index (unused), KEYS[3] audit stream,
// KEYS[4] finish index.
// ARGV[1] id, ARGV[2] field, ARGV[3] post JSON, ARGV[4] audit cap,
// ARGV[5] surface, ARGV[6] channel, ARGV[7] message id, ARGV[8] when a
// sweeper may take over the edits, ms, ARGV[9] "1" to leave a post
// already recorded as it is.
// Returns {0} not found, {1} recorded on a pending request, {2, HGETALL}
// recorded on one that has ended, {3} recorded already (ARGV[9] "1").
var addPostScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return {0} end
if ARGV[9] == '1' and redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then return {3} end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'event', 'posted', 'id', ARGV[1], 'surface', ARGV[5], 'channel', ARGV[6], 'message', ARGV[7])
if st == 'pending' then return {1} end
redis.call('ZADD', KEYS[4], ARGV[8], ARGV[1])
return {2, redis.call('HGETALL', KEYS[1])}
`)

// AddPost records a message posted for a request so any replica can edit
// it later. While the request is pending it returns nil. When the request
// has ended, which it did while the message was being posted, it returns
// the request as it ended, this post included: the caller must edit its
// messages, then call Edited; else a sweeper does.
func (s *Store) AddPost(ctx context.Context, id string, p Post) (ended *Record, err error) {
	ended, _, err = s.addPost(ctx, id, p, false)
	return ended, err
}

// AdoptPost is AddPost for a message its request's posting did not
// record, found since (a person clicked it): Slack may post a message it
// reports it failed to, and the post made again is a second copy. Unless
// the request lists it already, it is recorded, and added says so: then,
// as with AddPost, a request that has ended comes back, to have the
// message edited, and is in the finish index meanwhile. A message the
// request lists is left to whoever recorded it.
func (s *Store) AdoptPost(ctx context.Context, id string, p Post) (ended *Record, added bool, err error) {
	return s.addPost(ctx, id, p, true)
}

func (s *Store) addPost(ctx context.Context, id string, p Post, adopt bool) (ended *Record, added bool, err error) {
	now := s.opt.Now()
	if p.PostedAt.IsZero() {
		p.PostedAt = now.UTC()
	}
	b, _ := json.Marshal(p)
	only := "0"
	if adopt {
		only = "1"
	}
	out, err := s.batch.run(ctx, addPostScript, s.keys.request(id),
		id, p.field(), b, s.opt.AuditMaxLen, p.Surface, p.Channel, p.MessageID,
		now.Add(FinishGrace).UnixMilli(), only).Slice()
	if err != nil {
		return nil, false, fmt.Errorf("add post to %s: %w", id, unavailable(err))
	}
	switch code(out) {
	case 0:
		return nil, false, fmt.Errorf("add post to %s: %w", id, ErrNotFound)
	case 1:
		return nil, true, nil
	case 3:
		return nil, false, nil
	}
	if ended, err = decodeRecord(out[1].([]any)); err != nil {
		return nil, false, fmt.Errorf("add post to %s: %w", id, err)
	}
	return ended, true, nil
}

// List returns pending requests of one kind, newest first, at most limit
// (all of them when limit <= 0).
func (s *Store) List(ctx context.Context, kind seam.Kind, limit int) ([]*Record, error) {
	// Every shard's newest window, newest first. A record resolved or gone
	// since the index was read is skipped; when that leaves fewer than
	// limit, and a shard may hold more, the window grows and the list is
	// read again: the skipped may all have been one shard's newest, ahead
	// of its older ones.
	for window := limit; ; window *= 2 {
		ids, err := s.pendingIDs(ctx, kind, window, false)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		pipe := s.rdb.Pipeline()
		gets := make([]*redis.MapStringStringCmd, 0, len(ids))
		for _, id := range ids {
			gets = append(gets, pipe.HGetAll(ctx, s.keys.record(id)))
		}
		if len(gets) > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, fmt.Errorf("list: %w", unavailable(err))
			}
		}
		var out []*Record
		for _, g := range gets {
			rec, err := recordFromHash(fieldMap(g.Val()))
			if err != nil || rec.Status != seam.StatusPending || rec.Kind != kind {
				continue // resolved or gone since the index was read
			}
			out = append(out, rec)
			if len(out) == limit {
				break
			}
		}
		// Done when full, when every pending request was read (no limit),
		// or when no shard filled its window (it has no more to give).
		if limit <= 0 || len(out) == limit || len(ids) < window || window >= 1<<16 {
			return out, nil
		}
	}
}

// PendingIDs returns the ids of the newest limit pending requests of kind
// (all of them when limit <= 0), newest first, from the open indexes alone:
// one pipelined read, none of the records.
func (s *Store) PendingIDs(ctx context.Context, kind seam.Kind, limit int) ([]string, error) {
	return s.pendingIDs(ctx, kind, limit, true)
}

// pendingIDs is PendingIDs; unless cut, it returns every shard's newest
// limit, newest first, not only the newest limit of all.
func (s *Store) pendingIDs(ctx context.Context, kind seam.Kind, limit int, cut bool) ([]string, error) {
	type scored struct {
		id string
		at float64
	}
	if !slices.Contains(kinds, kind) {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	stop := int64(limit - 1) // the newest limit of each shard hold the newest limit of all
	if limit <= 0 {
		stop = -1
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, shards)
	for sh := range shards {
		cmds[sh] = pipe.ZRevRangeWithScores(ctx, s.keys.open(kind, sh), 0, stop)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, unavailable(err)
	}
	var all []scored
	for _, c := range cmds {
		for _, z := range c.Val() {
			all = append(all, scored{z.Member.(string), z.Score})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.at, a.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	if cut && limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	ids := make([]string, len(all))
	for i, sc := range all {
		ids[i] = sc.id
	}
	return ids, nil
}

// AuditEvent is one entry of the audit stream.
type AuditEvent struct {
	At     time.Time
	Fields map[string]string // event, id, and what the event adds
}

// Audit returns the newest n audit events across all shards, newest first;
// none when n <= 0.
func (s *Store) Audit(ctx context.Context, n int) ([]AuditEvent, error) {
	if n <= 0 {
		return nil, nil // XREVRANGE takes a negative COUNT as "all", and out[:n] would panic
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.XMessageSliceCmd, shards)
	for sh := range shards {
		cmds[sh] = pipe.XRevRangeN(ctx, s.keys.audit(sh), "+", "-", int64(n))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("audit: %w", unavailable(err))
	}
	var out []AuditEvent
	for _, c := range cmds {
		for _, m := range c.Val() {
			ev := AuditEvent{At: streamTime(m.ID), Fields: make(map[string]string, len(m.Values))}
			for k, v := range m.Values {
				ev.Fields[k], _ = v.(string)
			}
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(a, b AuditEvent) int { return b.At.Compare(a.At) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func streamTime(id string) time.Time {
	var ms int64
	fmt.Sscanf(id, "%d-", &ms)
	return time.UnixMilli(ms).UTC()
}

func code(res []any) int64 {
	if len(res) == 0 {
		return -1
	}
	c, _ := res[0].(int64)
	return c
}

// discardScript deletes a pending request that nothing was posted for,
// and wakes its waiters with its bare id: they read it again and find it
// gone (as resolveScript publishes, on the shard's channel on a cluster).
//
// KEYS[1] record, KEYS[2] due index, KEYS[3] audit stream, KEYS[4] finish
// index (unused: a request with posts is not discarded), KEYS[5] its gone
// note, KEYS[6..] the open index of every kind.
// ARGV[1] id, ARGV[2] audit cap, ARGV[3] wake channel, ARGV[4] the
// shard's wake channel on a cluster, else empty, ARGV[5] the posting lease
// the caller holds, else empty, ARGV[6] the gone note (its client, a
// newline, why it is discarded), or empty for none, ARGV[7] how long the
// note lasts, ms.
// Returns 1 when deleted, 0 when it was not pending, had posts, or its
// posting lease is another's.
var discardScript = redis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'status', 'posting')
if rec[1] ~= 'pending' then return 0 end
if ARGV[5] ~= '' and rec[2] ~= ARGV[5] then return 0 end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 5) == 'post:' then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 6, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
if ARGV[6] ~= '' then redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[7]) end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'event', 'discarded', 'id', ARGV[1])
local sent = ARGV[4] ~= '' and redis.pcall('SPUBLISH', ARGV[4], ARGV[1])
if type(sent) ~= 'number' then redis.call('PUBLISH', ARGV[3], ARGV[1]) end
return 1
`)

// Discard deletes a pending request that no message was posted for, so
// that a create whose every post failed leaves nothing behind and a retry
// with the same tool_call_id posts afresh. It reports whether it deleted.
// Whoever waits on it is woken, and finds it gone (ErrNotFound).
func (s *Store) Discard(ctx context.Context, id string) (bool, error) {
	return s.discard(ctx, id, "", "")
}

// DiscardUnposted is Discard for the replica whose posting failed: it
// discards rec only while rec.Lease, the posting lease its Create or
// ClaimPosting took, is still the record's. A post that outlived the
// lease may have let another replica claim the request and post it: its
// message needs the record, to be recorded and edited.
//
// why is the message of the seam.ErrNoProvider its create returns. For
// DiscardedFor, Get returns it too: a caller that re-attached while the
// posts were under way (a client's retry of a create that took long) then
// learns what the create's caller did, not that the request never was.
func (s *Store) DiscardUnposted(ctx context.Context, rec *Record, why string) (bool, error) {
	return s.discard(ctx, rec.ID, strconv.FormatInt(rec.Lease, 10), rec.Client+"\n"+why)
}

// DiscardedFor is how long Get tells of a request's discard.
const DiscardedFor = 10 * time.Minute

func (s *Store) discard(ctx context.Context, id, lease, note string) (bool, error) {
	shardWake := ""
	if s.sharded {
		shardWake = s.keys.shardWake(shard(id))
	}
	sh := shard(id)
	ks := []string{s.keys.record(id), s.keys.due(sh), s.keys.audit(sh), s.keys.finish(sh), s.keys.gone(id)}
	for _, kind := range kinds {
		ks = append(ks, s.keys.open(kind, sh))
	}
	n, err := discardScript.Run(ctx, s.rdb, ks, id, s.opt.AuditMaxLen, s.keys.wake(), shardWake, lease, note, DiscardedFor.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("discard %s: %w", id, unavailable(err))
	}
	if n == 1 {
		s.w.wake(id, nil) // at once here, as Resolve does
	}
	return n == 1, nil
}

// queuePending queues on pipe the counts that add up to the number of
// pending requests, all kinds: one per kind and shard.
func (s *Store) queuePending(ctx context.Context, pipe redis.Pipeliner) (cmds []*redis.IntCmd) {
	for _, kind := range kinds {
		for sh := range shards {
			cmds = append(cmds, pipe.ZCard(ctx, s.keys.open(kind, sh)))
		}
	}
	return cmds
}

// Counts are what a scrape of /metrics reads from the store, all replicas
// together.
type Counts struct {
	Pending  int64 // pending requests, all kinds
	Unedited int64 // ended requests whose messages are not yet known to be edited: being edited, or waiting for a finisher
	Overdue  int64 // pending requests more than Count's late past their expiry, not yet expired
}

// Count reads Counts in one pipeline: one round trip on a Redis; on a
// Cluster one per master, sent together (each command names one key, so
// none spans slots). A request counted overdue is counted pending too.
func (s *Store) Count(ctx context.Context, late time.Duration) (Counts, error) {
	pipe := s.rdb.Pipeline()
	pending, unedited, overdue := s.queuePending(ctx, pipe), s.queueUnedited(ctx, pipe), s.queueOverdue(ctx, pipe, late)
	if _, err := pipe.Exec(ctx); err != nil {
		return Counts{}, fmt.Errorf("count requests: %w", unavailable(err))
	}
	return Counts{Pending: sum(pending), Unedited: sum(unedited), Overdue: sum(overdue)}, nil
}

// sum adds up the replies of cmds, run.
func sum(cmds []*redis.IntCmd) (n int64) {
	for _, c := range cmds {
		n += c.Val()
	}
	return n
}

// LostCreateError is the error of a Create that Redis did not answer: the
// request may have been stored all the same, pending, unposted, and under
// the posting lease Lease, which only this Create's caller holds. Left so,
// it would be posted by a reposter once the lease passed: for nobody when
// its caller, told the create failed, asked again under another id.
// Abandon or ReleasePosting settles it. It is ErrUnavailable, or, when
// the Create's caller left (its context ended) while the script was on its
// way, that context's error: then Over is closed once the script has run
// or was dropped unsent, and a settling before that may come too early.
type LostCreateError struct {
	ID    string
	Lease int64
	Over  <-chan struct{} // nil when the script is over
	err   error
}

func (e *LostCreateError) Error() string { return e.err.Error() }

func (e *LostCreateError) Unwrap() error { return e.err }

// Abandon discards request id if a lost Create stored it and nobody has
// posted it since (its posting lease is still lease): for a create without
// a tool_call_id, whose id nobody was told and nobody can ask for again.
func (s *Store) Abandon(ctx context.Context, id string, lease int64) (bool, error) {
	return s.discard(ctx, id, strconv.FormatInt(lease, 10), "")
}

// releasePostingScript gives up the posting lease ARGV[1] of a pending
// request, so that whoever asks for it again may post it at once.
//
// KEYS[1] record.
// Returns 1 when released, 0 when not pending or the lease is not that.
var releasePostingScript = redis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'status', 'posting')
if rec[1] ~= 'pending' or rec[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'posting', '0')
return 1
`)

// ReleasePosting gives up lease, the posting lease of a lost Create, on
// request id if it was stored: its caller's retry under the same
// tool_call_id then claims and posts it at once, where it would otherwise
// wait for the lease to pass and a reposter to post it.
func (s *Store) ReleasePosting(ctx context.Context, id string, lease int64) (bool, error) {
	n, err := releasePostingScript.Run(ctx, s.rdb, []string{s.keys.record(id)}, strconv.FormatInt(lease, 10)).Int()
	if err != nil {
		return false, fmt.Errorf("release posting of %s: %w", id, unavailable(err))
	}
	return n == 1, nil
}

// PostingLease is how long the replica that creates or claims a request
// holds the right to post it. A replica that dies mid-post loses it, and
// another posts the request once the lease has passed.
const PostingLease = time.Minute

// claimPostingScript takes the right to post a pending request that has no
// posted message and whose posting lease has passed.
//
// KEYS[1] record.
// ARGV[1] now ms, ARGV[2] new lease end ms, ARGV[3] a token of this call,
// kept on the record beside the lease it takes.
// A lease this very call took (its token is on the record) is claimed: the
// reply was lost and go-redis sent the script again.
// Returns 1 when claimed, 0 otherwise.
var claimPostingScript = redis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'status', 'posting', 'posting_call')
if rec[1] ~= 'pending' then return 0 end
if rec[2] and tonumber(rec[2]) > tonumber(ARGV[1]) then
  if rec[3] == ARGV[3] and rec[2] == ARGV[2] then return 1 end
  return 0
end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 5) == 'post:' then return 0 end
end
redis.call('HSET', KEYS[1], 'posting', ARGV[2], 'posting_call', ARGV[3])
return 1
`)

// callToken returns a token of one call of a script, which the script
// keeps on the record it changes: go-redis sends a script again when its
// reply is lost, and the run that finds its own token there knows that
// the first run was this call's.
func callToken() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ClaimPosting takes the right to post a pending request that nothing was
// posted for: after a crash between storing and posting, exactly one of
// any number of replicas gets it. Claimed, rec.Lease is the lease taken.
// A call whose script go-redis sent again, its first reply lost, still
// gets its claim.
func (s *Store) ClaimPosting(ctx context.Context, rec *Record) (bool, error) {
	now := s.opt.Now()
	lease := now.Add(PostingLease).UnixMilli()
	n, err := claimPostingScript.Run(ctx, s.rdb, []string{s.keys.record(rec.ID)}, now.UnixMilli(), lease, callToken()).Int()
	if err != nil {
		return false, fmt.Errorf("claim posting of %s: %w", rec.ID, unavailable(err))
	}
	if n == 1 {
		rec.Lease = lease
	}
	return n == 1, nil
}

package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/client"
)

// Re-attaching. MCP clients give up on a tool call after a minute or so and
// the model then calls the tool again with the same arguments. Every tool
// call therefore attaches to an ask, one bridge request shared by all the
// identical calls of one MCP session, instead of creating a request of its
// own:
//
//   - A call while an identical one is waiting attaches to its request.
//   - When every attached call has gone away (the client cancelled or timed
//     out), the request stays asked for Options.Reattach; an identical call
//     within that window attaches to it. When the window passes, the request
//     is withdrawn (DELETE: cancelled, ASK_ABORTED).
//   - When a person answers (or dismisses) while no call is attached, the
//     outcome is kept for Options.Reattach: the retry gets the answer it
//     missed instead of asking the person again.
//   - Once an outcome has been handed to a live call, the ask is forgotten:
//     an identical call after that is a new question (agents do ask
//     "Continue?" twice), with a new bridge request.
//
// Why not the bridge's idempotency alone (a tool_call_id that is a pure hash
// of the arguments, so a repeated create returns the existing record)? The
// bridge keeps ended records for days, so it cannot tell a retry from a new
// question: a retry after the withdrawal would get the cancelled record
// (ASK_ABORTED), and "Continue?" asked again tomorrow would get today's
// answer. This process can tell, because it knows whether an outcome reached
// a live call. It also keeps two sessions (two agents asking the same
// question) apart, since the key includes the MCP session (for stdio, the
// process).
//
// The bridge request's tool_call_id is derived from the arguments (a hash of
// the canonical request body), this server's instance id and the number of
// the ask: the calls that share an ask share one id, a create the client
// package retries re-attaches on the bridge, and two asks never collide,
// whether in this process or another.

// askKey identifies identical tool calls of one session.
type askKey struct {
	session *mcp.ServerSession
	sum     [sha256.Size]byte // of the canonical request body
}

// An ask is one bridge request and the tool calls waiting for it.
type ask struct {
	key        askKey
	toolCallID string
	cancel     context.CancelCauseFunc // withdraws the request while it is pending; the cause says why
	done       chan struct{}           // closed once out is set

	// Guarded by Server.mu.
	id    string  // the bridge's request id, once created
	out   outcome // set before done is closed
	refs  int     // tool calls attached
	timer *time.Timer
	armed uint64 // generation of timer; a firing of an older one does nothing
}

// outcome is how a bridge request ended: the answer or decision, or an error.
type outcome struct {
	result json.RawMessage // the canonical answer or the decision, when answered
	err    error
}

// keep reports whether the outcome is a person's: an answer, a decision, a
// dismissal, an expiry. Those are kept for a retry that missed them; errors
// of the bridge or of the request (unreachable, NO_PROVIDER, invalid) are not,
// so that a retry tries again.
func (o outcome) keep() bool {
	if o.err == nil {
		return true
	}
	switch client.CodeOf(o.err) {
	case client.CodeCancelled, client.CodeTimedOut:
		return true
	}
	return false
}

// key returns the key of req in session: a hash of its body with the JSON
// made canonical (object keys sorted, numbers as written), so that calls
// whose arguments differ only in key order or spacing are identical.
func key(session *mcp.ServerSession, req client.Request) (askKey, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return askKey{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return askKey{}, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return askKey{}, err
	}
	return askKey{session: session, sum: sha256.Sum256(buf.Bytes())}, nil
}

// withToolCallID returns req under id.
func withToolCallID(req client.Request, id string) client.Request {
	switch r := req.(type) {
	case client.QuestionRequest:
		r.ToolCallID = id
		return r
	case client.ApprovalRequest:
		r.ToolCallID = id
		return r
	}
	panic(fmt.Sprintf("mcpserver: unknown request type %T", req))
}

var errClosed = errors.New("the askbridge MCP server is shutting down")

// attach attaches a tool call to the ask of k, creating it and its bridge
// request when there is none.
func (s *Server) attach(k askKey, req client.Request) (*ask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if a := s.asks[k]; a != nil {
		a.refs++
		a.disarm()
		s.grew()
		return a, nil
	}
	s.seq++
	ctx, cancel := context.WithCancelCause(context.Background())
	a := &ask{
		key:        k,
		toolCallID: fmt.Sprintf("mcp-%s-%s-%d", hex.EncodeToString(k.sum[:8]), s.instance, s.seq),
		cancel:     cancel,
		done:       make(chan struct{}),
		refs:       1,
	}
	s.asks[k] = a
	s.running[a] = struct{}{}
	s.wg.Add(1)
	go s.forward(ctx, a, withToolCallID(req, a.toolCallID))
	return a, nil
}

// forward asks the bridge and waits for the outcome; cancelling ctx
// withdraws the request.
func (s *Server) forward(ctx context.Context, a *ask, req client.Request) {
	defer s.wg.Done()
	defer a.cancel(nil)
	var out outcome
	rec, err := s.bridge.Create(ctx, req, 0)
	refused := err != nil && rec == nil && ctx.Err() == nil && refusedCreate(err)
	if err == nil {
		s.mu.Lock()
		a.id = rec.ID
		s.grew()
		s.mu.Unlock()
		s.log.Info("asked", "kind", rec.Kind, "request_id", rec.ID, "tool_call_id", a.toolCallID)
		rec, err = s.bridge.Wait(ctx, rec)
	}
	switch {
	case err != nil:
		out.err = err
	case rec.Err() != nil:
		out.err = fmt.Errorf("%s %s: %w", rec.Kind, rec.ID, rec.Err())
	case rec.Answer != nil:
		out.result, out.err = marshal(rec.Answer)
	case rec.Decision != nil:
		out.result, out.err = marshal(rec.Decision)
	default:
		out.err = fmt.Errorf("%s %s: %s without an answer", rec.Kind, rec.ID, rec.Status)
	}
	// The wait failed (the bridge unreachable for the client's whole retry
	// window, or an error of the bridge's) on a request still pending: the
	// tool call fails, and a retry by the model asks again, so the request
	// is withdrawn, or someone would answer it for nobody. Not when the
	// wait ended for good: the request is gone, or this server may not
	// touch it. It stays running until then, for Close.
	abandoned := err != nil && ctx.Err() == nil && !endedForGood(err) && rec != nil && rec.ID != "" && rec.Status == client.StatusPending
	switch {
	case refused:
		// Nothing was asked: not a request that ended.
		level := slog.LevelInfo // the tool call's arguments, which the model reads of
		switch client.CodeOf(err) {
		case client.CodeUnauthorized, client.CodeForbidden, client.CodeNoProvider:
			level = slog.LevelWarn // the bridge's config or this server's token
		}
		s.log.Log(context.Background(), level, "the bridge refused the request", "tool_call_id", a.toolCallID, "code", client.CodeOf(err), "err", err)
	case errors.Is(err, client.ErrNotWithdrawn) && !abandoned:
		// Given up on (Close, a create given up on), and the bridge did
		// not take the withdrawal. An abandoned request is withdrawn
		// below, for longer, and withdraw warns if that fails too.
		s.log.Warn("could not withdraw the request: its message may keep live buttons until it expires", "tool_call_id", a.toolCallID, "err", err)
	case ctx.Err() != nil && errors.Is(out.err, client.ErrAborted):
		// Why is in err, in the words of ctx's cause.
		s.log.Info("withdrew the request", "tool_call_id", a.toolCallID, "err", out.err)
	case out.err != nil:
		s.log.Info("ended without an answer", "tool_call_id", a.toolCallID, "err", out.err)
	}

	s.mu.Lock()
	a.out = out
	close(a.done)
	s.event("ended")
	switch {
	case !out.keep():
		s.forget(a)
	case a.refs == 0:
		s.arm(a) // nobody took it: keep it for a retry
	}
	s.mu.Unlock()
	if abandoned {
		s.withdraw(ctx, rec)
	}
	s.mu.Lock()
	delete(s.running, a)
	s.event("settled")
	s.mu.Unlock()
}

// refusedCreate reports whether err, a create's, is the bridge's refusal of the
// request (an API error that asking again would not change): nothing was
// asked.
func refusedCreate(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status >= 400 && !client.Transient(err) && !errors.Is(err, client.ErrNotWithdrawn)
}

// endedForGood reports whether a wait that failed with err ended for good:
// the request is gone (NOT_FOUND, or NO_PROVIDER: no target took it), or
// the bridge refuses this server's token. Withdrawing it would fail too.
func endedForGood(err error) bool {
	switch client.CodeOf(err) {
	case client.CodeNotFound, client.CodeNoProvider, client.CodeUnauthorized, client.CodeForbidden:
		return true
	}
	return false
}

// withdrawFor bounds how long a request a wait gave up on is withdrawn for
// while the bridge can't be reached.
const withdrawFor = 10 * time.Minute

// withdraw cancels rec's request, trying while the bridge fails as it may
// not for long (client.Transient), for withdrawFor. Once ask, the ask's
// context, ends (Close), it makes a last try, and stops lastWithdraw
// after ask ended, a call under way included.
func (s *Server) withdraw(ask context.Context, rec *client.Record) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ask), withdrawFor)
	defer cancel()
	stop := context.AfterFunc(ask, func() { time.AfterFunc(lastWithdraw, cancel) })
	defer stop()
	closing := false
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		_, err := s.bridge.Cancel(ctx, rec.ID)
		if err == nil || !client.Transient(err) {
			s.log.Info("withdrew a request whose wait gave up", "request_id", rec.ID, "err", err)
			return
		}
		if !closing {
			select {
			case <-ask.Done():
				closing = true // a last try
				continue
			case <-ctx.Done():
			case <-time.After(backoff):
				continue
			}
		}
		s.log.Warn("withdrawing a request whose wait gave up failed; it stays pending until it expires", "request_id", rec.ID, "err", err)
		return
	}
}

// lastWithdraw bounds the last try at withdrawing a request as the server
// closes.
const lastWithdraw = 5 * time.Second

// wait waits for the outcome of a on behalf of one tool call and detaches
// the call. tick, when not nil, is called every progress interval while it
// waits. When ctx ends first, wait returns ctx's error and leaves the ask to
// its re-attach window.
func (s *Server) wait(ctx context.Context, a *ask, tick func(waited time.Duration, requestID string)) (outcome, error) {
	var ticks <-chan time.Time
	if tick != nil {
		t := time.NewTicker(s.opts.ProgressInterval)
		defer t.Stop()
		ticks = t.C
	}
	start := time.Now()
	for {
		select {
		case <-a.done:
		case <-ctx.Done():
		case <-ticks:
			s.mu.Lock()
			id := a.id
			s.mu.Unlock()
			tick(time.Since(start), id)
			continue
		}
		break
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.refs--
	if err := ctx.Err(); err != nil {
		// The client went away: whatever happened to the request, this call
		// did not deliver it.
		if a.refs == 0 {
			s.arm(a)
		}
		s.event("detached")
		return outcome{}, err
	}
	// Handed to a live call: an identical call from now on asks again.
	s.forget(a)
	return a.out, nil
}

// arm starts a's re-attach window: when it passes with no call attached, a
// is forgotten and, if still pending, withdrawn. s.mu is held.
func (s *Server) arm(a *ask) {
	a.disarm()
	if s.opts.Reattach < 0 {
		s.forget(a)
		a.cancel(errCallGone)
		return
	}
	n := a.armed
	a.timer = time.AfterFunc(s.opts.Reattach, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if a.armed != n || a.refs > 0 {
			return // re-attached or re-armed since
		}
		s.forget(a)
		a.cancel(fmt.Errorf("%w, and no identical call re-attached within %s (--reattach)", errCallGone, s.opts.Reattach))
	})
}

// errCallGone is why a request is withdrawn whose tool calls went away.
var errCallGone = errors.New("its tool call went away (the MCP client cancelled it or stopped waiting)")

// disarm stops a's re-attach window. s.mu is held.
func (a *ask) disarm() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.armed++
}

// forget drops a from the asks, so the next identical call makes a new
// one. s.mu is held.
func (s *Server) forget(a *ask) {
	if s.asks[a.key] == a {
		delete(s.asks, a.key)
	}
}

// Close withdraws every pending request and waits until they are withdrawn.
// Tool calls still waiting get ASK_ABORTED. Calls after Close fail.
func (s *Server) Close() { s.closeFor(errClosed) }

// closeFor is Close, withdrawing the requests because of cause, which the
// log gives as the reason.
func (s *Server) closeFor(cause error) {
	s.mu.Lock()
	if !s.closed && len(s.running) > 0 {
		// Said at once: it can take a while (the bridge slow or down), and
		// someone at a terminal who pressed Ctrl-C sees nothing happen.
		s.log.Info("withdrawing the pending requests…", "count", len(s.running), "up_to", client.WithdrawTimeout, "why", cause)
	}
	s.closed = true
	clear(s.asks)
	for a := range s.running {
		a.disarm()
		a.cancel(cause)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// waitingCalls counts the tool calls waiting for a person: attached to an
// ask whose bridge request was created and has not ended.
func (s *Server) waitingCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for a := range s.running {
		select {
		case <-a.done:
		default:
			if a.id != "" {
				n += a.refs
			}
		}
	}
	return n
}

// grew says that waitingCalls may have grown. s.mu is held.
func (s *Server) grew() {
	if s.waitingGrew != nil {
		s.waitingGrew()
	}
}

// event reports what happened to a test hook. s.mu is held.
func (s *Server) event(what string) {
	if s.trace != nil {
		s.trace(what)
	}
}

// marshal writes v as compact JSON without HTML escaping, so labels such as
// "a < b" read as they were written.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

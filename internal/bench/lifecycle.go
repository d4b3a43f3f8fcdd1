package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbridge/askbridge/internal/slack/slacktest"
)

// The options every bench question offers, in order.
var benchLabels = []string{"Yes, deploy (Recommended)", "No, hold the release", "Roll back to the last build"}

// post is a question message the fake Slack took, as a person sees it.
type post struct {
	id  string
	msg slacktest.FakeCall
}

// click is a person's answer on its way: what they picked, where, when.
type click struct {
	label   string
	replica int
	start   time.Time
	measure bool // whether the answer counts in the phase's figures
}

// flow is the traffic of a run: agents asking through the API, the fake
// Slack's posts reaching people, people clicking signed callbacks, and the
// checks that every answer comes back once and as clicked.
type flow struct {
	c      *cluster
	client *http.Client
	posts  chan post
	clicks sync.Map // request id -> *click

	posted, edited, editedLive atomic.Int64
	unedited                   sync.Map     // ts of each posted message not yet edited
	answered                   atomic.Int64 // answers agents got, each checked
	quiet                      atomic.Bool  // posts are counted but not handed to people
	errs                       errorLog
}

func newFlow(c *cluster) *flow {
	f := &flow{c: c, client: httpClient(), posts: make(chan post, 1<<16)}
	c.slack.Observe(f.observe)
	return f
}

// observe sees every call the fake Slack answers.
func (f *flow) observe(call slacktest.FakeCall) {
	if !call.OK {
		f.errs.add(fmt.Errorf("slack %s answered status %d, not ok", call.Method, call.Status))
		return
	}
	switch call.Method {
	case "chat.postMessage":
		id := requestID(blocksText(call))
		if id == "" {
			f.errs.add(errors.New("a posted message has no option button"))
			return
		}
		f.posted.Add(1)
		f.unedited.Store(call.TS, true)
		if !f.quiet.Load() {
			f.posts <- post{id: id, msg: call}
		}
	case "chat.update":
		f.edited.Add(1)
		f.unedited.Delete(call.Field("ts"))
		if hasControls(call) {
			f.editedLive.Add(1)
		}
	}
}

// The bench reads what it needs from a message's blocks JSON by searching
// it rather than decoding it, to keep its own CPU off the figures: in
// encoding/json's output a quote inside a string is escaped, so these
// substrings can only be keys and values. A JSON call is searched whole:
// besides its blocks it has only strings and booleans.
const (
	optionAction = `"action_id":"ab:pick:`
	actionsBlock = `"type":"actions"`
	inputBlock   = `"type":"input"`
)

// requestID is the request id in the first option button of blocks.
func requestID(blocks string) string {
	_, rest, ok := strings.Cut(blocks, optionAction)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return id
}

// blocksText is the JSON text to search for a call's blocks.
func blocksText(c slacktest.FakeCall) string {
	if c.JSON != nil {
		return c.Body
	}
	return c.Form.Get("blocks")
}

// hasControls reports whether a message still offers buttons or inputs.
func hasControls(c slacktest.FakeCall) bool {
	b := blocksText(c)
	return strings.Contains(b, actionsBlock) || strings.Contains(b, inputBlock)
}

// answered is what an agent's wait returned.
type answered struct {
	id         string
	wait       time.Duration // from the click to the agent reading the answer
	sameRep    bool          // the click reached the replica the agent waits on
	measure    bool
	lifecycle  time.Duration // from asking to reading the answer
	finishedAt time.Time
}

// ask is one agent's request: it asks on replica r, waits for the answer
// and checks that it is the option the person clicked.
func (f *flow) ask(ctx context.Context, r, n int) (answered, error) {
	body, _ := json.Marshal(map[string]any{
		"questions": []any{map[string]any{
			"id": "deploy", "header": "Deploy", "question": fmt.Sprintf("Deploy build %d to production?", n),
			"options": []any{
				map[string]any{"label": benchLabels[0], "description": "Ships to every region."},
				map[string]any{"label": benchLabels[1]},
				map[string]any{"label": benchLabels[2], "description": "Restores the previous release."},
			},
		}},
		"tool_call_id": fmt.Sprintf("bench-%d-%s", n, randomHex(4)),
		"caller":       map[string]any{"name": "bench-agent", "session": "bench"},
	})
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.c.replicas[r].URL()+"/v1/questions?wait=60s", bytes.NewReader(body))
	if err != nil {
		return answered{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.c.token)
	resp, err := f.client.Do(req)
	if err != nil {
		return answered{}, fmt.Errorf("ask: %w", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	end := time.Now()
	if err != nil {
		return answered{}, fmt.Errorf("ask: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return answered{}, fmt.Errorf("ask: %s: %s", resp.Status, raw)
	}
	var rec struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Answer struct {
			Answers []struct {
				ID       string   `json:"id"`
				Selected []string `json:"selected"`
			} `json:"answers"`
		} `json:"answer"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return answered{}, fmt.Errorf("ask: %w", err)
	}
	v, ok := f.clicks.LoadAndDelete(rec.ID)
	if !ok {
		return answered{}, fmt.Errorf("request %s ended %s with no click recorded", rec.ID, rec.Status)
	}
	cl := v.(*click)
	if rec.Status != "answered" || len(rec.Answer.Answers) != 1 || len(rec.Answer.Answers[0].Selected) != 1 ||
		rec.Answer.Answers[0].Selected[0] != cl.label {
		return answered{}, fmt.Errorf("request %s: got %s %s; want answered with %q", rec.ID, rec.Status, raw, cl.label)
	}
	return answered{id: rec.ID, wait: end.Sub(cl.start), sameRep: cl.replica == r, measure: cl.measure,
		lifecycle: end.Sub(start), finishedAt: end}, nil
}

// answer is a person clicking a random option of p's message through a
// signed callback to replica r. It returns how long the bridge took to
// acknowledge the callback, counted from at: the time the click was due
// (on an open-loop schedule, so that the bench's own delays count), or,
// when at is zero, the time it is sent.
func (f *flow) answer(ctx context.Context, p post, r int, measure bool, at time.Time) (time.Duration, error) {
	k := rand.IntN(len(benchLabels))
	payload, err := slacktest.Click(p.msg, slacktest.SlackUser("UBENCH", "bench-person"), fmt.Sprintf("ab:pick:%s:0:%d", p.id, k), nil, nil)
	if err != nil {
		return 0, err
	}
	body := slacktest.FormBody(payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.c.replicas[r].URL()+"/slack/interactions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	// The click is stored, start time included, before it is sent: the
	// agent may read it the moment the answer reaches it.
	if at.IsZero() {
		at = time.Now()
	}
	cl := &click{label: benchLabels[k], replica: r, measure: measure, start: at}
	if _, dup := f.clicks.LoadOrStore(p.id, cl); dup {
		return 0, fmt.Errorf("request %s was posted twice", p.id)
	}
	req.Header = slacktest.Sign(f.c.secret, time.Now(), body)
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("click: %w", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ack := time.Since(cl.start)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("click on %s: %s: %s", p.id, resp.Status, raw)
	}
	return ack, nil
}

// next returns the next posted message, or an error after timeout.
func (f *flow) next(ctx context.Context, timeout time.Duration) (post, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case p := <-f.posts:
		return p, nil
	case <-t.C:
		return post{}, fmt.Errorf("no message was posted to Slack within %v", timeout)
	case <-ctx.Done():
		return post{}, ctx.Err()
	}
}

// left counts the posted messages not edited yet.
func (f *flow) left() int {
	n := 0
	f.unedited.Range(func(any, any) bool { n++; return true })
	return n
}

// awaitEdits waits until every message posted so far has been edited to
// its outcome, or timeout passes. It matches edits to messages by ts: an
// edit made twice does not stand in for one never made.
func (f *flow) awaitEdits(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.left() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d posted messages were not edited within %v", f.left(), f.posted.Load(), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := f.editedLive.Load(); n > 0 {
		return fmt.Errorf("%d edited messages still have live controls", n)
	}
	return nil
}

// errorLog keeps the first errors of a run and counts the rest.
type errorLog struct {
	mu    sync.Mutex
	first []string
	n     int
}

func (e *errorLog) add(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.first) < 10 {
		e.first = append(e.first, err.Error())
	}
}

func (e *errorLog) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func (e *errorLog) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.first...)
}

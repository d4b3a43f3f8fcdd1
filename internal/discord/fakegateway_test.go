package discord

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// FakeGateway is the least of Discord's gateway a bot session needs: HELLO,
// then READY once the session identifies, heartbeat ACKs, and dispatches
// of INTERACTION_CREATE to every identified session.
type FakeGateway struct {
	t       testing.TB
	f       *FakeDiscord // whose callbacks answer its interactions
	mu      sync.Mutex
	conns   []*websocket.Conn
	seq     int
	ident   chan struct{} // one value per session that identified
	resumed chan struct{} // one value per session that resumed
	beat    chan struct{} // a value once a heartbeat came since the last read
	// changed is closed, and replaced, when a session comes or goes.
	changed chan struct{}
	held    *gatewayHold // the next connection's, if held
	dialled int          // connections taken
	beatMS  int          // the heartbeat_interval HELLO gives

	writeLocks sync.Map // *websocket.Conn -> *sync.Mutex: one writer at a time
}

// gatewayHold holds a connection's HELLO until released.
type gatewayHold struct {
	arrived, release chan struct{}
	cut              bool // close the connection instead of saying HELLO
}

// fakeSessionID is the session_id of every session the fake starts: what a
// resume must name.
const fakeSessionID = "fake-session"

// StartGateway serves a fake gateway and points f's GET /gateway at it.
func (f *FakeDiscord) StartGateway(t testing.TB) *FakeGateway {
	g := &FakeGateway{t: t, f: f, ident: make(chan struct{}, 16), resumed: make(chan struct{}, 16), beat: make(chan struct{}, 1),
		changed: make(chan struct{}), beatMS: 45000}
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		var wmu sync.Mutex
		send := func(v any) error {
			wmu.Lock()
			defer wmu.Unlock()
			return c.WriteJSON(v)
		}
		g.mu.Lock()
		h := g.held
		g.held = nil
		g.dialled++
		beatMS := g.beatMS
		g.mu.Unlock()
		if h != nil {
			close(h.arrived)
			if h.cut {
				return // as a gateway that fails does
			}
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		}
		if send(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": beatMS}}) != nil {
			return
		}
		for {
			var m struct {
				Op int             `json:"op"`
				D  json.RawMessage `json:"d"` // a heartbeat's is a number
			}
			if err := c.ReadJSON(&m); err != nil {
				g.drop(c)
				return
			}
			switch m.Op {
			case 1: // heartbeat
				send(map[string]any{"op": 11})
				select {
				case g.beat <- struct{}{}:
				default:
				}
			case 2, 6: // identify, resume
				var id struct {
					Token     string `json:"token"`
					SessionID string `json:"session_id"`
				}
				if json.Unmarshal(m.D, &id) != nil || strings.TrimPrefix(id.Token, "Bot ") != f.Token {
					wmu.Lock()
					c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
					wmu.Unlock()
					return
				}
				switch {
				case m.Op == 2:
					send(map[string]any{"op": 0, "t": "READY", "s": 1, "d": map[string]any{
						"v": 10, "session_id": fakeSessionID, "user": map[string]any{"id": "1100000000000000001", "username": "askbridge", "bot": true},
						"guilds": []any{}, "resume_gateway_url": "ws://" + r.Host,
					}})
				case id.SessionID != fakeSessionID:
					// Not resumable: the client is to identify anew.
					send(map[string]any{"op": 9, "d": false})
					continue
				default:
					// Discord replays what the session missed, then
					// RESUMED; the fake's sessions miss nothing.
					g.mu.Lock()
					seq := g.seq + 1
					g.mu.Unlock()
					send(map[string]any{"op": 0, "t": "RESUMED", "s": seq, "d": nil})
				}
				g.mu.Lock()
				g.conns = append(g.conns, c)
				g.change()
				g.mu.Unlock()
				g.writeLocks.Store(c, &wmu)
				if m.Op == 2 {
					g.ident <- struct{}{}
				} else {
					g.resumed <- struct{}{}
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	f.GatewayURL = "ws" + strings.TrimPrefix(srv.URL, "http")
	return g
}

// Drop closes every session's connection, without a close frame, as a
// network failure does; the clients are to reconnect and resume.
func (g *FakeGateway) Drop() {
	g.mu.Lock()
	conns := append([]*websocket.Conn(nil), g.conns...)
	g.mu.Unlock()
	for _, c := range conns {
		c.NetConn().Close()
		g.drop(c) // now, not once its reader has noticed
	}
}

// HoldNext holds the HELLO of the next connection until release is
// called; held is closed when that connection has come in.
func (g *FakeGateway) HoldNext() (held <-chan struct{}, release func()) {
	h := &gatewayHold{arrived: make(chan struct{}), release: make(chan struct{})}
	g.mu.Lock()
	g.held = h
	g.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(h.release) }) }
	g.t.Cleanup(release)
	return h.arrived, release
}

// CutNext closes the next connection before its HELLO, as a gateway that
// is failing does; cut is closed when that connection has come in.
func (g *FakeGateway) CutNext() (cut <-chan struct{}) {
	h := &gatewayHold{arrived: make(chan struct{}), cut: true}
	g.mu.Lock()
	g.held = h
	g.mu.Unlock()
	return h.arrived
}

// HeartbeatEvery has the HELLO of the connections to come ask for a
// heartbeat every d, rather than Discord's 45 s.
func (g *FakeGateway) HeartbeatEvery(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.beatMS = int(d.Milliseconds())
}

// Dialled is the number of connections the gateway has taken.
func (g *FakeGateway) Dialled() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dialled
}

// WaitHeartbeat waits until a session has sent a heartbeat, as one does
// first once it is open.
func (g *FakeGateway) WaitHeartbeat(t testing.TB) {
	t.Helper()
	select {
	case <-g.beat:
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat on the fake gateway")
	}
}

// WaitResumed waits until a session has resumed.
func (g *FakeGateway) WaitResumed(t testing.TB) {
	t.Helper()
	select {
	case <-g.resumed:
	case <-time.After(10 * time.Second):
		t.Fatal("no session resumed on the fake gateway")
	}
}

func (g *FakeGateway) drop(c *websocket.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, x := range g.conns {
		if x == c {
			g.conns = append(g.conns[:i], g.conns[i+1:]...)
			g.change()
			return
		}
	}
}

// change tells WaitSessions that the sessions changed; g.mu is held.
func (g *FakeGateway) change() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// WaitSessions waits until n sessions are connected and identified.
func (g *FakeGateway) WaitSessions(t testing.TB, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		g.mu.Lock()
		got, changed := len(g.conns), g.changed
		g.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d gateway sessions after %s; want %d", got, within, n)
		}
	}
}

// WaitIdentified waits until a session has identified.
func (g *FakeGateway) WaitIdentified(t testing.TB) {
	t.Helper()
	select {
	case <-g.ident:
	case <-time.After(10 * time.Second):
		t.Fatal("no session identified on the fake gateway")
	}
}

// Sessions is the number of sessions connected and identified.
func (g *FakeGateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// Dispatch sends interaction to every identified session as Discord does:
// an op 0 INTERACTION_CREATE dispatch.
func (g *FakeGateway) Dispatch(t testing.TB, interaction map[string]any) {
	t.Helper()
	g.mu.Lock()
	g.seq++
	conns, seq := append([]*websocket.Conn(nil), g.conns...), g.seq+1
	g.mu.Unlock()
	g.f.dispatched(interaction)
	raw, _ := json.Marshal(map[string]any{"op": 0, "t": "INTERACTION_CREATE", "s": seq, "d": interaction})
	for _, c := range conns {
		l, _ := g.writeLocks.Load(c)
		mu := l.(*sync.Mutex)
		mu.Lock()
		err := c.WriteMessage(websocket.TextMessage, raw)
		mu.Unlock()
		if err != nil {
			t.Errorf("dispatch: %v", err)
		}
	}
}

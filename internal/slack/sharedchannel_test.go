package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/config"
	"github.com/askbridge/askbridge/internal/dispatch"
	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
	"github.com/askbridge/askbridge/internal/slack/slacktest"
	"github.com/askbridge/askbridge/internal/surface"
)

// TestCarriedTargetInASharedChannel: two routes post to one channel, one
// open to anyone in it, one limited to its responders. A button's value
// names the target that posted its message, and a click that answers at
// once is checked against that target alone, without reading the request.
// Should the value that comes back name the channel's other target (a
// value not as posted), the click must not pass as the open target's:
// the request is read and its own target's responders decide.
func TestCarriedTargetInASharedChannel(t *testing.T) {
	prodTarget := &config.SlackTarget{Channel: "C1", Responders: config.SlackResponders{Users: []string{"UADA"}}}
	s, store, fake := routed(t,
		config.Route{Name: "default", Targets: []config.Target{{Slack: &config.SlackTarget{Channel: "C1"}}}},
		config.Route{Name: "prod", Targets: []config.Target{{Slack: prodTarget}}})
	eve := slacktest.SlackUser("UEVE", "eve")

	for _, tc := range prodClicks() {
		t.Run(tc.name, func(t *testing.T) {
			rec, msg := postRecorded(t, s, store, fake, tc.nr, "prod/0", prodTarget)

			p := slacktest.BlockActions(t, msg, eve, tc.control+rec.ID, nil, nil)
			action := actionOf(p)
			v, _ := action["value"].(string)
			if !strings.Contains(v, `"prod/0"`) {
				t.Fatalf("the button carries %q; want it to name prod/0", v)
			}
			action["value"] = strings.Replace(v, `"prod/0"`, `"default/0"`, 1)

			wantRefused(t, fake, s, store, p, rec.ID)
		})
	}
}

// TestUnlistedMessageInAChannelTwoTargetsShare: one route posts to one
// channel twice, through a target open to anyone in it and through one
// limited to its responders. A click on a message the request does not
// list among its posts (clicked before its post was recorded, or its
// recording failed) can't say which of the two posted it; it must not
// pass as the open one's, which would let anyone answer the restricted
// one's message.
func TestUnlistedMessageInAChannelTwoTargetsShare(t *testing.T) {
	restricted := &config.SlackTarget{Channel: "C1", Responders: config.SlackResponders{Users: []string{"UADA"}}}
	s, store, fake := routed(t, config.Route{Name: "prod", Targets: []config.Target{
		{Slack: &config.SlackTarget{Channel: "C1"}}, {Slack: restricted},
	}})
	ctx := context.Background()
	eve := slacktest.SlackUser("UEVE", "eve")
	rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindQuestion, Route: "prod", Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "q", Question: "Delete the prod namespace?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Posted by the restricted target; its post is not recorded.
	if _, err := s.Post(ctx, rec, dispatch.Target{Key: "prod/1", Config: config.Target{Slack: restricted}}); err != nil {
		t.Fatal(err)
	}
	msg := fake.Calls("chat.postMessage")[0]
	for _, control := range []string{"ab:pick:", "ab:dismiss:"} {
		serve(t, s, store, slacktest.BlockActions(t, msg, eve, control+rec.ID, nil, nil))
		got, err := store.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != seam.StatusPending {
			t.Fatalf("%s: someone not among the restricted target's responders ended its request: %s by %+v", control, got.Status, got.ResolvedBy)
		}
	}
}

// TestCarriedTargetOfAnotherRoute: route default posts to C0, open to
// anyone there; route prod posts to C1, limited to its responders. Eve,
// who may answer in C0 and sees prod's messages in C1 (their request's id
// and hash with them), clicks a button of a message in C0 whose value and
// action_id came back naming a prod request and C0's open target (a value
// not as posted). The open target decides only for its own route's
// requests: nothing is recorded, she is told she can't answer, and the
// message she clicked, another request's, is left as it is.
func TestCarriedTargetOfAnotherRoute(t *testing.T) {
	open := &config.SlackTarget{Channel: "C0"}
	prodTarget := &config.SlackTarget{Channel: "C1", Responders: config.SlackResponders{Users: []string{"UADA"}}}
	s, store, fake := routed(t,
		config.Route{Name: "default", Targets: []config.Target{{Slack: open}}},
		config.Route{Name: "prod", Targets: []config.Target{{Slack: prodTarget}}})
	eve := slacktest.SlackUser("UEVE", "eve")

	_, inC0 := postRecorded(t, s, store, fake, pending.NewRequest{Kind: seam.KindQuestion, Route: "default", Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "lunch", Question: "Lunch?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}}, "default/0", open)

	for _, tc := range prodClicks() {
		t.Run(tc.name, func(t *testing.T) {
			rec, inC1 := postRecorded(t, s, store, fake, tc.nr, "prod/0", prodTarget)
			// The prod message's control, as clicked on the message in C0.
			p := slacktest.BlockActions(t, inC1, eve, tc.control+rec.ID, nil, nil)
			p["container"].(map[string]any)["channel_id"] = "C0"
			p["container"].(map[string]any)["message_ts"] = inC0.TS
			p["channel"].(map[string]any)["id"] = "C0"
			p["message"].(map[string]any)["ts"] = inC0.TS
			action := actionOf(p)
			v, _ := action["value"].(string)
			if !strings.Contains(v, `"prod/0"`) {
				t.Fatalf("the button carries %q; want it to name prod/0", v)
			}
			action["value"] = strings.Replace(v, `"prod/0"`, `"default/0"`, 1)

			n := wantRefused(t, fake, s, store, p, rec.ID)
			if k := countSince(fake, n, "chat.update"); k != 0 {
				t.Errorf("the clicked message, another request's, was edited (%d chat.update calls)", k)
			}
		})
	}
}

// wantRefused serves the click p, by someone not among the responders of
// request id's target, and checks that id is still pending and that they
// were told they can't answer, and nothing else. It returns how many calls
// fake had before the click.
func wantRefused(t *testing.T, fake *slacktest.FakeSlack, s *Surface, store *pending.Store, p map[string]any, id string) int {
	t.Helper()
	n := len(fake.Calls(""))
	serve(t, s, store, p)
	got, err := store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != seam.StatusPending {
		t.Fatalf("someone not among prod's responders ended its request: %s by %+v", got.Status, got.ResolvedBy)
	}
	var told []string
	for _, c := range fake.Calls("")[n:] {
		if _, text, ok := c.Ephemeral(); ok {
			told = append(told, text)
		}
	}
	if len(told) != 1 || told[0] != surface.MsgCantAnswer {
		t.Errorf("told %q; want %q", told, surface.MsgCantAnswer)
	}
	return n
}

// countSince is how many of fake's calls of method came after its first n.
func countSince(fake *slacktest.FakeSlack, n int, method string) int {
	k := 0
	for _, c := range fake.Calls("")[n:] {
		if c.Method == method {
			k++
		}
	}
	return k
}

// TestNoOriginFindsNoTarget: a modal's submission whose private_metadata
// names no message (none of the bridge's modals has such a one; a forged
// or garbled one would), or a click that names no channel, finds no
// target, whoever submits it. A target configured by a person's id (a DM)
// or a channel's name, whose conversation this replica has not learned
// (it never posted there), must not pass for one that posts "nowhere".
func TestNoOriginFindsNoTarget(t *testing.T) {
	prod := &config.SlackTarget{Channel: "C1", Responders: config.SlackResponders{Users: []string{"UBOB"}}}
	dm := &config.SlackTarget{Channel: "UADA"} // ada's DM: open, only she sees it
	s, store, _ := routed(t, config.Route{Name: "prod", Targets: []config.Target{
		{Slack: dm},
		{Slack: &config.SlackTarget{Channel: "#ops"}},
		{Slack: prod},
	}})
	ctx := context.Background()
	eve := slacktest.SlackUser("UEVE", "eve")
	for _, metadata := range []string{"", "{}", `{"c":""}`, `{"c":"","ts":"DM"}`} {
		rec, _, err := store.Create(ctx, pending.NewRequest{Kind: seam.KindApproval, Route: "prod", ToolCallID: "call-" + metadata,
			Approval: &seam.Approval{ToolName: "kubectl_delete", Reason: "the prod namespace"}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(metadata, "DM") {
			// The request's message in ada's DM, recorded: its ts with no
			// conversation must not pass for it.
			to := dispatch.Target{Key: "prod/0", Config: config.Target{Slack: dm}}
			posts, err := s.Post(ctx, rec, to)
			if err != nil {
				t.Fatal(err)
			}
			posts[0].Target = to.Key
			if _, err := store.AddPost(ctx, rec.ID, posts[0]); err != nil {
				t.Fatal(err)
			}
			metadata = strings.Replace(metadata, "DM", posts[0].MessageID, 1)
		}
		body := serve(t, s, store, map[string]any{
			"type": "view_submission", "team": map[string]any{"id": "T0001"}, "user": eve, "api_app_id": "A0001",
			"view": map[string]any{
				"id": "V0001", "type": "modal", "callback_id": surface.Ref{Verb: surface.VerbReject, ID: rec.ID}.String(), "private_metadata": metadata,
				"state": map[string]any{"values": map[string]any{noteBlock: map[string]any{inputAction: map[string]any{"type": "plain_text_input", "value": "no"}}}},
			},
		})
		got, err := store.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != seam.StatusPending {
			t.Fatalf("private_metadata %q: eve, no responder of prod, ended its request: %s by %+v", metadata, got.Status, got.ResolvedBy)
		}
		if !strings.Contains(body, "can") || !strings.Contains(body, `"response_action":"update"`) {
			t.Errorf("private_metadata %q: answered %s; want the notice that she can't answer", metadata, body)
		}
	}
}

// prodClick is a one-tap control clicked on a request of the prod route.
type prodClick struct {
	name    string
	nr      pending.NewRequest
	control string // the clicked control's action_id, after its request's id
}

// prodClicks are the one-tap controls of the prod route's requests:
// Allow once on an approval, Dismiss and an option on a question.
func prodClicks() []prodClick {
	approval := pending.NewRequest{Kind: seam.KindApproval, Route: "prod",
		Approval: &seam.Approval{ToolName: "kubectl_delete", Reason: "the prod namespace"}}
	question := pending.NewRequest{Kind: seam.KindQuestion, Route: "prod", Questions: &seam.Questions{Questions: []seam.Question{
		{ID: "q", Question: "Delete the prod namespace?", Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}}
	return []prodClick{
		{"allow once", approval, "ab:allow:"},
		{"dismiss", question, "ab:dismiss:"},
		{"an option", question, "ab:pick:"},
	}
}

// routed returns a surface with routes, on a fake Slack and an embedded
// store of its own.
func routed(t *testing.T, routes ...config.Route) (*Surface, *pending.Store, *slacktest.FakeSlack) {
	t.Helper()
	fake := slacktest.NewFakeSlack(t, testToken)
	store := embeddedStore(t)
	cfg := &config.Config{Slack: &config.Slack{BotToken: testToken, SigningSecret: "s", APIURL: fake.URL}, Routes: routes}
	s, err := New(cfg, Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return s, store, fake
}

// postRecorded creates nr, posts it through the target key names (tc) and
// records the post, as dispatch does; it returns the request and its
// message.
func postRecorded(t *testing.T, s *Surface, store *pending.Store, fake *slacktest.FakeSlack, nr pending.NewRequest, key string, tc *config.SlackTarget) (*pending.Record, slacktest.FakeCall) {
	t.Helper()
	ctx := context.Background()
	rec, _, err := store.Create(ctx, nr)
	if err != nil {
		t.Fatal(err)
	}
	n := len(fake.Calls("chat.postMessage"))
	posts, err := s.Post(ctx, rec, dispatch.Target{Key: key, Config: config.Target{Slack: tc}})
	if err != nil {
		t.Fatal(err)
	}
	posts[0].Target = key
	if _, err := store.AddPost(ctx, rec.ID, posts[0]); err != nil {
		t.Fatal(err)
	}
	return rec, fake.Calls("chat.postMessage")[n]
}

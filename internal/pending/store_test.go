package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/seam"
)

var idPattern = regexp.MustCompile(`^[a-z2-7]{16}$`)

func TestCreate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()

		t.Run("question round-trips", func(t *testing.T) {
			nr := question("alice", "call-rt")
			nr.ExpiresIn = 90 * time.Second
			rec, created, err := s.Create(ctx, nr)
			if err != nil || !created {
				t.Fatalf("Create = %v, created %v; want a new record", err, created)
			}
			now := b.clock.Now()
			_, hash, _, _ := nr.encode()
			if rec.Lease != now.Add(PostingLease).UnixMilli() {
				t.Errorf("created with lease %d; want a posting lease from now", rec.Lease)
			}
			rec.Lease = 0 // the creator's alone: a read has none
			for name, got := range map[string]*Record{"created": rec, "read back": mustGet(t, s, rec.ID)} {
				want := &Record{
					ID: rec.ID, Kind: seam.KindQuestion, Status: seam.StatusPending,
					Client: "alice", ToolCallID: "call-rt", Route: "default",
					Caller:    &seam.Caller{Agent: "agent-7", Name: "deploy-bot", Session: "run-42"},
					Questions: questions(),
					CreatedAt: now, ExpiresAt: now.Add(90 * time.Second), Hash: hash,
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s record:\n got %+v\nwant %+v", name, got, want)
				}
				if !got.Questions.Questions[1].MultiSelect {
					t.Errorf("%s record lost multiSelect", name)
				}
			}
		})

		t.Run("approval round-trips", func(t *testing.T) {
			nr := approval("alice", "call-appr")
			nr.Caller = nil
			rec := mustCreate(t, s, nr)
			got := mustGet(t, s, rec.ID)
			if !reflect.DeepEqual(rec, got) {
				t.Errorf("created record:\n got %+v\nread back %+v", rec, got)
			}
			if got.Kind != seam.KindApproval || got.Questions != nil || got.Caller != nil || !got.ExpiresAt.IsZero() {
				t.Errorf("record = %+v; want an approval without caller, questions or expiry", got)
			}
			if !reflect.DeepEqual(got.Approval, nr.Approval) {
				t.Errorf("approval = %+v (arguments %s); want %+v (arguments %s)",
					got.Approval, got.Approval.Arguments, nr.Approval, nr.Approval.Arguments)
			}
		})

		t.Run("ids are short and URL-safe", func(t *testing.T) {
			for _, nr := range []NewRequest{question("alice", ""), question("alice", "call/with?odd#chars"), approval("bob", "")} {
				rec := mustCreate(t, s, nr)
				if !idPattern.MatchString(rec.ID) || url.PathEscape(rec.ID) != rec.ID {
					t.Errorf("id %q is not 16 URL-safe characters", rec.ID)
				}
			}
		})

		// Each case creates first, then second; tool_call_ids are unique per case.
		changedText := question("alice", "call-text")
		changedText.Questions.Questions[0].Question = "Proceed with the cleanup, gently?"
		changedCaller := question("alice", "call-caller")
		changedCaller.Caller = &seam.Caller{Agent: "agent-8"}
		changedExpiry := question("alice", "call-expiry")
		changedExpiry.ExpiresIn = time.Hour
		// The expiry a request got by default is not what it is: the same
		// request sent again after the default changed (a config change,
		// then a restart) re-attaches.
		defaultOnce := question("alice", "call-default")
		defaultOnce.DefaultExpiresIn = 24 * time.Hour
		defaultChanged := question("alice", "call-default")
		defaultChanged.DefaultExpiresIn = 48 * time.Hour
		reordered := approval("alice", "call-order")
		reordered.Approval.Arguments = []byte(`{"replicas":3, "namespace":"prod", "file":"web.yaml"}`)
		bigNumber := func(n string) NewRequest {
			nr := approval("alice", "call-big")
			nr.Approval.Arguments = []byte(`{"id":` + n + `}`)
			return nr
		}
		for _, tc := range []struct {
			name          string
			first, second NewRequest
			sameID        bool
			err           error
		}{
			{"same client, tool_call_id and body", question("alice", "call-same"), question("alice", "call-same"), true, nil},
			{"same tool_call_id, other question text", question("alice", "call-text"), changedText, false, ErrConflict},
			{"same tool_call_id, other caller (a restarted agent)", question("alice", "call-caller"), changedCaller, true, nil},
			{"same tool_call_id, other expiry", question("alice", "call-expiry"), changedExpiry, false, ErrConflict},
			{"same tool_call_id, the default expiry changed", defaultOnce, defaultChanged, true, nil},
			{"same approval, arguments in another key order", approval("alice", "call-order"), reordered, true, nil},
			{"same tool_call_id, arguments that differ past float precision", bigNumber("12345678901234567890"), bigNumber("12345678901234567891"), false, ErrConflict},
			{"other client, same tool_call_id", question("alice", "call-client"), question("bob", "call-client"), false, nil},
			{"same tool_call_id, other kind", question("alice", "call-kind"), approval("alice", "call-kind"), false, nil},
			{"no tool_call_id", question("alice", ""), question("alice", ""), false, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				first := mustCreate(t, s, tc.first)
				got, created, err := s.Create(ctx, tc.second)
				switch {
				case tc.err != nil:
					if !errors.Is(err, tc.err) || got != nil || created {
						t.Fatalf("second Create = %v, %v, %v; want nil, false, %v", got, created, err, tc.err)
					}
					if rec := mustGet(t, s, first.ID); !reflect.DeepEqual(rec, first) {
						t.Errorf("the conflicting create changed the first record:\n got %+v\nwant %+v", rec, first)
					}
				case err != nil:
					t.Fatalf("second Create: %v", err)
				case tc.sameID:
					if created || !reflect.DeepEqual(got, first) {
						t.Errorf("second Create = %+v, created %v; want the first record, created false", got, created)
					}
				default:
					if !created || got.ID == first.ID {
						t.Errorf("second Create = id %s, created %v; want a new record besides %s", got.ID, created, first.ID)
					}
				}
			})
		}

		// Bridges before canonical hashing hashed an approval's arguments
		// in the order they came; a request they created re-attaches.
		t.Run("a request hashed with its arguments in order re-attaches", func(t *testing.T) {
			nr := approval("alice", "call-ordered-hash")
			nr.Approval.Arguments = []byte(`{"replicas":3,"file":"web.yaml"}`)
			_, hash, earlier, err := nr.encode()
			if err != nil || len(earlier) != 1 || earlier[0] == hash {
				t.Fatalf("encode: %v; hashes %s and %v, want one earlier besides", err, hash, earlier)
			}
			first := mustCreate(t, s, nr)
			if err := s.rdb.HSet(ctx, s.keys.record(first.ID), fHash, earlier[0]).Err(); err != nil {
				t.Fatal(err)
			}
			got, created, err := s.Create(ctx, nr)
			if err != nil || created || got.ID != first.ID {
				t.Errorf("Create = %+v, created %v, %v; want the first record, created false", got, created, err)
			}
		})

		// They kept "arguments": null as sent, which Validate now drops: a
		// request they created so re-attaches.
		t.Run("a request hashed with null arguments re-attaches", func(t *testing.T) {
			nr := approval("alice", "call-null-arguments")
			nr.Approval.Arguments = nil
			old := nr
			a := *nr.Approval
			a.Arguments = json.RawMessage("null")
			old.Approval = &a
			_, oldHash, _, err := old.encode()
			if err != nil {
				t.Fatal(err)
			}
			first := mustCreate(t, s, nr)
			if err := s.rdb.HSet(ctx, s.keys.record(first.ID), fHash, oldHash).Err(); err != nil {
				t.Fatal(err)
			}
			got, created, err := s.Create(ctx, nr)
			if err != nil || created || got.ID != first.ID {
				t.Errorf("Create = %+v, created %v, %v; want the first record, created false", got, created, err)
			}
		})

		// They kept a typed prefill as sent ("yes"), which Validate now
		// makes canonical ("true"): a request they created re-attaches.
		t.Run("a request hashed with its prefill as sent re-attaches", func(t *testing.T) {
			create := func(validated bool) NewRequest {
				nr := question("alice", "call-prefill-as-sent")
				nr.Questions = &seam.Questions{Questions: []seam.Question{
					{ID: "dry", Question: "Dry run?", Input: &seam.Input{Type: seam.InputBoolean, Value: "yes"}},
					{ID: "n", Question: "How many?", Input: &seam.Input{Type: seam.InputInteger, Value: "3"}},
				}}
				if validated {
					if err := nr.Questions.Validate(); err != nil {
						t.Fatal(err)
					}
				}
				return nr
			}
			_, oldHash, _, err := create(false).encode() // as they hashed it
			if err != nil {
				t.Fatal(err)
			}
			nr := create(true)
			if v := nr.Questions.Questions[0].Input.Value; v != "true" {
				t.Fatalf("the prefill validated is %q, want true", v)
			}
			first := mustCreate(t, s, nr)
			if err := s.rdb.HSet(ctx, s.keys.record(first.ID), fHash, oldHash).Err(); err != nil {
				t.Fatal(err)
			}
			got, created, err := s.Create(ctx, create(true))
			if err != nil || created || got.ID != first.ID {
				t.Errorf("Create = %+v, created %v, %v; want the first record, created false", got, created, err)
			}
		})

		// Bridges before DefaultExpiresIn filled the default in as
		// ExpiresIn, and hashed it the same: a request they created
		// re-attaches, and one created here re-attaches on them.
		t.Run("a request whose expiry they filled in is the same request", func(t *testing.T) {
			old := question("alice", "call-default-hash")
			old.ExpiresIn = 24 * time.Hour // as their dispatcher filled it in
			nr := question("alice", "call-default-hash")
			nr.DefaultExpiresIn = 24 * time.Hour
			_, oldHash, _, err := old.encode()
			if err != nil {
				t.Fatal(err)
			}
			if _, hash, _, err := nr.encode(); err != nil || hash != oldHash {
				t.Fatalf("encode: %v; hash %s, theirs %s", err, hash, oldHash)
			}
		})

		t.Run("a retry re-attaches to a resolved request", func(t *testing.T) {
			first := mustCreate(t, s, question("alice", "call-done"))
			if _, err := s.Resolve(ctx, first.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			got, created, err := s.Create(ctx, question("alice", "call-done"))
			if err != nil || created || got.ID != first.ID || got.Status != seam.StatusAnswered || got.Answer == nil {
				t.Errorf("Create = %+v, created %v, %v; want the answered record, created false", got, created, err)
			}
		})

		t.Run("concurrent creates make one request", func(t *testing.T) {
			b := b.sub(t)
			other := b.store()
			type result struct {
				rec     *Record
				created bool
				err     error
			}
			const n = 20
			start, results := make(chan struct{}), make(chan result, n)
			for i := range n {
				go func() {
					st := []*Store{s, other}[i%2]
					<-start
					rec, created, err := st.Create(ctx, question("alice", "call-concurrent"))
					results <- result{rec, created, err}
				}()
			}
			close(start)
			var ids = map[string]bool{}
			createdN := 0
			for range n {
				r := recv(t, "a create", results)
				if r.err != nil {
					t.Fatalf("Create: %v", r.err)
				}
				ids[r.rec.ID] = true
				if r.created {
					createdN++
				}
			}
			if len(ids) != 1 || createdN != 1 {
				t.Errorf("%d concurrent creates made ids %v, %d created; want one id, created once", n, ids, createdN)
			}
		})

		t.Run("unknown kind", func(t *testing.T) {
			nr := question("alice", "")
			nr.Kind = "poll"
			if _, _, err := s.Create(ctx, nr); err == nil {
				t.Error("Create of an unknown kind succeeded")
			}
		})
	})
}

func TestGetUnknown(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		s := b.store()
		rec := mustCreate(t, s, question("alice", ""))
		other := b.store(func(o *Options) { o.Prefix = b.prefix + "other:" })
		for _, tc := range []struct {
			name string
			s    *Store
			id   string
		}{
			{"unknown id", s, "aaaaaaaaaaaaaaaa"},
			{"another prefix", other, rec.ID},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got, err := tc.s.Get(context.Background(), tc.id); !errors.Is(err, ErrNotFound) || got != nil {
					t.Errorf("Get = %v, %v; want ErrNotFound", got, err)
				}
			})
		}
	})
}

func TestResolve(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store(withRetention(time.Hour))

		t.Run("answer", func(t *testing.T) {
			rec := mustCreate(t, s, question("alice", ""))
			b.clock.Advance(3 * time.Second)
			res := answered("U1")
			got, err := s.Resolve(ctx, rec.ID, res)
			if err != nil {
				t.Fatal(err)
			}
			for name, r := range map[string]*Record{"returned": got, "read back": mustGet(t, s, rec.ID)} {
				if r.Status != seam.StatusAnswered || r.Status.Code() != "" ||
					!reflect.DeepEqual(r.Answer, res.Answer) || !reflect.DeepEqual(r.ResolvedBy, res.By) ||
					!r.ResolvedAt.Equal(b.clock.Now()) || r.Decision != nil {
					t.Errorf("%s record = %+v; want answered by %+v at %v with %+v", name, r, res.By, b.clock.Now(), res.Answer)
				}
				if !reflect.DeepEqual(r.Questions, rec.Questions) || !r.CreatedAt.Equal(rec.CreatedAt) {
					t.Errorf("%s record lost its request: %+v", name, r)
				}
			}
		})

		// From spares reading the whole record back: what Resolve returns
		// must still be what a read gives, with posts added after From.
		t.Run("from the record the caller read", func(t *testing.T) {
			for _, nr := range []NewRequest{question("alice", ""), approval("alice", "")} {
				rec := mustCreate(t, s, nr)
				if _, err := s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: "1.1"}); err != nil {
					t.Fatal(err)
				}
				from := mustGet(t, s, rec.ID)
				if _, err := s.AddPost(ctx, rec.ID, Post{Surface: "discord", Channel: "9", MessageID: "77"}); err != nil {
					t.Fatal(err)
				}
				b.clock.Advance(time.Second)
				res := answered("U1")
				if nr.Kind == seam.KindApproval {
					res.Answer, res.Decision = nil, &seam.Decision{Outcome: seam.OutcomeRejected, Note: "not today"}
				}
				res.Kind, res.From = nr.Kind, from
				got, err := s.Resolve(ctx, rec.ID, res)
				if err != nil {
					t.Fatal(err)
				}
				if want := mustGet(t, s, rec.ID); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: returned record:\n got %+v\nread back %+v", nr.Kind, got, want)
				}
				if len(got.Posts) != 2 {
					t.Errorf("%s: posts = %+v; want both", nr.Kind, got.Posts)
				}
				if from.Status != seam.StatusPending {
					t.Errorf("%s: Resolve changed From", nr.Kind)
				}
				res.By = &Responder{Surface: "slack", UserID: "U2"}
				if late, err := s.Resolve(ctx, rec.ID, res); !errors.Is(err, ErrAlreadyResolved) || late.ResolvedBy.UserID != "U1" {
					t.Errorf("%s: second Resolve = %+v, %v; want the first answer and ErrAlreadyResolved", nr.Kind, late, err)
				}
			}
		})

		t.Run("decision", func(t *testing.T) {
			rec := mustCreate(t, s, approval("alice", ""))
			d := &seam.Decision{Outcome: seam.OutcomeAllowedOnce, Note: "go ahead"}
			by := &Responder{Surface: "discord", UserID: "42", Name: "Grace"}
			if _, err := s.Resolve(ctx, rec.ID, Resolution{Status: seam.StatusAnswered, Decision: d, By: by, Kind: seam.KindApproval}); err != nil {
				t.Fatal(err)
			}
			got := mustGet(t, s, rec.ID)
			if !reflect.DeepEqual(got.Decision, d) || got.Answer != nil || !reflect.DeepEqual(got.ResolvedBy, by) {
				t.Errorf("record = %+v; want decision %+v by %+v", got, d, by)
			}
		})

		for _, tc := range []struct {
			status seam.Status
			code   seam.Code
		}{
			{seam.StatusCancelled, seam.CodeAborted},
			{seam.StatusDismissed, seam.CodeCancelled},
			{seam.StatusExpired, seam.CodeTimedOut},
		} {
			t.Run("unanswered "+string(tc.status), func(t *testing.T) {
				rec := mustCreate(t, s, question("alice", ""))
				if _, err := s.Resolve(ctx, rec.ID, Resolution{Status: tc.status}); err != nil {
					t.Fatal(err)
				}
				got := mustGet(t, s, rec.ID)
				if got.Status != tc.status || got.Status.Code() != tc.code || got.Answer != nil || got.ResolvedBy != nil {
					t.Errorf("record = %+v; want %s (%s) without answer or responder", got, tc.status, tc.code)
				}
			})
		}

		t.Run("a pending status is refused", func(t *testing.T) {
			rec := mustCreate(t, s, question("alice", ""))
			for _, st := range []seam.Status{seam.StatusPending, "", "done"} {
				if _, err := s.Resolve(ctx, rec.ID, Resolution{Status: st}); err == nil {
					t.Errorf("Resolve to %q succeeded", st)
				}
			}
			if got := mustGet(t, s, rec.ID); got.Status != seam.StatusPending {
				t.Errorf("status = %s; want pending", got.Status)
			}
		})

		t.Run("not found", func(t *testing.T) {
			q := mustCreate(t, s, question("alice", ""))
			for _, tc := range []struct {
				name string
				id   string
				res  Resolution
			}{
				{"unknown id", "aaaaaaaaaaaaaaaa", answered("U1")},
				{"other kind", q.ID, Resolution{Status: seam.StatusCancelled, Kind: seam.KindApproval}},
				{"other owner", q.ID, Resolution{Status: seam.StatusCancelled, Owner: "mallory"}},
				{"right kind, other owner", q.ID, Resolution{Status: seam.StatusCancelled, Kind: seam.KindQuestion, Owner: "mallory"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got, err := s.Resolve(ctx, tc.id, tc.res); !errors.Is(err, ErrNotFound) || got != nil {
						t.Errorf("Resolve = %v, %v; want nil, ErrNotFound", got, err)
					}
				})
			}
			if got := mustGet(t, s, q.ID); got.Status != seam.StatusPending {
				t.Fatalf("status = %s after refused resolves; want pending", got.Status)
			}
			if _, err := s.Resolve(ctx, q.ID, Resolution{Status: seam.StatusCancelled, Kind: seam.KindQuestion, Owner: "alice"}); err != nil {
				t.Errorf("Resolve with the right kind and owner: %v", err)
			}
			// A resolved request of another owner is still hidden, not "already resolved".
			if _, err := s.Resolve(ctx, q.ID, Resolution{Status: seam.StatusCancelled, Owner: "mallory"}); !errors.Is(err, ErrNotFound) {
				t.Errorf("Resolve by another owner after the end = %v; want ErrNotFound", err)
			}
		})

		// Hash names what the request asks: a click on a message posted for
		// a request since discarded must not answer another created under
		// the same tool_call_id with an option it does not have.
		t.Run("hash names what the request asks", func(t *testing.T) {
			old := mustCreate(t, s, question("alice", "call-again"))
			if ok, err := s.Discard(ctx, old.ID); err != nil || !ok {
				t.Fatalf("Discard = %v, %v", ok, err)
			}
			other := question("alice", "call-again")
			other.Questions = &seam.Questions{Questions: []seam.Question{{ID: "region", Question: "Which region?",
				Options: []seam.Option{{Label: "eu-west-1"}, {Label: "us-east-1"}}}}}
			again := mustCreate(t, s, other)
			if again.ID != old.ID || again.Hash == old.Hash || again.Hash == "" {
				t.Fatalf("created again as %s with hash %q; want the id %s and a hash other than %q", again.ID, again.Hash, old.ID, old.Hash)
			}
			if got := mustGet(t, s, again.ID); got.Hash != again.Hash {
				t.Fatalf("hash read back %q; Create said %q", got.Hash, again.Hash)
			}
			res := answered("U1")
			res.Hash = old.Hash
			if got, err := s.Resolve(ctx, again.ID, res); !errors.Is(err, ErrNotFound) || got != nil {
				t.Errorf("Resolve of what the discarded request asked = %v, %v; want nil, ErrNotFound", got, err)
			}
			if got := mustGet(t, s, again.ID); got.Status != seam.StatusPending {
				t.Fatalf("status = %s; want the new request still pending", got.Status)
			}
			res.Hash = again.Hash
			res.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "region", Selected: []string{"us-east-1"}}}}
			if got, err := s.Resolve(ctx, again.ID, res); err != nil || got.Status != seam.StatusAnswered || len(got.Questions.Questions) == 0 {
				t.Errorf("Resolve with its own hash = %+v, %v; want it answered, whole", got, err)
			}
		})

		// Offered is a label taken from a click's own payload: one the
		// request does not offer changes nothing.
		t.Run("offered names one of the request's options", func(t *testing.T) {
			nr := question("alice", "call-offered")
			labels := []string{`Ship <v2> & "go" \ now`, "Jä, 日本 (Recommended)"}
			nr.Questions = &seam.Questions{Questions: []seam.Question{{ID: "ship", Question: "Ship it?",
				Header: `"label":"forged"`, Options: []seam.Option{{Label: labels[0]}, {Label: labels[1], Description: `"label":"forged"`}}}}}
			rec := mustCreate(t, s, nr)
			pick := func(label string) Resolution {
				res := answered("U1")
				res.Hash, res.Offered = rec.Hash, label
				res.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: "ship", Selected: []string{label}}}}
				return res
			}
			for _, forged := range []string{"rm -rf /", "forged", "Ship <v2>", labels[1] + " "} {
				if got, err := s.Resolve(ctx, rec.ID, pick(forged)); !errors.Is(err, ErrNotOffered) || got != nil {
					t.Errorf("Resolve with %q, not offered = %v, %v; want nil, ErrNotOffered", forged, got, err)
				}
			}
			if got := mustGet(t, s, rec.ID); got.Status != seam.StatusPending {
				t.Fatalf("status = %s after refused labels; want pending", got.Status)
			}
			if got, err := s.Resolve(ctx, rec.ID, pick(labels[0])); err != nil || got.Status != seam.StatusAnswered {
				t.Errorf("Resolve with an offered label = %+v, %v; want it answered", got, err)
			}
		})

		// Offered's answer names its question, from the click's payload
		// too: the request's one single-choice question, with no typed
		// field, or nothing changes.
		t.Run("offered answers the request's one single-choice question", func(t *testing.T) {
			pick := func(rec *Record, qid, label string) Resolution {
				res := answered("U1")
				res.Hash, res.Offered = rec.Hash, label
				res.Answer = &seam.Answer{Answers: []seam.AnswerItem{{ID: qid, Selected: []string{label}}}}
				return res
			}
			one := question("alice", "call-offered-one")
			one.Questions = &seam.Questions{Questions: []seam.Question{{ID: "ship", Question: "Ship it?",
				Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}}}}
			two := question("alice", "call-offered-two") // cleanup, then envs (multi-select)
			multi := question("alice", "call-offered-multi")
			multi.Questions = &seam.Questions{Questions: []seam.Question{{ID: "envs", Question: "Where?", MultiSelect: true,
				Options: []seam.Option{{Label: "staging"}, {Label: "prod"}}}}}
			typed := question("alice", "call-offered-typed")
			typed.Questions = &seam.Questions{Questions: []seam.Question{{ID: "ship", Question: "Ship it?",
				Options: []seam.Option{{Label: "Yes"}, {Label: "No"}}, Input: &seam.Input{Type: "text"}}}}
			for _, tc := range []struct {
				name       string
				nr         NewRequest
				qid, label string
			}{
				{"a question it does not ask", one, "other", "Yes"},
				{"one of two questions, the other left out", two, "cleanup", "No, keep them"},
				{"the other question's option", two, "envs", "Yes, delete them (Recommended)"},
				{"a multi-select question", multi, "envs", "prod"},
				{"a question with a typed field", typed, "ship", "Yes"},
			} {
				tc.nr.ToolCallID = "call-offered-" + tc.name
				rec := mustCreate(t, s, tc.nr)
				if got, err := s.Resolve(ctx, rec.ID, pick(rec, tc.qid, tc.label)); !errors.Is(err, ErrNotOffered) || got != nil {
					t.Errorf("%s: Resolve = %v, %v; want nil, ErrNotOffered", tc.name, got, err)
				}
				if got := mustGet(t, s, rec.ID); got.Status != seam.StatusPending {
					t.Fatalf("%s: status = %s; want pending", tc.name, got.Status)
				}
			}
			one.ToolCallID = "call-offered-fits"
			rec := mustCreate(t, s, one)
			if got, err := s.Resolve(ctx, rec.ID, pick(rec, "ship", "No")); err != nil || got.Status != seam.StatusAnswered {
				t.Errorf("Resolve of its question with an offered label = %+v, %v; want it answered", got, err)
			}
		})

		// Route is the route a click's own payload names (the target a
		// Slack button carries): a request on another route changes
		// nothing, even with its own hash.
		t.Run("route names the request's route", func(t *testing.T) {
			nr := question("alice", "call-route")
			nr.Route = "prod"
			rec := mustCreate(t, s, nr)
			res := answered("U1")
			res.Hash, res.Route = rec.Hash, "default"
			if got, err := s.Resolve(ctx, rec.ID, res); !errors.Is(err, ErrOtherRoute) || got != nil {
				t.Errorf("Resolve through another route = %v, %v; want nil, ErrOtherRoute", got, err)
			}
			if got := mustGet(t, s, rec.ID); got.Status != seam.StatusPending {
				t.Fatalf("status = %s after a resolution through another route; want pending", got.Status)
			}
			res.Route = "prod"
			if got, err := s.Resolve(ctx, rec.ID, res); err != nil || got.Status != seam.StatusAnswered {
				t.Errorf("Resolve through its own route = %+v, %v; want it answered", got, err)
			}
		})

		t.Run("first answer wins across replicas", func(t *testing.T) {
			b := b.sub(t)
			replicas := []*Store{s, b.store(withRetention(time.Hour))}
			rec := mustCreate(t, s, question("alice", ""))
			type result struct {
				by  string
				rec *Record
				err error
			}
			const n = 100
			start, results := make(chan struct{}), make(chan result, n)
			for i := range n {
				go func() {
					by := fmt.Sprintf("U%03d", i)
					<-start
					got, err := replicas[i%2].Resolve(ctx, rec.ID, answered(by))
					results <- result{by, got, err}
				}()
			}
			close(start)
			var winners, losers []result
			for range n {
				r := recv(t, "a resolve", results)
				switch {
				case r.err == nil:
					winners = append(winners, r)
				case errors.Is(r.err, ErrAlreadyResolved):
					losers = append(losers, r)
				default:
					t.Fatalf("Resolve: %v", r.err)
				}
			}
			if len(winners) != 1 || len(losers) != n-1 {
				t.Fatalf("%d winners, %d ErrAlreadyResolved; want 1 and %d", len(winners), len(losers), n-1)
			}
			win := winners[0]
			if win.rec.ResolvedBy.UserID != win.by {
				t.Errorf("the winner's record names %s; want %s", win.rec.ResolvedBy.UserID, win.by)
			}
			for _, l := range losers {
				if !reflect.DeepEqual(l.rec, win.rec) {
					t.Fatalf("a loser (%s) got %+v; want the winner's record %+v", l.by, l.rec, win.rec)
				}
			}
			if got := mustGet(t, s, rec.ID); !reflect.DeepEqual(got, win.rec) {
				t.Errorf("stored record %+v; want the winner's %+v", got, win.rec)
			}
			answeredEvents := 0
			evs, err := s.Audit(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Fields["id"] == rec.ID && ev.Fields["event"] == "answered" {
					answeredEvents++
				}
			}
			if answeredEvents != 1 {
				t.Errorf("%d answered audit events; want 1", answeredEvents)
			}
		})

		t.Run("cancel races answer", func(t *testing.T) {
			b := b.sub(t)
			other := b.store()
			for i := range 25 {
				rec := mustCreate(t, s, question("alice", ""))
				type result struct {
					st  seam.Status
					rec *Record
					err error
				}
				start, results := make(chan struct{}), make(chan result, 2)
				for _, r := range []struct {
					s   *Store
					res Resolution
				}{
					{s, answered("U1")},
					{other, Resolution{Status: seam.StatusCancelled, Owner: "alice", Kind: seam.KindQuestion}},
				} {
					go func() {
						<-start
						got, err := r.s.Resolve(ctx, rec.ID, r.res)
						results <- result{r.res.Status, got, err}
					}()
				}
				close(start)
				r1, r2 := recv(t, "a resolve", results), recv(t, "a resolve", results)
				if (r1.err == nil) == (r2.err == nil) {
					t.Fatalf("round %d: errors %v and %v; want exactly one winner", i, r1.err, r2.err)
				}
				win, lose := r1, r2
				if r1.err != nil {
					win, lose = r2, r1
				}
				if !errors.Is(lose.err, ErrAlreadyResolved) || lose.rec.Status != win.st {
					t.Fatalf("round %d: the loser got %v, status %s; want ErrAlreadyResolved, %s", i, lose.err, lose.rec.Status, win.st)
				}
				if got := mustGet(t, s, rec.ID); got.Status != win.st {
					t.Fatalf("round %d: stored status %s; want the winner's %s", i, got.Status, win.st)
				}
			}
		})

		t.Run("a finished record expires after retention", func(t *testing.T) {
			b := b.sub(t)
			rec := mustCreate(t, s, question("alice", ""))
			key := s.keys.record(rec.ID)
			if ttl := b.pttl(key); ttl != -1 {
				t.Errorf("pending record's PTTL = %d; want -1 (none)", ttl)
			}
			if _, err := s.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			wantTTL := func(when string) {
				t.Helper()
				ttl := b.pttl(key)
				if hour := time.Hour.Milliseconds(); ttl <= hour-time.Minute.Milliseconds() || ttl > hour {
					t.Errorf("%s: PTTL = %d ms; want about an hour (%d ms)", when, ttl, hour)
				}
			}
			wantTTL("after the answer")
			if _, err := s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: "1.2"}); err != nil {
				t.Fatal(err)
			}
			wantTTL("after a late post")
			if _, err := s.Resolve(ctx, rec.ID, Resolution{Status: seam.StatusCancelled}); !errors.Is(err, ErrAlreadyResolved) {
				t.Fatalf("second Resolve = %v; want ErrAlreadyResolved", err)
			}
			wantTTL("after a late resolve")
		})
	})
}

func TestAddPost(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()

		t.Run("posts come back in order", func(t *testing.T) {
			rec := mustCreate(t, s, question("alice", ""))
			var want []Post
			for _, p := range []Post{
				{Surface: "slack", Target: "ops", Channel: "C9", MessageID: "1700000000.000200", Short: true},
				{Surface: "discord", Target: "dc", Channel: "123", MessageID: "456", Thread: "789"},
				{Surface: "slack", Target: "ops", Channel: "C1", MessageID: "1700000000.000100"},
			} {
				b.clock.Advance(time.Second)
				ended, err := s.AddPost(ctx, rec.ID, p)
				if err != nil || ended != nil {
					t.Fatalf("AddPost = %+v, %v; want nil: the request is pending", ended, err)
				}
				p.PostedAt = b.clock.Now()
				want = append(want, p)
			}
			// One posted earlier but recorded last goes first.
			early := Post{Surface: "slack", Channel: "C5", MessageID: "1.1", PostedAt: b.clock.Now().Add(-time.Hour)}
			if _, err := s.AddPost(ctx, rec.ID, early); err != nil {
				t.Fatal(err)
			}
			want = append([]Post{early}, want...)
			// Recording the same message again replaces it.
			if _, err := s.AddPost(ctx, rec.ID, want[1]); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, rec.ID).Posts; !reflect.DeepEqual(got, want) {
				t.Errorf("posts:\n got %+v\nwant %+v", got, want)
			}
		})

		t.Run("a post recorded before posts said whether they went out short", func(t *testing.T) {
			rec := mustCreate(t, s, question("alice", ""))
			old := `{"surface":"slack","target":"ops","channel":"C1","message_id":"1.1","thread":"0.9","posted_at":"2026-12-01T12:00:00Z"}`
			if err := s.rdb.HSet(ctx, s.keys.record(rec.ID), "post:slack:C1:1.1", old).Err(); err != nil {
				t.Fatal(err)
			}
			want := []Post{{Surface: "slack", Target: "ops", Channel: "C1", MessageID: "1.1", Thread: "0.9", PostedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}}
			if got := mustGet(t, s, rec.ID).Posts; !reflect.DeepEqual(got, want) {
				t.Errorf("posts:\n got %+v\nwant %+v (not short)", got, want)
			}
		})

		t.Run("a post on a finished request returns it as it ended", func(t *testing.T) {
			for _, st := range []seam.Status{seam.StatusAnswered, seam.StatusCancelled, seam.StatusExpired} {
				rec := mustCreate(t, s, question("alice", ""))
				res := Resolution{Status: st}
				if st == seam.StatusAnswered {
					res = answered("U1")
				}
				if _, err := s.Resolve(ctx, rec.ID, res); err != nil {
					t.Fatal(err)
				}
				p := Post{Surface: "slack", Channel: "C1", MessageID: "2.3"}
				got, err := s.AddPost(ctx, rec.ID, p)
				// The post is kept, so the caller or any replica can edit it.
				want := mustGet(t, s, rec.ID)
				if err != nil || !reflect.DeepEqual(got, want) || got.Status != st {
					t.Errorf("AddPost on a %s request = %+v, %v; want it as read back: %+v", st, got, err, want)
				}
				if len(want.Posts) != 1 || want.Posts[0].MessageID != "2.3" {
					t.Errorf("posts = %+v; want the late one", want.Posts)
				}
			}
		})

		t.Run("unknown id", func(t *testing.T) {
			ended, err := s.AddPost(ctx, "aaaaaaaaaaaaaaaa", Post{Surface: "slack", Channel: "C1", MessageID: "1"})
			if !errors.Is(err, ErrNotFound) || ended != nil {
				t.Errorf("AddPost = %+v, %v; want ErrNotFound", ended, err)
			}
			// ...and it leaves no half record behind.
			if _, err := s.Get(ctx, "aaaaaaaaaaaaaaaa"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get after AddPost on an unknown id = %v; want ErrNotFound", err)
			}
		})
	})
}

type waited struct {
	rec *Record
	err error
}

// wait runs s.Wait in the background.
func wait(ctx context.Context, s *Store, id, owner string) <-chan waited {
	ch := make(chan waited, 1)
	go func() {
		rec, err := s.Wait(ctx, id, owner)
		ch <- waited{rec, err}
	}()
	return ch
}

func wantAnswered(t *testing.T, w waited, id string) {
	t.Helper()
	if w.err != nil || w.rec == nil || w.rec.ID != id || w.rec.Status != seam.StatusAnswered {
		t.Fatalf("Wait = %+v, %v; want %s answered", w.rec, w.err, id)
	}
}

func TestWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()

		// In these tests replica A waits and replica B resolves. A rechecks
		// once an hour, so only a wake-up or its own first read can end a wait.
		t.Run("woken across replicas", func(t *testing.T) {
			b := b.sub(t)
			rd := newReads()
			a, other := b.storeOn(b.client(rd), withRecheck(time.Hour)), b.store()
			b.run(a)
			rec := mustCreate(t, other, question("alice", ""))
			done := wait(ctx, a, rec.ID, "alice")
			recv(t, "the waiter's first read", rd.ch)
			if _, err := other.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			w := recv(t, "the waiter woken by the other replica", done)
			wantAnswered(t, w, rec.ID)
			if w.rec.Answer == nil || w.rec.ResolvedBy.UserID != "U1" {
				t.Errorf("woken record = %+v; want the answer", w.rec)
			}
			if n := a.Waiting(); n != 0 {
				t.Errorf("Waiting = %d after the wait; want 0", n)
			}
		})

		t.Run("woken on the same replica", func(t *testing.T) {
			b := b.sub(t)
			rd := newReads()
			a := b.storeOn(b.client(rd), withRecheck(time.Hour)) // no Run: a local resolve wakes directly
			rec := mustCreate(t, a, question("alice", ""))
			done := wait(ctx, a, rec.ID, "")
			recv(t, "the waiter's first read", rd.ch)
			if _, err := a.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			wantAnswered(t, recv(t, "the waiter", done), rec.ID)
		})

		t.Run("answered before the wait began", func(t *testing.T) {
			b := b.sub(t)
			rd := newReads()
			a, other := b.storeOn(b.client(rd), withRecheck(time.Hour)), b.store()
			b.run(a)
			rec := mustCreate(t, other, question("alice", ""))
			if _, err := other.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			wantAnswered(t, recv(t, "the waiter", wait(ctx, a, rec.ID, "")), rec.ID)
			if n := rd.count.Load(); n != 1 {
				t.Errorf("the waiter read %d times; want 1", n)
			}
		})

		t.Run("an answer landing between the first read and the wait", func(t *testing.T) {
			b := b.sub(t)
			rd := newReads()
			a, other := b.storeOn(b.client(rd), withRecheck(time.Hour)), b.store()
			b.run(a)
			rec := mustCreate(t, other, question("alice", ""))
			// The first waiter only tells when A has handled the wake-up.
			first := wait(ctx, a, rec.ID, "")
			recv(t, "the first waiter's read", rd.ch)
			poll(t, "the first waiter", func() bool { return a.Waiting() == 1 })
			// Hold the second waiter right after it read the record as pending.
			hctx, h := hold(t, ctx)
			second := wait(hctx, a, rec.ID, "")
			recv(t, "the second waiter's read", h.read)
			if _, err := other.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			wantAnswered(t, recv(t, "the first waiter", first), rec.ID)
			h.release() // the wake-up is spent: the second waiter must have registered before reading
			wantAnswered(t, recv(t, "the second waiter", second), rec.ID)
		})

		t.Run("an answer published before the subscription is read after it", func(t *testing.T) {
			b := b.sub(t)
			rd := newReads()
			a, other := b.storeOn(b.client(rd), withRecheck(time.Hour)), b.store()
			rec := mustCreate(t, other, question("alice", ""))
			done := wait(ctx, a, rec.ID, "")
			recv(t, "the waiter's first read", rd.ch)
			// A is not subscribed yet: this wake-up reaches nobody.
			if _, err := other.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			select {
			case w := <-done:
				t.Fatalf("the wait ended before A subscribed: %+v, %v", w.rec, w.err)
			default:
			}
			b.run(a) // subscribing makes every waiter re-read
			wantAnswered(t, recv(t, "the waiter after A subscribed", done), rec.ID)
		})

		t.Run("a lost wake-up is caught by the recheck", func(t *testing.T) {
			b := b.sub(t)
			rd := newReads()
			a := b.storeOn(b.client(rd), withRecheck(20*time.Millisecond))
			b.run(a)
			rec := mustCreate(t, a, question("alice", ""))
			done := wait(ctx, a, rec.ID, "")
			recv(t, "the waiter's first read", rd.ch)
			// Resolve behind the store's back: nothing is published.
			if err := b.rdb.HSet(ctx, a.keys.record(rec.ID), fStatus, string(seam.StatusDismissed)).Err(); err != nil {
				t.Fatal(err)
			}
			w := recv(t, "the waiter to recheck", done)
			if w.err != nil || w.rec.Status != seam.StatusDismissed {
				t.Fatalf("Wait = %+v, %v; want dismissed", w.rec, w.err)
			}
			if n := rd.count.Load(); n < 2 {
				t.Errorf("the waiter read %d times; want a re-read", n)
			}
		})

		t.Run("deadline returns the pending record", func(t *testing.T) {
			b := b.sub(t)
			a := b.store(withRecheck(time.Hour))
			b.run(a)
			rec := mustCreate(t, a, question("alice", ""))
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			w := recv(t, "the wait's deadline", wait(wctx, a, rec.ID, "alice"))
			if !errors.Is(w.err, context.DeadlineExceeded) || w.rec == nil || w.rec.ID != rec.ID || w.rec.Status != seam.StatusPending {
				t.Errorf("Wait = %+v, %v; want the pending record and DeadlineExceeded", w.rec, w.err)
			}
			if n := a.Waiting(); n != 0 {
				t.Errorf("Waiting = %d after the deadline; want 0", n)
			}
		})

		t.Run("Waiting counts the waiters", func(t *testing.T) {
			b := b.sub(t)
			a, other := b.store(withRecheck(time.Hour)), b.store()
			b.run(a)
			r1 := mustCreate(t, a, question("alice", ""))
			r2 := mustCreate(t, a, question("alice", ""))
			dones := []<-chan waited{wait(ctx, a, r1.ID, ""), wait(ctx, a, r1.ID, ""), wait(ctx, a, r2.ID, "")}
			poll(t, "three waiters", func() bool { return a.Waiting() == 3 })
			for _, id := range []string{r1.ID, r2.ID} {
				if _, err := other.Resolve(ctx, id, answered("U1")); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range dones {
				if w := recv(t, "a waiter", d); w.err != nil || w.rec.Status != seam.StatusAnswered {
					t.Errorf("Wait = %+v, %v; want answered", w.rec, w.err)
				}
			}
			if n := a.Waiting(); n != 0 {
				t.Errorf("Waiting = %d after every wait ended; want 0", n)
			}
		})

		t.Run("not found", func(t *testing.T) {
			b := b.sub(t)
			a := b.store(withRecheck(time.Hour))
			rec := mustCreate(t, a, question("alice", ""))
			for _, tc := range []struct{ name, id, owner string }{
				{"unknown id", "aaaaaaaaaaaaaaaa", ""},
				{"other owner", rec.ID, "mallory"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					w := recv(t, "the wait", wait(ctx, a, tc.id, tc.owner))
					if !errors.Is(w.err, ErrNotFound) || w.rec != nil {
						t.Errorf("Wait = %+v, %v; want ErrNotFound", w.rec, w.err)
					}
				})
			}
			if n := a.Waiting(); n != 0 {
				t.Errorf("Waiting = %d; want 0", n)
			}
		})
	})
}

// A Watch started before the request exists needs no read to wait: an
// ending from this replica or another wakes it, even one that came before
// Wait was called.
// watchNew creates a question on s the way a waiting create does: watched
// from before it exists. The watch stops with the test.
func watchNew(t *testing.T, s *Store) (*Watch, *Record) {
	t.Helper()
	nr := question("alice", "")
	nr.ID = NewID(nr)
	w := s.Watch(nr.ID)
	t.Cleanup(w.Stop)
	rec := mustCreate(t, s, nr)
	if rec.ID != nr.ID {
		t.Fatalf("created %s; want the id given, %s", rec.ID, nr.ID)
	}
	return w, rec
}

func TestWatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		cnt := &counter{}
		a, other := b.storeOn(b.client(cnt), withRecheck(time.Hour)), b.store()
		b.run(a)

		t.Run("woken across replicas", func(t *testing.T) {
			w, rec := watchNew(t, a)
			done := make(chan waited, 1)
			n, _ := cnt.count(func() {
				go func() {
					got, err := w.Wait(ctx, rec)
					done <- waited{got, err}
				}()
				if _, err := other.Resolve(ctx, rec.ID, answered("U1")); err != nil {
					t.Fatal(err)
				}
				wantAnswered(t, recv(t, "the watched wait", done), rec.ID)
			})
			if n != 0 {
				t.Errorf("the watched wait took %d round trips; want 0", n)
			}
		})

		t.Run("ended before Wait", func(t *testing.T) {
			w, rec := watchNew(t, a)
			if _, err := a.Resolve(ctx, rec.ID, answered("U1")); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, eventually)
			defer cancel()
			got, err := w.Wait(wctx, rec) // rec is the pending record as created
			wantAnswered(t, waited{got, err}, rec.ID)
		})

		// A request no message was posted for is discarded: its waiters
		// learn it is gone at once, not at their next recheck.
		for _, by := range []struct {
			name string
			s    *Store
		}{{"discarded by this replica", a}, {"discarded across replicas", other}} {
			t.Run(by.name, func(t *testing.T) {
				w, rec := watchNew(t, a)
				done := make(chan waited, 1)
				go func() {
					got, err := w.Wait(ctx, rec)
					done <- waited{got, err}
				}()
				if ok, err := by.s.Discard(ctx, rec.ID); err != nil || !ok {
					t.Fatalf("Discard = %v, %v", ok, err)
				}
				if got := recv(t, "the wait on a discarded request", done); !errors.Is(got.err, ErrNotFound) {
					t.Errorf("Wait = %v, %v; want ErrNotFound", got.rec, got.err)
				}
			})
		}

		t.Run("stopped", func(t *testing.T) {
			w := a.Watch("nothing")
			if a.Waiting() != 1 {
				t.Fatalf("Waiting = %d with a watch; want 1", a.Waiting())
			}
			w.Stop()
			if a.Waiting() != 0 {
				t.Fatalf("Waiting = %d after Stop; want 0", a.Waiting())
			}
		})
	})
}

// A Redis restart drops the wake-up subscription. The waiters must ride it
// out and see an answer given after it, not fail because the subscription
// broke.
func TestWaitSurvivesRedisRestart(t *testing.T) {
	embeddedOnly(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		lg, rd := newLogs(), newReads()
		fast := redis.NewClient(&redis.Options{Addr: b.mr.Addr(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
		fast.AddHook(rd)
		t.Cleanup(func() { fast.Close() })
		a := b.storeOn(fast, withRecheck(time.Hour), func(o *Options) { o.Logger = slog.New(lg) })
		other := b.store()
		b.run(a)
		rec := mustCreate(t, other, question("alice", ""))
		done := wait(ctx, a, rec.ID, "")
		recv(t, "the waiter's first read", rd.ch)

		b.mr.Close()
		lg.next(t, "subscription interrupted") // Run saw the connection drop...
		lg.next(t, "subscription interrupted") // ...and failed to reconnect
		if err := b.mr.Restart(); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Resolve(ctx, rec.ID, answered("U1")); err != nil {
			t.Fatal(err)
		}
		wantAnswered(t, recv(t, "the waiter", done), rec.ID)
	})
}

func TestSweep(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s1, s2 := b.store(), b.store()
		waiter := b.store(withRecheck(time.Hour))
		b.run(waiter)

		expiring := question("alice", "expiring")
		expiring.ExpiresIn = time.Minute
		rec := mustCreate(t, s1, expiring)
		answeredEarly := question("alice", "answered")
		answeredEarly.ExpiresIn = time.Minute
		ans := mustCreate(t, s2, answeredEarly)
		if _, err := s2.Resolve(ctx, ans.ID, answered("U1")); err != nil {
			t.Fatal(err)
		}
		forever := mustCreate(t, s1, question("alice", "forever"))
		done := wait(ctx, waiter, rec.ID, "")

		// sweep runs both replicas' sweeps at once and returns what each expired.
		sweep := func() (ids []string) {
			t.Helper()
			type result struct {
				recs []*Record
				err  error
			}
			start, results := make(chan struct{}), make(chan result, 2)
			for _, s := range []*Store{s1, s2} {
				go func() {
					<-start
					recs, err := s.Sweep(ctx)
					results <- result{recs, err}
				}()
			}
			close(start)
			for range 2 {
				r := recv(t, "a sweep", results)
				if r.err != nil {
					t.Fatalf("Sweep: %v", r.err)
				}
				for _, rec := range r.recs {
					if rec.Status != seam.StatusExpired {
						t.Errorf("Sweep returned %s with status %s", rec.ID, rec.Status)
					}
					ids = append(ids, rec.ID)
				}
			}
			return ids
		}

		b.clock.Advance(59 * time.Second)
		if ids := sweep(); len(ids) != 0 {
			t.Fatalf("at +59s the sweeps expired %v; want nothing", ids)
		}
		if got := mustGet(t, s1, rec.ID); got.Status != seam.StatusPending {
			t.Fatalf("at +59s the status is %s; want pending", got.Status)
		}
		b.clock.Advance(2 * time.Second)
		if ids := sweep(); !reflect.DeepEqual(ids, []string{rec.ID}) {
			t.Fatalf("at +61s the sweeps expired %v; want [%s] once", ids, rec.ID)
		}
		got := mustGet(t, s1, rec.ID)
		if got.Status != seam.StatusExpired || got.Status.Code() != seam.CodeTimedOut || !got.ResolvedAt.Equal(b.clock.Now()) {
			t.Errorf("expired record = %+v; want expired (ASK_TIMED_OUT) at %v", got, b.clock.Now())
		}
		if w := recv(t, "the waiter woken by the expiry", done); w.err != nil || w.rec.Status != seam.StatusExpired {
			t.Errorf("Wait = %+v, %v; want expired", w.rec, w.err)
		}
		if got := mustGet(t, s1, ans.ID); got.Status != seam.StatusAnswered {
			t.Errorf("the answered request's status is %s; want answered", got.Status)
		}
		if got := mustGet(t, s1, forever.ID); got.Status != seam.StatusPending {
			t.Errorf("the request without expiry has status %s; want pending", got.Status)
		}
		b.clock.Advance(24 * time.Hour)
		if ids := sweep(); len(ids) != 0 {
			t.Errorf("a later sweep expired %v; want nothing", ids)
		}
		if evs := auditOf(t, s1, rec.ID); !reflect.DeepEqual(evs, []string{"expired", "created"}) {
			t.Errorf("audit of the expired request = %v; want [expired created]", evs)
		}
	})
}

// auditOf returns the events of one request, newest first.
func auditOf(t *testing.T, s *Store, id string) []string {
	t.Helper()
	evs, err := s.Audit(context.Background(), 1000)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Fields["id"] == id {
			out = append(out, ev.Fields["event"])
		}
	}
	return out
}

// The resolve script re-checks the expiry, so a replica whose clock runs
// ahead, or a stale read of the due index, can't expire a request early.
func TestResolveIfDue(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		nr := question("alice", "")
		nr.ExpiresIn = time.Minute
		rec := mustCreate(t, s, nr)
		forever := mustCreate(t, s, question("alice", ""))
		expire := Resolution{Status: seam.StatusExpired, IfDue: true}
		b.clock.Advance(59*time.Second + 999*time.Millisecond)
		for _, id := range []string{rec.ID, forever.ID} {
			if got, err := s.Resolve(ctx, id, expire); !errors.Is(err, ErrNotDue) || got != nil {
				t.Errorf("Resolve(IfDue) before the expiry = %v, %v; want ErrNotDue", got, err)
			}
			if got := mustGet(t, s, id); got.Status != seam.StatusPending {
				t.Errorf("status = %s; want pending", got.Status)
			}
		}
		b.clock.Advance(time.Millisecond)
		if got, err := s.Resolve(ctx, rec.ID, expire); err != nil || got.Status != seam.StatusExpired {
			t.Errorf("Resolve(IfDue) at the expiry = %+v, %v; want expired", got, err)
		}
	})
}

// A resolution that comes after the request's expiry, before a sweeper
// has expired it, expires it: the answer is refused as too late, waiters
// hear "expired", and the sweeper finds nothing left to do.
func TestResolveAfterExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		b.run(s)
		nr := question("alice", "")
		nr.ExpiresIn = time.Minute
		rec := mustCreate(t, s, nr)
		woke := wait(ctx, s, rec.ID, "")
		b.clock.Advance(time.Minute)

		got, err := s.Resolve(ctx, rec.ID, answered("bob"))
		if !errors.Is(err, ErrExpired) || !errors.Is(err, ErrAlreadyResolved) || got == nil || got.Status != seam.StatusExpired {
			t.Fatalf("Resolve after the expiry = %+v, %v; want the record expired and ErrExpired", got, err)
		}
		if got.Answer != nil || got.ResolvedBy != nil {
			t.Errorf("the late answer was recorded: %+v by %+v", got.Answer, got.ResolvedBy)
		}
		if w := recv(t, "the waiter", woke); w.err != nil || w.rec == nil || w.rec.Status != seam.StatusExpired {
			t.Errorf("the waiter heard %+v, %v; want expired", w.rec, w.err)
		}
		if got, err := s.Resolve(ctx, rec.ID, Resolution{Status: seam.StatusExpired, IfDue: true}); !errors.Is(err, ErrAlreadyResolved) || errors.Is(err, ErrExpired) {
			t.Errorf("the sweeper's expiry after it = %+v, %v; want ErrAlreadyResolved", got, err)
		}
		if got, err := s.Resolve(ctx, rec.ID, answered("carol")); !errors.Is(err, ErrAlreadyResolved) || errors.Is(err, ErrExpired) {
			t.Errorf("another answer after it = %+v, %v; want ErrAlreadyResolved", got, err)
		}
	})
}

// A request withdrawn before its create landed (the agent's turn ended
// with the create on its way) is created cancelled: the create finds it
// ended, and nothing else changes. Once the request exists, Withdraw
// leaves it to be cancelled as any other.
func TestWithdraw(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		for _, nr := range []NewRequest{question("alice", "call-1"), approval("alice", "call-2")} {
			got, err := s.Withdraw(ctx, nr.Client, nr.Kind, nr.ToolCallID)
			if err != nil || got.Status != seam.StatusCancelled || got.ID != IDFor(nr.Client, nr.Kind, nr.ToolCallID) {
				t.Fatalf("Withdraw %s = %+v, %v; want it cancelled", nr.Kind, got, err)
			}
			if read := mustGet(t, s, got.ID); got.Route != "" || read.Route != "" {
				t.Errorf("withdrawn, before any create named a route: route %q, read back %q; want none", got.Route, read.Route)
			}
			if read := mustGet(t, s, got.ID); !got.Withdrawn || !read.Withdrawn {
				t.Errorf("withdrawn: Withdrawn %v, read back %v; want true", got.Withdrawn, read.Withdrawn)
			}
			nr.Route = "ops"
			rec, created, err := s.Create(ctx, nr)
			if err != nil || created || rec.Status != seam.StatusCancelled || rec.ID != got.ID || rec.Route != "ops" {
				t.Fatalf("the create after it = %+v, created %v, %v; want the withdrawn request, on the create's route", rec, created, err)
			}
			// The first create to land names it; a later one, on another
			// route, finds it named.
			nr.Route = "other"
			if again, _, err := s.Create(ctx, nr); err != nil || again.Route != "ops" {
				t.Errorf("a second create after it: %+v, %v; want route ops", again, err)
			}
			if read := mustGet(t, s, got.ID); read.Status != seam.StatusCancelled || read.ToolCallID != nr.ToolCallID || read.Client != "alice" || read.Route != "ops" {
				t.Errorf("read back: %+v", read)
			}
			if ttl := b.pttl(s.keys.record(got.ID)); ttl <= 0 {
				t.Errorf("the withdrawn record has no TTL (%d)", ttl)
			}
			if _, err := s.Withdraw(ctx, nr.Client, nr.Kind, nr.ToolCallID); !errors.Is(err, ErrExists) {
				t.Errorf("Withdraw again = %v; want ErrExists", err)
			}
		}
		// Created first: Withdraw leaves it, and another client's id is its own.
		live := mustCreate(t, s, question("bob", "call-1"))
		if _, err := s.Withdraw(ctx, "bob", seam.KindQuestion, "call-1"); !errors.Is(err, ErrExists) {
			t.Errorf("Withdraw of a created request = %v; want ErrExists", err)
		}
		if got := mustGet(t, s, live.ID); got.Status != seam.StatusPending || got.Withdrawn {
			t.Errorf("Withdraw changed a created request: %s, withdrawn %v", got.Status, got.Withdrawn)
		}
	})
}

// TestSweepKeepsARequestCreatedAgain: a sweep that finds a due request
// gone drops its index entries; should the request be created again under
// its id (its tool_call_id asked again) between the sweep's read and the
// drop, the entries are the new request's, and stay: dropped, it would
// never expire, nor be listed.
func TestSweepKeepsARequestCreatedAgain(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		other := b.store()
		nr := question("alice", "call-again")
		nr.ExpiresIn = time.Minute
		rec := mustCreate(t, other, nr)
		if err := b.rdb.Del(ctx, other.keys.record(rec.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(2 * time.Minute)
		// Once the sweep's resolve has found the record gone, the
		// request is created again.
		after := &afterScript{do: func() { mustCreate(t, other, nr) }}
		s := b.storeOn(b.client(after))
		after.armed.Store(true)
		if recs, err := s.Sweep(ctx); err != nil || len(recs) != 0 {
			t.Fatalf("Sweep = %v, %v; want nothing", recs, err)
		}
		if after.armed.Load() {
			t.Fatal("the request was not created again during the sweep")
		}
		sh := shard(rec.ID)
		for _, key := range []string{s.keys.due(sh), s.keys.open(seam.KindQuestion, sh)} {
			if err := b.rdb.ZScore(ctx, key, rec.ID).Err(); err != nil {
				t.Errorf("%s lost the request created again: %v", key, err)
			}
		}
		b.clock.Advance(2 * time.Minute)
		if recs, err := s.Sweep(ctx); err != nil || len(recs) != 1 || recs[0].ID != rec.ID {
			t.Errorf("Sweep past the new request's expiry = %v, %v; want it expired", recs, err)
		}
	})
}

// afterScript is a go-redis hook that, once armed, runs do after the next
// script run has returned.
type afterScript struct {
	armed atomic.Bool
	do    func()
}

func (h *afterScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); (n == "evalsha" || n == "eval") && err == nil && h.armed.CompareAndSwap(true, false) {
			h.do()
		}
		return err
	}
}

func (h *afterScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestSweepDropsDeletedRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		nr := question("alice", "")
		nr.ExpiresIn = time.Minute
		rec := mustCreate(t, s, nr)
		if err := b.rdb.Del(ctx, s.keys.record(rec.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(2 * time.Minute)
		if recs, err := s.Sweep(ctx); err != nil || len(recs) != 0 {
			t.Fatalf("Sweep = %v, %v; want nothing", recs, err)
		}
		sh := shard(rec.ID)
		for _, key := range []string{s.keys.due(sh), s.keys.open(seam.KindQuestion, sh)} {
			if err := b.rdb.ZScore(ctx, key, rec.ID).Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("%s still holds the deleted request (%v)", key, err)
			}
		}
	})
}

func ids(recs []*Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

var toolCallSeq atomic.Int64

// inShard returns nr with a fresh tool_call_id that puts it in shard sh.
func inShard(nr NewRequest, sh int) NewRequest {
	for {
		nr.ToolCallID = fmt.Sprintf("call-%d", toolCallSeq.Add(1))
		if shard(NewID(nr)) == sh {
			return nr
		}
	}
}

func TestList(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		create := func(nr NewRequest, sh int) string {
			b.clock.Advance(time.Second)
			return mustCreate(t, s, inShard(nr, sh)).ID
		}
		// Newer requests sit in higher shards, so reading the shards in
		// order is not reading them newest first.
		q1 := create(question("alice", ""), 1)
		a1 := create(approval("alice", ""), 2)
		q2 := create(question("alice", ""), 3)
		q3 := create(question("alice", ""), 3)
		a2 := create(approval("alice", ""), 3)
		q4 := create(question("alice", ""), 5)
		q5 := create(question("bob", ""), 7)
		q6 := create(question("alice", ""), 9)
		for _, id := range []string{q4, q6} {
			if _, err := s.Resolve(ctx, id, Resolution{Status: seam.StatusCancelled}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			kind  seam.Kind
			limit int
			want  []string
		}{
			{seam.KindQuestion, 10, []string{q5, q3, q2, q1}},
			{seam.KindQuestion, 4, []string{q5, q3, q2, q1}},
			{seam.KindQuestion, 3, []string{q5, q3, q2}},
			{seam.KindQuestion, 1, []string{q5}},
			{seam.KindQuestion, 0, []string{q5, q3, q2, q1}},
			{seam.KindApproval, 10, []string{a2, a1}},
			{seam.KindApproval, 1, []string{a2}},
		} {
			t.Run(fmt.Sprintf("%s limit %d", tc.kind, tc.limit), func(t *testing.T) {
				recs, err := s.List(ctx, tc.kind, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(recs); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("List = %v; want %v", got, tc.want)
				}
				for _, r := range recs {
					if r.Kind != tc.kind || r.Status != seam.StatusPending {
						t.Errorf("List returned %s: %s %s", r.ID, r.Kind, r.Status)
					}
				}
				if got, err := s.PendingIDs(ctx, tc.kind, tc.limit); err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("PendingIDs = %v, %v; want %v", got, err, tc.want)
				}
			})
		}
		if _, err := s.List(ctx, "poll", 10); err == nil {
			t.Error("List of an unknown kind succeeded")
		}
	})
}

// A record gone from under its index entry (deleted by hand, or resolved
// between List's two reads) leaves room for the next one.
func TestListFillsPastAGoneRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		// All in one shard, whose newest two are then the gone one and the
		// next: the third must still be found. (Created in random shards,
		// this held but for one run in 256.)
		var created []string
		for range 3 {
			b.clock.Advance(time.Second)
			created = append(created, mustCreate(t, s, inShard(question("alice", ""), 7)).ID)
		}
		if err := b.rdb.Del(ctx, s.keys.record(created[2])).Err(); err != nil {
			t.Fatal(err)
		}
		recs, err := s.List(ctx, seam.KindQuestion, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(recs), []string{created[1], created[0]}; !slices.Equal(got, want) {
			t.Errorf("List(2) = %v; want %v", got, want)
		}
		if err := b.rdb.Del(ctx, s.keys.record(created[1])).Err(); err != nil {
			t.Fatal(err)
		}
		if recs, err := s.List(ctx, seam.KindQuestion, 2); err != nil || !slices.Equal(ids(recs), []string{created[0]}) {
			t.Errorf("List(2) with two gone = %v, %v; want [%s]", ids(recs), err, created[0])
		}
	})
}

// Newer requests of one kind in a shard must not hide older ones of the
// other kind behind the limit.
func TestListKindsShareShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		want := mustCreate(t, s, inShard(question("alice", ""), 4))
		for i := range 3 {
			b.clock.Advance(time.Second)
			mustCreate(t, s, inShard(approval(fmt.Sprint("client-", i), ""), 4))
		}
		recs, err := s.List(ctx, seam.KindQuestion, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(recs); !reflect.DeepEqual(got, []string{want.ID}) {
			t.Errorf("List(question, 1) = %v; want [%s]", got, want.ID)
		}
	})
}

func TestAudit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		rec := mustCreate(t, s, question("alice", ""))
		if _, err := s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: "1.2"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(ctx, rec.ID, answered("U7")); err != nil {
			t.Fatal(err)
		}
		evs, err := s.Audit(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []map[string]string
		for _, ev := range evs {
			if ev.At.IsZero() {
				t.Errorf("event %v has no time", ev.Fields)
			}
			if ev.Fields["id"] == rec.ID {
				got = append(got, ev.Fields)
			}
		}
		want := []map[string]string{
			{"event": "answered", "id": rec.ID, "surface": "slack", "user": "U7"},
			{"event": "posted", "id": rec.ID, "surface": "slack", "channel": "C1", "message": "1.2"},
			{"event": "created", "id": rec.ID, "client": "alice", "route": "default"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("audit, newest first:\n got %v\nwant %v", got, want)
		}
		if evs, err := s.Audit(ctx, 2); err != nil || len(evs) != 2 || evs[0].Fields["event"] != "answered" {
			t.Errorf("Audit(2) = %v, %v; want the newest 2", evs, err)
		}
		for _, n := range []int{0, -1} {
			if evs, err := s.Audit(ctx, n); err != nil || len(evs) != 0 {
				t.Errorf("Audit(%d) = %v, %v; want nothing", n, evs, err)
			}
		}
	})
}

func TestRedisDown(t *testing.T) {
	embeddedOnly(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		// No retries, so that each call fails at its first refused dial.
		down := redis.NewClient(&redis.Options{Addr: b.mr.Addr(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
		t.Cleanup(func() { down.Close() })
		s := b.storeOn(down, withRecheck(time.Hour))
		rec := mustCreate(t, s, question("alice", ""))
		b.mr.Close()
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"Ping", func() error { return s.Ping(ctx) }},
			{"Create", func() error { _, _, err := s.Create(ctx, question("alice", "")); return err }},
			{"Get", func() error { _, err := s.Get(ctx, rec.ID); return err }},
			{"Resolve", func() error { _, err := s.Resolve(ctx, rec.ID, answered("U1")); return err }},
			{"AddPost", func() error {
				_, err := s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C", MessageID: "1"})
				return err
			}},
			{"List", func() error { _, err := s.List(ctx, seam.KindQuestion, 10); return err }},
			{"Audit", func() error { _, err := s.Audit(ctx, 10); return err }},
			{"Sweep", func() error { _, err := s.Sweep(ctx); return err }},
			{"Unfinished", func() error { _, err := s.Unfinished(ctx); return err }},
			{"Edited", func() error { return s.Edited(ctx, rec) }},
			{"Count", func() error { _, err := s.Count(ctx, 0); return err }},
			{"Wait", func() error { _, err := s.Wait(ctx, rec.ID, ""); return err }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call()
				if !IsUnavailable(err) {
					t.Errorf("%s on a stopped Redis = %v; want an error IsUnavailable reports", tc.name, err)
				}
				if errors.Is(err, ErrNotFound) {
					t.Errorf("%s on a stopped Redis reports not found: %v", tc.name, err)
				}
			})
		}
		t.Run("Run ends with its context", func(t *testing.T) {
			rctx, cancel := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- s.Run(rctx) }()
			cancel()
			if err := recv(t, "Run to return", ran); err != nil {
				t.Errorf("Run = %v; want nil", err)
			}
		})
		if IsUnavailable(ErrNotFound) || IsUnavailable(nil) || IsUnavailable(context.Canceled) {
			t.Error("IsUnavailable is true for errors that do not mean Redis is down")
		}
	})
}

func TestRestart(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		old := b.client()
		s1 := b.storeOn(old)
		rec := mustCreate(t, s1, question("alice", "call-restart"))
		if _, err := s1.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C1", MessageID: "1.2"}); err != nil {
			t.Fatal(err)
		}
		before := mustGet(t, s1, rec.ID)
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}

		s2 := b.store()
		if got := mustGet(t, s2, rec.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("after the restart:\n got %+v\nwant %+v", got, before)
		}
		again, created, err := s2.Create(ctx, question("alice", "call-restart"))
		if err != nil || created || again.ID != rec.ID {
			t.Errorf("re-create after the restart = %v, created %v, %v; want %s, created false", again, created, err, rec.ID)
		}
		if _, err := s2.Resolve(ctx, rec.ID, answered("U1")); err != nil {
			t.Fatalf("Resolve after the restart: %v", err)
		}
		if got := mustGet(t, s2, rec.ID); got.Status != seam.StatusAnswered || len(got.Posts) != 1 {
			t.Errorf("record = %+v; want answered with its post", got)
		}
	})
}

func TestRoundTrips(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		cnt := &counter{}
		s := b.storeOn(b.client(cnt))
		// Load the scripts on every node, as Run does: after a Redis restart
		// or SCRIPT FLUSH, the first run of each script costs a NOSCRIPT
		// reply and an EVAL (see below). Then dial connections.
		if err := s.LoadScripts(ctx); err != nil {
			t.Fatal(err)
		}
		warm := mustCreate(t, s, question("alice", ""))
		if _, err := s.AddPost(ctx, warm.ID, Post{Surface: "slack", Channel: "C", MessageID: "1"}); err != nil {
			t.Fatal(err)
		}
		ended, err := s.Resolve(ctx, warm.ID, answered("U1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Edited(ctx, ended); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Unfinished(ctx); err != nil { // the client's first pipeline dials a connection
			t.Fatal(err)
		}

		var rec *Record
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"Create", func() (err error) { rec, _, err = s.Create(ctx, question("alice", "")); return err }},
			{"Create again", func() (err error) { _, _, err = s.Create(ctx, question("alice", "call-rt")); return err }},
			{"Get", func() (err error) { _, err = s.Get(ctx, rec.ID); return err }},
			{"AddPost", func() (err error) {
				_, err = s.AddPost(ctx, rec.ID, Post{Surface: "slack", Channel: "C", MessageID: "1"})
				return err
			}},
			{"Resolve", func() (err error) { _, err = s.Resolve(ctx, rec.ID, answered("U1")); return err }},
			{"Resolve from a record", func() (err error) {
				r := mustCreate(t, b.store(), question("alice", ""))
				res := answered("U1")
				res.From = r
				got, err := s.Resolve(ctx, r.ID, res)
				if err == nil && got.Questions != r.Questions {
					t.Errorf("Resolve with From read the record back instead of ending From")
				}
				return err
			}},
			{"Resolve again", func() (err error) {
				if _, err = s.Resolve(ctx, rec.ID, answered("U2")); errors.Is(err, ErrAlreadyResolved) {
					return nil
				}
				return err
			}},
			{"Edited", func() error { return s.Edited(ctx, rec) }},
			{"Unfinished, nothing due", func() error { _, err := s.Unfinished(ctx); return err }},
			{"Count", func() error { _, err := s.Count(ctx, time.Minute); return err }},
		} {
			n, names := cnt.count(func() {
				if err := tc.call(); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
			})
			if n != 1 {
				t.Errorf("%s took %d round trips (%v); want 1", tc.name, n, names)
			}
		}

		if b.mr != nil { // never flush a shared Redis's scripts
			if err := b.rdb.ScriptFlush(ctx).Err(); err != nil { // as after a restart or failover
				t.Fatal(err)
			}
			n, names := cnt.count(func() {
				if _, err := s.Resolve(ctx, mustCreate(t, b.store(), question("alice", "")).ID, answered("U1")); err != nil {
					t.Fatalf("Resolve after SCRIPT FLUSH: %v", err)
				}
			})
			if n != 2 || !strings.HasPrefix(names[0], "evalsha") || !strings.HasPrefix(names[1], "eval") {
				t.Errorf("Resolve after SCRIPT FLUSH sent %v; want EVALSHA, then EVAL", names)
			}

			if err := b.rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.LoadScripts(ctx); err != nil {
				t.Fatal(err)
			}
			for _, sc := range scripts {
				if ok, err := b.rdb.ScriptExists(ctx, sc.Hash()).Result(); err != nil || !ok[0] {
					t.Errorf("script %s after LoadScripts: exists %v, %v", sc.Hash(), ok, err)
				}
			}
		}
	})
}

func TestKeys(t *testing.T) {
	k := newKeys("p:")
	// Records already stored stay where they are only while the shard of
	// an id stays FNV-1a's.
	for _, id := range []string{"", "a", "f3u2z42crcwmrmeh", "aaaaaaaaaaaaaaaa", NewID(question("alice", ""))} {
		h := fnv.New32a()
		h.Write([]byte(id))
		if got, want := shard(id), int(h.Sum32()%shards); got != want {
			t.Errorf("shard(%q) = %d; want %d, FNV-1a's", id, got, want)
		}
	}
	tag := func(key string) string {
		i := strings.IndexByte(key, '{')
		j := strings.IndexByte(key[i+1:], '}')
		if i < 0 || j <= 0 {
			t.Fatalf("key %q has no hash tag", key)
		}
		return key[i+1 : i+1+j]
	}
	for _, nr := range []NewRequest{question("alice", ""), question("alice", "c1"), approval("bob", "")} {
		id := NewID(nr)
		all := k.request(id, kinds...)
		if all[0] != k.record(id) {
			t.Errorf("the first key is %q; want the record, which Redis Cluster routes EVAL by", all[0])
		}
		for _, key := range all {
			if !strings.HasPrefix(key, "p:") {
				t.Errorf("key %q is not under the prefix", key)
			}
			if tag(key) != tag(all[0]) {
				t.Errorf("keys of %s span hash tags: %v", id, all)
			}
		}
	}
	if !strings.HasPrefix(k.wake(), "p:") {
		t.Errorf("wake channel %q is not under the prefix", k.wake())
	}
}

// TestCount: the counts a scrape of /metrics reads, in one call, as each
// is counted: the pending requests of every kind, those of them more than
// late past their expiry, and the ended requests whose messages are still
// to be edited.
func TestCount(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		soon := question("alice", "")
		soon.ExpiresIn = time.Minute
		mustCreate(t, s, soon)
		later := approval("alice", "")
		later.ExpiresIn = time.Hour
		mustCreate(t, s, later)
		ended := mustCreate(t, s, question("alice", ""))
		if _, err := s.AddPost(ctx, ended.ID, Post{Surface: "slack", Channel: "C", MessageID: "1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(ctx, ended.ID, answered("U1")); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			after time.Duration // since the creates
			want  Counts
		}{
			{0, Counts{Pending: 2, Unedited: 1}},
			{90 * time.Second, Counts{Pending: 2, Unedited: 1}},              // 30 s past its expiry
			{150 * time.Second, Counts{Pending: 2, Unedited: 1, Overdue: 1}}, // 90 s past it
		} {
			b.clock.Advance(tc.after - b.clock.Now().Sub(ended.CreatedAt))
			got, err := s.Count(ctx, time.Minute)
			if err != nil || got != tc.want {
				t.Errorf("%v after the creates: Count = %+v, %v; want %+v", tc.after, got, err, tc.want)
			}
		}
	})
}

func TestDiscard(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		count := func() int64 {
			t.Helper()
			c, err := s.Count(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			return c.Pending
		}
		nr := question("alice", "call-discard")
		nr.ExpiresIn = time.Minute
		rec := mustCreate(t, s, nr)
		posted := mustCreate(t, s, question("alice", ""))
		if _, err := s.AddPost(ctx, posted.ID, Post{Surface: "slack", Channel: "C", MessageID: "1"}); err != nil {
			t.Fatal(err)
		}
		done := mustCreate(t, s, approval("alice", ""))
		if _, err := s.Resolve(ctx, done.ID, Resolution{Status: seam.StatusCancelled}); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 2 {
			t.Errorf("%d pending; want 2", n)
		}
		for _, tc := range []struct {
			name string
			id   string
			want bool
		}{
			{"pending without posts", rec.ID, true},
			{"again", rec.ID, false},
			{"with a post", posted.ID, false},
			{"resolved", done.ID, false},
			{"unknown", "aaaaaaaaaaaaaaaa", false},
		} {
			if got, err := s.Discard(ctx, tc.id); err != nil || got != tc.want {
				t.Errorf("Discard %s = %v, %v; want %v", tc.name, got, err, tc.want)
			}
		}
		var gone *DiscardedError
		if _, err := s.Get(ctx, rec.ID); !errors.Is(err, ErrNotFound) || errors.As(err, &gone) {
			t.Errorf("Get of a discarded request = %v; want a plain ErrNotFound (Discard leaves no note)", err)
		}
		for _, id := range []string{posted.ID, done.ID} {
			mustGet(t, s, id)
		}
		if n := count(); n != 1 {
			t.Errorf("%d pending after the discard; want 1", n)
		}
		recs, err := s.List(ctx, seam.KindQuestion, 10)
		if err != nil || !reflect.DeepEqual(ids(recs), []string{posted.ID}) {
			t.Errorf("List = %v, %v; want [%s]", ids(recs), err, posted.ID)
		}
		b.clock.Advance(time.Hour)
		if recs, err := s.Sweep(ctx); err != nil || len(recs) != 0 {
			t.Errorf("Sweep = %v, %v; want nothing (the discarded request left the due index)", ids(recs), err)
		}
		// A retry under the same tool_call_id creates and posts afresh.
		again, created, err := s.Create(ctx, nr)
		if err != nil || !created {
			t.Fatalf("Create after Discard = created %v, %v; want a new request", created, err)
		}

		// Discarded by the replica whose posts all failed, it is told of
		// for a while: whoever re-attached meanwhile learns why it is gone.
		if ok, err := s.DiscardUnposted(ctx, again, "no target took it (slack: not_in_channel)"); err != nil || !ok {
			t.Fatalf("DiscardUnposted = %v, %v", ok, err)
		}
		_, err = s.Get(ctx, again.ID)
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &gone) || gone.Client != "alice" || gone.Why != "no target took it (slack: not_in_channel)" {
			t.Errorf("Get after DiscardUnposted = %v (%+v); want ErrNotFound with alice's note", err, gone)
		}
		if ttl := b.rdb.PTTL(ctx, s.keys.gone(again.ID)).Val(); ttl <= 0 || ttl > DiscardedFor {
			t.Errorf("the note lasts %v; want at most %v", ttl, DiscardedFor)
		}
	})
}

// TestLostCreateSettles: a create whose reply was lost is settled by the
// lease it took, and only while that lease is the request's: abandoned,
// or its lease released so that a retry claims it at once.
func TestLostCreateSettles(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		create := func(nr NewRequest) *Record { // with the lease it took, which mustCreate leaves out
			t.Helper()
			rec, created, err := s.Create(ctx, nr)
			if err != nil || !created {
				t.Fatalf("Create = %v, %v", created, err)
			}
			return rec
		}
		rec := create(question("alice", ""))
		if ok, err := s.Abandon(ctx, rec.ID, rec.Lease+1); err != nil || ok {
			t.Errorf("Abandon under another lease = %v, %v; want false", ok, err)
		}
		if ok, err := s.ReleasePosting(ctx, rec.ID, rec.Lease+1); err != nil || ok {
			t.Errorf("ReleasePosting of another lease = %v, %v; want false", ok, err)
		}
		if ok, err := s.Abandon(ctx, rec.ID, rec.Lease); err != nil || !ok {
			t.Errorf("Abandon = %v, %v; want true", ok, err)
		}
		if _, err := s.Get(ctx, rec.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after Abandon = %v; want ErrNotFound", err)
		}

		kept := create(question("alice", "call-lost"))
		lost := kept.Lease
		if ok, err := s.ClaimPosting(ctx, kept); err != nil || ok {
			t.Fatalf("ClaimPosting under the create's lease = %v, %v; want false", ok, err)
		}
		if ok, err := s.ReleasePosting(ctx, kept.ID, kept.Lease); err != nil || !ok {
			t.Errorf("ReleasePosting = %v, %v; want true", ok, err)
		}
		b.clock.Advance(time.Second) // a lease of its own, not the same ms
		if ok, err := s.ClaimPosting(ctx, kept); err != nil || !ok {
			t.Errorf("ClaimPosting once released = %v, %v; want true", ok, err)
		}
		if ok, err := s.Abandon(ctx, kept.ID, lost); err != nil || ok {
			t.Errorf("Abandon by the lost create's lease once claimed = %v, %v; want false", ok, err)
		}
	})
}

// TestErrorReplyIsNotUnavailable: Redis answering with an error that is a
// bug of ours (here a record key of the wrong type) must not read as
// "Redis is down, retry", while "not now" replies must.
func TestErrorReplyIsNotUnavailable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s := b.store()
		id := "wrongtypekey0000"
		if err := b.rdb.Set(ctx, s.keys.record(id), "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Resolve(ctx, id, answered("U1"))
		if err == nil || IsUnavailable(err) {
			t.Fatalf("Resolve on a key of the wrong type = %v; want an error that is not IsUnavailable", err)
		}
	})
	for _, msg := range []string{"LOADING Redis is loading the dataset in memory", "READONLY You can't write against a read only replica.", "CLUSTERDOWN The cluster is down",
		// Redis before 7.0 wraps a script's command's error in its own (redis/redis#10165).
		"ERR Error running script (call to f_71e6319f97b0fe8bdfa1c5df3ce4489946dda479): @user_script:1: @user_script: 1: -OOM command not allowed when used memory > 'maxmemory'.",
		"ERR Error running script (call to f_71e6319f97b0fe8bdfa1c5df3ce4489946dda479): @user_script:1: @user_script: 1: -READONLY You can't write against a read only replica.",
	} {
		if !transientReply(msg) {
			t.Errorf("%q is not taken as transient", msg)
		}
	}
	for _, msg := range []string{"WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR Error running script (call to f_4ad5abfc50bbccb484223905f9a16f09cd043ba8): @user_script:1: ERR DB index is out of range",
		"ERR Error running script (call to f_4ad5abfc50bbccb484223905f9a16f09cd043ba8): @user_script:1: @user_script: 1: -WRONGTYPE Operation against a key holding the wrong kind of value",
	} {
		if transientReply(msg) {
			t.Errorf("%q is taken as transient", msg)
		}
	}
}

func TestSessionThread(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s, other := b.store(), b.store()
		if ts, err := s.Thread(ctx, "slack/C1/run-42"); err != nil || ts != "" {
			t.Fatalf("unknown session: %q %v", ts, err)
		}
		if ts, err := s.SetThread(ctx, "slack/C1/run-42", "111.1"); err != nil || ts != "111.1" {
			t.Fatalf("first thread: %q %v", ts, err)
		}
		// A second replica racing to start the same session's thread gets the first one.
		if ts, err := other.SetThread(ctx, "slack/C1/run-42", "222.2"); err != nil || ts != "111.1" {
			t.Fatalf("second thread: %q %v", ts, err)
		}
		if ts, err := other.Thread(ctx, "slack/C1/run-42"); err != nil || ts != "111.1" {
			t.Fatalf("thread read back: %q %v", ts, err)
		}
		if ttl := b.rdb.PTTL(ctx, s.keys.thread("slack/C1/run-42")).Val(); ttl <= 0 {
			t.Fatalf("thread key has no TTL (%v): it would outlive its records", ttl)
		}
	})
}

// TestForgetThread: a surface that finds a session's thread unusable
// forgets it, and the next SetThread records a new one. A replica that
// found the same thread unusable later forgets nothing: the new thread
// another replica recorded meanwhile stays.
func TestForgetThread(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s, other := b.store(), b.store()
		const session = "discord/C1/run-42"
		if _, err := s.SetThread(ctx, session, "111"); err != nil {
			t.Fatal(err)
		}
		if err := s.ForgetThread(ctx, session, "999"); err != nil {
			t.Fatal(err)
		}
		if ts, err := s.Thread(ctx, session); err != nil || ts != "111" {
			t.Fatalf("forgetting another thread changed the session's: %q %v", ts, err)
		}
		if err := s.ForgetThread(ctx, session, "111"); err != nil {
			t.Fatal(err)
		}
		if ts, err := s.Thread(ctx, session); err != nil || ts != "" {
			t.Fatalf("after forgetting it: %q %v; want none", ts, err)
		}
		if ts, err := s.SetThread(ctx, session, "222"); err != nil || ts != "222" {
			t.Fatalf("the new thread: %q %v", ts, err)
		}
		// The slower replica, which also found 111 unusable, forgets it too
		// and then races to record its own new thread.
		if err := other.ForgetThread(ctx, session, "111"); err != nil {
			t.Fatal(err)
		}
		if ts, err := other.SetThread(ctx, session, "333"); err != nil || ts != "222" {
			t.Fatalf("the slower replica's thread: %q %v; want the first new one, 222", ts, err)
		}
		if err := s.ForgetThread(ctx, "discord/C1/no-such-session", "111"); err != nil {
			t.Fatalf("forgetting the thread of a session without one: %v", err)
		}
	})
}

// TestSignOut: a web session signed out on one replica is signed out on
// every replica, until it would have expired anyway.
func TestSignOut(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s, other := b.store(), b.store()
		if out, err := other.SignedOut(ctx, "session-1"); err != nil || out {
			t.Fatalf("before signing out: %v, %v", out, err)
		}
		if err := s.SignOut(ctx, "session-1", 90*time.Minute); err != nil {
			t.Fatal(err)
		}
		if out, err := other.SignedOut(ctx, "session-1"); err != nil || !out {
			t.Fatalf("after signing out: %v, %v", out, err)
		}
		if out, err := other.SignedOut(ctx, "session-2"); err != nil || out {
			t.Fatalf("another session: %v, %v", out, err)
		}
		if ttl := b.rdb.PTTL(ctx, s.keys.signedOut("session-1")).Val(); ttl <= 0 || ttl > 91*time.Minute {
			t.Fatalf("signed-out key's TTL %v; want the session's 90m left, and a second", ttl)
		}
		if err := s.SignOut(ctx, "session-3", 0); err != nil {
			t.Fatal(err)
		}
		if out, err := other.SignedOut(ctx, "session-3"); err != nil || out {
			t.Fatalf("a session that had expired is recorded: %v, %v", out, err)
		}
	})
}

// TestWakeCarriesTheEnding: a wake-up hands the waiter how its request
// ended, so the waiter returns without reading the record again; anything
// malformed falls back to the read.
func TestWakeCarriesTheEnding(t *testing.T) {
	pend := &Record{ID: "abc", Kind: seam.KindQuestion, Status: seam.StatusPending, Client: "alice"}
	e := &ending{status: "answered", resolved: "1796212800000", by: `{"surface":"slack","user_id":"U1","name":"Ada"}`,
		result: `{"answers":[{"id":"q","selected":["Yes"]}]}`}
	id, got := parseWake(e.payload("abc"))
	if id != "abc" || got == nil || *got != *e {
		t.Fatalf("parseWake(payload) = %q, %+v", id, got)
	}
	rec, err := pend.end(got)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != seam.StatusAnswered || rec.Answer == nil || rec.Answer.Answers[0].Selected[0] != "Yes" ||
		rec.ResolvedBy == nil || rec.ResolvedBy.Name != "Ada" || rec.ResolvedAt.UnixMilli() != 1796212800000 {
		t.Fatalf("ended record = %+v", rec)
	}
	if pend.Status != seam.StatusPending {
		t.Fatal("end changed the record it was given")
	}
	for _, bad := range []string{"abc", "abc\npending\n1\n\n", "abc\nanswered\n1\n{\n{"} {
		id, e := parseWake(bad)
		if id != "abc" {
			t.Errorf("parseWake(%q) id = %q", bad, id)
		}
		if e != nil {
			if _, err := pend.end(e); err == nil {
				t.Errorf("parseWake(%q) gave an ending that applies: %+v", bad, e)
			}
		}
	}
}

// LoadScripts loads every script the package declares: one left out of
// scripts would cost a NOSCRIPT round trip on every node's first use.
func TestScriptsListsEveryScript(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		declared += len(regexp.MustCompile(`(?m)^var \w+ = redis\.NewScript\(`).FindAll(src, -1))
	}
	hashes := map[string]bool{}
	for _, sc := range scripts {
		hashes[sc.Hash()] = true
	}
	if declared == 0 || len(hashes) != declared || len(scripts) != declared {
		t.Errorf("the package declares %d scripts; scripts lists %d (%d distinct)", declared, len(scripts), len(hashes))
	}
}

// TestResolveSentTwice: a resolve whose reply is lost (a reset connection,
// a read timeout) is sent again by go-redis, after the script ran. The
// resend must answer as the first run would have: the caller's own answer
// won, and a caller told ErrAlreadyResolved for it would answer 409 to the
// winner, leave the messages to a finisher and count nothing. Another
// call's identical resolution still gets ErrAlreadyResolved.
func TestResolveSentTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		twice := new(sendTwice)
		s := b.storeOn(b.client(twice))
		post := Post{Surface: "slack", Channel: "C1", MessageID: "1.1"}

		for _, c := range []struct {
			name     string
			res      func(rec *Record) Resolution
			expires  time.Duration
			advance  time.Duration
			wantErr  error
			want     seam.Status
			wantPost bool
		}{
			{"answer", func(*Record) Resolution { return answered("U1") }, 0, 0, nil, seam.StatusAnswered, true},
			{"answer from the record read", func(rec *Record) Resolution {
				res := answered("U1")
				res.From = rec
				return res
			}, 0, 0, nil, seam.StatusAnswered, true},
			{"cancel", func(*Record) Resolution { return Resolution{Status: seam.StatusCancelled, Owner: "alice"} }, 0, 0, nil, seam.StatusCancelled, true},
			{"sweep", func(*Record) Resolution { return Resolution{Status: seam.StatusExpired, IfDue: true} }, time.Minute, time.Minute, nil, seam.StatusExpired, true},
			{"answer after the expiry", func(*Record) Resolution { return answered("U1") }, time.Minute, time.Minute, ErrExpired, seam.StatusExpired, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				nr := question("alice", "")
				nr.ExpiresIn = c.expires
				rec := mustCreate(t, s, nr)
				if _, err := s.AddPost(ctx, rec.ID, post); err != nil {
					t.Fatal(err)
				}
				rec = mustGet(t, s, rec.ID)
				b.clock.Advance(c.advance)
				twice.arm()
				got, err := s.Resolve(ctx, rec.ID, c.res(rec))
				if !twice.sent() {
					t.Fatal("the resolve was not sent twice")
				}
				if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
					t.Fatalf("Resolve sent twice = %v; want %v, as sent once", err, c.wantErr)
				}
				if got == nil || got.Status != c.want || len(got.Posts) != 1 {
					t.Fatalf("Resolve sent twice returned %+v; want %s with its post", got, c.want)
				}
				if c.want == seam.StatusAnswered && (got.ResolvedBy == nil || got.ResolvedBy.UserID != "U1") {
					t.Errorf("answered by %+v; want U1", got.ResolvedBy)
				}
				// Another call, the same resolution: a second delivery, not this one.
				if again, err := s.Resolve(ctx, rec.ID, c.res(rec)); !errors.Is(err, ErrAlreadyResolved) || again == nil || again.Status != c.want {
					t.Errorf("a second call = %+v, %v; want %s and ErrAlreadyResolved", again, err, c.want)
				}
			})
		}
	})
}

// sendTwice is a go-redis hook that, once armed, sends the next script run
// twice and returns the second reply: what go-redis does when the first
// reply is lost after Redis ran it.
type sendTwice struct {
	armed, done atomic.Bool
}

func (h *sendTwice) arm()       { h.done.Store(false); h.armed.Store(true) }
func (h *sendTwice) sent() bool { return h.done.Load() }

func (h *sendTwice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sendTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); (n == "evalsha" || n == "eval") && h.armed.CompareAndSwap(true, false) {
			if err := next(ctx, cmd); err != nil {
				h.armed.Store(true) // NOSCRIPT: Script.Run sends it again as EVAL
				return err
			}
			h.done.Store(true)
		}
		return next(ctx, cmd)
	}
}

func (h *sendTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCreateSentTwice: a create whose reply is lost is sent again by
// go-redis. The resend is still this call's create: created, so that the
// dispatcher posts it now. Taken for another call's (a re-attach), it would
// wait for its own posting lease to pass, a minute, before any replica
// posted it. Another call's create of the same request re-attaches.
func TestCreateSentTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		twice := new(sendTwice)
		s := b.storeOn(b.client(twice))
		for _, toolCallID := range []string{"call-twice", ""} {
			twice.arm()
			rec, created, err := s.Create(ctx, question("alice", toolCallID))
			if !twice.sent() {
				t.Fatal("the create was not sent twice")
			}
			if err != nil || !created || rec.Status != seam.StatusPending {
				t.Fatalf("Create (tool_call_id %q) sent twice = %+v, created %v, %v; want it created", toolCallID, rec, created, err)
			}
		}
		if again, created, err := s.Create(ctx, question("alice", "call-twice")); err != nil || created || again == nil {
			t.Errorf("another call's create = %+v, created %v, %v; want the request, not created", again, created, err)
		}
	})
}

// TestDraft: a draft saved on one replica is read on another, by the same
// person only, replaced by a later one, and kept for its TTL.
func TestDraft(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		s, other := b.store(), b.store()
		if d, err := other.Draft(ctx, "req1", "U1"); err != nil || d != "" {
			t.Fatalf("before any: %q, %v", d, err)
		}
		if err := s.SaveDraft(ctx, "req1", "U1", "first", 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveDraft(ctx, "req1", "U1", "second", 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		if d, err := other.Draft(ctx, "req1", "U1"); err != nil || d != "second" {
			t.Fatalf("the person's draft: %q, %v; want the later one", d, err)
		}
		for _, k := range [][2]string{{"req1", "U2"}, {"req2", "U1"}} {
			if d, err := other.Draft(ctx, k[0], k[1]); err != nil || d != "" {
				t.Errorf("draft of %s by %s: %q, %v; want none", k[0], k[1], d, err)
			}
		}
		if ttl := b.rdb.PTTL(ctx, s.keys.draft("req1", "U1")).Val(); ttl <= 29*time.Minute || ttl > 30*time.Minute {
			t.Fatalf("draft's TTL %v; want 30m", ttl)
		}
	})
}

// TestClaimPostingSentTwice: a claim whose reply is lost is sent again by
// go-redis, after the script took the lease. The resend is still this
// call's claim: taken for another's (the lease it just took), it told the
// reposter or the re-attaching create not to post, and the request waited
// a whole lease, a minute, for the next reposter. Another call's claim
// under that lease, even in the same millisecond, is still refused.
func TestClaimPostingSentTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		twice := new(sendTwice)
		s := b.storeOn(b.client(twice))
		rec := mustCreate(t, s, question("alice", "call-claim-twice"))
		b.clock.Advance(PostingLease + time.Second) // the creator died before posting
		twice.arm()
		ok, err := s.ClaimPosting(ctx, rec)
		if !twice.sent() {
			t.Fatal("the claim was not sent twice")
		}
		if err != nil || !ok {
			t.Fatalf("ClaimPosting sent twice = %v, %v; want true, as sent once", ok, err)
		}
		if want := b.clock.Now().Add(PostingLease).UnixMilli(); rec.Lease != want {
			t.Errorf("lease %d; want %d", rec.Lease, want)
		}
		other := mustGet(t, s, rec.ID)
		if ok, err := s.ClaimPosting(ctx, other); err != nil || ok {
			t.Errorf("another call's claim in the same ms = %v, %v; want false", ok, err)
		}
	})
}

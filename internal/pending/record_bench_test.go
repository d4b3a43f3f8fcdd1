package pending

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/seam"
)

// BenchmarkDecodeRecord decodes a record as the resolve script returns it
// (HGETALL's flat list): the bench's question, answered, with one post.
// Every click that resolves a request reads one so.
func BenchmarkDecodeRecord(b *testing.B) {
	qs := &seam.Questions{Questions: []seam.Question{{
		ID: "deploy", Header: "Deploy", Question: "Deploy build 4711 to production?",
		Options: []seam.Option{{Label: "Yes, deploy (Recommended)", Description: "Ships to every region."}, {Label: "No, hold the release"}, {Label: "Roll back to the last build", Description: "Restores the previous release."}},
	}}}
	body, _ := json.Marshal(qs)
	caller, _ := json.Marshal(&seam.Caller{Name: "bench-agent", Session: "bench"})
	ans, _ := json.Marshal(&seam.Answer{Answers: []seam.AnswerItem{{ID: "deploy", Selected: []string{"No, hold the release"}}}})
	by, _ := json.Marshal(&Responder{Surface: "slack", UserID: "UBENCH", Name: "bench-person"})
	post, _ := json.Marshal(Post{Surface: "slack", Target: "default/0", Channel: "C0AGENTS", MessageID: "1700000000.000100", PostedAt: time.Now().UTC()})
	flat := []any{fID, "b7kq2x9m4wz3hy6p", fKind, "question", fStatus, "answered", fClient, "agents", fToolCallID, "bench-1-abcd", fRoute, "default",
		fCaller, string(caller), fBody, string(body), fHash, "11f97202a71009b7c94b7b5867f0abdd", fCreated, "1700000000000", fExpires, "0",
		fPosting, "1700000030000", fCreatedBy, "tok", fResult, string(ans), fBy, string(by), fResolved, "1700000001000", "ended_by_call", "tok2",
		"post:slack:C0AGENTS:1700000000.000100", string(post)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(flat); err != nil {
			b.Fatal(err)
		}
	}
}

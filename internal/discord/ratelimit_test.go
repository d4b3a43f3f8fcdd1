package discord

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/pending"
	"github.com/askbridge/askbridge/internal/seam"
)

// TestBucketWaitIsCapped: an answer that leaves a bucket no calls tells
// discordgo's rate limiter to hold the bucket's next call until the
// reset, in a sleep no context ends, with the bucket locked. After a 429
// whose bucket resets in 20 minutes, as Discord's docs show for a shared
// resource, every later post to that channel hung that long, the agent's
// create past its deadline with it. The limiter is told to wait
// maxBucketWait at most; a call it lets through early gets a 429, which
// the retry policy waits out within the call's deadline. (Until
// 2026-12-05 it was not capped.)
func TestBucketWaitIsCapped(t *testing.T) {
	const ch = "1100000000000000010"
	for _, tc := range []struct {
		name   string
		status int
		global bool
		body   string
	}{
		{"a shared 429", http.StatusTooManyRequests, false, `{"message": "The resource is being rate limited.", "retry_after": 1336.57, "global": false}`},
		{"a global 429 with a reset", http.StatusTooManyRequests, true, `{"message": "You are being rate limited.", "retry_after": 1336.57, "global": true}`},
		{"a post that left its bucket none", http.StatusOK, false, `{"id": "1300000000000000001", "channel_id": "` + ch + `", "content": "hi"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Content-Type", "application/json")
			h.Set("X-RateLimit-Limit", "10")
			h.Set("X-RateLimit-Remaining", "0")
			h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(1337*time.Second).Unix(), 10))
			h.Set("X-RateLimit-Reset-After", "1336.57")
			h.Set("X-RateLimit-Bucket", "abcd1234")
			if tc.status == http.StatusTooManyRequests {
				h.Set("Retry-After", "1337")
				h.Set("X-RateLimit-Scope", "shared")
			}
			if tc.global {
				h.Set("X-RateLimit-Global", "true")
				h.Set("X-RateLimit-Scope", "global")
			}
			s, _ := fuzzSurface(t, "bot-token", &answers{status: tc.status, header: h, body: []byte(tc.body)})
			_, err := s.create(context.Background(), ch, &discordgo.MessageSend{Content: "hi", AllowedMentions: mentions("")}, "ab0123456789abcdef0123456")
			if (err == nil) != (tc.status == http.StatusOK) {
				t.Fatalf("create: %v", err)
			}
			rl := s.api.Ratelimiter
			for _, bucket := range []string{discordgo.EndpointChannelMessages(ch), discordgo.EndpointChannelMessage(ch, "")} {
				if wait := rl.GetWaitTime(rl.GetBucket(bucket), 1); wait > maxBucketWait {
					t.Errorf("the next call to %s waits %v before it is sent, in a sleep no deadline ends; want at most %v", bucket, wait, maxBucketWait)
				}
			}
		})
	}
}

// TestThreadStartsShareTheirChannelsBucket: discordgo's rate limiter keeps
// every bucket it makes, and its thread start takes the message's as its
// bucket: one more kept for every session that starts a thread. Discord
// limits the route by its channel; so does the bridge now, one bucket a
// channel. (Until 2026-12-06 the buckets grew by one a session.)
func TestThreadStartsShareTheirChannelsBucket(t *testing.T) {
	const ch = "1100000000000000010"
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	s, _ := fuzzSurface(t, "bot-token", &answers{status: http.StatusOK, header: h,
		body: []byte(`{"id": "1300000000000000001", "type": 11, "parent_id": "` + ch + `", "name": "thread"}`)})
	rec := &pending.Record{ID: "abcdefghijklmnop", Caller: &seam.Caller{Name: "ada", Session: "s-1"}}
	rl := s.api.Ratelimiter
	buckets := func() int {
		rl.Lock()
		defer rl.Unlock()
		return reflect.ValueOf(rl).Elem().FieldByName("buckets").Len() // unexported; read under its lock
	}
	for i := range 5 {
		if _, err := s.startThread(context.Background(), ch, strconv.Itoa(1300000000000000100+i), rec); err != nil {
			t.Fatalf("start thread: %v", err)
		}
		if n := buckets(); n != 1 {
			t.Fatalf("%d rate-limit buckets after %d threads started in one channel; want 1", n, i+1)
		}
	}
}

package discord

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// A refused interaction's error, which the log carries, says which check
// refused it and what to look at: the clock for a stale timestamp, and by
// how much it is off; discord.public_key for a bad signature.
func TestVerifySaysWhichCheckRefused(t *testing.T) {
	now := time.Unix(1_780_000_000, 0)
	h := &Interactions{s: &Surface{now: func() time.Time { return now }}, key: SigningKey.Public().(ed25519.PublicKey)}
	other := ed25519.NewKeyFromSeed([]byte("another-application-seed-0000032"))
	body := []byte(`{"type":1}`)
	for _, tc := range []struct {
		name string
		key  ed25519.PrivateKey
		at   time.Time
		want string // "" for accepted
		not  string
	}{
		{"fresh", SigningKey, now.Add(-time.Minute), "", ""},
		{"behind", SigningKey, now.Add(-6*time.Minute - 10*time.Second), "stale timestamp, 6m10s behind this machine's clock (more than 5m0s): if Discord's own interactions are refused, check this machine's clock", "public_key"},
		{"ahead", SigningKey, now.Add(7 * time.Minute), "stale timestamp, 7m0s ahead of this machine's clock", "public_key"},
		{"another key", other, now, "bad signature: if Discord's own interactions are refused, discord.public_key is not the application's Public Key", "clock"},
		{"another key, stale", other, now.Add(-time.Hour), "bad signature:", "clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.verify(Sign(tc.key, tc.at, body), body)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not)):
				t.Errorf("error %v; want it to say %q, and nothing of %q", err, tc.want, tc.not)
			}
		})
	}
}

package discord

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/surface"
)

// FuzzCustomID checks the custom_ids of Discord's interactions as the
// handler reads them (surface.ParseRef), and the ones this package makes
// (button, a select's Ref, tagged):
//
//   - a custom_id that reads as a Ref names the request its third field
//     spells, and the verb and tag it spells: no custom_id reads as
//     another request's; its Ref written again reads back as itself;
//   - a control made for a request (its id, verb, indexes and tag) reads
//     back as exactly that Ref, and fits in Discord's 100 characters.
func FuzzCustomID(f *testing.F) {
	for _, s := range []struct {
		customID  string
		verb, id  string
		q, o      uint16
		hash      string
		selectMen bool
	}{
		{"ab:pick:abcdefghijklmnop:0:1:0123abcd", surface.VerbPick, "abcdefghijklmnop", 0, 1, "0123abcdef", false},
		{"ab:select:abcdefghijklmnop:0:3:0123abcd", surface.VerbSelect, "abcdefghijklmnop", 0, 3, "fedcba9876543210", true},
		{"ab:answer:abcdefghijklmnop:0:0", surface.VerbAnswer, "abcdefghijklmnop", 0, 0, "", false},
		{"ab:other:mfrggzdfmztwq2lk:19:0:ffffffff", surface.VerbOther, "mfrggzdfmztwq2lk", 19, 0, "ffffffff00", false},
		{"ab:dismiss:abcdefghijklmnop:0:0:0123abcd", surface.VerbDismiss, "abcdefghijklmnop", 0, 0, "0123abcd", false},
		{"ab:allow:abcdefghijklmnop:0:0", surface.VerbAllow, "abcdefghijklmnop", 0, 0, "", false},
		{"ab:reject:abcdefghijklmnop:0:0:0123ABCD", surface.VerbReject, "abcdefghijklmnop", 0, 0, "0123", false},
		{"ab:link:abcdefghijklmnop:0:0:0123abcd", surface.VerbLink, "abcdefghijklmnop", 0, 0, "0123abcd99", false},
		{"ab:pick:abcdefghijklmnop:0:0:0123abcd:extra", "pick", "ABC", 0, 0, "zz", false},
		{"ab:pick:abc:def:0:0", "pi:ck", "abc:def", 0, 0, "", false},
		{"ab:pick:abcdefghijklmnop:+1:-0", "", "abcdefghijklmnop", 65535, 65535, "", true},
		{"ab:pick::0:0", "pick", "", 0, 0, "", false},
		{"ab:pick:" + strings.Repeat("a", 65) + ":0:0", "pick", strings.Repeat("a", 64), 0, 0, "", false},
		{"other-bot:button:1", "pick", "a-b_c", 0, 0, "", false},
	} {
		f.Add(s.customID, s.verb, s.id, s.q, s.o, s.hash, s.selectMen)
	}

	f.Fuzz(func(t *testing.T, customID, verb, id string, q, o uint16, hash string, selectMenu bool) {
		// What Discord sends back.
		if r, err := surface.ParseRef(customID); err == nil {
			p := strings.Split(customID, ":")
			switch {
			case len(p) < 5 || p[0] != "ab":
				t.Fatalf("%q read as %+v", customID, r)
			case r.ID != p[2]:
				t.Fatalf("%q reads as request %q, not %q", customID, r.ID, p[2])
			case r.Verb != p[1]:
				t.Fatalf("%q reads as verb %q, not %q", customID, r.Verb, p[1])
			case len(p) == 6 && r.Tag != p[5], len(p) == 5 && r.Tag != "":
				t.Fatalf("%q reads with tag %q", customID, r.Tag)
			}
			again, err := surface.ParseRef(r.String())
			if err != nil || again != r {
				t.Fatalf("%q reads as %+v, written again as %q, which reads as %+v (%v)", customID, r, r.String(), again, err)
			}
		}

		// What this package makes. Ids are the store's, verbs its own.
		if !isStoreID(id) || verb == "" || strings.Contains(verb, ":") {
			return
		}
		want := surface.Ref{Verb: verb, ID: id, Q: int(q), O: int(o), Tag: surface.HashTag(hash)}
		if want.Tag != "" && strings.Trim(want.Tag, "0123456789abcdef") != "" {
			return // a hash is lowercase hex
		}
		var comp discordgo.MessageComponent
		if selectMenu {
			comp = discordgo.SelectMenu{MenuType: discordgo.StringSelectMenu, CustomID: surface.Ref{Verb: verb, ID: id, Q: int(q), O: int(o)}.String()}
		} else {
			comp = button(surface.Ref{Verb: verb, ID: id, Q: int(q), O: int(o)}, "Yes", discordgo.PrimaryButton)
		}
		rows := tagged([]discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{comp}}}, want.Tag)
		var made string
		switch c := rows[0].(discordgo.ActionsRow).Components[0].(type) {
		case discordgo.Button:
			made = c.CustomID
		case discordgo.SelectMenu:
			made = c.CustomID
		}
		got, err := surface.ParseRef(made)
		if err != nil || got != want {
			t.Fatalf("control %+v was made as %q, which reads as %+v (%v)", want, made, got, err)
		}
		if len(id) <= 26 && len(verb) <= len("dismiss") && q < 100 && o < 1000 && len(made) > maxCustomID {
			t.Fatalf("custom_id %q is longer than Discord's %d", made, maxCustomID)
		}
	})
}

// isStoreID reports whether id is one the store makes: lowercase base32
// (16 characters, random or of a tool_call_id), or the like.
func isStoreID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	return strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

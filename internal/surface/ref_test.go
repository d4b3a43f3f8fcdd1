package surface

import "testing"

func TestRefRoundTrip(t *testing.T) {
	for _, r := range []Ref{
		{Verb: VerbPick, ID: "abc", Q: 1, O: 4},
		{Verb: VerbSelect, ID: "abc", Tag: HashTag("0123456789abcdef0123456789abcdef")},
	} {
		got, err := ParseRef(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
	for _, s := range []string{
		"ab:pick:abc:0:0:0123456",   // a tag too short
		"ab:pick:abc:0:0:0123456g",  // not hex
		"ab:pick:abc:0:0:01234567:", // a seventh part
		"ab:pick:abc:0",
	} {
		if _, err := ParseRef(s); err == nil {
			t.Errorf("ParseRef(%q) accepted it", s)
		}
	}
}

func TestRefFits(t *testing.T) {
	const hash = "0123456789abcdef0123456789abcdef"
	tagged := Ref{Verb: VerbPick, ID: "abc", Tag: HashTag(hash)}
	if !tagged.Fits(hash) || tagged.Fits("fedcba9876543210fedcba9876543210") {
		t.Errorf("a tagged ref fits its own hash: %v; another: %v", tagged.Fits(hash), tagged.Fits("fedcba98"))
	}
	if !(Ref{Verb: VerbPick, ID: "abc"}).Fits(hash) {
		t.Errorf("an untagged ref (an earlier version's control) does not fit")
	}
	if HashTag("") != "" {
		t.Errorf("a request without a hash gets a tag")
	}
}

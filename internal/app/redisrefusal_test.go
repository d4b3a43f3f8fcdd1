package app

import "testing"

// The mode is read from Redis's redis_mode and Valkey 8's server_mode,
// in INFO's CRLF lines.
func TestServerMode(t *testing.T) {
	for info, want := range map[string]string{
		"# Server\r\nredis_version:7.0.15\r\nredis_mode:sentinel\r\nos:Linux\r\n": "sentinel",
		"# Server\r\nvalkey_version:8.1.0\r\nserver_mode:cluster\r\n":             "cluster",
		"redis_mode:standalone":                 "standalone",
		"# Server\r\nredis_version:7.2.4\r\n":   "",
		"section (server) is not supported\r\n": "",
	} {
		if got := serverMode(info); got != want {
			t.Errorf("serverMode(%q) = %q, want %q", info, got, want)
		}
	}
}

// Only a master that serves all 16384 slots itself reaches every key on
// one connection; slots that migrate ([n->-id], [n-<-id]) are not served.
func TestServesEverySlot(t *testing.T) {
	const other = "e8df872e544eb89c7f30ee2509c23f4755d452bd 127.0.0.1:7002@17002 master - 0 1 2 connected 5461-10922\n"
	for _, tc := range []struct {
		name, nodes string
		want        bool
	}{
		{"one master, every slot", "f3a5 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-16383\n", true},
		{"every slot in pieces", "f3a5 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0 1-16382 16383\n", true},
		{"a third of the slots", "f3a5 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n" + other, false},
		{"importing a slot", "f3a5 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-16382 [16383-<-e8df]\n", false},
		{"a replica", other + "f3a5 127.0.0.1:7001@17001 myself,slave e8df 0 0 1 connected\n", false},
		{"no myself", other, false},
		{"", "", false},
	} {
		if got := servesEverySlot(tc.nodes); got != tc.want {
			t.Errorf("%s: servesEverySlot(%q) = %v, want %v", tc.name, tc.nodes, got, tc.want)
		}
	}
}

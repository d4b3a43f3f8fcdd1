package main

import (
	"net"
	"strings"
	"testing"
)

// TestServeCannotStart: a bridge that can't start says why and exits 1,
// after releasing what it had started (here the embedded Redis).
func TestServeCannotStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := cli("serve", "--listen", busy.Addr().String())
	if r.code != exitError || !strings.Contains(r.stderr, "cannot start") || !strings.Contains(r.stderr, "listen on "+busy.Addr().String()) {
		t.Errorf("serve on a busy port: exit %d, stderr %q; want exit %d and why", r.code, r.stderr, exitError)
	}
}

package main

import (
	"net"
	"os"
	"path/filepath"
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

func TestConfigCheckUsage(t *testing.T) {
	valid := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(valid, []byte("listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		code  int
		usage bool // stderr shows the usage
	}{
		{[]string{"config", "check", "-h"}, exitOK, true},
		{[]string{"config", "check", "--help"}, exitOK, true},
		{[]string{"config", "-h"}, exitOK, true},
		{[]string{"config", "check"}, exitUsage, true},
		{[]string{"config", "check", valid, "extra"}, exitUsage, true},
		{[]string{"config", "check", "--bogus", valid}, exitUsage, true},
		{[]string{"config"}, exitUsage, true},
		{[]string{"config", "check", valid}, exitOK, false},
		{[]string{"config", "check", filepath.Join(t.TempDir(), "missing.yaml")}, exitError, false},
	} {
		r := cli(tc.args...)
		if r.code != tc.code || strings.Contains(r.stderr, "usage: bridge config check FILE") != tc.usage {
			t.Errorf("bridge %s: exit %d, stderr %q; want exit %d, usage shown %v", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.usage)
		}
	}
}

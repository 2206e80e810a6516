package auth

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadSecret(t *testing.T) {
	a, err := LoadSecret("")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LoadSecret("")
	if len(a) != 2*secretKeyLen || string(a) == string(b) {
		t.Errorf("random secrets %q, %q", a, b)
	}

	path := filepath.Join(t.TempDir(), "secret")
	s1, err := LoadSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %v, %v; want mode 0600", fi, err)
	}
	s2, err := LoadSecret(path)
	if err != nil || string(s1) != string(s2) || len(s1) != 2*secretKeyLen {
		t.Errorf("reloaded %q, %v; want %q", s2, err, s1)
	}

	own := filepath.Join(t.TempDir(), "own")
	os.WriteFile(own, []byte("  my secret\n"), 0o600)
	if s, err := LoadSecret(own); err != nil || string(s) != "my secret" {
		t.Errorf("own secret %q, %v", s, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if _, err := LoadSecret(empty); err == nil {
		t.Error("empty secret file accepted")
	}
	if _, err := LoadSecret(filepath.Join(t.TempDir(), "no", "dir")); err == nil {
		t.Error("secret in a missing directory accepted")
	}
}

package natsname

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct{ fleet, part, want string }{
		{"prod", "LOG", "RESO_PROD_LOG"},
		{"eu-west-1", "KV", "RESO_EU_WEST_1_KV"},
		{"TestBatches-StoredTwice", "LOGINS", "RESO_TESTBATCHES_STOREDTWICE_LOGINS"},
	} {
		if got := Of(c.fleet, c.part); got != c.want {
			t.Errorf("Of(%q, %q) = %q, want %q", c.fleet, c.part, got, c.want)
		}
	}
	if p := Prefix("a-b"); p != "RESO_A_B_" {
		t.Errorf("Prefix = %q", p)
	}
}

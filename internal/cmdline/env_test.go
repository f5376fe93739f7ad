package cmdline

import "testing"

func TestGetenv(t *testing.T) {
	env := []string{"DROVER_A=1", "DROVER_AB=2", "DROVER_A=3", "NOEQUALS", "EMPTY="}
	for _, c := range []struct{ key, want string }{
		{"DROVER_A", "3"},  // the last entry wins, as in exec
		{"DROVER_AB", "2"}, // a longer key is not a prefix match
		{"DROVER", ""},     // nor is a shorter one
		{"NOEQUALS", ""},   // an entry without = sets nothing
		{"EMPTY", ""},      // set to empty
		{"MISSING", ""},
	} {
		if got := Getenv(env, c.key); got != c.want {
			t.Errorf("Getenv(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

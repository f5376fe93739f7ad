package proctag

import (
	"strings"
	"testing"
)

func TestStrip(t *testing.T) {
	env := []string{"PATH=/bin", SupervisorKey + "=a1", "HOME=/h", AgentKey + "=b2", ReviewKey + "=c3", "DROVER_SUPERVISOR_RUNX=keep"}
	got := strings.Join(Strip(env), " ")
	if want := "PATH=/bin HOME=/h DROVER_SUPERVISOR_RUNX=keep"; got != want {
		t.Errorf("Strip = %q, want %q", got, want)
	}
}

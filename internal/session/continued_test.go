package session

import (
	"testing"

	"github.com/drover-dev/drover/internal/hook"
)

func TestContinued(t *testing.T) {
	blocked := Record{Continuations: 2, Recorded: []Recorded{
		{RequestID: "a", Event: hook.Stop, Output: hook.Block("Next task: two")},
		{RequestID: "b", Event: hook.SessionStart},
	}}
	allowed := Record{Continuations: 1, Recorded: []Recorded{{RequestID: "a", Event: hook.Stop}}}
	for _, tc := range []struct {
		name string
		rec  Record
		e    hook.Event
		in   hook.Input
		out  hook.Output
		want int
	}{
		{"blocked stop counts one more", blocked, hook.Stop, hook.Input{}, hook.Block("go on"), 3},
		{"stop let go ends the run", blocked, hook.Stop, hook.Input{}, hook.Output{SystemMessage: "w"}, 0},
		{"the continuation as a prompt keeps it", blocked, hook.UserPromptSubmit, hook.Input{Prompt: " Next task: two\n"}, hook.Output{}, 2},
		{"a user's prompt ends it", blocked, hook.UserPromptSubmit, hook.Input{Prompt: "Next task: three"}, hook.Output{}, 0},
		{"a prompt after a stop let go ends it", allowed, hook.UserPromptSubmit, hook.Input{Prompt: ""}, hook.Output{}, 0},
		{"other events keep it", blocked, hook.PreCompact, hook.Input{}, hook.Output{}, 2},
		{"nothing counted stays nothing", Record{}, hook.UserPromptSubmit, hook.Input{Prompt: ""}, hook.Output{}, 0},
	} {
		if got := tc.rec.Continued(tc.e, tc.in, tc.out); got != tc.want {
			t.Errorf("%s: Continued = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNewPart(t *testing.T) {
	r := Record{Answered: PrefixOf("ok")}
	for _, tc := range []struct {
		rec       Record
		msg, want string
	}{
		{r, "ok\nok again", "ok again"},
		{r, "okay", "ay"},
		{r, "another prompt's answer", "another prompt's answer"},
		{r, "o", "o"},
		{Record{}, "ok\nok", "ok\nok"},
	} {
		if got := tc.rec.NewPart(tc.msg); got != tc.want {
			t.Errorf("NewPart(%q) after %+v = %q, want %q", tc.msg, tc.rec.Answered, got, tc.want)
		}
	}
}

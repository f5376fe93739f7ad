package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidSessionID(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8", true},
		{"s1", true},
		{"a_b-c", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"../x", false},
		{"a/b", false},
		{".", false},
		{"-lead", false},
		{"_lead", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, c := range cases {
		if got := ValidSessionID(c.id); got != c.want {
			t.Errorf("ValidSessionID(%q) = %v, want %v", c.id, got, c.want)
		}
		if err := CheckSessionID(c.id); (err == nil) != c.want {
			t.Errorf("CheckSessionID(%q) = %v", c.id, err)
		}
	}
}

func TestReadIgnoresUnknownFieldsAndCapsSize(t *testing.T) {
	in, err := Read(strings.NewReader(`{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"hi","background_tasks":[{"id":"x"}],"future_field":{"a":1}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if in.SessionID != "s1" || !in.StopHookActive || in.LastAssistantMessage == nil || *in.LastAssistantMessage != "hi" {
		t.Errorf("decoded %+v", in)
	}
	in, err = Read(strings.NewReader(`{"session_id":"s1"}`), 0)
	if err != nil || in.LastAssistantMessage != nil {
		t.Errorf("absent last_assistant_message must stay nil: %+v %v", in, err)
	}
	_, err = Read(strings.NewReader(`{"session_id":"`+strings.Repeat("x", 100)+`"}`), 50)
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	for _, bad := range []string{"", "{", "[1]", `{"session_id": 5}`, "null x"} {
		if _, err := Read(strings.NewReader(bad), 0); err == nil {
			t.Errorf("Read(%q) accepted bad input", bad)
		}
	}
}

func TestOutputJSON(t *testing.T) {
	cases := []struct {
		out  Output
		want string
		kind string
	}{
		{Output{}, `{}`, "allow"},
		{Block("go on"), `{"decision":"block","reason":"go on"}`, "block"},
		{Context(UserPromptSubmit, "ctx"), `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ctx"}}`, "context"},
		{Output{SystemMessage: "warn"}, `{"systemMessage":"warn"}`, "allow"},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.out)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("marshal %+v = %s, want %s", c.out, b, c.want)
		}
		if c.out.Kind() != c.kind {
			t.Errorf("Kind(%+v) = %s, want %s", c.out, c.out.Kind(), c.kind)
		}
	}
}

func TestParseEvent(t *testing.T) {
	for _, e := range Events {
		got, err := ParseEvent(string(e))
		if err != nil || got != e {
			t.Errorf("ParseEvent(%q) = %q, %v", e, got, err)
		}
		if e.ClaudeName() == string(e) {
			t.Errorf("%s has no Claude Code name", e)
		}
	}
	if _, err := ParseEvent("Stop"); err == nil {
		t.Error("ParseEvent accepted Claude's spelling; drover's command line uses stop")
	}
}

// FuzzRead feeds arbitrary bytes as hook stdin: Read must never panic, and
// whatever it accepts must survive a JSON round trip.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"session_id":"abc","hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"done"}`))
	f.Add([]byte(`{"session_id":"../x","prompt":"hi"}`))
	f.Add([]byte(`{"session_id":null}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Read(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", in, err)
		}
		if _, err := Parse(b); err != nil {
			t.Fatalf("round trip of %s: %v", b, err)
		}
		_ = ValidSessionID(in.SessionID)
	})
}

func TestResumed(t *testing.T) {
	for source, want := range map[string]bool{"compact": true, "resume": true, "startup": false, "clear": false, "fork": false, "": false} {
		if got := (Input{Source: source}).Resumed(); got != want {
			t.Errorf("Resumed() with source %q = %v, want %v", source, got, want)
		}
	}
}

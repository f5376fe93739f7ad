package hook

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// eventSeeds are payloads of each event as Claude Code sends them (the
// fields of its hooks reference), the seeds of FuzzEventInput.
var eventSeeds = map[Event]string{
	SessionStart:     `{"session_id":"5f0c2a4e-1b7d-4c1e-9a53-2f7d8e6b1c90","transcript_path":"/home/u/.claude/projects/p/5f0c.jsonl","cwd":"/home/u/p","hook_event_name":"SessionStart","source":"compact","model":"claude-sonnet-4-5"}`,
	UserPromptSubmit: `{"session_id":"5f0c2a4e","transcript_path":"/t.jsonl","cwd":"/p","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"/drover:add write the tests\nthen run them","prompt_id":"p-1"}`,
	Stop:             `{"session_id":"5f0c2a4e","transcript_path":"/t.jsonl","cwd":"/p","permission_mode":"acceptEdits","hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"All done. <promise>DONE</promise>"}`,
	SubagentStop:     `{"session_id":"5f0c2a4e","transcript_path":"/t.jsonl","cwd":"/p","hook_event_name":"SubagentStop","stop_hook_active":false,"agent_id":"a-1","agent_type":"general-purpose","last_assistant_message":""}`,
	PreCompact:       `{"session_id":"5f0c2a4e","transcript_path":"/t.jsonl","cwd":"/p","hook_event_name":"PreCompact","trigger":"manual","custom_instructions":"keep the plan"}`,
	SessionEnd:       `{"session_id":"5f0c2a4e","transcript_path":"/t.jsonl","cwd":"/p","hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`,
}

// FuzzEventInput reads arbitrary bytes as the stdin of each hook event.
// What Read accepts survives a JSON round trip unchanged (the supervisor
// gets the Input re-encoded by the hook client), a missing
// last_assistant_message stays distinct from an empty one, a session id is
// either valid or refused with an error that names session_id, and the
// decision drover answers with names the event as Claude Code spells it.
func FuzzEventInput(f *testing.F) {
	for i, e := range Events {
		f.Add(uint8(i), []byte(eventSeeds[e]))
		f.Add(uint8(i), []byte(`{"session_id":"`+strings.Repeat("é", 70)+`","hook_event_name":"`+e.ClaudeName()+`"}`))
	}
	f.Add(uint8(2), []byte(`{"session_id":"s","last_assistant_message":null,"stop_hook_active":"yes"}`))
	f.Add(uint8(0), []byte(`{"SESSION_ID":"s","Source":"resume","session_id":"t"}`))
	f.Fuzz(func(t *testing.T, ev uint8, data []byte) {
		e := Events[int(ev)%len(Events)]
		in, err := Read(bytes.NewReader(data), 1<<16)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "reading hook input") && !strings.HasPrefix(err.Error(), "decoding hook input JSON") {
				t.Fatalf("error %q does not say it is the hook input", err)
			}
			return
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", in, err)
		}
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("round trip of %s: %v", b, err)
		}
		if !reflect.DeepEqual(back, in) {
			t.Fatalf("round trip changed the %s input\nfirst:  %+v\nsecond: %+v", e, in, back)
		}
		if in.LastAssistantMessage == nil && bytes.Contains(b, []byte(`"last_assistant_message"`)) {
			t.Fatalf("an absent last_assistant_message was re-encoded: %s", b)
		}
		if in.Resumed() != (in.Source == "compact" || in.Source == "resume") {
			t.Fatalf("Resumed() = %v for source %q", in.Resumed(), in.Source)
		}
		switch err := CheckSessionID(in.SessionID); {
		case (err == nil) != ValidSessionID(in.SessionID):
			t.Fatalf("CheckSessionID(%q) = %v but ValidSessionID says %v", in.SessionID, err, ValidSessionID(in.SessionID))
		case err != nil && !strings.Contains(err.Error(), "session_id"):
			t.Fatalf("CheckSessionID error %q does not name session_id", err)
		case err == nil && (strings.ContainsAny(in.SessionID, "/\\.") || len(in.SessionID) > 128):
			t.Fatalf("session id %q is valid but path-like or long", in.SessionID)
		}
		out, err := json.Marshal(Context(e, in.Prompt))
		if err != nil {
			t.Fatal(err)
		}
		var o Output
		if err := json.Unmarshal(out, &o); err != nil || o.HookSpecificOutput == nil || o.HookSpecificOutput.HookEventName != e.ClaudeName() {
			t.Fatalf("the %s context decision %s does not name the event %s (%v)", e, out, e.ClaudeName(), err)
		}
		if got, err := ParseEvent(string(e)); err != nil || got != e {
			t.Fatalf("ParseEvent(%q) = %q, %v", e, got, err)
		}
	})
}

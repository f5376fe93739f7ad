package reviewer

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// Envelopes as the real CLI prints them (claude-code.md, hooks-protocol.md §6).
const (
	envPass = `{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"","structured_output":{"verdict":"PASS","findings":[]},"session_id":"c0b4","total_cost_usd":0.1509,"usage":{},"modelUsage":{},"duration_ms":12135}`
	envFail = `{"type":"result","subtype":"success","is_error":false,"result":"{\"verdict\":\"FAIL\"}","structured_output":{"verdict":"FAIL","findings":[` +
		`{"severity":"blocking","file":"main.go","line":12,"summary":"nil map write"},` +
		`{"severity":"minor","file":"util.go","summary":"rename x"}]},"total_cost_usd":0.3}`
	envRateLimited = `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets 5pm"}`
	envNotLoggedIn = `{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"num_turns":1,"result":"Not logged in · Please run /login","total_cost_usd":0}`
	envMaxTurns    = `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"stop_reason":"tool_use"}`
	envRetries     = `{"type":"result","subtype":"error_max_structured_output_retries","is_error":false,"total_cost_usd":0.2}`
	envNoStruct    = `{"type":"result","subtype":"success","is_error":false,"result":"{\"verdict\":\"PASS\"}","total_cost_usd":0.1}`
	envNullStruct  = `{"type":"result","subtype":"success","is_error":false,"structured_output":null}`
)

func TestParseOutput(t *testing.T) {
	tests := []struct {
		name     string
		stdout   string
		verdict  string
		findings []Finding
		cost     float64
		err      error
		errHas   string
	}{
		{name: "pass", stdout: envPass, verdict: "PASS", cost: 0.1509},
		{name: "fail with findings", stdout: envFail, verdict: "FAIL", cost: 0.3, findings: []Finding{
			{Severity: "blocking", File: "main.go", Line: 12, Summary: "nil map write"},
			{Severity: "minor", File: "util.go", Summary: "rename x"},
		}},
		{name: "verbose array takes the last result", stdout: `[{"type":"system","subtype":"init"},{"type":"result","structured_output":{"verdict":"FAIL","findings":[]}},{"type":"assistant"},` + envPass + `,{"type":"user"}]`, verdict: "PASS", cost: 0.1509},
		{name: "leading noise lines are skipped", stdout: "Warning: something\n" + envPass + "\n", verdict: "PASS", cost: 0.1509},
		{name: "two JSON lines: the last wins", stdout: `{"type":"result","structured_output":{"verdict":"FAIL","findings":[]}}` + "\n" + envPass, verdict: "PASS", cost: 0.1509},
		{name: "bare structured output from a custom CLI", stdout: `{"verdict":"FAIL","findings":[{"severity":"nit","summary":"x","line":"7"}]}`, verdict: "FAIL", findings: []Finding{{Severity: "minor", Line: 7, Summary: "x"}}},
		{name: "unknown severity is blocking", stdout: `{"verdict":"FAIL","findings":[{"severity":"critical","summary":"x"},{"summary":"y"}]}`, verdict: "FAIL", findings: []Finding{{Severity: "blocking", Summary: "x"}, {Severity: "blocking", Summary: "y"}}},
		{name: "findings without a summary are dropped", stdout: `{"verdict":"PASS","findings":[{"severity":"minor","summary":"  "},7,{"severity":"minor","summary":"ok"}]}`, verdict: "PASS", findings: []Finding{{Severity: "minor", Summary: "ok"}}},
		{name: "missing findings is none", stdout: `{"type":"result","structured_output":{"verdict":"PASS"}}`, verdict: "PASS"},

		{name: "is_error rate limit", stdout: envRateLimited, err: ErrIsError, errHas: "api_error_status 429"},
		{name: "is_error not logged in keeps the message", stdout: envNotLoggedIn, err: ErrIsError, errHas: "Not logged in"},
		{name: "is_error beats a structured output", stdout: `{"type":"result","is_error":true,"structured_output":{"verdict":"PASS","findings":[]}}`, err: ErrIsError},
		{name: "error subtype", stdout: envMaxTurns, err: ErrIsError, errHas: "error_max_turns"},
		{name: "error subtype without is_error", stdout: envRetries, err: ErrIsError, cost: 0.2},
		{name: "verdict only in .result is not read", stdout: envNoStruct, err: ErrNoStructuredOutput, cost: 0.1},
		{name: "null structured output", stdout: envNullStruct, err: ErrNoStructuredOutput},
		{name: "structured output without verdict", stdout: `{"type":"result","structured_output":{"findings":[]}}`, err: ErrNoStructuredOutput},
		{name: "structured output is a string", stdout: `{"type":"result","structured_output":"PASS"}`, err: ErrNoStructuredOutput},
		{name: "lowercase verdict", stdout: `{"type":"result","structured_output":{"verdict":"pass","findings":[]}}`, err: ErrBadVerdict},
		{name: "other verdict", stdout: `{"verdict":"MAYBE"}`, err: ErrBadVerdict},
		{name: "empty", stdout: " \n", err: ErrUnparsable},
		{name: "plain text", stdout: "I reviewed it and it is fine. PASS", err: ErrUnparsable},
		{name: "truncated JSON", stdout: envPass[:len(envPass)/2], err: ErrUnparsable},
		{name: "array without result", stdout: `[{"type":"system"},{"type":"assistant"}]`, err: ErrUnparsable},
		{name: "other message type", stdout: `{"type":"assistant","structured_output":{"verdict":"PASS"}}`, err: ErrUnparsable},
		{name: "object of neither kind", stdout: `{"hello":"world"}`, err: ErrUnparsable},
		{name: "a number", stdout: `42`, err: ErrUnparsable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdict, findings, cost, err := ParseOutput([]byte(tt.stdout))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("err = %v, want it to mention %q", err, tt.errHas)
				}
				if verdict != "" || findings != nil {
					t.Errorf("a failed parse returned verdict %q and findings %v", verdict, findings)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if verdict != tt.verdict || !slices.Equal(findings, tt.findings) || cost != tt.cost {
				t.Errorf("got %q %+v %v, want %q %+v %v", verdict, findings, cost, tt.verdict, tt.findings, tt.cost)
			}
		})
	}
}

func TestParseOutputBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"verdict":"FAIL","findings":[`)
	for i := range MaxFindings + 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"severity":"minor","file":"` + strings.Repeat("f", MaxFileBytes+10) + `","summary":"` + strings.Repeat("é", MaxSummaryBytes) + `"}`)
	}
	b.WriteString(`]}`)
	_, findings, _, err := ParseOutput([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != MaxFindings {
		t.Errorf("%d findings kept, want %d", len(findings), MaxFindings)
	}
	f := findings[0]
	if len(f.File) > MaxFileBytes+3 || len(f.Summary) > MaxSummaryBytes+3 {
		t.Errorf("long texts not cut: file %d bytes, summary %d bytes", len(f.File), len(f.Summary))
	}
	if !strings.HasSuffix(f.Summary, "é...") {
		t.Errorf("summary cut inside a UTF-8 sequence: ...%q", f.Summary[len(f.Summary)-8:])
	}
}

// FuzzParseOutput holds ParseOutput to its contract on any input: no panic,
// and a success is always a well-formed verdict.
func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{envPass, envFail, envRateLimited, envMaxTurns, envNoStruct, "[" + envPass + "]", "x\n" + envFail} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		verdict, findings, cost, err := ParseOutput(stdout)
		if math.IsNaN(cost) || math.IsInf(cost, 0) || cost < 0 {
			t.Fatalf("cost %v", cost)
		}
		if err != nil {
			if verdict != "" || findings != nil {
				t.Fatalf("error %v with verdict %q findings %v", err, verdict, findings)
			}
			for _, sentinel := range []error{ErrUnparsable, ErrIsError, ErrNoStructuredOutput, ErrBadVerdict} {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if verdict != VerdictPass && verdict != VerdictFail {
			t.Fatalf("verdict %q", verdict)
		}
		if len(findings) > MaxFindings {
			t.Fatalf("%d findings", len(findings))
		}
		for _, fd := range findings {
			if fd.Severity != SeverityBlocking && fd.Severity != SeverityMinor {
				t.Fatalf("severity %q", fd.Severity)
			}
			if strings.TrimSpace(fd.Summary) == "" || fd.Line < 0 {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}

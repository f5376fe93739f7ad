package reviewer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Outputs shaped as the real CLIs print them: codex exec --json events
// (openai/codex docs/exec.md, exec_events.rs) and gemini's JSON result
// (gemini-cli packages/core/src/output/json-formatter.ts, which
// pretty-prints with two spaces).
const (
	codexPass = `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading plan.md**"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"{\"verdict\":\"PASS\",\"findings\":[]}"}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
`
	codexFail = `{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Looking at the plan first."}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"{\"verdict\":\"FAIL\",\"findings\":[{\"severity\":\"blocking\",\"file\":\"plan.md\",\"line\":4,\"summary\":\"no rollback step\"},{\"severity\":\"minor\",\"file\":\"\",\"line\":0,\"summary\":\"typo\"}]}"}}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":20}}
`
	codexTurnFailed = `{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"stream disconnected before completion"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}
`
	codexRetriedThenDone = `{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"{\"verdict\":\"PASS\",\"findings\":[]}"}}
{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":0,"output_tokens":2}}
`
	geminiPass = `{
  "session_id": "c0b4",
  "response": "{\"verdict\":\"PASS\",\"findings\":[]}",
  "stats": {
    "models": {
      "gemini-2.5-pro": {
        "api": {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5300},
        "tokens": {"input": 700, "prompt": 900, "candidates": 60, "total": 1000, "cached": 200, "thoughts": 40, "tool": 0}
      },
      "gemini-2.5-flash": {
        "tokens": {"prompt": 100, "candidates": 5, "total": 105, "cached": 0}
      }
    },
    "tools": {"totalCalls": 1, "totalSuccess": 1, "totalFail": 0},
    "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0}
  }
}`
	geminiFenced = `{
  "response": "I read the plan.\n\n` + "```json" + `\n{\"verdict\":\"FAIL\",\"findings\":[{\"severity\":\"blocking\",\"file\":\"plan.md\",\"line\":\"9\",\"summary\":\"step 3 is missing\"}]}\n` + "```" + `\n",
  "stats": {"models": {}}
}`
	geminiAuthError = `{
  "error": {
    "type": "FatalAuthenticationError",
    "message": "Could not load the default credentials.",
    "code": 41
  }
}`
)

func TestParseCodexOutput(t *testing.T) {
	tests := []struct {
		name          string
		stdout        string
		verdict       string
		findings      []Finding
		input, output int64
		err           error
		errHas        string
	}{
		{name: "pass", stdout: codexPass, verdict: "PASS", input: 24763, output: 122},
		{name: "fail: the last agent message is the answer", stdout: codexFail, verdict: "FAIL", input: 100, output: 20, findings: []Finding{
			{Severity: "blocking", File: "plan.md", Line: 4, Summary: "no rollback step"},
			{Severity: "minor", Summary: "typo"},
		}},
		{name: "an error event followed by a completed turn is a retry", stdout: codexRetriedThenDone, verdict: "PASS", input: 5, output: 2},
		{name: "noise lines are skipped", stdout: "Reading additional input from stdin...\n" + codexPass + "\nbye\n", verdict: "PASS", input: 24763, output: 122},
		{name: "answer in a code fence", stdout: `{"type":"item.completed","item":{"type":"agent_message","text":"` + "```json\\n{\\\"verdict\\\":\\\"FAIL\\\",\\\"findings\\\":[]}\\n```" + `"}}` + "\n" + `{"type":"turn.completed"}`, verdict: "FAIL"},

		{name: "turn.failed", stdout: codexTurnFailed, err: ErrIsError, errHas: "401 Unauthorized"},
		{name: "turn.failed without a message", stdout: `{"type":"turn.failed"}`, err: ErrIsError, errHas: "turn failed"},
		{name: "an error and no completed turn", stdout: `{"type":"turn.started"}` + "\n" + `{"type":"error","message":"Quota exceeded"}`, err: ErrIsError, errHas: "Quota exceeded"},
		{name: "a completed turn from before a failed one does not count", stdout: codexPass + codexTurnFailed, err: ErrIsError, input: 24763, output: 122},
		{name: "interrupted: no turn.completed", stdout: `{"type":"turn.started"}` + "\n" + `{"type":"item.completed","item":{"type":"agent_message","text":"{\"verdict\":\"PASS\",\"findings\":[]}"}}`, err: ErrNoStructuredOutput, errHas: "turn.completed"},
		{name: "no agent message", stdout: `{"type":"turn.started"}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":1}}`, err: ErrNoStructuredOutput, errHas: "agent_message", input: 3, output: 1},
		{name: "prose answer", stdout: `{"type":"item.completed","item":{"type":"agent_message","text":"Looks good to me. PASS"}}` + "\n" + `{"type":"turn.completed"}`, err: ErrNoStructuredOutput, errHas: "Looks good"},
		{name: "empty answer", stdout: `{"type":"item.completed","item":{"type":"agent_message","text":"  "}}` + "\n" + `{"type":"turn.completed"}`, err: ErrNoStructuredOutput},
		{name: "answer without verdict", stdout: `{"type":"item.completed","item":{"type":"agent_message","text":"{\"findings\":[]}"}}` + "\n" + `{"type":"turn.completed"}`, err: ErrNoStructuredOutput},
		{name: "bad verdict", stdout: `{"type":"item.completed","item":{"type":"agent_message","text":"{\"verdict\":\"OK\"}"}}` + "\n" + `{"type":"turn.completed"}`, err: ErrBadVerdict},
		{name: "plain text (no --json)", stdout: "Yep, it is fine.\n", err: ErrUnparsable},
		{name: "claude's envelope is no codex event stream", stdout: `{"verdict":"PASS","findings":[]}`, err: ErrUnparsable},
		{name: "empty", stdout: "", err: ErrUnparsable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseCodexOutput([]byte(tt.stdout))
			checkParsed(t, p, err, tt.err, tt.errHas)
			if p.Verdict != tt.verdict || !slices.Equal(p.Findings, tt.findings) || p.InputTokens != tt.input || p.OutputTokens != tt.output || p.CostUSD != 0 {
				t.Errorf("got %+v, want verdict %q findings %+v tokens %d/%d, no cost", p, tt.verdict, tt.findings, tt.input, tt.output)
			}
		})
	}
}

func TestParseGeminiOutput(t *testing.T) {
	tests := []struct {
		name          string
		stdout        string
		verdict       string
		findings      []Finding
		input, output int64
		err           error
		errHas        string
	}{
		{name: "pass, tokens summed over models", stdout: geminiPass, verdict: "PASS", input: 1000, output: 65},
		{name: "fenced answer after prose", stdout: geminiFenced, verdict: "FAIL", findings: []Finding{{Severity: "blocking", File: "plan.md", Line: 9, Summary: "step 3 is missing"}}},
		{name: "the last fenced object wins", stdout: `{"response":"` + "```\\n{\\\"verdict\\\":\\\"FAIL\\\",\\\"findings\\\":[]}\\n```\\nOn second thought:\\n```json\\n{\\\"verdict\\\":\\\"PASS\\\",\\\"findings\\\":[]}\\n```" + `"}`, verdict: "PASS"},
		{name: "object amid prose", stdout: `{"response":"My verdict: {\"verdict\":\"PASS\",\"findings\":[]} -- done."}`, verdict: "PASS"},
		{name: "deprecation warning before the object", stdout: "The --prompt (-p) flag has been deprecated\n" + geminiPass, verdict: "PASS", input: 1000, output: 65},

		{name: "error object", stdout: geminiAuthError, err: ErrIsError, errHas: "FatalAuthenticationError"},
		{name: "error keeps the tokens spent", stdout: `{"error":{"type":"ApiError","message":"429"},"stats":{"models":{"m":{"tokens":{"prompt":7,"candidates":1}}}}}`, err: ErrIsError, errHas: "429", input: 7, output: 1},
		{name: "prose only", stdout: `{"response":"The plan looks solid. PASS."}`, err: ErrNoStructuredOutput, errHas: "no JSON object"},
		{name: "no response", stdout: `{"stats":{"models":{}}}`, err: ErrNoStructuredOutput},
		{name: "null response", stdout: `{"response":null}`, err: ErrNoStructuredOutput},
		{name: "object without verdict", stdout: `{"response":"{\"result\":\"PASS\"}"}`, err: ErrNoStructuredOutput},
		{name: "lowercase verdict", stdout: `{"response":"{\"verdict\":\"pass\",\"findings\":[]}"}`, err: ErrBadVerdict},
		{name: "response not a string", stdout: `{"response":{"verdict":"PASS"}}`, err: ErrUnparsable},
		{name: "an object of another kind", stdout: `{"verdict":"PASS","findings":[]}`, err: ErrUnparsable},
		{name: "text output (no --output-format json)", stdout: "The plan is fine.", err: ErrUnparsable},
		{name: "an array", stdout: `[1,2]`, err: ErrUnparsable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseGeminiOutput([]byte(tt.stdout))
			checkParsed(t, p, err, tt.err, tt.errHas)
			if p.Verdict != tt.verdict || !slices.Equal(p.Findings, tt.findings) || p.InputTokens != tt.input || p.OutputTokens != tt.output || p.CostUSD != 0 {
				t.Errorf("got %+v, want verdict %q findings %+v tokens %d/%d, no cost", p, tt.verdict, tt.findings, tt.input, tt.output)
			}
		})
	}
}

func checkParsed(t *testing.T, p Parsed, err, want error, errHas string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), errHas) {
		t.Errorf("err = %v, want it to mention %q", err, errHas)
	}
	if p.Verdict != "" || p.Findings != nil {
		t.Errorf("a failed parse returned verdict %q and findings %v", p.Verdict, p.Findings)
	}
}

func TestParseDispatch(t *testing.T) {
	claudeUsage := `{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"PASS","findings":[]},"total_cost_usd":0.5,` +
		`"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":45}}`
	tests := []struct {
		cli, stdout   string
		cost          float64
		input, output int64
	}{
		{CLIClaude, claudeUsage, 0.5, 3210, 45},
		{"", claudeUsage, 0.5, 3210, 45},
		{CLICustom, `{"verdict":"PASS","findings":[]}`, 0, 0, 0},
		{CLICodex, codexPass, 0, 24763, 122},
		{CLIGemini, geminiPass, 0, 1000, 65},
	}
	for _, tt := range tests {
		p, err := Parse(tt.cli, []byte(tt.stdout))
		if err != nil || p.Verdict != VerdictPass || p.CostUSD != tt.cost || p.InputTokens != tt.input || p.OutputTokens != tt.output {
			t.Errorf("Parse(%q) = %+v, %v; want PASS cost %v tokens %d/%d", tt.cli, p, err, tt.cost, tt.input, tt.output)
		}
	}
	// Each CLI's output is read by its own parser only.
	if _, err := Parse(CLICodex, []byte(geminiPass)); err == nil {
		t.Error("codex parsed gemini's output")
	}
	if _, err := Parse(CLIGemini, []byte(codexPass)); err == nil {
		t.Error("gemini parsed codex's output")
	}
}

func TestStderrError(t *testing.T) {
	if err := stderrError(CLIGemini, []byte(geminiAuthError)); !errors.Is(err, ErrIsError) || !strings.Contains(err.Error(), "default credentials") {
		t.Errorf("gemini stderr: %v", err)
	}
	for _, tt := range []struct{ cli, stderr string }{
		{CLIGemini, "TypeError: fetch failed\n    at node:internal"},
		{CLIGemini, geminiPass},
		{CLIClaude, geminiAuthError},
		{CLICodex, geminiAuthError},
	} {
		if err := stderrError(tt.cli, []byte(tt.stderr)); err != nil {
			t.Errorf("stderrError(%q, %.30q) = %v, want nil", tt.cli, tt.stderr, err)
		}
	}
}

func TestAnswerJSONManyOpenFences(t *testing.T) {
	// Fences and braces that never close a JSON object: no answer. The
	// fence search stops after maxCandidates blocks.
	text := strings.Repeat("```json\n{ \"verdict\": ", 5000)
	if _, err := answerJSON(text); !errors.Is(err, ErrNoStructuredOutput) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParseCodexOutput holds ParseCodexOutput to the parsers' contract on
// any input. Seeds: testdata/fuzz/FuzzParseCodexOutput and these.
func FuzzParseCodexOutput(f *testing.F) {
	for _, s := range []string{codexPass, codexFail, codexTurnFailed, codexRetriedThenDone, codexPass + codexTurnFailed} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		p, err := ParseCodexOutput(stdout)
		checkContract(t, p, err)
	})
}

// FuzzParseGeminiOutput holds ParseGeminiOutput to the parsers' contract on
// any input. Seeds: testdata/fuzz/FuzzParseGeminiOutput and these.
func FuzzParseGeminiOutput(f *testing.F) {
	for _, s := range []string{geminiPass, geminiFenced, geminiAuthError, "warning\n" + geminiPass} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		p, err := ParseGeminiOutput(stdout)
		checkContract(t, p, err)
		// stderrError reads the same format and must agree with it.
		if serr := stderrError(CLIGemini, stdout); (serr != nil) != errors.Is(err, ErrIsError) {
			t.Fatalf("stderrError %v, parse error %v", serr, err)
		}
	})
}

// checkContract is what every parser promises: no verdict next to an
// error, an error that wraps one sentinel, a well-formed verdict, bounded
// findings, and token counts that are never negative.
func checkContract(t *testing.T, p Parsed, err error) {
	t.Helper()
	if p.CostUSD != 0 || p.InputTokens < 0 || p.OutputTokens < 0 {
		t.Fatalf("cost %v tokens %d/%d", p.CostUSD, p.InputTokens, p.OutputTokens)
	}
	if err != nil {
		if p.Verdict != "" || p.Findings != nil {
			t.Fatalf("error %v with verdict %q findings %v", err, p.Verdict, p.Findings)
		}
		for _, sentinel := range []error{ErrUnparsable, ErrIsError, ErrNoStructuredOutput, ErrBadVerdict} {
			if errors.Is(err, sentinel) {
				return
			}
		}
		t.Fatalf("error %v wraps no sentinel", err)
	}
	if p.Verdict != VerdictPass && p.Verdict != VerdictFail {
		t.Fatalf("verdict %q", p.Verdict)
	}
	if len(p.Findings) > MaxFindings {
		t.Fatalf("%d findings", len(p.Findings))
	}
	for _, fd := range p.Findings {
		if fd.Severity != SeverityBlocking && fd.Severity != SeverityMinor {
			t.Fatalf("severity %q", fd.Severity)
		}
		if strings.TrimSpace(fd.Summary) == "" || fd.Line < 0 {
			t.Fatalf("finding %+v", fd)
		}
	}
}

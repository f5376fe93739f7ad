package reviewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on what ParseOutput keeps of a reviewer's answer. A reviewer is
// untrusted output: its findings end up in files and prompts.
const (
	MaxFindings     = 100
	MaxSummaryBytes = 2000
	MaxFileBytes    = 512
	// MaxReviewBytes bounds the reviewer's write-up (the answer's
	// "review"); it is kept with the session and written to the review
	// file.
	MaxReviewBytes = 32 << 10
	// MaxDenials bounds the refused tool calls kept of one run, and
	// maxDenialInputBytes what is kept of each call's input.
	MaxDenials          = 20
	maxDenialInputBytes = 300
	maxErrorTextBytes   = 300
	// maxCandidates bounds how many line starts ParseOutput tries when
	// stdout is not one JSON value, so that adversarial output cannot
	// make parsing quadratic.
	maxCandidates = 16
)

// envelope is the part of Claude Code's --output-format json result that
// drover reads. Unknown fields are ignored.
type envelope struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	IsError          bool            `json:"is_error"`
	APIErrorStatus   json.RawMessage `json:"api_error_status"`
	Result           json.RawMessage `json:"result"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	TotalCostUSD     float64         `json:"total_cost_usd"`
	TerminalReason   string          `json:"terminal_reason"`
	Usage            json.RawMessage `json:"usage"`
	// PermissionDenials lists the tool calls the CLI refused, each
	// {"tool_name", "tool_use_id", "tool_input"} (observed on 2.1.197: a
	// Bash call such as `go version` that the default permission mode
	// does not admit is refused with "This command requires approval" and
	// listed here; a tool removed by --disallowedTools is not offered to
	// the model at all, so it never appears).
	PermissionDenials json.RawMessage `json:"permission_denials"`
}

// claudeDenial is one entry of the envelope's permission_denials.
type claudeDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// claudeUsage is the envelope's usage, as the Messages API counts it: input
// not read from or written to the cache, plus the two cache counts.
type claudeUsage struct {
	InputTokens              float64 `json:"input_tokens"`
	CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     float64 `json:"cache_read_input_tokens"`
	OutputTokens             float64 `json:"output_tokens"`
}

// Parsed is what a reviewer's output says. Verdict, Findings and Review
// are set only when the parse succeeded; CostUSD, the token counts and the
// Denials are kept whenever the CLI reported them, also next to an error.
type Parsed struct {
	Verdict                   string
	Findings                  []Finding
	Review                    string
	Denials                   []Denial
	CostUSD                   float64
	InputTokens, OutputTokens int64
	// CachedInputTokens is the part of InputTokens read from the
	// provider's cache, as codex and gemini report it (0 for claude).
	CachedInputTokens int64
}

// answer is the structured output the verdict schema asks for.
type answer struct {
	Review   json.RawMessage   `json:"review"`
	Verdict  *string           `json:"verdict"`
	Findings []json.RawMessage `json:"findings"`
}

type rawFinding struct {
	Severity string          `json:"severity"`
	File     string          `json:"file"`
	Line     json.RawMessage `json:"line"`
	Summary  string          `json:"summary"`
}

// ParseOutput reads the stdout of a claude (or custom) reviewer. It is pure.
//
// stdout is expected to hold Claude Code's --output-format json result: one
// JSON object, or, when --verbose is in effect, a JSON array of messages of
// which the last with type "result" is used. Leading non-JSON lines are
// skipped (the last JSON value that starts a line wins). The envelope's
// is_error (checked first: subtype "success" can carry is_error true) and an
// "error_*" subtype are errors; the verdict comes from
// .structured_output.verdict and the findings from
// .structured_output.findings, never from .result (a string).
//
// A custom CLI may print the structured output itself, a bare
// {"verdict": ..., "findings": [...]} object with no "type".
//
// The verdict must be exactly PASS or FAIL. A finding's severity other than
// "minor" (or a few synonyms such as "nit") counts as blocking. Findings past
// MaxFindings are dropped and long texts are cut.
//
// cost is total_cost_usd when the envelope has it, also alongside an error.
// The error wraps ErrUnparsable, ErrIsError, ErrNoStructuredOutput or
// ErrBadVerdict.
func ParseOutput(stdout []byte) (verdict string, findings []Finding, cost float64, err error) {
	p, err := parseClaude(stdout)
	return p.Verdict, p.Findings, p.CostUSD, err
}

// Parse reads the stdout of a reviewer run with cli: ParseCodexOutput for
// CLICodex, ParseGeminiOutput for CLIGemini, and ParseOutput's rules (with
// the envelope's usage as tokens) for CLIClaude and CLICustom. It is pure.
func Parse(cli string, stdout []byte) (Parsed, error) {
	switch cli {
	case CLICodex:
		return ParseCodexOutput(stdout)
	case CLIGemini:
		return ParseGeminiOutput(stdout)
	}
	return parseClaude(stdout)
}

func parseClaude(stdout []byte) (Parsed, error) {
	var p Parsed
	doc, err := lastJSON(stdout)
	if err != nil {
		return p, err
	}
	doc, err = resultOf(doc)
	if err != nil {
		return p, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return p, fmt.Errorf("%w: the result is not a JSON object", ErrUnparsable)
	}
	structured := doc
	if _, typed := fields["type"]; typed {
		var env envelope
		if err := json.Unmarshal(doc, &env); err != nil {
			return p, fmt.Errorf("%w: decoding the result envelope: %v", ErrUnparsable, err)
		}
		p.CostUSD = finite(env.TotalCostUSD)
		var u claudeUsage
		if json.Unmarshal(env.Usage, &u) == nil {
			p.InputTokens = tokens(u.InputTokens) + tokens(u.CacheCreationInputTokens) + tokens(u.CacheReadInputTokens)
			p.OutputTokens = tokens(u.OutputTokens)
		}
		p.Denials = denials(env.PermissionDenials)
		if env.Type != "result" {
			return p, fmt.Errorf("%w: the last message has type %q, not \"result\"", ErrUnparsable, cut(env.Type, 40))
		}
		if env.IsError || strings.HasPrefix(env.Subtype, "error") {
			return p, fmt.Errorf("%w: %s", ErrIsError, describeError(env))
		}
		structured = env.StructuredOutput
		if len(bytes.TrimSpace(structured)) == 0 || bytes.Equal(bytes.TrimSpace(structured), []byte("null")) {
			return p, fmt.Errorf("%w (subtype %q)", ErrNoStructuredOutput, cut(env.Subtype, 60))
		}
	} else if _, ok := fields["verdict"]; !ok {
		return p, fmt.Errorf("%w: an object with neither \"type\" nor \"verdict\"", ErrUnparsable)
	}
	return p, decodeAnswer(structured, &p)
}

// decodeAnswer reads a verdict object into p: the verdict, exactly PASS or
// FAIL, at most MaxFindings findings, and the review text (a review that is
// not a string is left out: the verdict does not depend on it). On error
// none of the three is set.
func decodeAnswer(structured []byte, p *Parsed) error {
	var a answer
	if err := json.Unmarshal(structured, &a); err != nil {
		return fmt.Errorf("%w: structured output is not a verdict object: %v", ErrNoStructuredOutput, err)
	}
	if a.Verdict == nil {
		return fmt.Errorf("%w: structured output has no verdict", ErrNoStructuredOutput)
	}
	switch *a.Verdict {
	case VerdictPass, VerdictFail:
	default:
		return fmt.Errorf("%w: %q", ErrBadVerdict, cut(*a.Verdict, 40))
	}
	var findings []Finding
	for _, raw := range a.Findings {
		if len(findings) == MaxFindings {
			break
		}
		f, ok := parseFinding(raw)
		if ok {
			findings = append(findings, f)
		}
	}
	var review string
	if json.Unmarshal(a.Review, &review) == nil {
		review = cut(strings.TrimSpace(review), MaxReviewBytes)
	}
	p.Verdict, p.Findings, p.Review = *a.Verdict, findings, review
	return nil
}

// denials reads claude's permission_denials: at most MaxDenials, each with
// what its input asked for. Anything unreadable is left out.
func denials(raw json.RawMessage) []Denial {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []Denial
	for _, item := range list {
		if len(out) == MaxDenials {
			break
		}
		var d claudeDenial
		if json.Unmarshal(item, &d) != nil || strings.TrimSpace(d.ToolName) == "" {
			continue
		}
		out = append(out, Denial{Tool: cut(strings.TrimSpace(d.ToolName), 60), Input: denialInput(d.ToolInput)})
	}
	return out
}

// denialInput says in one line what a refused call asked for: a shell
// command, a file path or pattern, else its input as JSON.
func denialInput(raw json.RawMessage) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	for _, key := range []string{"command", "file_path", "notebook_path", "path", "pattern", "url"} {
		var v string
		if json.Unmarshal(in[key], &v) == nil && strings.TrimSpace(v) != "" {
			return cut(strings.Join(strings.Fields(v), " "), maxDenialInputBytes)
		}
	}
	if len(in) == 0 {
		return ""
	}
	compact, err := json.Marshal(in)
	if err != nil {
		return ""
	}
	return cut(string(compact), maxDenialInputBytes)
}

// lastJSON returns stdout itself when it is one JSON value, else the last
// JSON value that starts at the beginning of a line and runs to the end.
func lastJSON(stdout []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: stdout is empty", ErrUnparsable)
	}
	if json.Valid(trimmed) {
		return trimmed, nil
	}
	tries := 0
	for i := len(trimmed) - 1; i > 0 && tries < maxCandidates; i-- {
		c := trimmed[i]
		if (c != '{' && c != '[') || trimmed[i-1] != '\n' {
			continue
		}
		tries++
		if json.Valid(trimmed[i:]) {
			return trimmed[i:], nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnparsable, cut(string(trimmed), 80))
}

// resultOf returns doc, or for a JSON array (--verbose) its last element
// whose type is "result".
func resultOf(doc []byte) ([]byte, error) {
	if doc[0] != '[' {
		return doc, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(doc, &msgs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnparsable, err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		var m struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(msgs[i], &m) == nil && m.Type == "result" {
			return msgs[i], nil
		}
	}
	return nil, fmt.Errorf("%w: a JSON array of %d message(s) with no \"result\" message", ErrUnparsable, len(msgs))
}

func describeError(env envelope) string {
	parts := []string{fmt.Sprintf("subtype %q", cut(env.Subtype, 60))}
	if s := bytes.TrimSpace(env.APIErrorStatus); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		parts = append(parts, "api_error_status "+cut(string(s), 20))
	}
	if env.TerminalReason != "" {
		parts = append(parts, "terminal_reason "+cut(env.TerminalReason, 60))
	}
	var text string
	if json.Unmarshal(env.Result, &text) == nil && text != "" {
		parts = append(parts, strconv.Quote(cut(text, maxErrorTextBytes)))
	}
	return strings.Join(parts, ", ")
}

func parseFinding(raw json.RawMessage) (Finding, bool) {
	var r rawFinding
	if err := json.Unmarshal(raw, &r); err != nil {
		return Finding{}, false
	}
	summary := strings.TrimSpace(r.Summary)
	if summary == "" {
		return Finding{}, false
	}
	return Finding{
		Severity: severity(r.Severity),
		File:     cut(strings.TrimSpace(r.File), MaxFileBytes),
		Line:     line(r.Line),
		Summary:  cut(summary, MaxSummaryBytes),
	}, true
}

// severity maps what a reviewer wrote to blocking or minor. Only words that
// clearly mean "not required" become minor.
func severity(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "minor", "nit", "nitpick", "trivial", "suggestion", "info", "low":
		return SeverityMinor
	}
	return SeverityBlocking
}

// line accepts a JSON number or a numeric string; anything else is 0.
func line(raw json.RawMessage) int {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

// tokens turns a reported token count into an int64; a count that is
// negative, fractional nonsense or absurdly large is 0.
func tokens(f float64) int64 {
	if math.IsNaN(f) || f < 0 || f > 1e15 {
		return 0
	}
	return int64(f)
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0
	}
	return f
}

// cut shortens s to n bytes, without splitting a UTF-8 sequence, and marks
// the cut with "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

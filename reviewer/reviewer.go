// Package reviewer runs one independent reviewer: a CLI process (claude,
// codex, gemini, or a custom command template) asked to review some work and
// to answer with a structured verdict and findings.
//
// It owns everything about that one process and nothing about sessions: the
// command line (built without a shell from a Spec, which
// internal/reviewconf fills in from the review.* config), the recursion
// guard, its timeout and output cap (enforced by internal/proc, which runs
// it in a process group of its own, killed whole), the parsing of each
// CLI's JSON output into one Result, model alternation, the helpers that
// decide when reviews are clean and track findings across reviews, the
// global cap on reviewer processes (Limiter), and parallel runs with a
// quorum on a bounded pool. The caller (the actors that run plan reviews,
// loop checkpoints and run task reviews) decides what to review and what a
// verdict means for its workflow.
//
// A run that did not produce a verdict (the CLI failed, timed out, reported
// is_error, or printed no structured output) has Outcome Failed. It is never
// mistaken for PASS or FAIL.
package reviewer

import (
	"errors"
	"strings"
	"time"

	"github.com/drover-dev/drover/templates"
)

// The CLIs BuildCommand knows.
const (
	// CLIClaude is Claude Code in print mode. It is the default.
	CLIClaude = "claude"
	// CLICodex is OpenAI's Codex CLI, `codex exec`, read-only.
	CLICodex = "codex"
	// CLIGemini is Google's Gemini CLI in headless mode.
	CLIGemini = "gemini"
	// CLICustom runs Spec.Command, a template of argv with {{model}},
	// {{prompt}}, {{schema}} and {{budget_usd}} placeholders.
	CLICustom = "custom"
)

// Defaults applied by Run when a Spec leaves the field zero.
const (
	DefaultTimeout   = 10 * time.Minute
	DefaultOutputCap = 1 << 20
)

// GuardEnv is the environment variable set in every reviewer process.
// drover's own hook sees it and does nothing, so that a reviewer that
// happens to load the project's hooks cannot recurse into drover.
const GuardEnv = "DROVER_REVIEWER"

// MaxPromptBytes caps the prompt. It travels as one argv string, and Linux
// refuses a single argument longer than 128 KiB (MAX_ARG_STRLEN) with E2BIG;
// a prompt near this size is a bug in whatever composed it anyway.
const MaxPromptBytes = 100 << 10

// Spec is one reviewer invocation. Only Prompt is required.
type Spec struct {
	// CLI is CLIClaude (also when empty), CLICodex, CLIGemini or
	// CLICustom.
	CLI string
	// Path is the executable for CLIClaude, CLICodex and CLIGemini; empty
	// means the CLI's name looked up in PATH. CLICustom takes its
	// executable from Command[0].
	Path string
	// Model is passed as the CLI's model flag (or {{model}}): an alias
	// such as opus or sonnet for claude, that CLI's own model names for
	// codex and gemini. Empty leaves the CLI's default. Run routes it
	// (Route): a model whose name belongs to another CLI than CLI
	// ("gpt-5-codex" under claude), or an explicit "cli:model", runs on
	// that CLI.
	Model string
	// Paths are the executables of the CLIs a routed model runs on
	// other than CLI, by CLI name; a CLI missing here is looked up in
	// PATH.
	Paths map[string]string
	// Prompt is what the reviewer is asked to do.
	Prompt string
	// Schema is the JSON schema of the answer; nil means Schema() (for
	// codex, StrictSchema()).
	Schema []byte
	// SchemaFile is, for CLICodex, a file holding the schema, passed as
	// --output-schema. Run leaves it empty and writes a temporary file of
	// its own, removed when the run ends; BuildCommand needs it set.
	SchemaFile string
	// BudgetUSD caps the run's spend (--max-budget-usd); 0 means no cap.
	// Only claude has such a flag: codex and gemini ignore it, and report
	// no cost either.
	BudgetUSD float64
	// Timeout bounds the run; 0 means DefaultTimeout. When it expires the
	// whole process group is killed.
	Timeout time.Duration
	// Dir is the working directory; empty means the caller's.
	Dir string
	// Env is the environment; nil means the caller's. GuardEnv=1 is
	// always added.
	Env []string
	// Command is the argv template for CLICustom, for example
	// ["mycli", "--model", "{{model}}", "{{prompt}}"]. Placeholders may
	// also appear inside an argument ("--model={{model}}").
	Command []string
	// OutputCap is how many bytes of stdout, and separately of stderr,
	// are kept; 0 means DefaultOutputCap. Output past it is read and
	// discarded so that the child never blocks on a full pipe.
	OutputCap int
	// LogPath, when set, is where a failed run's log is written: the
	// command line, exit code, error and the tail of its output.
	LogPath string
	// Limiter, when set, caps how many reviewer processes run at once
	// across every caller sharing it. Run waits for a slot (or for ctx).
	Limiter *Limiter
	// OwnerTag, when set, is one more "KEY=VALUE" entry for the
	// environment of the reviewer and all it starts, shared by every
	// reviewer of one supervisor: the supervisor's watchdog ends what
	// carries it if the supervisor dies without doing so.
	OwnerTag string
	// Templates words what drover adds to Prompt for a CLI that needs it
	// (gemini's instruction to answer in the schema); the zero Set means
	// the built-ins.
	Templates templates.Set
}

// Outcome is how a run ended.
type Outcome string

// The outcomes. Pass and Fail are the reviewer's verdict; Failed means there
// is no verdict at all.
const (
	Pass   Outcome = "pass"
	Fail   Outcome = "fail"
	Failed Outcome = "failed"
)

// The verdicts, as the schema spells them.
const (
	VerdictPass = "PASS"
	VerdictFail = "FAIL"
)

// The finding severities, as the schema spells them.
const (
	SeverityBlocking = "blocking"
	SeverityMinor    = "minor"
)

// Finding is one problem a reviewer reported.
type Finding struct {
	Severity string `json:"severity"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Summary  string `json:"summary"`
}

// Blocking reports whether f must be fixed before the work is clean.
func (f Finding) Blocking() bool { return f.Severity != SeverityMinor }

// Denial is one tool call the reviewer CLI refused its model: a command
// or an edit that its permissions do not admit. A review written after one
// may rest on a check that never ran (the tests, say), so drover reports it.
type Denial struct {
	// Tool is the CLI's name for the tool, such as Bash.
	Tool string `json:"tool"`
	// Input says what the call asked for: the command of a shell call,
	// the file of an edit, else the call's input as JSON; shortened.
	Input string `json:"input,omitempty"`
}

// Markdown is d in one line of Markdown: the tool, and what it asked for
// as code. Neither may break out of its span: a backquote in either would
// end the code early, so each span's fence is longer than any run of them.
// The plan and run workflows and the loop checkpoint all say refused calls
// this way.
func (d Denial) Markdown() string {
	if d.Input == "" {
		return codeSpan(d.Tool)
	}
	return codeSpan(d.Tool) + " " + codeSpan(d.Input)
}

// codeSpan is s as a Markdown code span.
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// Result is what one run produced.
type Result struct {
	// Index is the position of the run's Spec in RunParallel's specs
	// (0 for Run), and Model its model: the pool returns results in no
	// particular order.
	Index int
	Model string

	Outcome  Outcome
	Verdict  string
	Findings []Finding
	// Review is the reviewer's own write-up, the answer's "review" text:
	// what it checked and what it thinks, in its words. It is empty when
	// the reviewer wrote none (a custom CLI may not).
	Review string
	// Denials are the tool calls the CLI refused the reviewer, from
	// claude's permission_denials; codex and gemini report none. They are
	// kept for a Failed run too.
	Denials []Denial
	// CostUSD is the CLI's total_cost_usd, when it reported one (also for
	// some failed runs, such as is_error). codex and gemini report none:
	// for them it is their tokens at convergence.DefaultPrices (the list
	// prices of the model, or of the CLI's flagship when none is named).
	CostUSD float64
	// InputTokens and OutputTokens are the tokens the CLI reported, 0
	// when it reported none. Input counts cached input too, of which
	// CachedInputTokens were cached (codex and gemini say).
	InputTokens, OutputTokens, CachedInputTokens int64
	// Duration is the process's wall time, not counting the wait for a
	// Limiter slot.
	Duration time.Duration
	// ExitCode is the process's exit code, or -1 when it did not start or
	// was killed by a signal.
	ExitCode int
	// Err says why the run Failed; it is nil otherwise. It wraps one of
	// the Err* sentinels of this package, a context error, or the error
	// from starting the process.
	Err error

	// Stdout and Stderr are the captured output, at most OutputCap bytes
	// each; the Truncated flags say that more was discarded, from the
	// middle: the start and the end are kept (see proc.Output).
	Stdout, Stderr                   []byte
	StdoutTruncated, StderrTruncated bool
}

// The errors a Failed run wraps.
var (
	ErrTimeout            = errors.New("reviewer: timed out (process group killed)")
	ErrExit               = errors.New("reviewer: exited with a non-zero status")
	ErrOutputTooLarge     = errors.New("reviewer: stdout exceeded the output cap")
	ErrUnparsable         = errors.New("reviewer: stdout holds no JSON result")
	ErrIsError            = errors.New("reviewer: the CLI reported an error")
	ErrNoStructuredOutput = errors.New("reviewer: the result has no structured output")
	ErrBadVerdict         = errors.New("reviewer: the verdict is neither PASS nor FAIL")
)

// schema is the verdict schema. Severity is an enum so that the CLI rejects
// anything else and retries; ParseOutput still treats an unknown severity
// as blocking, since a lenient CLI must not turn a problem into a nit.
// "review" comes first so that the model writes its review before it
// settles on a verdict; it is required so that every review file holds the
// reviewer's own words, and ParseOutput still accepts an answer without it.
const schema = `{"type":"object",` +
	`"properties":{` +
	`"review":{"type":"string"},` +
	`"verdict":{"type":"string","enum":["PASS","FAIL"]},` +
	`"findings":{"type":"array","items":{"type":"object",` +
	`"properties":{` +
	`"severity":{"type":"string","enum":["blocking","minor"]},` +
	`"file":{"type":"string"},` +
	`"line":{"type":"integer","minimum":0},` +
	`"summary":{"type":"string"}},` +
	`"required":["severity","summary"],"additionalProperties":false}}},` +
	`"required":["review","verdict","findings"],"additionalProperties":false}`

// Schema returns the JSON schema of a reviewer's answer:
// {"review": "...", "verdict": "PASS"|"FAIL", "findings": [{"severity":
// "blocking"|"minor", "file", "line", "summary"}]}, where review is the
// reviewer's write-up in Markdown. Each call returns a fresh copy.
func Schema() []byte { return []byte(schema) }

// strictSchema is schema under the rules of OpenAI's strict structured
// outputs, which codex exec applies to --output-schema: every property is
// listed in "required" and every object has additionalProperties false, or
// the API answers 400 invalid_json_schema before the model runs (see
// openai/codex docs/exec.md, "Structured output", and the Archon and
// pi-web-providers reports of that error). So file and line are required
// (an empty file and line 0 say "none"), and "minimum" is left out as a
// keyword older strict modes rejected.
const strictSchema = `{"type":"object",` +
	`"properties":{` +
	`"review":{"type":"string"},` +
	`"verdict":{"type":"string","enum":["PASS","FAIL"]},` +
	`"findings":{"type":"array","items":{"type":"object",` +
	`"properties":{` +
	`"severity":{"type":"string","enum":["blocking","minor"]},` +
	`"file":{"type":"string"},` +
	`"line":{"type":"integer"},` +
	`"summary":{"type":"string"}},` +
	`"required":["severity","file","line","summary"],"additionalProperties":false}}},` +
	`"required":["review","verdict","findings"],"additionalProperties":false}`

// StrictSchema returns Schema() in the form strict structured outputs
// accept: every property required. It is what codex gets. Each call returns
// a fresh copy.
func StrictSchema() []byte { return []byte(strictSchema) }

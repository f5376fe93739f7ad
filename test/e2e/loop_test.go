//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// TestLoopCompletesOnPromise runs `/drover:loop` through the real slash
// command and ends it on its completion promise in iteration 3. Before
// that the model shows the promise twice in ways that must not count: in a
// fenced code block and a quotation (iteration 1), and in a sentence that
// says it is not done (iteration 2). Iteration 1 also writes a note into
// the tracker body, which drover keeps when it rewrites the front matter.
func TestLoopCompletesOnPromise(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-promise.yaml"))
	sid := newSessionID(t)
	const prompt = "make the lexer handle unicode"
	res := p.claude("--session-id", sid, `/drover:loop "`+prompt+`" --max-iterations 5 --completion-promise "ALL DONE"`)
	const final = "The lexer handles multi-byte runes and every case passes.\n<promise>ALL DONE</promise>"
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != final {
		t.Fatalf("exit %d, stdout %q; want 0 and the answer with the promise", res.ExitCode, res.Stdout)
	}

	// Three iterations and nothing after the promise: the stop that
	// followed it was allowed and the CLI exited.
	reqs := p.model.Messages()
	if got, want := ruleNames(reqs), []string{"iteration-1", "noted", "iteration-2", "iteration-3"}; !slices.Equal(got, want) {
		t.Fatalf("model requests answered by %q, want %q", got, want)
	}
	first := reqs[0].LastUserText
	for _, w := range []string{
		"[drover] Started a loop in session " + sid + ": up to 5 iteration(s).",
		"# drover loop: iteration 1 of 5",
		"## Task\n\n" + prompt,
		"## Role: developer",
		"`drover:developer`",
		"<promise>ALL DONE</promise>",
	} {
		if !strings.Contains(first, w) {
			t.Errorf("the /drover:loop prompt lacks %q:\n%s", w, first)
		}
	}
	if strings.Contains(first, "DROVER_ARGS_END") {
		t.Errorf("the /drover:loop prompt still holds the unexpanded shell block:\n%s", first)
	}
	reasons := blockReasons(reqs, sid)
	if got, want := loopBlocks(reasons), []string{"2/5 developer exploring", "3/5 developer exploring"}; !slices.Equal(got, want) {
		t.Fatalf("block reasons %q, want %q", got, want)
	}
	for i, r := range reasons {
		for _, w := range []string{"## Task\n\n" + prompt, "<promise>ALL DONE</promise>", "`drover:developer`"} {
			if !strings.Contains(r, w) {
				t.Errorf("block %d lacks %q:\n%s", i+1, w, r)
			}
		}
	}

	st := p.loopStatus(sid)
	dir := p.sessionDir(sid)
	if st.Active || st.Iteration != 3 || st.MaxIterations != 5 || st.Outcome != "done" ||
		st.CompletionPromise != "ALL DONE" || st.Prompt != prompt || st.Tracker != tracker.Path(dir) || st.Reflections != 0 {
		t.Errorf("loop status %+v; want inactive, iteration 3 of 5, outcome done, promise ALL DONE, prompt %q, tracker in %s, no reflections", st, prompt, dir)
	}
	// The user hears why the loop ended: the hook's systemMessage, which
	// --print does not show but the transcript keeps.
	if w := "[drover] Loop done in session " + sid + " after 3 iteration(s)"; !strings.Contains(p.transcript(sid), w) {
		t.Errorf("the transcript lacks drover's message %q", w)
	}
	if w := "the agent signalled completion (promise)"; !strings.Contains(p.transcript(sid), w) {
		t.Errorf("the transcript lacks %q", w)
	}

	tr, err := tracker.Read(st.Tracker)
	if err != nil {
		t.Fatalf("reading the tracker: %v", err)
	}
	if tr.Active || tr.Iteration != 3 || tr.MaxIterations != 5 || tr.Prompt != prompt {
		t.Errorf("tracker front matter: active %t, iteration %d of %d, prompt %q; want the ended loop", tr.Active, tr.Iteration, tr.MaxIterations, tr.Prompt)
	}
	for _, w := range []string{"# Loop progress", "- iteration 1: the lexer splits multi-byte runes"} {
		if !strings.Contains(tr.Body, w) {
			t.Errorf("the tracker body lost %q:\n%s", w, tr.Body)
		}
	}
	for _, m := range []string{"loop.md.corrupt-*", filepath.Join("reflections", "*")} {
		if got, _ := filepath.Glob(filepath.Join(dir, m)); len(got) != 0 {
			t.Errorf("session folder holds %q", got)
		}
	}
}

// TestLoopRoutesFailingTests: a loop whose tests keep failing at the same
// pass rate goes to the debugger, and once drover sees it stuck, to the
// architect. Each iteration the model runs a command that prints go test
// -v output (one pass, one failure) and exits 1, then looks around with
// more Bash calls; iterations with ten tool calls get a reflection file,
// and the next block quotes it. The iteration budget ends the run.
//
//   - plateau: each iteration fails a different test, so the failures do
//     not repeat but the pass rate stays 0.50: stuck_plateau after four
//     iterations. Iteration 1 makes two tool calls (no reflection), the
//     others ten.
//   - thrashing: every iteration fails the same test: thrashing after
//     three. Every iteration makes ten tool calls.
func TestLoopRoutesFailingTests(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		scenario string
		max      int
		failing  func(iteration int) string
		// sameFailure: every iteration ends on the same failure.
		sameFailure bool
		blocks      []string
		// reflected lists the iterations with a reflection file.
		reflected []int
		// because is in the status reason of the block that brings in the
		// architect.
		because string
	}{
		{
			name: "plateau", scenario: "loop-plateau.yaml", max: 5,
			failing: func(i int) string { return fmt.Sprintf("TestIter%d", i) },
			blocks: []string{
				"2/5 debugger exploring", "3/5 debugger exploring", "4/5 debugger exploring",
				"5/5 architect stuck_plateau",
			},
			reflected: []int{2, 3, 4, 5},
			because:   "test pass rate 0.50 has improved by only 0.00 over the last 3 iterations",
		},
		{
			name: "thrashing", scenario: "loop-thrash.yaml", max: 4,
			failing: func(int) string { return "TestSame" }, sameFailure: true,
			blocks: []string{
				"2/4 debugger exploring", "3/4 debugger exploring",
				"4/4 architect thrashing",
			},
			reflected: []int{1, 2, 3, 4},
			because:   "ended each of the last 3 iterations and the test pass rate went from 0.50 to 0.50",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newQueueProject(t, loadScenario(t, c.scenario))
			sid := newSessionID(t)
			const prompt = "make the parser tests pass"
			res := p.claude("--session-id", sid, fmt.Sprintf("/drover:loop %q --max-iterations %d", prompt, c.max))
			if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "The tests still fail; ending this iteration." {
				t.Fatalf("exit %d, stdout %q; want 0 and the last iteration's answer", res.ExitCode, res.Stdout)
			}
			reqs := p.model.Messages()
			if !strings.Contains(reqs[0].LastUserText, "## Role: developer") {
				t.Errorf("iteration 1 is not the developer's:\n%s", reqs[0].LastUserText)
			}
			reasons := blockReasons(reqs, sid)
			if got := loopBlocks(reasons); !slices.Equal(got, c.blocks) {
				t.Fatalf("block reasons (iteration/max role status):\n%q\nwant:\n%q", got, c.blocks)
			}
			for i, r := range reasons {
				role := loopRoleRE.FindStringSubmatch(r)[1]
				for _, w := range []string{"You are the " + role + " this iteration", "`drover:" + role + "`", "## Task\n\n" + prompt} {
					if !strings.Contains(r, w) {
						t.Errorf("block %d lacks %q:\n%s", i+1, w, r)
					}
				}
				// The block quotes the reflection of the iteration that just
				// ended, if it had one.
				prev := i + 1
				w := fmt.Sprintf("## Last reflection\n\nIteration %d: ", prev)
				if slices.Contains(c.reflected, prev) {
					if !strings.Contains(r, w) || !strings.Contains(r, "Failures: 1 of 2 tests fail") {
						t.Errorf("block %d does not quote the reflection of iteration %d:\n%s", i+1, prev, r)
					}
				} else if strings.Contains(r, "## Last reflection") {
					t.Errorf("block %d quotes a reflection, but iteration %d made two tool calls:\n%s", i+1, prev, r)
				}
			}
			if last := reasons[len(reasons)-1]; !strings.Contains(last, c.because) {
				t.Errorf("the architect's block does not say why (%q):\n%s", c.because, last)
			}

			dir := p.sessionDir(sid)
			hashes := map[string]bool{}
			for i := 1; i <= c.max; i++ {
				path := filepath.Join(dir, "reflections", fmt.Sprintf("iteration-%d.json", i))
				if !slices.Contains(c.reflected, i) {
					mustNotExist(t, path)
					continue
				}
				var r reflectionJSON
				if err := json.Unmarshal([]byte(readFile(t, path)), &r); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				thrashing := c.sameFailure && i >= 3
				if r.Iteration != i || r.ToolCalls != 10 || r.ErrorHash == "" || r.Thrashing != thrashing {
					t.Errorf("%s: iteration %d, %d tool calls, error hash %q, thrashing %t; want %d, 10, a hash, %t",
						path, r.Iteration, r.ToolCalls, r.ErrorHash, r.Thrashing, i, thrashing)
				}
				if w := "--- FAIL: " + c.failing(i); !slices.ContainsFunc(r.Failures, func(f string) bool { return strings.Contains(f, w) }) {
					t.Errorf("%s: failures %q do not name %q", path, r.Failures, w)
				}
				hashes[r.ErrorHash] = true
			}
			want := len(c.reflected)
			if c.sameFailure {
				want = 1
			}
			if len(hashes) != want {
				t.Errorf("%d distinct error hashes in the reflections, want %d", len(hashes), want)
			}

			st := p.loopStatus(sid)
			if st.Active || st.Iteration != c.max || st.Outcome != "max_iterations" || st.Reflections != len(c.reflected) ||
				st.Status != "budget_exhausted" || !strings.Contains(st.StatusReason, fmt.Sprintf("reached the budget of %d iterations", c.max)) {
				t.Errorf("loop status %+v; want inactive at iteration %d, outcome max_iterations, %d reflections, status budget_exhausted",
					st, c.max, len(c.reflected))
			}
			if w := fmt.Sprintf("[drover] Stopped the loop in session %s after %d iteration(s) without a completion signal: its budget is spent (max_iterations: %d of %d iterations)",
				sid, c.max, c.max, c.max); !strings.Contains(p.transcript(sid), w) {
				t.Errorf("the transcript lacks drover's budget message %q", w)
			}
		})
	}
}

// TestLoopIterationBudget: a model that never finishes is stopped by the
// iteration budget, from the flag or, without it, from loop.max_iterations
// (the project's config file or DROVER_LOOP_MAX_ITERATIONS). The budget
// ends the loop after its last iteration: the stop is allowed, the user is
// told why, and status says max_iterations.
func TestLoopIterationBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		flag   string
		config string
		env    []string
	}{
		{name: "flag", flag: " --max-iterations 2"},
		{name: "config file", config: "loop:\n  max_iterations: 2\n"},
		{name: "environment", env: []string{"DROVER_LOOP_MAX_ITERATIONS=2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newQueueProject(t, loadScenario(t, "loop-budget.yaml"))
			p.env = append(p.env, c.env...)
			if c.config != "" {
				if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sid := newSessionID(t)
			res := p.claude("--session-id", sid, `/drover:loop "tidy the changelog"`+c.flag)
			if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Iteration 2 of 2: still working." {
				t.Fatalf("exit %d, stdout %q; want 0 and the answer to iteration 2", res.ExitCode, res.Stdout)
			}
			reqs := p.model.Messages()
			if len(reqs) != 2 {
				t.Errorf("%d model requests, want 2 (one per iteration)", len(reqs))
			}
			if got, want := loopBlocks(blockReasons(reqs, sid)), []string{"2/2 developer exploring"}; !slices.Equal(got, want) {
				t.Errorf("block reasons %q, want %q", got, want)
			}
			st := p.loopStatus(sid)
			if st.Active || st.Iteration != 2 || st.MaxIterations != 2 || st.Outcome != "max_iterations" {
				t.Errorf("loop status %+v; want inactive, iteration 2 of 2, outcome max_iterations", st)
			}
			if w := "[drover] Stopped the loop in session " + sid + " after 2 iteration(s) without a completion signal: its budget is spent (max_iterations: 2 of 2 iterations)"; !strings.Contains(p.transcript(sid), w) {
				t.Errorf("the transcript lacks drover's budget message %q", w)
			}
			tr, err := tracker.Read(st.Tracker)
			if err != nil {
				t.Fatalf("reading the tracker: %v", err)
			}
			if tr.Active || tr.Iteration != 2 {
				t.Errorf("tracker front matter: active %t, iteration %d; want inactive at 2", tr.Active, tr.Iteration)
			}
		})
	}
}

// parserSuite is the test suite of the project the convergence tests loop
// on: a shell script that checks parser.txt and prints go test -v output,
// exiting 1 when a test fails.
const parserSuite = `fail=0
check() {
	name=$1; shift
	echo "=== RUN   $name"
	if "$@"; then
		echo "--- PASS: $name (0.00s)"
	else
		echo "    parser_test.sh: $*: failed"
		echo "--- FAIL: $name (0.00s)"
		fail=1
	fi
}
check TestParse test -s parser.txt
check TestLex grep -q unicode parser.txt
if [ "$fail" = 0 ]; then
	printf 'PASS\nok  \texample.com/parser\t0.01s\n'
else
	printf 'FAIL\nFAIL\texample.com/parser\t0.01s\n'
	exit 1
fi
`

// writeParserProject puts the suite and the file it checks, with content,
// into the project.
func writeParserProject(t *testing.T, root, content string) {
	t.Helper()
	for name, data := range map[string]string{"parser_test.sh": parserSuite, "parser.txt": content} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoopEndsOnConvergence: a loop whose tests pass every iteration ends
// on convergence, although the model never says its completion promise:
// the first passing iteration is converged_success and the block says one
// more such iteration ends the loop (loop.converged_streak, 2 by default);
// the second one ends it, with the stop allowed.
func TestLoopEndsOnConvergence(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-tests.yaml"))
	writeParserProject(t, p.root, "parse unicode runes\n")
	sid := newSessionID(t)
	const prompt = "make the lexer handle unicode"
	res := p.claude("--session-id", sid, `/drover:loop "`+prompt+`" --max-iterations 5 --completion-promise "NEVER SAID"`)
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Ran the tests; ending this iteration." {
		t.Fatalf("exit %d, stdout %q; want 0 and the answer of the last iteration", res.ExitCode, res.Stdout)
	}

	// Two iterations, one block: the second stop was allowed and nothing
	// was asked of the model after it.
	reqs := p.model.Messages()
	if got, want := ruleNames(reqs), []string{"iteration", "look", "done", "iteration", "look", "done"}; !slices.Equal(got, want) {
		t.Fatalf("model requests answered by %q, want %q", got, want)
	}
	reasons := blockReasons(reqs, sid)
	if got, want := loopBlocks(reasons), []string{"2/5 developer converged_success"}; !slices.Equal(got, want) {
		t.Fatalf("block reasons %q, want %q", got, want)
	}
	const why = "test pass rate 1.00 (2 of 2) meets the success threshold 0.95 and the build passes"
	for _, w := range []string{
		why,
		"drover's metrics say the task may be done: if they still say so 1 iteration from now, drover ends the loop.",
		"<promise>NEVER SAID</promise>",
	} {
		if !strings.Contains(reasons[0], w) {
			t.Errorf("the block after the first passing iteration lacks %q:\n%s", w, reasons[0])
		}
	}

	st := p.loopStatus(sid)
	if st.Active || st.Iteration != 2 || st.Outcome != "converged" || st.Status != "converged_success" ||
		st.StatusReason != why || st.EndReason != "drover's metrics say it converged: "+why {
		t.Errorf("loop status %+v; want inactive at iteration 2, outcome converged, status converged_success because %s", st, why)
	}
	for _, w := range []string{
		"[drover] Ended the loop in session " + sid + " after 2 iteration(s)",
		"drover's metrics say it converged (" + why,
	} {
		if !strings.Contains(p.transcript(sid), w) {
			t.Errorf("the transcript lacks drover's message %q", w)
		}
	}
}

// TestLoopEndsWhenStuck: a loop whose tests fail the same way every
// iteration is thrashing after three, goes to the architect with a warning
// that drover ends the loop if it stays stuck, and ends (outcome stuck)
// when the next iteration is still stuck: loop.stuck_limit is 1 here.
func TestLoopEndsWhenStuck(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-tests.yaml"))
	p.env = append(p.env, "DROVER_LOOP_STUCK_LIMIT=1")
	writeParserProject(t, p.root, "parse ascii only\n")
	sid := newSessionID(t)
	const prompt = "make the lexer handle unicode"
	res := p.claude("--session-id", sid, fmt.Sprintf("/drover:loop %q --max-iterations 8", prompt))
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Ran the tests; ending this iteration." {
		t.Fatalf("exit %d, stdout %q; want 0 and the answer of the last iteration", res.ExitCode, res.Stdout)
	}
	// Four iterations and nothing after the fourth stop, which was allowed.
	reqs := p.model.Messages()
	if got, want := ruleNames(reqs), slices.Repeat([]string{"iteration", "look", "done"}, 4); !slices.Equal(got, want) {
		t.Fatalf("model requests answered by %q, want %q", got, want)
	}
	reasons := blockReasons(reqs, sid)
	if got, want := loopBlocks(reasons), []string{"2/8 debugger exploring", "3/8 debugger exploring", "4/8 architect thrashing"}; !slices.Equal(got, want) {
		t.Fatalf("block reasons (iteration/max role status):\n%q\nwant:\n%q", got, want)
	}
	const why = "ended each of the last 3 iterations and the test pass rate went from 0.50 to 0.50"
	for _, w := range []string{
		"You are the architect this iteration", "`drover:architect`", why,
		"The loop has been stuck for 1 iteration in a row: change your approach instead of repeating it. If it is still stuck when iteration 4 ends, drover ends the loop.",
	} {
		if !strings.Contains(reasons[2], w) {
			t.Errorf("the architect's block lacks %q:\n%s", w, reasons[2])
		}
	}
	for i, r := range reasons[:2] {
		if strings.Contains(r, "drover ends the loop") {
			t.Errorf("block %d, before the loop was stuck, warns that drover ends it:\n%s", i+1, r)
		}
	}

	st := p.loopStatus(sid)
	if st.Active || st.Iteration != 4 || st.Outcome != "stuck" || st.Status != "thrashing" || st.StuckIterations != 2 ||
		!strings.HasPrefix(st.EndReason, "it stayed stuck (thrashing) for 2 iterations in a row: ") || !strings.Contains(st.EndReason, why) {
		t.Errorf("loop status %+v; want inactive at iteration 4, outcome stuck, status thrashing for 2 iterations, and the end reason", st)
	}
	if w := "[drover] Ended the loop in session " + sid + " after 4 iteration(s): it stayed thrashing for 2 iterations in a row, more than loop.stuck_limit (1) after the change of strategy"; !strings.Contains(p.transcript(sid), w) {
		t.Errorf("the transcript lacks drover's message %q", w)
	}
}

// TestLoopDollarBudget: --max-usd ends a loop once the spend drover reads
// from the transcript's usage reaches it. Every answer of the scripted
// model reports 100,000 input tokens of Sonnet, $0.30: the first
// iteration stays under the $0.50 budget, the second spends it.
func TestLoopDollarBudget(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-usd.yaml"))
	sid := newSessionID(t)
	// The model is named so that drover's price for it is known: Sonnet's
	// $3 per million input tokens.
	res := p.claude("--session-id", sid, "--model", "claude-sonnet-4-5", `/drover:loop "tidy the changelog" --max-iterations 5 --max-usd 0.5`)
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Iteration 2 of 5: still working." {
		t.Fatalf("exit %d, stdout %q; want 0 and the answer to iteration 2", res.ExitCode, res.Stdout)
	}
	reqs := p.model.Messages()
	if got, want := ruleNames(reqs), []string{"iteration", "iteration"}; !slices.Equal(got, want) {
		t.Fatalf("model requests answered by %q, want %q (one per iteration)", got, want)
	}
	if w := "Budget: iteration 1 of 5; $0.00 of $0.50"; !strings.Contains(reqs[0].LastUserText, w) {
		t.Errorf("the first prompt lacks %q:\n%s", w, reqs[0].LastUserText)
	}
	reasons := blockReasons(reqs, sid)
	if got, want := loopBlocks(reasons), []string{"2/5 developer exploring"}; !slices.Equal(got, want) {
		t.Fatalf("block reasons %q, want %q", got, want)
	}
	if w := "Budget: iteration 2 of 5; $0.30 of $0.50"; !strings.Contains(reasons[0], w) {
		t.Errorf("the block lacks %q:\n%s", w, reasons[0])
	}
	st := p.loopStatus(sid)
	if st.Active || st.Iteration != 2 || st.Outcome != "max_usd" || st.EndReason != "its budget is spent (max_usd)" ||
		st.Status != "budget_exhausted" || st.StatusReason != "$0.60 spent reached the budget of $0.50" || fmt.Sprintf("%.2f", st.CostUSD) != "0.60" {
		t.Errorf("loop status %+v; want inactive at iteration 2, outcome max_usd, status budget_exhausted, $0.60 spent", st)
	}
	if w := "[drover] Stopped the loop in session " + sid + " after 2 iteration(s) without a completion signal: its budget is spent (max_usd: $0.60 of $0.50)"; !strings.Contains(p.transcript(sid), w) {
		t.Errorf("the transcript lacks drover's budget message %q", w)
	}
}

// TestLoopCancelCommand: a loop interrupted mid-iteration (an API error
// ends the CLI's run with the loop active) is ended with `/drover:cancel`
// in a resumed run: the loop turns inactive at once, keeping its
// iteration, and the stop that follows is allowed.
func TestLoopCancelCommand(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-cancel.yaml"))
	sid := newSessionID(t)
	const prompt = "migrate the settings table"
	res := p.claude("--session-id", sid, `/drover:loop "`+prompt+`" --max-iterations 10`)
	if res.ExitCode != 1 || !strings.Contains(res.Stdout, "API Error: 400") {
		t.Fatalf("run 1: exit %d, stdout %q; want 1 and the scripted API error", res.ExitCode, res.Stdout)
	}
	if got := loopBlocks(blockReasons(p.model.Messages(), sid)); !slices.Equal(got, []string{"2/10 developer exploring"}) {
		t.Fatalf("run 1 block reasons %q, want the one for iteration 2", got)
	}
	if st := p.loopStatus(sid); !st.Active || st.Iteration != 2 {
		t.Fatalf("after run 1: loop status %+v, want active at iteration 2", st)
	}

	before := len(p.model.Messages())
	res = p.claude("--resume", sid, "/drover:cancel")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "The loop is cancelled." {
		t.Fatalf("/drover:cancel: exit %d, stdout %q", res.ExitCode, res.Stdout)
	}
	reqs := since(p.model.Messages(), before)
	if len(reqs) != 1 {
		t.Fatalf("the /drover:cancel run sent %d model requests (%q), want 1 (its stop allowed at once)", len(reqs), ruleNames(reqs))
	}
	if got := blockReasons(reqs, sid); len(got) != 0 {
		t.Errorf("the stop after /drover:cancel was blocked: %q", loopBlocks(got))
	}
	if w := "[drover] Cancelled the loop of session " + sid + " at iteration 2. You may stop now."; !strings.Contains(reqs[0].LastUserText, w) {
		t.Errorf("the /drover:cancel prompt lacks %q:\n%s", w, reqs[0].LastUserText)
	}
	// The resumed session got the loop back in its context before the
	// command cancelled it (SessionStart, source resume).
	if ctx, ok := sessionStartContext(reqs[0]); !ok || !strings.Contains(ctx, "[drover] Active loop in session "+sid+": iteration 2 of 10") ||
		!strings.Contains(ctx, "## Task\n\n"+prompt) {
		t.Errorf("the resumed session's SessionStart context (found %t) lacks the loop:\n%s", ok, ctx)
	}
	st := p.loopStatus(sid)
	if st.Active || st.Iteration != 2 || st.Outcome != "cancelled" {
		t.Errorf("loop status %+v; want inactive at iteration 2, outcome cancelled", st)
	}
	tr, err := tracker.Read(st.Tracker)
	if err != nil {
		t.Fatalf("reading the tracker: %v", err)
	}
	if tr.Active {
		t.Errorf("the tracker still says active after the cancel")
	}
}

// TestTwoLoopsOneProject runs two CLI processes at the same time in one
// project, each with a loop on its own prompt. No supervisor runs when
// they start, so their first hooks race to start one. Each model only
// ever sees its own prompt and session, each loop ends on its own promise
// (the default, DONE) after two iterations, and each keeps its own
// tracker.
func TestTwoLoopsOneProject(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-two.yaml"))
	sids := []string{newSessionID(t), newSessionID(t)}
	fruits := []string{"apples", "pears"}
	prompt := func(i int) string { return fruits[i] + ": count them" }

	results := make([]claudecli.Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, sid := range sids {
		wg.Go(func() {
			results[i], errs[i] = p.runClaude(nil, "--session-id", sid, `/drover:loop "`+prompt(i)+`" --max-iterations 4`)
		})
	}
	wg.Wait()

	all := p.model.Messages()
	for i, sid := range sids {
		other := 1 - i
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i+1, errs[i])
		}
		if want := "All " + fruits[i] + " counted.\n<promise>DONE</promise>"; results[i].ExitCode != 0 || strings.TrimSpace(results[i].Stdout) != want {
			t.Errorf("session %d: exit %d, stdout %q; want 0 and %q", i+1, results[i].ExitCode, results[i].Stdout, want)
		}
		var mine []fakemodel.Request
		for _, r := range all {
			if r.SessionID == sid {
				mine = append(mine, r)
			}
		}
		if got, want := ruleNames(mine), []string{"iteration", "not-yet", "iteration", "finished"}; !slices.Equal(got, want) {
			t.Errorf("session %d requests answered by %q, want %q", i+1, got, want)
		}
		for _, r := range mine {
			for _, w := range []string{sids[other], prompt(other)} {
				if bytes.Contains(r.Body, []byte(w)) {
					t.Errorf("session %d: request #%d mentions the other loop's %q", i+1, r.Seq, w)
				}
			}
		}
		if len(mine) == 0 || !strings.Contains(mine[0].LastUserText, "## Task\n\n"+prompt(i)) {
			t.Errorf("session %d did not start on its own prompt", i+1)
		}
		trackerPath := tracker.Path(p.sessionDir(sid))
		reasons := blockReasons(all, sid)
		if got, want := loopBlocks(reasons), []string{"2/4 developer exploring"}; !slices.Equal(got, want) {
			t.Errorf("session %d block reasons %q, want %q", i+1, got, want)
		}
		for _, r := range reasons {
			if !strings.Contains(r, "## Task\n\n"+prompt(i)) || !strings.Contains(r, trackerPath) {
				t.Errorf("session %d: a block does not name its own prompt and tracker %s:\n%s", i+1, trackerPath, r)
			}
		}
		st := p.loopStatus(sid)
		if st.Active || st.Iteration != 2 || st.Outcome != "done" || st.Prompt != prompt(i) || st.Tracker != trackerPath {
			t.Errorf("session %d loop status %+v; want done at iteration 2 on %q", i+1, st, prompt(i))
		}
		tr, err := tracker.Read(trackerPath)
		if err != nil {
			t.Fatalf("session %d: reading the tracker: %v", i+1, err)
		}
		if tr.Prompt != prompt(i) || tr.Active || tr.Iteration != 2 {
			t.Errorf("session %d tracker: prompt %q, active %t, iteration %d", i+1, tr.Prompt, tr.Active, tr.Iteration)
		}
		if got, want := readFile(t, filepath.Join(p.root, fruits[i]+".log")), "iteration 1\niteration 2\n"; got != want {
			t.Errorf("%s.log = %q, want %q", fruits[i], got, want)
		}
	}
	st := p.status()
	if len(st.Sessions) != 2 {
		t.Fatalf("status lists %d sessions, want 2: %+v", len(st.Sessions), st.Sessions)
	}
	for _, s := range st.Sessions {
		if !slices.Contains(sids, s.ID) || s.Workflow != "loop" || s.State != "off" || s.Iteration != 2 || s.Pending != 0 {
			t.Errorf("status of %s: %+v; want an ended loop at iteration 2 without tasks", s.ID, s)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(p.run, "drover", "*.sock")); len(m) != 1 {
		t.Errorf("sockets %q, want one supervisor's", m)
	}
}

// TestCompactionRestoresLoopContext: after `/compact` the model's context
// is a summary that knows nothing of the loop; drover's SessionStart hook
// (source "compact") puts the loop's prompt and iteration back, and the
// loop goes on from there. PreCompact's output reaches the summary request
// as extra instructions. As in TestCompactionRestoresQueueContext, the CLI
// takes its prompts one at a time (stream-json input).
func TestCompactionRestoresLoopContext(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "loop-compact.yaml"))
	sid := newSessionID(t)
	cli := p.startStream("--session-id", sid)

	cli.send("hello there")
	cli.send("and again")
	// The loop starts between two turns, from another terminal: no Stop
	// before the compaction.
	const prompt = "warm the cache on start"
	p.drover("loop", "start", "--session", sid, "--max-iterations", "5", prompt)
	trackerPath := tracker.Path(p.sessionDir(sid))

	before := len(p.model.Messages())
	cli.send("/compact")
	compactReqs := since(p.model.Messages(), before)
	if len(compactReqs) != 1 || compactReqs[0].RuleName != "summary" {
		t.Fatalf("/compact sent %d model requests (%v), want one summary request", len(compactReqs), ruleNames(compactReqs))
	}
	for _, w := range []string{"[drover] Active loop in session " + sid + ": iteration 1 of 5", "## Task\n\n" + prompt} {
		if !strings.Contains(compactReqs[0].LastUserText, w) {
			t.Errorf("the summary request lacks PreCompact's %q:\n%s", w, compactReqs[0].LastUserText)
		}
	}

	before = len(p.model.Messages())
	final := cli.send("go on")
	if code := cli.close(); code != 0 {
		t.Errorf("the CLI exited %d, want 0", code)
	}
	var result struct {
		Result string `json:"result"`
	}
	if err := json.Unmarshal([]byte(final), &result); err != nil || result.Result != "The cache is warmed on start.\n<promise>DONE</promise>" {
		t.Errorf("the last result is not the promise (%v): %s", err, final)
	}
	reqs := since(p.model.Messages(), before)
	if got, want := ruleNames(reqs), []string{"go-on", "iteration-2"}; !slices.Equal(got, want) {
		t.Fatalf("requests after the compaction answered by %q, want %q", got, want)
	}
	after := reqs[0]
	all := allText(after)
	if !strings.Contains(all, "SUMMARY: the user greeted twice") {
		t.Fatalf("the first request after /compact does not carry the summary:\n%s", all)
	}
	if strings.Contains(all, "hello-tool-ran") {
		t.Errorf("the first request after /compact still holds the compacted turns:\n%s", all)
	}
	ctx, ok := sessionStartContext(after)
	if !ok {
		t.Fatalf("the first request after /compact has no SessionStart context; its messages:\n%s", describe(after))
	}
	for _, w := range []string{
		"[drover] Active loop in session " + sid + ": iteration 1 of 5",
		"Your context was compacted",
		trackerPath,
		"# drover loop: iteration 1 of 5",
		"## Task\n\n" + prompt,
		"<promise>DONE</promise>",
	} {
		if !strings.Contains(ctx, w) {
			t.Errorf("the SessionStart(compact) context lacks %q:\n%s", w, ctx)
		}
	}
	if got, want := loopBlocks(blockReasons(reqs, sid)), []string{"2/5 developer exploring"}; !slices.Equal(got, want) {
		t.Errorf("block reasons after the compaction %q, want %q", got, want)
	}
	if st := p.loopStatus(sid); st.Active || st.Iteration != 2 || st.Outcome != "done" {
		t.Errorf("loop status %+v; want done at iteration 2", st)
	}
}

// loopStatusJSON is `drover loop status --json`; the field names are part
// of what the tests check.
type loopStatusJSON struct {
	SessionID         string  `json:"session_id"`
	Active            bool    `json:"active"`
	Iteration         int     `json:"iteration"`
	MaxIterations     int     `json:"max_iterations"`
	CompletionPromise string  `json:"completion_promise"`
	Prompt            string  `json:"prompt"`
	Status            string  `json:"status"`
	StatusReason      string  `json:"status_reason"`
	Role              string  `json:"role"`
	Outcome           string  `json:"outcome"`
	EndReason         string  `json:"end_reason"`
	StuckIterations   int     `json:"stuck_iterations"`
	CostUSD           float64 `json:"cost_usd"`
	Tracker           string  `json:"tracker"`
	Reflections       int     `json:"reflections"`
}

func (p *queueProject) loopStatus(sid string) loopStatusJSON {
	p.t.Helper()
	out := p.drover("loop", "status", "--session", sid, "--json")
	var st loopStatusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		p.t.Fatalf("drover loop status --json: %v\n%s", err, out)
	}
	if st.SessionID != sid {
		p.t.Fatalf("drover loop status --session %s answered for session %q", sid, st.SessionID)
	}
	return st
}

// reflectionJSON is the part of reflections/iteration-N.json the tests
// check.
type reflectionJSON struct {
	Iteration int      `json:"iteration"`
	Failures  []string `json:"failures"`
	ErrorHash string   `json:"error_hash"`
	Thrashing bool     `json:"thrashing"`
	ToolCalls int      `json:"tool_calls"`
}

// sessionDir is the folder drover keeps session sid's files in.
func (p *queueProject) sessionDir(sid string) string {
	return filepath.Join(p.root, ".drover", "sessions", sid)
}

var (
	loopHeadRE   = regexp.MustCompile(`^# drover loop: iteration (\d+) of (\d+)\n`)
	loopRoleRE   = regexp.MustCompile(`\n## Role: (\S+)\n`)
	loopStatusRE = regexp.MustCompile(`\n## Convergence: (\S+)\n`)
)

// loopBlock sums up a loop's block reason for compact assertions on the
// sequence of decisions a model received: "ITERATION/MAX ROLE STATUS", or
// "other: FIRST LINE" for a reason that is not a continuation prompt.
func loopBlock(reason string) string {
	head := loopHeadRE.FindStringSubmatch(reason)
	if head == nil {
		return "other: " + firstLine(reason)
	}
	s := head[1] + "/" + head[2]
	for _, re := range []*regexp.Regexp{loopRoleRE, loopStatusRE} {
		if m := re.FindStringSubmatch(reason); m != nil {
			s += " " + m[1]
		} else {
			s += " -"
		}
	}
	return s
}

func loopBlocks(reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = loopBlock(r)
	}
	return out
}

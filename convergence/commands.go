package convergence

// CommandResult is one run of a project's metric command.
type CommandResult struct {
	Command string
	// Output is the command's combined output (possibly clipped).
	Output string
	// Failed is true when the command exited non-zero, could not start, or
	// was killed past its timeout.
	Failed bool
}

// MergeCommands folds the results of the project's metric commands, run
// after an iteration, into that iteration's metrics m. The commands
// describe the code as the iteration left it, so what they measure
// replaces what the transcript said: test counts are summed over the
// commands that printed a test summary, lint issues over those that
// printed lint output. A command's exit status counts when its output has
// no summary: a failing test command is failed tests, a failing build
// command a failed build. The outcome of the commands (build_failed over
// tests_failed over ok) becomes m.CommandOutcome and, when it says
// anything, m.LastOutcome.
func MergeCommands(m Metrics, results []CommandResult) Metrics {
	if len(results) == 0 {
		return m
	}
	var (
		passed, failed, lint int
		haveTests, haveLint  bool
		testsFailed          bool
		buildFailed          bool
		buildSeen            bool
		framework, firstFail string
	)
	for _, r := range results {
		kind := ClassifyCommand(r.Command)
		parsed := false
		if tr, ok := ParseTestSummary(r.Output); ok {
			parsed, haveTests = true, true
			passed += tr.Passed
			failed += tr.Failed
			if framework == "" {
				framework = tr.Framework
			}
			if tr.Failed > 0 {
				testsFailed = true
			}
		}
		if br, ok := ParseBuild(r.Output); ok {
			parsed, buildSeen = true, true
			if br.Failed || (br.Errors > 0 && r.Failed) {
				buildFailed = true
			}
		}
		if lr, ok := ParseLint(r.Output); ok {
			parsed, haveLint = true, true
			lint += lr.Issues
		}
		switch {
		case kind == CommandTest && r.Failed && !parsed:
			testsFailed, haveTests = true, true
		case kind == CommandBuild:
			buildSeen = true
			if r.Failed && !parsed {
				buildFailed = true
			}
		}
		if (r.Failed || testsFailed || buildFailed) && firstFail == "" {
			firstFail = FirstFailure(r.Output)
		}
	}
	if haveTests {
		m.TestsPassed, m.TestsFailed, m.TestFramework = passed, failed, framework
		m.TestPassRate = -1
		if passed+failed > 0 {
			m.TestPassRate = float64(passed) / float64(passed+failed)
		} else if testsFailed {
			m.TestPassRate = 0
		}
	}
	if buildSeen {
		m.BuildOK = ptr(!buildFailed)
	}
	if haveLint {
		m.LintIssues = lint
	}
	outcome := OutcomeNone
	switch {
	case buildFailed:
		outcome = OutcomeBuildFailed
	case testsFailed:
		outcome = OutcomeTestsFailed
	case haveTests || buildSeen:
		outcome = OutcomeOK
	}
	m.CommandOutcome = outcome
	if outcome != OutcomeNone {
		m.LastOutcome = outcome
		if outcome == OutcomeOK {
			m.FirstFailure, m.ErrorHash = "", ""
		} else if firstFail != "" {
			m.FirstFailure, m.ErrorHash = firstFail, ErrorHash(firstFail)
		}
	}
	return m
}

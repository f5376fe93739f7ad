package convergence

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// TestResult is what a test runner's summary says. Counts are summed when
// one output holds several runs (go packages, cargo test binaries, a make
// target running two suites).
type TestResult struct {
	Passed  int
	Failed  int // failures and errors
	Skipped int
	// Total is the runner's own total when it prints one (jest, vitest),
	// else Passed+Failed+Skipped.
	Total int
	// Framework names the runner: go (go test -v: counts are top-level
	// tests), go-packages (go test without -v prints only failing tests,
	// so counts are packages), pytest, jest, vitest, bun, cargo, mocha or
	// generic; several are joined with "+".
	Framework string
}

// PassRate is Passed/(Passed+Failed), or -1 when no test passed or failed.
func (r TestResult) PassRate() float64 {
	if r.Passed+r.Failed == 0 {
		return -1
	}
	return float64(r.Passed) / float64(r.Passed+r.Failed)
}

// testPatterns are compiled on first use, not at package init: the drover
// binary is also the hook client, and every hook process would pay for them.
type testPatterns struct {
	ansi                                *regexp.Regexp
	goOK, goFailPkg, goTest, goRun      *regexp.Regexp
	pytest, pytestCount                 *regexp.Regexp
	jest, vitest, count                 *regexp.Regexp
	bunPass, bunFail, bunSkip           *regexp.Regexp
	cargo                               *regexp.Regexp
	mochaPass, mochaFail, mochaPending  *regexp.Regexp
	genericPassed, genericFailed        *regexp.Regexp
	compileErr, rustErr, tsc            *regexp.Regexp
	eslint, golangci, ruff, pathLineCol *regexp.Regexp
}

var patterns = sync.OnceValue(func() *testPatterns {
	return &testPatterns{
		ansi:      regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)`),
		goOK:      regexp.MustCompile(`^ok\s+\S+\s+(?:\(cached\)|\d+(?:\.\d+)?s)`),
		goFailPkg: regexp.MustCompile(`^FAIL\s+\S+\s+(?:\d+(?:\.\d+)?s|\[(?:build|setup) failed\])`),
		goTest:    regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): \S+`),
		goRun:     regexp.MustCompile(`^=== RUN\s`),
		// "=== 3 passed, 1 failed in 0.12s ===", "1 failed in 2.01s (0:00:02)", "no tests ran in 0.01s".
		pytest:        regexp.MustCompile(`^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)(?:, )?)+|no tests ran)\s+in\s+\d+(?:\.\d+)?s\b`),
		pytestCount:   regexp.MustCompile(`(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b`),
		jest:          regexp.MustCompile(`^\s*Tests:\s+(.*\d+ total)`),
		vitest:        regexp.MustCompile(`^\s*Tests\s+(\d+ (?:failed|passed|skipped|todo).*)\((\d+)\)\s*$`),
		count:         regexp.MustCompile(`(\d+) (failed|passed|skipped|todo|pending|total)\b`),
		bunPass:       regexp.MustCompile(`^\s*(\d+) pass\s*$`),
		bunFail:       regexp.MustCompile(`^\s*(\d+) fail\s*$`),
		bunSkip:       regexp.MustCompile(`^\s*(\d+) skip\s*$`),
		cargo:         regexp.MustCompile(`^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored`),
		mochaPass:     regexp.MustCompile(`^\s*(\d+) passing\b`),
		mochaFail:     regexp.MustCompile(`^\s*(\d+) failing\s*$`),
		mochaPending:  regexp.MustCompile(`^\s*(\d+) pending\s*$`),
		genericPassed: regexp.MustCompile(`\b(\d+) (?:tests? )?passed\b`),
		genericFailed: regexp.MustCompile(`\b(\d+) (?:tests? )?failed\b`),

		compileErr:  regexp.MustCompile(`^\S+\.(?:go|c|cc|cpp|cxx|h|hpp|rs|java|kt|swift|m|cs):\d+(?::\d+)?: (?:(?:fatal )?error:? )?\S`),
		rustErr:     regexp.MustCompile(`^error\[E\d+\]: `),
		tsc:         regexp.MustCompile(`\berror TS\d+:`),
		eslint:      regexp.MustCompile(`✖ (\d+) problems? \(`),
		golangci:    regexp.MustCompile(`^(\d+) issues?[.:]?\s*$`),
		ruff:        regexp.MustCompile(`^Found (\d+) errors?\b`),
		pathLineCol: regexp.MustCompile(`^\S+:\d+:\d+: \S`),
	}
})

// lines strips terminal escapes and splits output into lines. A line
// rewritten with carriage returns (a progress bar) keeps only its last
// state.
func lines(output string) []string {
	p := patterns()
	if strings.IndexByte(output, 0x1b) >= 0 {
		output = p.ansi.ReplaceAllString(output, "")
	}
	ls := strings.Split(output, "\n")
	for i, l := range ls {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		ls[i] = l
	}
	return ls
}

// maxCount bounds one parsed count, so that sums over a long output cannot
// overflow; no real suite has a billion tests.
const maxCount = 1 << 30

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxCount {
		return 0
	}
	return n
}

// ParseTestSummary finds the summary lines of the test runners it knows in
// a command's output: go test (package ok/FAIL lines, or with -v the
// top-level --- PASS/FAIL lines), pytest, jest, vitest, bun test, cargo
// test, mocha, and as a last resort any line with both "N passed" and
// "N failed". The bool is false when no summary was found.
func ParseTestSummary(output string) (TestResult, bool) {
	p := patterns()
	var (
		res        TestResult
		frameworks []string
		goPkgOK    int
		goPkgFail  int
		goBuild    int
		goPass     int
		goFail     int
		goSkip     int
		goVerbose  bool
		bun        [3]int
		bunSeen    bool
		mocha      [3]int
		mochaSeen  bool
		generic    *TestResult
	)
	add := func(fw string, passed, failed, skipped, total int) {
		res.Passed += passed
		res.Failed += failed
		res.Skipped += skipped
		if total <= 0 {
			total = passed + failed + skipped
		}
		res.Total += total
		for _, f := range frameworks {
			if f == fw {
				return
			}
		}
		frameworks = append(frameworks, fw)
	}
	for _, l := range lines(output) {
		switch {
		case p.goOK.MatchString(l):
			goPkgOK++
		case p.goFailPkg.MatchString(l):
			goPkgFail++
			if strings.Contains(l, " failed]") {
				goBuild++
			}
		case p.goRun.MatchString(l):
			goVerbose = true
		case p.goTest.MatchString(l):
			m := p.goTest.FindStringSubmatch(l)
			if m[2] == "PASS" {
				goVerbose = true
			}
			if m[1] != "" { // subtest: its parent carries the result
				continue
			}
			switch m[2] {
			case "PASS":
				goPass++
			case "FAIL":
				goFail++
			case "SKIP":
				goSkip++
			}
		case p.pytest.MatchString(l):
			var c [3]int
			for _, m := range p.pytestCount.FindAllStringSubmatch(l, -1) {
				n := atoi(m[1])
				switch m[2] {
				case "passed", "xpassed":
					c[0] += n
				case "failed", "error", "errors":
					c[1] += n
				case "skipped", "xfailed":
					c[2] += n
				}
			}
			add("pytest", c[0], c[1], c[2], 0)
		case p.jest.MatchString(l):
			c, total := countWords(p, p.jest.FindStringSubmatch(l)[1])
			add("jest", c[0], c[1], c[2], total)
		case p.vitest.MatchString(l):
			m := p.vitest.FindStringSubmatch(l)
			c, _ := countWords(p, m[1])
			add("vitest", c[0], c[1], c[2], atoi(m[2]))
		case p.cargo.MatchString(l):
			m := p.cargo.FindStringSubmatch(l)
			add("cargo", atoi(m[1]), atoi(m[2]), atoi(m[3]), 0)
		case p.bunPass.MatchString(l):
			bun[0] += atoi(p.bunPass.FindStringSubmatch(l)[1])
			bunSeen = true
		case p.bunFail.MatchString(l):
			bun[1] += atoi(p.bunFail.FindStringSubmatch(l)[1])
			bunSeen = true
		case p.bunSkip.MatchString(l):
			bun[2] += atoi(p.bunSkip.FindStringSubmatch(l)[1])
		case p.mochaPass.MatchString(l):
			mocha[0] += atoi(p.mochaPass.FindStringSubmatch(l)[1])
			mochaSeen = true
		case p.mochaFail.MatchString(l):
			mocha[1] += atoi(p.mochaFail.FindStringSubmatch(l)[1])
			mochaSeen = true
		case p.mochaPending.MatchString(l):
			mocha[2] += atoi(p.mochaPending.FindStringSubmatch(l)[1])
		default:
			mp, mf := p.genericPassed.FindStringSubmatch(l), p.genericFailed.FindStringSubmatch(l)
			if mp != nil && mf != nil {
				// The last such line: runners print per-file lines before
				// the total.
				generic = &TestResult{Passed: atoi(mp[1]), Failed: atoi(mf[1])}
			}
		}
	}
	switch {
	case goVerbose:
		add("go", goPass, goFail+goBuild, goSkip, 0)
	case goPkgOK+goPkgFail > 0:
		add("go-packages", goPkgOK, goPkgFail, 0, 0)
	}
	if bunSeen {
		add("bun", bun[0], bun[1], bun[2], 0)
	}
	if mochaSeen {
		add("mocha", mocha[0], mocha[1], mocha[2], 0)
	}
	if len(frameworks) == 0 {
		if generic == nil {
			return TestResult{}, false
		}
		add("generic", generic.Passed, generic.Failed, 0, 0)
	}
	res.Framework = strings.Join(frameworks, "+")
	return res, true
}

// countWords reads "1 failed, 3 passed, 4 total" or "1 failed | 3 passed":
// passed, failed, skipped (skipped, todo, pending), and the total if given.
func countWords(p *testPatterns, s string) (c [3]int, total int) {
	for _, m := range p.count.FindAllStringSubmatch(s, -1) {
		n := atoi(m[1])
		switch m[2] {
		case "passed":
			c[0] += n
		case "failed":
			c[1] += n
		case "skipped", "todo", "pending":
			c[2] += n
		case "total":
			total = n
		}
	}
	return c, total
}

// BuildResult is what a compiler's output says.
type BuildResult struct {
	// Errors counts error lines: file:line:col diagnostics (go, gcc,
	// clang), rustc "error[E...]:" lines, tsc "error TS...:" lines.
	Errors int
	// Failed is true when the output says in so many words that the build
	// failed: go test's "[build failed]" or "[setup failed]", cargo's
	// "could not compile".
	Failed bool
}

// ParseBuild reads compiler errors from output. The bool is false when
// nothing in it looks like a compiler error; a silent successful build is
// the caller's to judge from the exit status.
func ParseBuild(output string) (BuildResult, bool) {
	p := patterns()
	var r BuildResult
	for _, l := range lines(output) {
		switch {
		case p.tsc.MatchString(l):
			r.Errors++
		case strings.HasPrefix(l, "error: could not compile"), strings.HasPrefix(l, "error: aborting"):
			r.Failed = true
		case p.rustErr.MatchString(l), p.compileErr.MatchString(l):
			r.Errors++
		}
		if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
			r.Failed = true
		}
	}
	return r, r.Failed || r.Errors > 0
}

// LintResult is what a linter's output says.
type LintResult struct {
	Issues int
	// Tool is eslint, golangci-lint, ruff, or diagnostics (counted
	// file:line:col lines: go vet, staticcheck, flake8, older
	// golangci-lint).
	Tool string
}

// ParseLint reads the issue count from a linter's output. The bool is false
// when no count could be read.
func ParseLint(output string) (LintResult, bool) {
	p := patterns()
	diags := 0
	for _, l := range lines(output) {
		if m := p.eslint.FindStringSubmatch(l); m != nil {
			return LintResult{Issues: atoi(m[1]), Tool: "eslint"}, true
		}
		if m := p.golangci.FindStringSubmatch(l); m != nil {
			return LintResult{Issues: atoi(m[1]), Tool: "golangci-lint"}, true
		}
		if m := p.ruff.FindStringSubmatch(l); m != nil {
			return LintResult{Issues: atoi(m[1]), Tool: "ruff"}, true
		}
		if strings.TrimSpace(l) == "All checks passed!" {
			return LintResult{Issues: 0, Tool: "ruff"}, true
		}
		if p.pathLineCol.MatchString(l) {
			diags++
		}
	}
	if diags > 0 {
		return LintResult{Issues: diags, Tool: "diagnostics"}, true
	}
	return LintResult{}, false
}

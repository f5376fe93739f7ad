package convergence

import (
	"testing"
)

func TestParseTestSummary(t *testing.T) {
	cases := []struct {
		name   string
		output string
		want   TestResult
		ok     bool
	}{
		{
			name: "go test, packages, one failing",
			output: `--- FAIL: TestAdd (0.00s)
    calc_test.go:12: Add(2, 2) = 5, want 4
FAIL
FAIL	example.com/calc	0.003s
ok  	example.com/calc/parse	0.012s
ok  	example.com/calc/format	(cached)
?   	example.com/calc/cmd	[no test files]
FAIL`,
			want: TestResult{Passed: 2, Failed: 1, Total: 3, Framework: "go-packages"}, ok: true,
		},
		{
			name: "go test -v, subtests counted through their parent",
			output: `=== RUN   TestAdd
=== RUN   TestAdd/positive
=== RUN   TestAdd/negative
    calc_test.go:20: Add(-1, -1) = -1, want -2
--- FAIL: TestAdd (0.00s)
    --- PASS: TestAdd/positive (0.00s)
    --- FAIL: TestAdd/negative (0.00s)
=== RUN   TestSub
--- PASS: TestSub (0.00s)
=== RUN   TestMul
    calc_test.go:40: not yet
--- SKIP: TestMul (0.00s)
=== RUN   TestDiv
--- PASS: TestDiv (0.00s)
FAIL
exit status 1
FAIL	example.com/calc	0.004s`,
			want: TestResult{Passed: 2, Failed: 1, Skipped: 1, Total: 4, Framework: "go"}, ok: true,
		},
		{
			name: "go test, build failed",
			output: `# example.com/calc [example.com/calc.test]
./calc.go:7:9: undefined: sum
FAIL	example.com/calc [build failed]
ok  	example.com/calc/parse	0.010s
FAIL`,
			want: TestResult{Passed: 1, Failed: 1, Total: 2, Framework: "go-packages"}, ok: true,
		},
		{
			name:   "go test, all passing",
			output: "ok  \texample.com/calc\t0.002s\nok  \texample.com/calc/parse\t0.004s\n",
			want:   TestResult{Passed: 2, Total: 2, Framework: "go-packages"}, ok: true,
		},
		{
			name: "pytest, mixed",
			output: `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
rootdir: /project
collected 4 items

tests/test_calc.py ..F.                                                  [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 2) == 4
E       assert 5 == 4
E        +  where 5 = add(2, 2)

tests/test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert 5 == 4
========================= 1 failed, 3 passed in 0.12s ==========================`,
			want: TestResult{Passed: 3, Failed: 1, Total: 4, Framework: "pytest"}, ok: true,
		},
		{
			name:   "pytest -q with errors, skips and warnings",
			output: "..sE.F\n2 failed, 3 passed, 1 skipped, 2 warnings, 1 error in 1.52s (0:00:01)",
			want:   TestResult{Passed: 3, Failed: 3, Skipped: 1, Total: 7, Framework: "pytest"}, ok: true,
		},
		{
			name:   "pytest, colored",
			output: "\x1b[32m\x1b[1m5 passed\x1b[0m\x1b[32m in 0.05s\x1b[0m\x1b[32m ===\x1b[0m",
			want:   TestResult{Passed: 5, Total: 5, Framework: "pytest"}, ok: true,
		},
		{
			name:   "pytest, nothing collected",
			output: "collected 0 items\n\n============================ no tests ran in 0.01s =============================",
			want:   TestResult{Framework: "pytest"}, ok: true,
		},
		{
			name: "jest",
			output: ` FAIL  src/auth.test.ts
  ● login › should validate email

    expect(received).toBe(expected) // Object.is equality

    Expected: true
    Received: false

      10 |   it('should validate email', () => {
    > 11 |     expect(login('bad')).toBe(true);
         |                          ^

      at Object.<anonymous> (src/auth.test.ts:11:26)

 PASS  src/util.test.ts

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 1 skipped, 3 passed, 5 total
Snapshots:   0 total
Time:        1.234 s
Ran all test suites.`,
			want: TestResult{Passed: 3, Failed: 1, Skipped: 1, Total: 5, Framework: "jest"}, ok: true,
		},
		{
			name: "vitest, passing",
			output: ` ✓ src/auth.test.ts (3 tests) 4ms
 ✓ src/util.test.ts (1 test) 1ms

 Test Files  2 passed (2)
      Tests  4 passed (4)
   Start at  12:00:00
   Duration  312ms (transform 40ms, setup 0ms, collect 50ms, tests 5ms)`,
			want: TestResult{Passed: 4, Total: 4, Framework: "vitest"}, ok: true,
		},
		{
			name: "vitest, failing",
			output: ` FAIL  src/auth.test.ts > login > should validate email
AssertionError: expected false to be true

 Test Files  1 failed | 1 passed (2)
      Tests  1 failed | 3 passed | 1 skipped (5)`,
			want: TestResult{Passed: 3, Failed: 1, Skipped: 1, Total: 5, Framework: "vitest"}, ok: true,
		},
		{
			name: "bun test",
			output: `src/auth.test.ts:
✓ login > accepts a valid email [0.12ms]
✗ login > should validate email [0.30ms]
(fail) login > should validate email [0.30ms]

 3 pass
 1 fail
 1 skip
 7 expect() calls
Ran 5 tests across 1 files. [12.00ms]`,
			want: TestResult{Passed: 3, Failed: 1, Skipped: 1, Total: 5, Framework: "bun"}, ok: true,
		},
		{
			name: "cargo test, several binaries",
			output: `running 4 tests
test tests::add ... FAILED
test tests::sub ... ok
test tests::mul ... ok
test tests::div ... ignored

failures:

---- tests::add stdout ----
thread 'tests::add' panicked at src/lib.rs:10:5:
assertion ` + "`left == right`" + ` failed
  left: 5
 right: 4

failures:
    tests::add

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

running 2 tests
test it_works ... ok
test it_parses ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass ` + "`--lib`",
			want: TestResult{Passed: 4, Failed: 1, Skipped: 1, Total: 6, Framework: "cargo"}, ok: true,
		},
		{
			name: "mocha",
			output: `  Calculator
    ✔ adds
    1) subtracts

  1 passing (12ms)
  1 failing
  2 pending

  1) Calculator
       subtracts:
     AssertionError [ERR_ASSERTION]: 1 == 2`,
			want: TestResult{Passed: 1, Failed: 1, Skipped: 2, Total: 4, Framework: "mocha"}, ok: true,
		},
		{
			name:   "generic, last line wins",
			output: "suite a: 3 passed, 0 failed\nsuite b: 1 passed, 2 failed\nTOTAL: 4 passed, 2 failed",
			want:   TestResult{Passed: 4, Failed: 2, Total: 6, Framework: "generic"}, ok: true,
		},
		{
			name:   "nextest summary reads as generic",
			output: "     Summary [   0.010s] 4 tests run: 3 passed, 1 failed, 0 skipped",
			want:   TestResult{Passed: 3, Failed: 1, Total: 4, Framework: "generic"}, ok: true,
		},
		{
			name:   "two runners in one make target",
			output: "ok  \texample.com/api\t0.1s\nTests:       2 passed, 2 total\n",
			want:   TestResult{Passed: 3, Total: 3, Framework: "jest+go-packages"}, ok: true,
		},
		{name: "prose is not a summary", output: "All 3 candidates passed the review.\nThe build failed once."},
		{name: "go build output is not a test summary", output: "./calc.go:7:9: undefined: sum"},
		{name: "empty", output: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseTestSummary(c.output)
			if ok != c.ok || got != c.want {
				t.Errorf("ParseTestSummary = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestPassRate(t *testing.T) {
	cases := []struct {
		r    TestResult
		want float64
	}{
		{TestResult{Passed: 3, Failed: 1}, 0.75},
		{TestResult{Passed: 0, Failed: 2}, 0},
		{TestResult{Skipped: 4}, -1},
		{TestResult{}, -1},
	}
	for _, c := range cases {
		if got := c.r.PassRate(); got != c.want {
			t.Errorf("%+v.PassRate() = %v, want %v", c.r, got, c.want)
		}
	}
}

func TestParseBuild(t *testing.T) {
	cases := []struct {
		name   string
		output string
		want   BuildResult
		ok     bool
	}{
		{"go build", "# example.com/calc\n./calc.go:7:9: undefined: sum\n./calc.go:12:2: declared and not used: x\n", BuildResult{Errors: 2}, true},
		{"go vet", "# example.com/calc\n# [example.com/calc]\n./calc.go:20:2: fmt.Printf format %d has arg s of wrong type string\n", BuildResult{Errors: 1}, true},
		{"go test build failure", "# example.com/calc [example.com/calc.test]\n./calc_test.go:5:2: undefined: Sum\nFAIL\texample.com/calc [build failed]\n", BuildResult{Errors: 1, Failed: true}, true},
		{"tsc", "src/auth.ts(3,5): error TS2304: Cannot find name 'foo'.\nsrc/auth.ts:9:1 - error TS1005: ';' expected.\n\nFound 2 errors in the same file, starting at: src/auth.ts:3\n", BuildResult{Errors: 2}, true},
		{"cargo build", "   Compiling calc v0.1.0 (/project)\nerror[E0425]: cannot find value `y` in this scope\n --> src/lib.rs:2:5\n  |\n2 |     y\n  |     ^ not found in this scope\n\nerror: could not compile `calc` (lib) due to 1 previous error\n", BuildResult{Errors: 1, Failed: true}, true},
		{"gcc", "main.c: In function 'main':\nmain.c:4:5: error: 'x' undeclared (first use in this function)\n", BuildResult{Errors: 1}, true},
		{"clean cargo build", "   Compiling calc v0.1.0 (/project)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.52s\n", BuildResult{}, false},
		{"go test failure is not a build error", "--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: Add(2, 2) = 5, want 4\nFAIL\nFAIL\texample.com/calc\t0.003s\n", BuildResult{}, false},
		{"silent success", "", BuildResult{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseBuild(c.output)
			if ok != c.ok || got != c.want {
				t.Errorf("ParseBuild = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestParseLint(t *testing.T) {
	cases := []struct {
		name   string
		output string
		want   LintResult
		ok     bool
	}{
		{"eslint", "/project/src/auth.ts\n  3:10  error    'x' is defined but never used  @typescript-eslint/no-unused-vars\n  9:1   warning  Unexpected console statement   no-console\n\n✖ 2 problems (1 error, 1 warning)\n  0 errors and 1 warning potentially fixable with the `--fix` option.\n", LintResult{Issues: 2, Tool: "eslint"}, true},
		{"golangci-lint v2", "calc.go:7:2: Error return value of `f.Close` is not checked (errcheck)\n\tf.Close()\n\t^\ncalc.go:9:6: func `unused` is unused (unused)\n2 issues:\n* errcheck: 1\n* unused: 1\n", LintResult{Issues: 2, Tool: "golangci-lint"}, true},
		{"golangci-lint clean", "0 issues.\n", LintResult{Issues: 0, Tool: "golangci-lint"}, true},
		{"golangci-lint v1, no summary", "calc.go:7:2: Error return value of `f.Close` is not checked (errcheck)\ncalc.go:9:6: func `unused` is unused (unused)\ncalc.go:11:1: exported function Add should have comment (revive)\n", LintResult{Issues: 3, Tool: "diagnostics"}, true},
		{"ruff", "src/calc.py:1:8: F401 [*] `os` imported but unused\nsrc/calc.py:5:1: E302 Expected 2 blank lines, found 1\nFound 2 errors.\n[*] 1 fixable with the `--fix` option.\n", LintResult{Issues: 2, Tool: "ruff"}, true},
		{"ruff clean", "All checks passed!\n", LintResult{Issues: 0, Tool: "ruff"}, true},
		{"flake8", "src/calc.py:1:1: F401 'os' imported but unused\n", LintResult{Issues: 1, Tool: "diagnostics"}, true},
		{"staticcheck", "calc.go:12:2: this value of err is never used (SA4006)\n", LintResult{Issues: 1, Tool: "diagnostics"}, true},
		{"silent", "", LintResult{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseLint(c.output)
			if ok != c.ok || got != c.want {
				t.Errorf("ParseLint = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestClassifyCommand(t *testing.T) {
	cases := []struct {
		cmd  string
		want CommandKind
	}{
		{"go test ./...", CommandTest},
		{"go test -run TestAdd -v ./calc", CommandTest},
		{"cd /project && go test ./... 2>&1 | tail -20", CommandTest},
		{"go build ./... && go test ./...", CommandTest},
		{"go build ./...", CommandBuild},
		{"go vet ./...", CommandBuild},
		{"pytest -q tests/", CommandTest},
		{"python -m pytest -x", CommandTest},
		{"python3 -m unittest discover", CommandTest},
		{"uv run pytest", CommandTest},
		{"CI=1 npm test -- --watch=false", CommandTest},
		{"npm run test:unit", CommandTest},
		{"yarn jest src", CommandTest},
		{"npx vitest run", CommandTest},
		{"bun test auth.test.ts", CommandTest},
		{"bun run build", CommandBuild},
		{"pnpm lint", CommandLint},
		{"cargo test --lib", CommandTest},
		{"cargo build --release", CommandBuild},
		{"cargo clippy -- -D warnings", CommandLint},
		{"timeout 120 make test", CommandTest},
		{"make", CommandBuild},
		{"make -j4", CommandBuild},
		{"make lint", CommandLint},
		{"./gradlew test", CommandTest},
		{"mvn -q package", CommandBuild},
		{"npx tsc --noEmit", CommandBuild},
		{"golangci-lint run ./...", CommandLint},
		{"npx eslint src", CommandLint},
		{"ruff check .", CommandLint},
		{"bundle exec rspec spec/calc_spec.rb", CommandTest},
		{"ls -la", CommandOther},
		{"git commit -m 'go test passes'", CommandOther},
		{"echo go test", CommandOther},
		{"python hello.py", CommandOther},
		{"npm install", CommandOther},
		{"", CommandOther},
	}
	for _, c := range cases {
		if got := ClassifyCommand(c.cmd); got != c.want {
			t.Errorf("ClassifyCommand(%q) = %s, want %s", c.cmd, got, c.want)
		}
	}
}

package convergence

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
)

func TestFirstFailure(t *testing.T) {
	cases := []struct {
		name   string
		output string
		want   string
	}{
		{
			name:   "go test",
			output: "Exit code 1\n=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: Add(2, 2) = 5, want 4\nFAIL\nFAIL\texample.com/calc\t0.003s\nFAIL",
			want:   "--- FAIL: TestAdd (0.00s)\ncalc_test.go:12: Add(2, 2) = 5, want 4",
		},
		{
			name:   "go build",
			output: "# example.com/calc\n./calc.go:7:9: undefined: sum\n./calc.go:12:2: declared and not used: x",
			want:   "./calc.go:7:9: undefined: sum\n./calc.go:12:2: declared and not used: x",
		},
		{
			name:   "go panic",
			output: "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 7 [running]:\nexample.com/calc.Get(...)\n\t/project/calc.go:20 +0x1d\nexit status 2",
			want:   "panic: runtime error: index out of range [3] with length 3\ngoroutine 7 [running]:\nexample.com/calc.Get(...)",
		},
		{
			name:   "pytest prefers the short summary",
			output: "tests/test_calc.py .F\n____ test_add ____\nE       assert 5 == 4\ntests/test_calc.py:5: AssertionError\n==== short test summary info ====\nFAILED tests/test_calc.py::test_add - assert 5 == 4\n==== 1 failed, 1 passed in 0.12s ====",
			want:   "FAILED tests/test_calc.py::test_add - assert 5 == 4",
		},
		{
			name:   "python traceback gives the exception",
			output: "Traceback (most recent call last):\n  File \"/project/hello.py\", line 3, in <module>\n    main()\n  File \"/project/hello.py\", line 2, in main\n    print(undefined_name)\nNameError: name 'undefined_name' is not defined",
			want:   "NameError: name 'undefined_name' is not defined",
		},
		{
			name:   "jest",
			output: " FAIL  src/auth.test.ts\n  ● login › should validate email\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: true\n    Received: false",
			want:   "● login › should validate email\nexpect(received).toBe(expected) // Object.is equality\nExpected: true",
		},
		{
			name:   "vitest, as seed 004 writes it",
			output: "FAIL src/auth.test.ts > login > should validate email\nExpected: true\nReceived: false",
			want:   "FAIL src/auth.test.ts > login > should validate email\nExpected: true\nReceived: false",
		},
		{
			name:   "cargo",
			output: "running 1 test\ntest tests::add ... FAILED\n\nfailures:\n\n---- tests::add stdout ----\nthread 'tests::add' panicked at src/lib.rs:10:5:\nassertion failed",
			want:   "---- tests::add stdout ----\nthread 'tests::add' panicked at src/lib.rs:10:5:\nassertion failed",
		},
		{
			name:   "a generic error line",
			output: "Exit code 1\nCannot find module 'foo'",
			want:   "Cannot find module 'foo'",
		},
		{
			name:   "status lines alone are not a failure",
			output: "Exit code 1\nFAIL\nexit status 1",
			want:   "",
		},
		{name: "a passing run", output: "ok  \texample.com/calc\t0.002s", want: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FirstFailure(c.output); got != c.want {
				t.Errorf("FirstFailure =\n%s\nwant\n%s", got, c.want)
			}
		})
	}
	long := "--- FAIL: TestBig (0.00s)\n    " + strings.Repeat("é", 1000)
	if got := FirstFailure(long); len(got) > maxFailure || !strings.HasPrefix(got, "--- FAIL: TestBig") {
		t.Errorf("long failure kept %d bytes", len(got))
	}
}

func TestNormalizeFailure(t *testing.T) {
	cases := []struct{ in, want string }{
		{"--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: Add(2, 2) = 5, want 4", "--- FAIL: TestAdd (<dur>)\ncalc_test.go: Add(2, 2) = 5, want 4"},
		{"./calc.go:7:9: undefined: sum", "./calc.go: undefined: sum"},
		{"open /tmp/TestLoad1234567/001/config.yaml: no such file or directory", "open <tmp> no such file or directory"},
		{"open /var/folders/x7/abc_def/T/TestLoad99/001/config.yaml: no such file", "open <tmp> no such file"},
		{"panic: boom\n\ngoroutine 18 [running]:\nmain.f(0xc000012345)", "panic: boom\ngoroutine <n> [running]:\nmain.f(<hex>)"},
		{"2026-08-23T13:06:55.920Z request 3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8 failed", "<time> request <uuid> failed"},
		{"2026/08/23 13:06:55 dial tcp 127.0.0.1:54321: connection refused", "<date> <time> dial tcp 127.0.0.1:<port>: connection refused"},
		{"File \"/project/app.py\", line 42, in main", "File \"/project/app.py\", line <n>, in main"},
		{"\x1b[31mFAIL\x1b[0m  src/a.test.ts > adds [12.00ms]", "FAIL src/a.test.ts > adds [<dur>]"},
		{"commit b40ac91f2 does not match deadbeef", "commit <hex> does not match deadbeef"},
		{"process pid=4242 exited; took 1m30s", "process pid <n> exited; took <dur>"},
		{"  spaced\t\tout  \n\n\n  lines  ", "spaced out\nlines"},
	}
	for _, c := range cases {
		if got := NormalizeFailure(c.in); got != c.want {
			t.Errorf("NormalizeFailure(%q) =\n%q\nwant\n%q", c.in, got, c.want)
		}
	}
}

func TestErrorHashSameAndDifferent(t *testing.T) {
	same := [][2]string{
		{"--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: Add(2, 2) = 5, want 4", "--- FAIL: TestAdd (0.31s)\n    calc_test.go:48: Add(2, 2) = 5, want 4"},
		{"./calc.go:7:9: undefined: sum", "./calc.go:70:19: undefined: sum"},
		{"open /tmp/TestLoad1/001/c.yaml: denied", "open /tmp/TestLoad2/003/c.yaml: denied"},
		{"open /tmp/TestLoad1/001/c.yaml: denied", "open /var/folders/q1/zz/T/TestLoad7/001/c.yaml: denied"},
		{"panic: boom\ngoroutine 7 [running]:\nmain.f(0xc000012345)", "panic: boom\ngoroutine 31 [running]:\nmain.f(0xc0000abcde)"},
		{"at 2026-08-23T13:06:55Z: timeout", "at 2026-08-24T01:00:00Z: timeout"},
		{"\x1b[31mError:\x1b[0m bad", "Error: bad"},
		{"Error:   bad  ", "Error: bad"},
		{"dial tcp 127.0.0.1:41234: refused", "dial tcp 127.0.0.1:39999: refused"},
	}
	for _, p := range same {
		if a, b := ErrorHash(p[0]), ErrorHash(p[1]); a != b || a == "" {
			t.Errorf("want the same hash:\n%q -> %s\n%q -> %s", p[0], a, p[1], b)
		}
	}
	different := [][2]string{
		{"--- FAIL: TestAdd (0.00s)", "--- FAIL: TestSub (0.00s)"},
		{"Add(2, 2) = 5, want 4", "Add(2, 2) = 3, want 4"},
		{"./calc.go:7:9: undefined: sum", "./calc.go:7:9: undefined: total"},
		{"./calc.go:7:9: undefined: sum", "./parse.go:7:9: undefined: sum"},
		{"Cannot find module 'foo'", "Cannot find module 'bar'"},
		{"expected 1000000 got 1000001", "expected 1000000 got 1000002"},
	}
	for _, p := range different {
		if a, b := ErrorHash(p[0]), ErrorHash(p[1]); a == b {
			t.Errorf("want different hashes:\n%q\n%q\nboth %s", p[0], p[1], a)
		}
	}
	if ErrorHash("") != "" || ErrorHash(" \n\t") != "" {
		t.Error("an empty failure must have no hash")
	}
	if h := ErrorHash("x"); len(h) != 12 {
		t.Errorf("hash %q is not 12 hex digits", h)
	}
}

// noise is a failure template filled with random line numbers, durations,
// temp dirs, addresses and goroutine ids.
type noise struct {
	Line, Col, Goroutine int
	Millis               int
	Tmp                  string
	Addr                 uint32
}

// Generate implements quick.Generator.
func (noise) Generate(r *rand.Rand, _ int) reflect.Value {
	return reflect.ValueOf(noise{
		Line: 1 + r.Intn(5000), Col: 1 + r.Intn(120), Goroutine: 1 + r.Intn(100000),
		Millis: r.Intn(100000), Tmp: fmt.Sprintf("Test%s%d/%03d", []string{"Load", "Save", "X"}[r.Intn(3)], r.Int63(), r.Intn(20)),
		Addr: r.Uint32() | 1<<28,
	})
}

func (n noise) failure(msg string) string {
	return fmt.Sprintf("--- FAIL: TestLoad (%d.%02ds)\n    load_test.go:%d:%d: %s reading /tmp/%s/cfg.yaml\npanic: x [recovered]\ngoroutine %d [running]:\nmain.load(0x%x)",
		n.Millis/1000, n.Millis%100, n.Line, n.Col, msg, n.Tmp, n.Goroutine, n.Addr)
}

// TestErrorHashProperties: the noise never changes the hash; the message
// always does.
func TestErrorHashProperties(t *testing.T) {
	sameFailure := func(a, b noise) bool {
		return ErrorHash(a.failure("unexpected EOF")) == ErrorHash(b.failure("unexpected EOF"))
	}
	if err := quick.Check(sameFailure, nil); err != nil {
		t.Error(err)
	}
	otherFailure := func(a, b noise, x, y uint16) bool {
		if x == y {
			return true
		}
		return ErrorHash(a.failure(fmt.Sprintf("want %d", x))) != ErrorHash(b.failure(fmt.Sprintf("want %d", y)))
	}
	if err := quick.Check(otherFailure, nil); err != nil {
		t.Error(err)
	}
}

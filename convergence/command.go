package convergence

import (
	"path"
	"strings"
)

// CommandKind is what a shell command an agent ran was for.
type CommandKind uint8

// The command kinds, in the order ClassifyCommand prefers them when a
// command line runs several things.
const (
	CommandOther CommandKind = iota
	CommandLint
	CommandBuild
	CommandTest
)

// String returns the kind's name.
func (k CommandKind) String() string {
	switch k {
	case CommandLint:
		return "lint"
	case CommandBuild:
		return "build"
	case CommandTest:
		return "test"
	}
	return "other"
}

// ClassifyCommand says whether a Bash command line runs tests, a build or a
// linter. A line with several commands (&&, ;, |) takes the strongest kind:
// test over build over lint, since a test run also builds. Wrappers (env
// assignments, cd, time, timeout, npx, python -m, uv run, bundle exec, ...)
// are looked through.
func ClassifyCommand(cmd string) CommandKind {
	best := CommandOther
	for _, seg := range splitCommands(cmd) {
		if k := classifySimple(strings.Fields(seg)); k > best {
			best = k
		}
	}
	return best
}

func splitCommands(cmd string) []string {
	return strings.FieldsFunc(strings.NewReplacer("&&", "\n", "||", "\n", ";", "\n", "|", "\n", "(", "\n", ")", "\n").Replace(cmd),
		func(r rune) bool { return r == '\n' })
}

func classifySimple(f []string) CommandKind {
	f = unwrap(f)
	if len(f) == 0 {
		return CommandOther
	}
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	first := path.Base(f[0])
	switch first {
	case "pytest", "py.test", "jest", "vitest", "mocha", "rspec", "tox", "nox", "ctest", "phpunit", "nose2", "unittest", "ava", "tap":
		return CommandTest
	case "golangci-lint", "staticcheck", "eslint", "ruff", "flake8", "pylint", "mypy", "pyright", "shellcheck", "rubocop", "biome", "revive", "hadolint", "stylelint":
		return CommandLint
	case "tsc", "gcc", "g++", "cc", "c++", "clang", "clang++", "javac", "rustc", "kotlinc":
		return CommandBuild
	case "go":
		switch arg(1) {
		case "test":
			return CommandTest
		case "build", "vet", "install":
			return CommandBuild
		}
	case "cargo":
		switch arg(1) {
		case "test", "nextest":
			return CommandTest
		case "build", "check":
			return CommandBuild
		case "clippy":
			return CommandLint
		}
	case "npm", "yarn", "pnpm", "bun", "deno":
		script := arg(1)
		if script == "run" || script == "run-script" {
			script = arg(2)
		}
		switch {
		case script == "test" || script == "t" || strings.HasPrefix(script, "test:"):
			return CommandTest
		case script == "build" || strings.HasPrefix(script, "build:") || script == "typecheck" || script == "compile":
			return CommandBuild
		case script == "lint" || strings.HasPrefix(script, "lint:"):
			return CommandLint
		}
		if arg(1) != "run" && arg(1) != "run-script" {
			return classifySimple(f[1:]) // yarn jest, pnpm eslint .
		}
	case "make", "just", "task":
		switch t := arg(1); {
		case t == "test" || t == "tests" || t == "check" || strings.HasPrefix(t, "test-") || strings.HasPrefix(t, "test:"):
			return CommandTest
		case t == "lint" || strings.HasPrefix(t, "lint"):
			return CommandLint
		case first == "make" && (t == "" || t == "build" || t == "all" || strings.HasPrefix(t, "-j")):
			return CommandBuild
		case t == "build":
			return CommandBuild
		}
	case "gradle", "gradlew", "mvn", "mvnw", "dotnet", "swift", "mix", "sbt":
		for _, a := range f[1:] {
			switch a {
			case "test", "check", "verify":
				return CommandTest
			case "build", "compile", "package", "assemble":
				return CommandBuild
			}
		}
	case "cmake":
		if arg(1) == "--build" {
			return CommandBuild
		}
	}
	return CommandOther
}

// unwrap drops what runs a command without being it: env assignments,
// cd, time, timeout N, env, sudo, nice, npx/bunx/pnpm dlx, python -m,
// uv/poetry/pipenv run, bundle exec.
func unwrap(f []string) []string {
	for len(f) > 0 {
		w := path.Base(f[0])
		switch {
		case strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-") && !strings.Contains(strings.SplitN(f[0], "=", 2)[0], "/"):
			f = f[1:]
		case w == "cd" || w == "pushd" || w == "source" || w == "." || w == "export" || w == "echo" || w == "set":
			return nil // a command of its own that runs nothing
		case w == "time" || w == "env" || w == "sudo" || w == "nice" || w == "command" || w == "exec" || w == "npx" || w == "bunx" || w == "pnpx" || w == "xvfb-run":
			f = f[1:]
			for len(f) > 0 && strings.HasPrefix(f[0], "-") { // npx --yes, env -i, nice -n ...
				f = f[1:]
			}
		case w == "timeout":
			f = f[1:]
			for len(f) > 0 && strings.HasPrefix(f[0], "-") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:] // the duration
			}
		case (w == "python" || w == "python3" || strings.HasPrefix(w, "python3.")) && len(f) > 2 && f[1] == "-m":
			f = f[2:]
		case (w == "uv" || w == "poetry" || w == "pipenv" || w == "pdm" || w == "hatch") && len(f) > 1 && f[1] == "run":
			f = f[2:]
		case w == "pnpm" && len(f) > 1 && (f[1] == "dlx" || f[1] == "exec"):
			f = f[2:]
		case w == "bundle" && len(f) > 1 && f[1] == "exec":
			f = f[2:]
		default:
			return f
		}
	}
	return f
}

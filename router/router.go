// Package router picks the role (developer, debugger, architect, or one the
// user defines) for the agent's next loop iteration, from ordered rules on
// the loop's phase, how its last test or build run went, and its
// convergence status. The first matching rule wins.
//
// Nothing here does I/O: rules come from configuration (parsed from
// loop.routes by internal/loopconf), inputs from the loop and run
// workflow cores, which route each iteration they judge.
package router

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drover-dev/drover/convergence"
)

// Role names an agent role. Roles are open: any name a rule gives is a
// role, for the caller to map to a prompt template or subagent.
type Role string

// The built-in roles.
const (
	Developer Role = "developer"
	Debugger  Role = "debugger"
	Architect Role = "architect"
)

// The loop phases a rule can name.
const (
	// PhaseInitial is the first iteration of a loop.
	PhaseInitial = "initial"
	// PhaseIterating is every later iteration.
	PhaseIterating = "iterating"
)

// Phases lists the phases Validate accepts.
func Phases() []string { return []string{PhaseInitial, PhaseIterating} }

// Rule routes inputs that match all its non-empty fields to Role. An
// empty field matches anything. LastOutcome takes convergence.Outcome
// values, Status convergence.Status values.
type Rule struct {
	Phase       string `koanf:"phase" json:"phase,omitempty"`
	LastOutcome string `koanf:"last_outcome" json:"last_outcome,omitempty"`
	Status      string `koanf:"status" json:"status,omitempty"`
	Role        Role   `koanf:"role" json:"role"`
}

// Input is what a routing decision is made on.
type Input struct {
	// Phase is PhaseInitial or PhaseIterating.
	Phase string
	// LastOutcome is a convergence.Outcome; empty means "none".
	LastOutcome string
	// Status is a convergence.Status; empty before any was computed.
	Status string
}

// DefaultRules route the first iteration to the developer, a loop that is
// stuck or thrashing to the architect (a change of strategy beats another
// fix attempt, so these come before the outcome rules), failing tests or
// builds to the debugger, and anything else to the developer.
func DefaultRules() []Rule {
	return []Rule{
		{Phase: PhaseInitial, Role: Developer},
		{Status: string(convergence.StuckPlateau), Role: Architect},
		{Status: string(convergence.Thrashing), Role: Architect},
		{LastOutcome: string(convergence.OutcomeTestsFailed), Role: Debugger},
		{LastOutcome: string(convergence.OutcomeBuildFailed), Role: Debugger},
		{Role: Developer},
	}
}

// Matches reports whether every non-empty field of r equals in's.
func (r Rule) Matches(in Input) bool {
	in = normalize(in)
	return (r.Phase == "" || r.Phase == in.Phase) &&
		(r.LastOutcome == "" || r.LastOutcome == in.LastOutcome) &&
		(r.Status == "" || r.Status == in.Status)
}

// String renders the rule as config would read it.
func (r Rule) String() string {
	var conds []string
	for _, f := range [][2]string{{"phase", r.Phase}, {"last_outcome", r.LastOutcome}, {"status", r.Status}} {
		if f[1] != "" {
			conds = append(conds, f[0]+"="+f[1])
		}
	}
	if len(conds) == 0 {
		conds = []string{"anything"}
	}
	return strings.Join(conds, " ") + " -> " + string(r.Role)
}

// Route returns the role of the first rule that matches in, and that
// rule's index; ("", -1) when none does (Validate rejects such rule lists
// for the inputs drover produces).
func Route(rules []Rule, in Input) (Role, int) {
	in = normalize(in)
	for i, r := range rules {
		if r.Matches(in) {
			return r.Role, i
		}
	}
	return "", -1
}

func normalize(in Input) Input {
	if in.LastOutcome == "" {
		in.LastOutcome = string(convergence.OutcomeNone)
	}
	return in
}

// phaseAliases are the words other tools use for drover's phases, seed
// 004's among them (its loop state says "implementing").
var phaseAliases = map[string]string{
	"implementing": PhaseIterating,
}

// outcomeAlias returns drover's outcome for a word other tools write for
// how a test, build or lint run went: SUBJECT_RESULT with SUBJECT test,
// tests, build or lint and RESULT a pass (pass, passed, passes, passing,
// success, ok) or a failure (fail, failed, fails, failing, failure,
// error). Seed 004 writes test_fail; its tooling writes test_pass,
// build_fail, build_pass, lint_fail, lint_pass. A pass of any subject is
// ok; a failure is tests_failed, build_failed or lint_failed. Bare pass,
// passed and success are ok too.
func outcomeAlias(w string) (string, bool) {
	w = strings.NewReplacer("-", "_", " ", "_").Replace(w)
	switch w {
	case "pass", "passed", "success":
		return string(convergence.OutcomeOK), true
	}
	subject, result, ok := strings.Cut(w, "_")
	if !ok {
		return "", false
	}
	var failed convergence.Outcome
	switch subject {
	case "test", "tests":
		failed = convergence.OutcomeTestsFailed
	case "build":
		failed = convergence.OutcomeBuildFailed
	case "lint":
		failed = convergence.OutcomeLintFailed
	default:
		return "", false
	}
	switch result {
	case "pass", "passed", "passes", "passing", "success", "ok":
		return string(convergence.OutcomeOK), true
	case "fail", "failed", "fails", "failing", "failure", "error":
		return string(failed), true
	}
	return "", false
}

// ParseInput reads a routing input written by a script or another tool:
// each word is trimmed and lower-cased and an alias becomes drover's word
// (seed 004's phase "implementing" is "iterating", its "test_fail" is
// "tests_failed", and the pass/fail words of tests, build and lint are
// outcomes; see outcomeAlias); an empty outcome or status means none yet.
// A missing phase, or a value that is neither drover's word nor an alias,
// is an error naming its field and the accepted words, never routed
// silently to the catch-all rule.
func ParseInput(phase, lastOutcome, status string) (Input, error) {
	var errs []error
	word := func(field, v string, known []string, alias func(string) (string, bool), also string) string {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "" || slices.Contains(known, v) {
			return v
		}
		if a, ok := alias(v); ok {
			return a
		}
		errs = append(errs, fmt.Errorf("unknown %s %q (known: %s%s)", field, v, strings.Join(known, ", "), also))
		return v
	}
	none := func(string) (string, bool) { return "", false }
	in := Input{
		Phase: word("phase", phase, Phases(), func(v string) (string, bool) {
			a, ok := phaseAliases[v]
			return a, ok
		}, ""),
		LastOutcome: word("last_outcome", lastOutcome, outcomes(), outcomeAlias, "; or test_, build_ or lint_ then pass or fail"),
		Status:      word("convergence_status", status, statuses(), none, ""),
	}
	if in.Phase == "" {
		errs = append(errs, fmt.Errorf("no phase (known: %s)", strings.Join(Phases(), ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return Input{}, fmt.Errorf("routing input: %w", err)
	}
	return in, nil
}

// maxRoleLen bounds a role name; it becomes part of prompts and file names.
const maxRoleLen = 64

// Validate checks a rule list for every mistake it can find, each named
// by the rule's index: an unknown phase, outcome or status; a missing or
// malformed role; a rule that can never be chosen because earlier rules
// take every input it matches; and an input drover can produce that no
// rule matches (end the list with a rule that has only a role).
func Validate(rules []Rule) error {
	if len(rules) == 0 {
		return errors.New("no routing rules")
	}
	var errs []error
	for i, r := range rules {
		if r.Phase != "" && !slices.Contains(Phases(), r.Phase) {
			errs = append(errs, fmt.Errorf("rules[%d]: unknown phase %q (known: %s)", i, r.Phase, strings.Join(Phases(), ", ")))
		}
		if r.LastOutcome != "" && !slices.Contains(outcomes(), r.LastOutcome) {
			errs = append(errs, fmt.Errorf("rules[%d]: unknown last_outcome %q (known: %s)", i, r.LastOutcome, strings.Join(outcomes(), ", ")))
		}
		if r.Status != "" && !slices.Contains(statuses(), r.Status) {
			errs = append(errs, fmt.Errorf("rules[%d]: unknown status %q (known: %s)", i, r.Status, strings.Join(statuses(), ", ")))
		}
		if err := checkRole(r.Role); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d]: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Every input drover can produce, through the rules: what is never
	// chosen is dead, what finds no rule is a hole.
	// Every input is routed, even after a hole: stopping at the first one
	// would leave later rules unmarked and report them dead when they are
	// not. One hole is reported, as the cure (a catch-all) is the same.
	chosen := make([]bool, len(rules))
	hole := false
	for _, in := range Inputs() {
		_, i := Route(rules, in)
		if i < 0 {
			if !hole {
				errs = append(errs, fmt.Errorf("no rule matches phase=%s last_outcome=%s status=%s; end the rules with one that has only a role",
					in.Phase, in.LastOutcome, orNone(in.Status)))
				hole = true
			}
			continue
		}
		chosen[i] = true
	}
	for i, ok := range chosen {
		if !ok {
			errs = append(errs, fmt.Errorf("rules[%d] (%s) is never chosen: earlier rules match everything it matches", i, rules[i]))
		}
	}
	return errors.Join(errs...)
}

// Inputs lists every input drover produces: each phase, outcome, and
// status (or none yet).
func Inputs() []Input {
	var ins []Input
	for _, p := range Phases() {
		for _, o := range outcomes() {
			for _, s := range append([]string{""}, statuses()...) {
				ins = append(ins, Input{Phase: p, LastOutcome: o, Status: s})
			}
		}
	}
	return ins
}

func checkRole(r Role) error {
	if r == "" {
		return errors.New("no role")
	}
	if len(r) > maxRoleLen {
		return fmt.Errorf("role %q is longer than %d bytes", r, maxRoleLen)
	}
	for _, c := range r {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:", c)
		if !ok {
			return fmt.Errorf("role %q has %q; use letters, digits, '-', '_', '.' or ':'", r, c)
		}
	}
	return nil
}

func outcomes() []string {
	var out []string
	for _, o := range convergence.Outcomes() {
		out = append(out, string(o))
	}
	return out
}

func statuses() []string {
	var out []string
	for _, s := range convergence.Statuses() {
		out = append(out, string(s))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none yet)"
	}
	return s
}

// ParseRules reads a rule list written as Rule.String writes rules, one
// after another separated by ";":
//
//	phase=initial -> developer; status=stuck_plateau -> architect;
//	last_outcome=tests_failed -> debugger; anything -> developer
//
// It checks the syntax only; Validate checks the values.
func ParseRules(s string) ([]Rule, error) {
	var rules []Rule
	for i, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		conds, role, ok := strings.Cut(part, "->")
		if !ok {
			return nil, fmt.Errorf("rule %d %q: want CONDITIONS -> ROLE", i, part)
		}
		r := Rule{Role: Role(strings.TrimSpace(role))}
		for _, c := range strings.Fields(conds) {
			if c == "anything" {
				continue
			}
			k, v, ok := strings.Cut(c, "=")
			if !ok || v == "" {
				return nil, fmt.Errorf("rule %d %q: condition %q is not KEY=VALUE", i, part, c)
			}
			switch k {
			case "phase":
				r.Phase = v
			case "last_outcome":
				r.LastOutcome = v
			case "status":
				r.Status = v
			default:
				return nil, fmt.Errorf("rule %d %q: unknown condition %q (phase, last_outcome, status)", i, part, k)
			}
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, errors.New("no routing rules")
	}
	return rules, nil
}

// FormatRules writes rules as ParseRules reads them.
func FormatRules(rules []Rule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}

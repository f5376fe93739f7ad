package router

import (
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/drover-dev/drover/test/seed004"
)

// TestSeedRoutingCases runs seed 004's agent-router cases through
// ParseInput and the default rules. The seed's vocabulary differs from
// drover's (its phase "implementing", its "test_fail", a null for none):
// ParseInput takes its words as aliases. Its agents are namespaced
// ("dev:developer" is our developer).
func TestSeedRoutingCases(t *testing.T) {
	path, err := seed004.CasesFile()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type routingCase struct {
		ID     string `json:"id"`
		Layer  string `json:"layer"`
		Target string `json:"target"`
		Input  struct {
			Phase       *string `json:"phase"`
			LastOutcome *string `json:"last_outcome"`
			Status      *string `json:"convergence_status"`
		} `json:"routing_input"`
		Checks struct {
			RoutedAgentIs string `json:"routed_agent_is"`
		} `json:"checks"`
	}
	var doc struct {
		TestCases []routingCase `json:"test_cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cases := slices.DeleteFunc(doc.TestCases, func(c routingCase) bool {
		return c.Layer != "unit" || c.Target != "agent-router"
	})
	if len(cases) != 3 {
		t.Fatalf("want the seed's 3 routing cases, got %d", len(cases))
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, c := range cases {
		in, err := ParseInput(str(c.Input.Phase), str(c.Input.LastOutcome), str(c.Input.Status))
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		role, _ := Route(DefaultRules(), in)
		if want := Role(strings.TrimPrefix(c.Checks.RoutedAgentIs, "dev:")); role != want {
			t.Errorf("%s: Route(%+v) = %s, want %s", c.ID, in, role, want)
		}
	}
}

func TestParseInput(t *testing.T) {
	tests := []struct {
		phase, outcome, status string
		want                   Input
		errs                   []string
	}{
		{"initial", "", "", Input{Phase: PhaseInitial}, nil},
		{"implementing", "test_fail", "", Input{Phase: PhaseIterating, LastOutcome: "tests_failed"}, nil},
		{" Iterating ", "TESTS_FAILED", "stuck_plateau", Input{Phase: PhaseIterating, LastOutcome: "tests_failed", Status: "stuck_plateau"}, nil},
		{"iterating", "build_failure", "thrashing", Input{Phase: PhaseIterating, LastOutcome: "build_failed", Status: "thrashing"}, nil},
		{"iterating", "pass", "converged_success", Input{Phase: PhaseIterating, LastOutcome: "ok", Status: "converged_success"}, nil},
		{"iterating", "none", "", Input{Phase: PhaseIterating, LastOutcome: "none"}, nil},
		{"", "", "", Input{}, []string{"no phase"}},
		{"testing", "test_fail", "", Input{}, []string{`unknown phase "testing"`, "initial, iterating"}},
		{"iterating", "flaky", "", Input{}, []string{`unknown last_outcome "flaky"`, "tests_failed"}},
		{"iterating", "", "stuck", Input{}, []string{`unknown convergence_status "stuck"`, "stuck_plateau"}},
		{"bogus", "flaky", "stuck", Input{}, []string{"phase", "last_outcome", "convergence_status"}},
	}
	for _, tt := range tests {
		got, err := ParseInput(tt.phase, tt.outcome, tt.status)
		if len(tt.errs) == 0 {
			if err != nil || got != tt.want {
				t.Errorf("ParseInput(%q, %q, %q) = %+v, %v; want %+v", tt.phase, tt.outcome, tt.status, got, err, tt.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseInput(%q, %q, %q) = %+v, want an error", tt.phase, tt.outcome, tt.status, got)
			continue
		}
		for _, e := range tt.errs {
			if !strings.Contains(err.Error(), e) {
				t.Errorf("ParseInput(%q, %q, %q): error %q does not say %q", tt.phase, tt.outcome, tt.status, err, e)
			}
		}
	}
}

func TestRouteDefaultRules(t *testing.T) {
	cases := []struct {
		in   Input
		role Role
		rule int
	}{
		{Input{Phase: PhaseInitial}, Developer, 0},
		{Input{Phase: PhaseInitial, LastOutcome: "tests_failed", Status: "thrashing"}, Developer, 0},
		{Input{Phase: PhaseIterating, LastOutcome: "tests_failed", Status: "stuck_plateau"}, Architect, 1},
		{Input{Phase: PhaseIterating, LastOutcome: "ok", Status: "thrashing"}, Architect, 2},
		{Input{Phase: PhaseIterating, LastOutcome: "tests_failed", Status: "exploring"}, Debugger, 3},
		{Input{Phase: PhaseIterating, LastOutcome: "build_failed"}, Debugger, 4},
		{Input{Phase: PhaseIterating, LastOutcome: "ok", Status: "progressing"}, Developer, 5},
		{Input{Phase: PhaseIterating}, Developer, 5},
		{Input{}, Developer, 5},
	}
	for _, c := range cases {
		role, i := Route(DefaultRules(), c.in)
		if role != c.role || i != c.rule {
			t.Errorf("Route(%+v) = %s, rule %d; want %s, rule %d", c.in, role, i, c.role, c.rule)
		}
	}
	if role, i := Route(nil, Input{Phase: PhaseInitial}); role != "" || i != -1 {
		t.Errorf("no rules: %q %d", role, i)
	}
}

func TestRouteNoneOutcome(t *testing.T) {
	rules := []Rule{{LastOutcome: "none", Role: "scout"}, {Role: Developer}}
	for _, in := range []Input{{Phase: PhaseIterating}, {Phase: PhaseIterating, LastOutcome: "none"}} {
		if role, _ := Route(rules, in); role != "scout" {
			t.Errorf("Route(%+v) = %s: an empty outcome is none", in, role)
		}
	}
}

func TestValidate(t *testing.T) {
	catchAll := Rule{Role: Developer}
	cases := []struct {
		name  string
		rules []Rule
		want  []string // substrings of the error; none means valid
	}{
		{"defaults", DefaultRules(), nil},
		{"a custom role", []Rule{{Status: "exploring", Role: "dev:researcher"}, catchAll}, nil},
		{"empty", nil, []string{"no routing rules"}},
		{"unknown values named", []Rule{{Phase: "implementing", LastOutcome: "test_fail", Status: "stuck", Role: Debugger}, catchAll},
			[]string{`rules[0]: unknown phase "implementing"`, `rules[0]: unknown last_outcome "test_fail"`, `rules[0]: unknown status "stuck"`, "known: converged_success"}},
		{"no role", []Rule{{Phase: PhaseInitial}, catchAll}, []string{"rules[0]: no role"}},
		{"bad role", []Rule{{Role: "two words"}}, []string{`rules[0]: role "two words" has ' '`}},
		{"long role", []Rule{{Role: Role(strings.Repeat("r", 65))}}, []string{"longer than 64"}},
		{"no catch-all", []Rule{{Phase: PhaseInitial, Role: Developer}}, []string{"no rule matches phase=iterating", "end the rules with one that has only a role"}},
		{"shadowed by a catch-all", []Rule{catchAll, {Status: "thrashing", Role: Architect}}, []string{"rules[1] (status=thrashing -> architect) is never chosen"}},
		{"shadowed by the two phases together", []Rule{{Phase: PhaseInitial, Role: Developer}, {Phase: PhaseIterating, Role: Debugger}, {Status: "thrashing", Role: Architect}},
			[]string{"rules[2] (status=thrashing -> architect) is never chosen"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.rules)
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted the rules")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestRuleString(t *testing.T) {
	if s := (Rule{Phase: "iterating", LastOutcome: "ok", Status: "exploring", Role: "x"}).String(); s != "phase=iterating last_outcome=ok status=exploring -> x" {
		t.Error(s)
	}
	if s := (Rule{Role: "x"}).String(); s != "anything -> x" {
		t.Error(s)
	}
}

// Vocabularies for random rules and inputs, with empty and unknown values.
var (
	phaseVocab   = append(Phases(), "", "review")
	outcomeVocab = append(outcomes(), "", "flaky")
	statusVocab  = append(statuses(), "", "confused")
	roleVocab    = []Role{Developer, Debugger, Architect, "dev:researcher"}
)

type ruleList []Rule

// Generate implements quick.Generator: up to 8 rules from the
// vocabularies. Half the lists use known values only and end with a
// catch-all, so that Validate accepts a fair share of them.
func (ruleList) Generate(r *rand.Rand, _ int) reflect.Value {
	known := r.Intn(2) == 0
	pick := func(vocab []string) string {
		if known {
			vocab = vocab[:len(vocab)-1] // drop the unknown value
		}
		return vocab[r.Intn(len(vocab))]
	}
	rules := make(ruleList, r.Intn(9))
	for i := range rules {
		rules[i] = Rule{
			Phase:       pick(phaseVocab),
			LastOutcome: pick(outcomeVocab),
			Status:      pick(statusVocab),
			Role:        roleVocab[r.Intn(len(roleVocab))],
		}
	}
	if known {
		rules = append(rules, Rule{Role: Developer})
	}
	return reflect.ValueOf(rules)
}

// Generate implements quick.Generator.
func (Input) Generate(r *rand.Rand, _ int) reflect.Value {
	return reflect.ValueOf(Input{
		Phase:       phaseVocab[r.Intn(len(phaseVocab))],
		LastOutcome: outcomeVocab[r.Intn(len(outcomeVocab))],
		Status:      statusVocab[r.Intn(len(statusVocab))],
	})
}

// naiveRoute is a deliberately different reading of the rules: fill each
// rule's blanks with the input's own values, and the rule matches when the
// filled-in conditions are the input.
func naiveRoute(rules []Rule, in Input) (Role, int) {
	if in.LastOutcome == "" {
		in.LastOutcome = "none"
	}
	best := -1
	for i := len(rules) - 1; i >= 0; i-- { // scan them all, keep the earliest
		cond := Input{Phase: rules[i].Phase, LastOutcome: rules[i].LastOutcome, Status: rules[i].Status}
		if cond.Phase == "" {
			cond.Phase = in.Phase
		}
		if cond.LastOutcome == "" {
			cond.LastOutcome = in.LastOutcome
		}
		if cond.Status == "" {
			cond.Status = in.Status
		}
		if cond == in {
			best = i
		}
	}
	if best < 0 {
		return "", -1
	}
	return rules[best].Role, best
}

func TestRouteMatchesNaiveReference(t *testing.T) {
	f := func(rules ruleList, in Input) bool {
		r1, i1 := Route(rules, in)
		r2, i2 := naiveRoute(rules, in)
		return r1 == r2 && i1 == i2
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

// TestValidRulesRouteEverything: rules Validate accepts give every input
// drover produces a rule, and every rule some input.
func TestValidRulesRouteEverything(t *testing.T) {
	accepted := 0
	f := func(rules ruleList) bool {
		if Validate(rules) != nil {
			return true
		}
		accepted++
		used := map[int]bool{}
		for _, in := range Inputs() {
			_, i := Route(rules, in)
			if i < 0 {
				return false
			}
			used[i] = true
		}
		return len(used) == len(rules)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	t.Logf("%d of 5000 random rule lists were valid", accepted)
	if accepted < 100 {
		t.Errorf("only %d random rule lists were valid: the property was hardly exercised", accepted)
	}
}

func TestParseRulesRoundTrip(t *testing.T) {
	got, err := ParseRules(FormatRules(DefaultRules()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, DefaultRules()) {
		t.Errorf("round trip of the default rules:\n%v\n%v", got, DefaultRules())
	}
	custom, err := ParseRules("status=thrashing -> reviewer ; last_outcome=tests_failed phase=iterating -> debugger; anything -> developer")
	if err != nil {
		t.Fatal(err)
	}
	if role, _ := Route(custom, Input{Phase: PhaseIterating, Status: "thrashing"}); role != "reviewer" {
		t.Errorf("custom rules routed thrashing to %q", role)
	}
	for _, bad := range []string{"", " ; ", "developer", "phase -> developer", "colour=red -> developer", "status= -> x"} {
		if _, err := ParseRules(bad); err == nil {
			t.Errorf("ParseRules(%q) accepted it", bad)
		}
	}
}

// TestValidateHoleDoesNotMakeRulesDead checks that a rule list with a hole
// reports the hole and no rule as dead that some input does choose: the
// check once stopped at the first hole and called every later rule dead.
func TestValidateHoleDoesNotMakeRulesDead(t *testing.T) {
	cases := []struct {
		name  string
		rules []Rule
		want  string
	}{
		{"only a status rule", []Rule{{Status: "thrashing", Role: Architect}}, "no rule matches phase=initial"},
		{"outcome and status rules", []Rule{{LastOutcome: "tests_failed", Role: Debugger}, {Status: "stuck_plateau", Role: Architect}}, "no rule matches"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.rules)
			if err == nil {
				t.Fatal("Validate accepted rules with no catch-all")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error lacks %q:\n%v", c.want, err)
			}
			if strings.Contains(err.Error(), "never chosen") {
				t.Errorf("error calls a chosen rule dead:\n%v", err)
			}
			if n := strings.Count(err.Error(), "no rule matches"); n != 1 {
				t.Errorf("error reports %d holes, want 1:\n%v", n, err)
			}
		})
	}
}

package loopconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/router"
)

// The thresholds come from the loop.* keys as loaded, numbers in every
// layer; the keys a file leaves out keep their defaults.
func TestThresholdsFromLoadedConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "project.yaml")
	if err := os.WriteFile(path, []byte("loop:\n  success_pass_rate: 1\n  min_improvement: 0.1\n  require_lint_clean: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Sources{ProjectFile: path})
	if err != nil {
		t.Fatal(err)
	}
	th := Thresholds(c.Loop)
	if th.SuccessPassRate != 1 || th.MinImprovement != 0.1 || !th.RequireLintClean || th.PlateauWindow != 3 || th.ThrashRepeats != 3 || th.MinToolCalls != 10 {
		t.Errorf("Thresholds() = %+v", th)
	}
}

// The default configuration's thresholds are the convergence defaults, so
// a loop and a run with no loop.* keys set judge as seed 004 describes.
func TestDefaultThresholdsAreValid(t *testing.T) {
	th := Thresholds(config.Defaults().Loop)
	if err := th.Validate(); err != nil {
		t.Fatal(err)
	}
	if th != th.WithDefaults() {
		t.Errorf("default thresholds %+v leave fields for the convergence defaults to fill (%+v)", th, th.WithDefaults())
	}
}

func TestRoutesAndCheck(t *testing.T) {
	tests := []struct {
		name   string
		routes string
		want   []router.Rule // nil: an error
	}{
		{"blank is the defaults", "  ", router.DefaultRules()},
		{"custom routes", "status=thrashing -> architect; anything -> developer", []router.Rule{{Status: "thrashing", Role: router.Architect}, {Role: router.Developer}}},
		{"routes without a catch-all", "status=thrashing -> architect", nil},
		{"routes with a typo", "stats=thrashing -> architect; anything -> developer", nil},
		{"unknown status", "status=thrashin -> architect; anything -> developer", nil},
		{"no arrow", "status=thrashing architect", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := config.Defaults().Loop
			l.Routes = tt.routes
			got, err := Routes(l)
			cerr := Check(l)
			if tt.want == nil {
				if err == nil || cerr == nil {
					t.Fatalf("Routes() = %v, %v; Check() = %v: want errors", got, err, cerr)
				}
				if !strings.Contains(cerr.Error(), `"loop.routes"`) {
					t.Errorf("Check() = %v, want it to name \"loop.routes\"", cerr)
				}
				// A running loop keeps routing, on the defaults.
				if od := RoutesOrDefault(l); !reflect.DeepEqual(od, router.DefaultRules()) {
					t.Errorf("RoutesOrDefault() = %v, want the defaults", od)
				}
				return
			}
			if err != nil || cerr != nil {
				t.Fatalf("Routes() = %v; Check() = %v", err, cerr)
			}
			if od := RoutesOrDefault(l); !reflect.DeepEqual(od, tt.want) {
				t.Errorf("RoutesOrDefault() = %v, want %v", od, tt.want)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Routes() = %v, want %v", got, tt.want)
			}
		})
	}
}

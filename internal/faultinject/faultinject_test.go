package faultinject

import (
	"maps"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec    string
		want    map[string]float64
		wantErr bool
	}{
		{"", map[string]float64{}, false},
		{"commit=1", map[string]float64{"commit": 1}, false},
		{" receive=0.5 , effect=0 ", map[string]float64{"receive": 0.5, "effect": 0}, false},
		{"commit", nil, true},
		{"=0.5", nil, true},
		{"commit=2", nil, true},
		{"commit=x", nil, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.spec)
		if (err != nil) != tt.wantErr || !tt.wantErr && !maps.Equal(got, tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v, error %v", tt.spec, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestHook(t *testing.T) {
	if h, err := Hook("", nil); h != nil || err != nil {
		t.Errorf("Hook(\"\") = %v, %v; want nil, nil", h != nil, err)
	}
	var crashed []string
	h, err := Hook("commit=1,effect=0", func(p string) { crashed = append(crashed, p) })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"receive", "commit", "effect", "commit"} {
		h(p)
	}
	if len(crashed) != 2 || crashed[0] != "commit" || crashed[1] != "commit" {
		t.Errorf("crashed at %v, want commit twice", crashed)
	}
}

package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/results"
)

// TestBuiltInCalibrations: every built-in calibration parses and holds
// (BuiltInCalibration panics otherwise), each one made on a recorded
// processor names it, and a plan on a processor takes that processor's,
// else the reference one, which names its own; one that names none is
// never taken unasked.
func TestBuiltInCalibrations(t *testing.T) {
	names := BuiltInCalibrations()
	if !slices.Contains(names, ReferenceCalibration) || len(names) < 2 {
		t.Fatalf("built in: %v, want %s and at least one more", names, ReferenceCalibration)
	}
	seen := map[string]string{}
	for _, name := range names {
		c := BuiltInCalibration(name)
		if c == nil || len(c.Sources) == 0 || c.Machine == "" {
			t.Fatalf("%s: %+v", name, c)
		}
		if c.CPUModel == "" {
			// One whose runs did not record their processor is
			// only taken by name.
			if name == ReferenceCalibration {
				t.Errorf("the reference calibration %s names no processor", name)
			}
			continue
		}
		if !strings.Contains(c.Machine, c.CPUModel) {
			t.Errorf("%s: machine %q, processor %q", name, c.Machine, c.CPUModel)
		}
		if other, ok := seen[c.CPUModel]; ok {
			t.Errorf("%s and %s both made on %s", name, other, c.CPUModel)
		}
		seen[c.CPUModel] = name
		if got := calibrationFor(c.CPUModel); got != name {
			t.Errorf("a plan on %s takes %s, want %s", c.CPUModel, got, name)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no built-in calibration names its processor")
	}
	for _, model := range []string{"", "a processor never calibrated"} {
		if got := calibrationFor(model); got != ReferenceCalibration {
			t.Errorf("a plan on %q takes %s, want %s", model, got, ReferenceCalibration)
		}
	}
	if BuiltInCalibration("no-such") != nil {
		t.Error("an unknown name gave a calibration")
	}
}

// TestCalibrationNote: a plan says when its calibration's runs ran on
// another processor, or did not say which, and nothing when they ran on
// this one.
func TestCalibrationNote(t *testing.T) {
	made := &results.Calibration{Machine: "vm, 2 CPUs X", CPUModel: "X"}
	if n := CalibrationNote(made, "X"); n != "" {
		t.Errorf("on its own processor: %q", n)
	}
	if n := CalibrationNote(made, "Y"); !strings.Contains(n, "ran on vm, 2 CPUs X, this machine on Y") {
		t.Errorf("on another: %q", n)
	}
	if n := CalibrationNote(made, ""); !strings.Contains(n, "does not name") {
		t.Errorf("on an unnamed one: %q", n)
	}
	old := &results.Calibration{Machine: "vm, 2 CPUs X"}
	if n := CalibrationNote(old, "X"); !strings.Contains(n, "did not record their processor") {
		t.Errorf("a calibration that names no processor: %q", n)
	}
}

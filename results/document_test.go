package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEveryDocumentStampsItsVersion: every kind of saved document is
// written with its format version even when the caller left it zero, and
// loads back; before one save was written for all four, the sweep's did
// not stamp it, and LoadSweep refused what SaveSweep had written.
func TestEveryDocumentStampsItsVersion(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	run := sample()
	run.Version = 0
	for _, c := range []struct {
		name string
		save func(dir string) error
		load func(dir string) (version int, started time.Time, err error)
		want int
		file string
	}{
		{"result", func(dir string) error { r := *run; r.StartedAt = at; return Save(dir, &r) },
			func(dir string) (int, time.Time, error) {
				r, err := Load(dir)
				return version(r, err, func() (int, time.Time) { return r.Version, r.StartedAt })
			},
			FormatVersion, JSONFile},
		{"sweep", func(dir string) error {
			return SaveSweep(dir, &Sweep{StartedAt: at, Param: "users", Points: []SweepPoint{{Value: 1, Result: run}}})
		},
			func(dir string) (int, time.Time, error) {
				s, err := LoadSweep(dir)
				return version(s, err, func() (int, time.Time) { return s.Version, s.StartedAt })
			},
			SweepFormatVersion, SweepJSONFile},
		{"recommendation", func(dir string) error {
			return SaveRecommendation(dir, &Recommendation{StartedAt: at, Run: run, Verdict: Verdict{Reason: "r"}})
		},
			func(dir string) (int, time.Time, error) {
				r, err := LoadRecommendation(dir)
				return version(r, err, func() (int, time.Time) { return r.Version, r.StartedAt })
			},
			RecommendationFormatVersion, RecommendationJSONFile},
		{"decision map", func(dir string) error {
			return SaveDecisionMap(dir, &DecisionMap{StartedAt: at, Skews: []string{"uniform"}, ReadShares: []float64{0.9}, Cells: []DecisionCell{{Skew: "uniform", ReadShare: 0.9,
				Candidates: []Candidate{{Model: "a", Held: true}}, Verdict: Verdict{Best: "a"}}}})
		},
			func(dir string) (int, time.Time, error) {
				m, err := LoadDecisionMap(dir)
				return version(m, err, func() (int, time.Time) { return m.Version, m.StartedAt })
			},
			DecisionMapFormatVersion, DecisionMapJSONFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "b")
			if err := c.save(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, c.file)); err != nil {
				t.Fatal(err)
			}
			v, started, err := c.load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if v != c.want {
				t.Errorf("version %d, want %d", v, c.want)
			}
			if !started.Equal(at) || started.Location() != time.UTC {
				t.Errorf("started %v, want %v in UTC", started, at.UTC())
			}
		})
	}
}

func version[T any](doc *T, err error, get func() (int, time.Time)) (int, time.Time, error) {
	if err != nil {
		return 0, time.Time{}, err
	}
	v, at := get()
	return v, at, nil
}

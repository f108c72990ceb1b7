package workload

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// TestReturningCompleteness: on a store that shows every post at once,
// the returning users' first pages show everything they missed; on one
// that never shows the dormant users a post made after the dataset (a
// design that stopped writing to them and never rebuilt), their pages
// show nothing of it, and the steady users' stay complete.
func TestReturningCompleteness(t *testing.T) {
	ctx := context.Background()
	d := smallDataset(t)
	for _, hide := range []bool{false, true} {
		mem := timeline.NewMemory()
		if err := d.Apply(ctx, mem); err != nil {
			t.Fatal(err)
		}
		s := newWatched(mem, d.Stats().Messages)
		r, err := NewReturning(s, d, ReturningConfig{Users: 5, Absence: 40 * time.Millisecond, PostsPerUser: 6, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		if hide {
			for _, u := range r.Dormant {
				s.lossy[u] = true
			}
		}
		if err := r.Warm(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.Away(ctx); err != nil {
			t.Fatal(err)
		}
		if r.Posts() != 30 {
			t.Fatalf("%d posts while away, want 30", r.Posts())
		}
		dormant, err := r.Return(ctx, r.Dormant)
		if err != nil {
			t.Fatal(err)
		}
		steady, err := r.Return(ctx, r.Steady)
		if err != nil {
			t.Fatal(err)
		}
		if dormant.Reads != 5 || dormant.Latency.TotalCount() != 5 || dormant.Expected < 5 {
			t.Fatalf("dormant: %d reads, %d latencies, %d posts expected", dormant.Reads, dormant.Latency.TotalCount(), dormant.Expected)
		}
		if steady.Completeness() != 1 {
			t.Errorf("hide %v: steady users' pages %v complete", hide, steady.Completeness())
		}
		want := 1.0
		if hide {
			want = 0
		}
		if got := dormant.Completeness(); got != want || (dormant.Complete == 5) != !hide {
			t.Errorf("hide %v: dormant pages %v complete (%d of 5 whole), want %v", hide, got, dormant.Complete, want)
		}
		mem.Close()
	}
	if _, err := NewReturning(nil, d, ReturningConfig{Users: 40, Absence: time.Second}); !errors.Is(err, ErrFewReaders) {
		t.Errorf("80 users of 50: %v, want ErrFewReaders", err)
	}
}

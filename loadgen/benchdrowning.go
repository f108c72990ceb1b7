package loadgen

import (
	"context"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// drowningPages measures, on a dataset with drowning readers
// (dataset.Drowning), a phase of newest pages of theirs only, as long as
// m's newest-page phase, and records its rate, latency and rows read per
// page in rm.Extra ("drowning_pages_per_sec", "drowning_page_p50_ms",
// "drowning_page_p99_ms", "drowning_rows_read_per_page",
// "drowning_all_cpu_us_per_page"): what a design's pages cost the readers
// who follow far more authors than anyone else.
func (b *bench) drowningPages(ctx context.Context, m registry.Model, s timeline.Store, rm *results.Model) error {
	readers := b.data.DrowningReaders()
	if len(readers) == 0 {
		return nil
	}
	p, err := b.phase(ctx, m.Name+"/retrieve-drowning", b.duration(m), workload.NewestPageOf(s, readers, b.cfg.Spec.Seed), nil)
	if err != nil {
		return err
	}
	if rm.Extra == nil {
		rm.Extra = map[string]float64{}
	}
	rm.Extra["drowning_pages_per_sec"] = p.OpsPerSec
	rm.Extra["drowning_page_p50_ms"] = p.P50Ms
	rm.Extra["drowning_page_p99_ms"] = p.P99Ms
	if v, ok := p.Cost[cost.RowsRead]; ok {
		rm.Extra["drowning_rows_read_per_page"] = v
	}
	if v, ok := p.Cost.AllCPU(); ok {
		rm.Extra["drowning_all_cpu_us_per_page"] = v
	}
	return nil
}

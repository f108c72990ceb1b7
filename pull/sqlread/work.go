package sqlread

import "github.com/pushpull/pushpull/registry"

// MergeWork is the work of Merge's read of entries ids (a page's Fetch(),
// or a rebuild's) for a reader of followees authors: step 1 probes every
// followee's (author_id, id) index (3 rows each: the follow, the probe,
// the head), the range scan reads about 1.35 ids per entry of a newest
// page and 3.7 of an older one (whose floor lies deeper among the
// authors), and the bodies are joined; about 1.4 rows per entry land in
// the scan's scratch table. Two statements. The per-entry figures are
// counted on the benchmark's uniform graph at 1,000 users.
func MergeWork(followees, entries float64, older bool) registry.Work {
	scan := 1.35
	if older {
		scan = 3.7
	}
	return registry.Work{RowsRead: 3*followees + scan*entries, RowsWritten: 1.4 * entries, Statements: 2}
}

// PageWork is the work of Merge's read of a page (older: through a
// cursor) for the readers of d. Step 1 probes every followee's (author_id,
// id) index (3 rows each: the follow, the probe, the head); the range scan
// reads the ids at or above the floor, which registry.Demand.MergeScan
// counts from the readers' followees and their post rates (about 1.37 an
// entry on a uniform graph, far more on a skewed one, where the authors
// who post most come again and again before the Fetch()-th distinct
// followee shows); every id it reads lands in its scratch table, a row
// written. A page whose scan reaches mergeScanCap·Fetch() ids is read
// again by mergeRounds, which reads what the scan would have read beyond
// it (MergeScanned.Beyond) and two more statements; a reader of fewer
// than Fetch() followees has no floor and is read by mergeRounds alone,
// about 2·Fetch() ids (a batch of the followees' next ids, then the ids
// above the floor they give, and the known ones as literals). Rows read
// besides are about −0.05 an entry of a newest page and 2.3 of an older
// one (whose floor lies deeper among the authors: 1.35 and 3.7 read
// against 1.4 written, counted on the benchmark's uniform graph at 1,000
// users).
func PageWork(d registry.Demand, older bool) registry.Work {
	fetch := d.Fetch()
	s := d.MergeScan(fetch, mergeScanCap*fetch)
	ids := s.IDs + s.Beyond + s.Few*2*fetch
	extra := 1.35 - 1.4
	if older {
		extra = 3.7 - 1.4
	}
	return registry.Work{RowsRead: 3*d.ReadFollowees() + ids + extra*fetch, RowsWritten: ids,
		Statements: 2 + 2*s.Limited + s.Few}
}

// OverWork is the work of MergeOver's read of a newest page over the
// Fetch() followees with the newest heads (as an index of them names
// them; no step 1): the ids of those followees at or above the Fetch()-th
// head, the scan of PageWork without its limit (registry.Demand.MergeScan),
// less the heads, known already, plus the heads as literals, each a row
// written to the statement's scratch table; a reader of fewer than Fetch()
// followees reads as in PageWork. Rows read besides are about 0.95 an
// entry (2.35 read against 1.4 written, counted on the benchmark's
// uniform graph at 1,000 users). Two statements.
func OverWork(d registry.Demand) registry.Work {
	fetch := d.Fetch()
	limit := mergeScanCap * fetch
	s := d.MergeScan(fetch, limit)
	ids := s.IDs - s.Limited*limit + s.Beyond + s.Few*2*fetch
	return registry.Work{RowsRead: ids + 0.95*fetch, RowsWritten: ids, Statements: 2}
}

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

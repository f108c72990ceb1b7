package pull

import "github.com/pushpull/pushpull/pull/recent"

// Stats is a snapshot of a store's counters.
type Stats struct {
	// Pages is the number of timeline pages served by a strategy that
	// counts rows (sqlread.Union, sqlread.Merge, recent.Recent and
	// recent.Active); the others leave it and RowsRead at 0.
	Pages int64
	// RowsRead is how many index entries and table rows those pages made
	// the database examine (see sqlread.PageCount). RowsRead/Pages is the
	// cost per page that Merge's early stop is meant to bring from about
	// N² + followees down to about N + followees.
	RowsRead int64

	// The memcached-derived state's counters, for a store that runs
	// write hooks (see WriteHooks); zero for the others.
	recent.Stats
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	st := Stats{Pages: s.pages.Pages(), RowsRead: s.pages.RowsRead()}
	if s.hooks != nil {
		st.Stats = s.hooks.Stats()
	}
	return st
}

// RowsRead returns the total rows read by the pages Pages counts; see
// Stats.RowsRead.
func (s *Store) RowsRead() int64 { return s.pages.RowsRead() }

// Pages returns the number of pages served by a strategy that counts rows
// read; see Stats.Pages.
func (s *Store) Pages() int64 { return s.pages.Pages() }

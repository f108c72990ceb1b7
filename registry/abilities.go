package registry

// What the benchmark's loader needs to know of a store beyond the
// abilities of package timeline.

// PartialMailbox is a store whose mailbox holds only part of what push's
// would hold (see MailboxShape), with tables of its own that say which
// part. The benchmark bulk-loads that part and those tables, so that the
// store starts as its own writes would have left it.
//
// Fallback: push's whole mailbox is loaded.
type PartialMailbox interface {
	MailboxShape() MailboxShape
}

// MailboxShape says which of push's mailbox rows a store keeps. The zero
// value keeps them all.
type MailboxShape struct {
	// Cap > 0 keeps each user's newest Cap entries only; the
	// mailbox_state table (schema.MailboxState) records each user's
	// floor (the oldest id kept, when entries were left out) and entries.
	Cap int
	// PullFrom > 0 leaves out the messages of authors with at least
	// PullFrom followers; pull_authors lists those authors and
	// pull_follows (schema.PullAuthors, schema.PullFollows) the follows
	// of them.
	PullFrom int
	// PushRatio > 0 decides each follow edge (follower u, author a) as
	// Feeding Frenzy does: pushed, with a's messages in u's mailbox, when
	// u's read rate over a's post rate is at least PushRatio (H/L); else
	// pulled. The rates are the dataset's activity rates (loadgen), scaled
	// so that users read ReadsPerPost times as often as they post
	// overall; push_edges, pull_edges and user_rates (schema.PushEdges,
	// schema.PullEdges, schema.UserRates) hold the decisions and rates.
	PushRatio, ReadsPerPost float64

	// ActiveReads > 0 keeps the mailboxes of active users only, whole,
	// and none of the others': the mean reads per user within the
	// store's activity window. A user whose share of the workload's
	// reads (loadgen's read rate, Dataset.PickReader) is p counts as
	// having read within the window with probability
	// 1 - exp(-ActiveReads * users * p), as Poisson reads would, decided
	// by a hash of the user and the dataset's seed. reader_state
	// (schema.ReaderState) flags them.
	ActiveReads float64
}

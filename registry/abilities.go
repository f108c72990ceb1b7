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
// value keeps them all (Whole).
//
// A rule of the model's (which authors it pulls, which edges it pushes)
// is a function the model supplies, the same code its own writes decide
// by, so that the loader applies the rule without knowing it; a cap and
// an activity level are numbers, parameters of what the loader does.
type MailboxShape struct {
	// Cap > 0 keeps each user's newest Cap entries only; the
	// mailbox_state table (schema.MailboxState) records each user's
	// floor (the oldest id kept, when entries were left out) and entries.
	Cap int
	// PullAuthor, if not nil, says from an author's follower count
	// whether the store pulls the author: their messages are in no
	// mailbox, pull_authors lists them and pull_follows
	// (schema.PullAuthors, schema.PullFollows) holds the follows of them.
	PullAuthor func(followers int) bool
	// PushEdge, if not nil, decides each follow edge (follower u, author
	// a) from u's reads and a's posts: pushed, with a's messages in u's
	// mailbox, when it returns true; else pulled. The counts are the
	// ones the store starts from: the dataset's activity rates, scaled
	// so that users read ReadsPerPost times as often as they post
	// overall; push_edges, pull_edges and user_rates (schema.PushEdges,
	// schema.PullEdges, schema.UserRates) hold the decisions and counts.
	PushEdge func(reads, posts float64) bool
	// ReadsPerPost is the scale of the counts PushEdge starts from: the
	// reads per post, over all users.
	ReadsPerPost float64

	// ActiveReads > 0 keeps the mailboxes of active users only, whole,
	// and none of the others': the mean reads per user within the
	// store's activity window. A user whose share of the workload's
	// reads (package loadgen/dataset's read rate, Dataset.PickReader)
	// is p counts as having read within the window with probability
	// 1 - exp(-ActiveReads * users * p), as Poisson reads would, decided
	// by a hash of the user and the dataset's seed. reader_state
	// (schema.ReaderState) flags them.
	ActiveReads float64
}

// Whole reports whether s is push's whole mailbox: no cap, no rule that
// pulls authors or edges, no activity level, as in the zero value. (A
// MailboxShape holds functions, so it cannot be compared with ==.)
func (s MailboxShape) Whole() bool {
	return s.Cap <= 0 && s.PullAuthor == nil && s.PushEdge == nil && s.ActiveReads <= 0
}

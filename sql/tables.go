package schema

import "strings"

// Table is a table of a model's schema that holds the dataset, with the
// columns a bulk load writes, in the order it writes them.
type Table struct {
	Name    string
	Columns []string
}

// ColumnList is the table's columns as a parenthesised SQL list, e.g.
// "(follower_id, followee_id)".
func (t Table) ColumnList() string { return "(" + strings.Join(t.Columns, ", ") + ")" }

// The tables that hold the dataset.
var (
	// Follows is the follow graph, in both models.
	Follows = Table{Name: "follows", Columns: []string{"follower_id", "followee_id"}}
	// Messages are the messages, in both models.
	Messages = Table{Name: "messages", Columns: []string{"id", "author_id", "body", "created_at"}}
	// Mailbox is the push model's fan-out: one row per message per reader.
	Mailbox = Table{Name: "mailbox", Columns: []string{"user_id", "message_id"}}
	// MailboxState is push-capped's floor and entry count per user.
	MailboxState = Table{Name: "mailbox_state", Columns: []string{"user_id", "floor_id", "entries"}}
	// ReaderState is push-active's activity flag, last read and floor
	// per user.
	ReaderState = Table{Name: "reader_state", Columns: []string{"user_id", "active", "read_at", "floor_id"}}
	// PullAuthors are hybrid's authors whose posts are pulled.
	PullAuthors = Table{Name: "pull_authors", Columns: []string{"author_id"}}
	// PullFollows are hybrid's follows of pull authors, by follower.
	PullFollows = Table{Name: "pull_follows", Columns: []string{"user_id", "author_id"}}
	// PushEdges are selective's pushed edges, by author.
	PushEdges = Table{Name: "push_edges", Columns: []string{"author_id", "user_id"}}
	// PullEdges are selective's pulled edges, by follower.
	PullEdges = Table{Name: "pull_edges", Columns: []string{"user_id", "author_id"}}
	// UserRates are selective's decayed read and post counts per user.
	UserRates = Table{Name: "user_rates", Columns: []string{"user_id", "read_rate", "post_rate", "as_of"}}
	// Followers is the follow graph by followee, on Vitess, where the
	// push model's fan-out reads it from the author's shard.
	Followers = Table{Name: "followers", Columns: []string{"followee_id", "follower_id"}}
	// VitessMailbox is the push model's mailbox on Vitess, which copies
	// each message's author, body and time (see vitess.sql).
	VitessMailbox = Table{Name: "mailbox", Columns: []string{"user_id", "message_id", "author_id", "body", "created_at"}}
)

// DataTables returns the tables of m that hold the dataset (not
// pushpull_meta, nor state derived from reads), in the order a bulk load
// fills them; nil for an unknown model.
func DataTables(m Model) []Table {
	switch m {
	case Push, PushCompressed:
		return []Table{Follows, Messages, Mailbox}
	case PushCapped:
		return []Table{Follows, Messages, Mailbox, MailboxState}
	case Hybrid:
		return []Table{Follows, Messages, Mailbox, PullAuthors, PullFollows}
	case Selective:
		return []Table{Follows, Messages, Mailbox, PushEdges, PullEdges, UserRates}
	case PushActive:
		return []Table{Follows, Messages, Mailbox, ReaderState}
	case Pull, PullVitess:
		return []Table{Follows, Messages}
	case PushVitess:
		return []Table{Follows, Followers, Messages, VitessMailbox}
	case HybridVitess:
		return []Table{Follows, Followers, Messages, VitessMailbox, PullAuthors, PullFollows}
	}
	return nil
}

package reconcile

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pushpull/pushpull/timeline"
)

// WriteTable writes r as a summary: the walk's figures, then one line per
// kind of drift and view, with what was found and what is left.
func WriteTable(w io.Writer, r Report) error {
	status := "complete"
	if !r.Complete {
		status = fmt.Sprintf("stopped after user %d (resume to continue)", r.Last)
	}
	found, left := r.Found()
	fmt.Fprintf(w, "%s %s: %s; %d users, %d rows in %.1fs (%.0f rows/s)", mode(r.Repair), r.Model, status,
		r.Users, r.Rows, r.Seconds, r.RowsPerSecond)
	if r.Repair {
		fmt.Fprintf(w, "; %d entries repaired", r.Repaired)
	}
	fmt.Fprintln(w)
	if found == 0 {
		_, err := fmt.Fprintln(w, "no drift")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tview\tfound\tleft\t")
	for _, c := range r.Counts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", c.Kind, c.View, c.Found, c.Left)
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t\n", found, left)
	return tw.Flush()
}

// Querier is what SQL checks read through: a pool or a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// UsersIn is Checker.Users over SQL columns of user ids ("follows.follower_id",
// "mailbox.user_id"), each the first column of an index of its table: the
// next limit distinct ids above after that any of them holds, ascending.
func UsersIn(ctx context.Context, q Querier, after timeline.UserID, limit int, columns ...string) ([]timeline.UserID, error) {
	parts := make([]string, len(columns))
	args := make([]any, 0, 2*len(columns)+1)
	for i, c := range columns {
		table, column, ok := strings.Cut(c, ".")
		if !ok {
			return nil, fmt.Errorf("users: column %q is not table.column", c)
		}
		parts[i] = fmt.Sprintf("(SELECT DISTINCT %s AS u FROM %s WHERE %s > ? ORDER BY %s LIMIT ?)", column, table, column, column)
		args = append(args, after, limit)
	}
	args = append(args, limit)
	rows, err := q.QueryContext(ctx, strings.Join(parts, " UNION ")+" ORDER BY u LIMIT ?", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var us []timeline.UserID
	for rows.Next() {
		var u timeline.UserID
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		us = append(us, u)
	}
	return us, rows.Err()
}

package mysqlx

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pushpull/pushpull/timeline"
)

// Followers lists the users who follow author, from the follows table that
// the push and pull databases share: one range scan of its
// (followee_id, follower_id) index.
func Followers(ctx context.Context, db *sql.DB, author timeline.UserID) ([]timeline.UserID, error) {
	rows, err := db.QueryContext(ctx, `SELECT follower_id FROM follows WHERE followee_id = ?`, author)
	if err != nil {
		return nil, fmt.Errorf("followers of %d: %w", author, err)
	}
	defer rows.Close()
	var out []timeline.UserID
	for rows.Next() {
		var u timeline.UserID
		if err := rows.Scan(&u); err != nil {
			return nil, fmt.Errorf("followers of %d: %w", author, err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("followers of %d: %w", author, err)
	}
	return out, nil
}

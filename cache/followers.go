package cache

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pushpull/pushpull/timeline"
)

// FollowersFromDB returns a FollowersFunc that reads the follows table of a
// push or pull database (push.Store.DB, pull.Store.DB): one range scan of
// its (followee_id, follower_id) index.
func FollowersFromDB(db *sql.DB) FollowersFunc {
	return func(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error) {
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
}

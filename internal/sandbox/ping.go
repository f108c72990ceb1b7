package sandbox

import (
	"context"
	"database/sql"
	"time"

	"github.com/go-sql-driver/mysql"
)

func pingMariaDB(ctx context.Context, socket string) error {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = socket
	return probe(ctx, cfg, func(ctx context.Context, db *sql.DB) error { return db.PingContext(ctx) })
}

// probe runs check on a one-off connection pool to the server cfg names,
// with a second to connect and two seconds in all.
func probe(ctx context.Context, cfg *mysql.Config, check func(context.Context, *sql.DB) error) error {
	cfg.Timeout = time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return check(ctx, db)
}

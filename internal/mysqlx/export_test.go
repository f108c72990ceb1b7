package mysqlx

import (
	"context"
	"database/sql/driver"

	"github.com/go-sql-driver/mysql"
)

// MapErr is what a call under ctx on a pool of Open returns for the
// driver's err.
func MapErr(ctx context.Context, err error) error {
	return (&connector{addr: "tcp 127.0.0.1:1"}).mapErr(ctx, err)
}

// Connectors returns go-sql-driver's connector for dsn, with Config's
// settings, and the connector Open wraps around it.
func Connectors(dsn string) (raw, wrapped driver.Connector, err error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, nil, err
	}
	if raw, err = mysql.NewConnector(cfg); err != nil {
		return nil, nil, err
	}
	c, err := newConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	return raw, c, nil
}

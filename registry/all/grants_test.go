package all_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// grantBlock is the GRANT statement docs/operations.md gives for the
// user pushpull needs.
var grantBlock = regexp.MustCompile("(?s)GRANT .*? TO 'pushpull'@'%';")

// TestDocumentedGrants creates a user with exactly the privileges
// docs/operations.md says pushpull needs, on one database, and has every
// model on MariaDB create its schema there and post, follow, read,
// unfollow and delete as that user.
func TestDocumentedGrants(t *testing.T) {
	page, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	grant := grantBlock.FindString(string(page))
	if grant == "" {
		t.Fatal("docs/operations.md has no GRANT ... TO 'pushpull'@'%' statement")
	}
	ctx := context.Background()
	admin := testserver.Admin(t)
	defer admin.Close()
	user := fmt.Sprintf("pp_grants_%d", os.Getpid())
	if _, err := admin.ExecContext(ctx, fmt.Sprintf("CREATE USER '%s'@'localhost' IDENTIFIED BY 'secret'", user)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.ExecContext(context.Background(), fmt.Sprintf("DROP USER '%s'@'localhost'", user)) })
	cfg, err := mysqlx.Config(testserver.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, "secret"
	dsn := cfg.FormatDSN()
	for _, m := range registry.Models() {
		if m.Needs&registry.MariaDB == 0 || m.OnVitess() {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			db := testserver.Database(t)
			g := strings.NewReplacer("`pushpull\\_%`", "`"+db+"`", "'pushpull'@'%'", "'"+user+"'@'localhost'").Replace(grant)
			if _, err := admin.ExecContext(ctx, g); err != nil {
				t.Fatalf("%s: %v", g, err)
			}
			c := config(t, m, db)
			c.DSN = dsn
			s, err := m.Open(ctx, c)
			if err != nil {
				t.Fatalf("open %s as a user with the documented grants: %v", m.Name, err)
			}
			defer s.Close()
			timelinetest.Follow(t, s, 1, 2)
			msg := timelinetest.Post(t, s, 2, "granted")
			timelinetest.Newest(t, s, 1)
			timelinetest.Unfollow(t, s, 1, 2)
			if err := s.Delete(ctx, 2, msg.ID); err != nil {
				t.Fatalf("delete: %v", err)
			}
		})
	}
}

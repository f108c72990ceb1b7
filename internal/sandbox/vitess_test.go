package sandbox

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestVitess starts a Vitess cluster of two keyspaces of three shards,
// checks that vtgate routes to each shard and that message ids come from
// the sequence, that vtgate answers on its unix socket too, that vtcombo
// runs with vtcomboGOGC and serves Go's profiles, that vtgate answers nothing while vtcombo is frozen
// (Vtcombo) and again once it is thawed, and that Stop leaves no process
// of it behind.
func TestVitess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	ctx := context.Background()
	sb, err := Start(ctx, Options{Vitess: true, Shards: 3, Keyspaces: []string{"ks_a", "ks_b"}, BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	if sb.VtgateDSN == "" || sb.Shards != 3 || len(sb.Keyspaces) != 2 {
		t.Fatalf("sandbox %+v", sb)
	}
	cfg, err := mysql.ParseDSN(sb.VtgateDSN)
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := mysql.NewConnector(cfg)
	db := sql.OpenDB(conn)
	defer db.Close()
	want := "ks_a/-55 ks_a/55-aa ks_a/aa- ks_b/-55 ks_b/55-aa ks_b/aa- pushpull_seq/0"
	if got := strings.Join(queryStrings(t, db, "SHOW VITESS_SHARDS"), " "); got != want {
		t.Fatalf("shards %q, want %q", got, want)
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil || !strings.HasSuffix(version, "-Vitess") {
		t.Fatalf("version %q, %v", version, err)
	}

	// The tablets' mysqld, as root: a database per shard.
	my, err := sql.Open("mysql", sb.VitessMysqldDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	dbs := queryStrings(t, my, "SHOW DATABASES LIKE 'vt\\_ks\\_a\\_%'")
	if got, want := strings.Join(dbs, " "), "vt_ks_a_-55 vt_ks_a_55-aa vt_ks_a_aa-"; got != want {
		t.Errorf("the tablets' mysqld holds %q of ks_a, want %q", got, want)
	}
	// The same vtgate over its unix socket.
	scfg, err := mysql.ParseDSN(sb.VtgateSocketDSN)
	if err != nil || scfg.Net != "unix" {
		t.Fatalf("socket DSN %q: %v", sb.VtgateSocketDSN, err)
	}
	sconn, _ := mysql.NewConnector(scfg)
	sdb := sql.OpenDB(sconn)
	defer sdb.Close()
	if err := sdb.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil || !strings.HasSuffix(version, "-Vitess") {
		t.Fatalf("version over the socket %q, %v", version, err)
	}

	// vtcombo frozen, vtgate answers nothing; thawed, it answers again.
	vtcombo, err := sb.Vtcombo()
	if err != nil {
		t.Fatal(err)
	}
	// vtcombo runs with vtcomboGOGC and serves its profiles.
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(vtcombo.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "GOGC=" + strconv.Itoa(vtcomboGOGC); !slices.Contains(strings.Split(string(environ), "\x00"), want) {
		t.Errorf("vtcombo's environment lacks %s: %q", want, environ)
	}
	resp, err := http.Get("http://" + sb.VtgateStatus + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(cmdline), "vtcombo") {
		t.Errorf("/debug/pprof/cmdline: %s %q", resp.Status, cmdline)
	}
	// The pids the benchmark reads the cluster's CPU time from: vtcombo's,
	// and a mysqld's other than the sandbox's own.
	vtcomboPid, mysqldPid, err := sb.VitessPids()
	if err != nil {
		t.Fatal(err)
	}
	if vtcomboPid != vtcombo.Pid || mysqldPid <= 0 || mysqldPid == vtcomboPid || (sb.MariaDB() != nil && mysqldPid == sb.MariaDB().Pid()) {
		t.Fatalf("VitessPids %d, %d; vtcombo %d", vtcomboPid, mysqldPid, vtcombo.Pid)
	}
	if err := FreezeProcess(vtcombo); err != nil {
		t.Fatal(err)
	}
	frozen, cancel := context.WithTimeout(ctx, time.Second)
	err = db.QueryRowContext(frozen, "SELECT VERSION()").Scan(&version)
	cancel()
	if thaw := vtcombo.Signal(syscall.SIGCONT); thaw != nil {
		t.Fatal(thaw)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("vtgate answered with vtcombo (pid %d) frozen: %v", vtcombo.Pid, err)
	}
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatalf("vtgate after vtcombo thawed: %v", err)
	}

	pgid := sb.procs[len(sb.procs)-1].cmd.Process.Pid
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("no process group %d: %v", pgid, err)
	}
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pgid, 0); err == nil {
		t.Fatalf("process group %d still has members after Stop", pgid)
	}
}

// queryStrings runs query, whose rows are one string each, on db, and
// returns them, failing t on error.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

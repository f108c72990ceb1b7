package loadgen

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/registry"
	_ "github.com/pushpull/pushpull/registry/all"
	schema "github.com/pushpull/pushpull/sql"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true, Redis: true}) }

// TestBenchRefusesForeignDatabase: against an existing server, the
// benchmark drops and re-creates only databases pushpull made, unless
// forced.
func TestBenchRefusesForeignDatabase(t *testing.T) {
	ctx := context.Background()
	model := pull.ModelName(pull.StrategySP)
	m, err := registry.Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	pullDB := m.Database
	admin := testserver.Admin(t)
	defer admin.Close()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + pullDB,
		"CREATE DATABASE " + pullDB,
		"CREATE TABLE " + pullDB + ".invoices (id INT PRIMARY KEY)",
		"INSERT INTO " + pullDB + ".invoices VALUES (1)",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		admin := testserver.Admin(t)
		defer admin.Close()
		admin.Exec("DROP DATABASE IF EXISTS " + pullDB)
	})
	spec, _ := dataset.PaperSpec().Scaled(0.002)
	cfg := BenchConfig{DSN: testserver.DSN(t), Spec: spec, Models: []string{model}, Duration: 200 * time.Millisecond}
	_, err = RunBench(ctx, cfg)
	if !errors.Is(err, schema.ErrForeignDatabase) {
		t.Fatalf("got %v, want ErrForeignDatabase", err)
	}
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM " + pullDB + ".invoices").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the foreign table was touched: %d rows, %v", n, err)
	}

	// With Force it runs (here counting operations instead of time); a
	// second run reuses its own databases unforced.
	cfg.Force = true
	cfg.Ops = 30
	res, err := RunBench(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Model(model); m == nil || m.Retrieve.Ops != 30 || m.Submit.Ops != 30 {
		t.Fatalf("forced run of 30 ops per phase measured %+v", res.Models)
	}
	cfg.Ops = 0
	if res.Environment.Sandbox || res.Models[0].DiskBytes != 0 {
		t.Fatalf("a server given by DSN is not local: %+v", res.Environment)
	}
	cfg.Force = false
	if _, err := RunBench(ctx, cfg); err != nil {
		t.Fatalf("re-running over pushpull's own databases: %v", err)
	}
}

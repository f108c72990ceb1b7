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

// TestMixedPhaseCountsStalePages: the mixed phase checks every page it
// reads against the posts acknowledged before the read began. The models
// that keep pages in Redis, and the first push model, write their pages
// before a post is acknowledged, so none of their pages may be stale.
func TestMixedPhaseCountsStalePages(t *testing.T) {
	var models []string
	for _, m := range notOnVitess(registry.Listed()) {
		first := m.Family == registry.FamilyPush && len(models) == 0
		if m.Persistent() && (first || m.Needs&registry.Redis != 0) {
			models = append(models, m.Name)
		}
	}
	if len(models) < 2 {
		t.Fatalf("models %v: want a push model and those that keep state in Redis", models)
	}
	spec, _ := dataset.PaperSpec().Scaled(0.002)
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.002, Models: models, Ops: 200, ReadRatio: 0.5,
	}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range models {
		m := res.Model(name)
		if m == nil || m.Mixed == nil {
			t.Fatalf("%s: no mixed phase: %+v", name, m)
		}
		pages, stale := m.Extra["mixed_pages"], m.Extra["mixed_stale_pages"]
		t.Logf("%s: %v of %v pages stale", name, stale, pages)
		// The pages checked include those read while the meters took
		// their first snapshot, before the phase counts operations.
		if pages < 1 || stale != 0 {
			t.Errorf("%s: %v of %v pages stale in a mixed phase of %d operations", name, stale, pages, m.Mixed.Ops)
		}
	}
}

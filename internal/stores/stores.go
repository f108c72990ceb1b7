// Package stores opens a timeline.Store by model name, so that the CLI, the
// benchmark and the tests name backends the same way ("push", "pull-sp",
// ...) and adding a backend is one entry here.
package stores

import (
	"context"
	"fmt"
	"strings"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
)

// Model names.
const (
	Memory     = "memory"
	Push       = "push"
	PullSP     = "pull-sp"
	PullClient = "pull-client"
	PullNaive  = "pull-naive"
)

// SQLModels are the models backed by MySQL/MariaDB, in benchmark order.
var SQLModels = []string{Push, PullSP, PullClient, PullNaive}

// Models are all model names.
var Models = append([]string{Memory}, SQLModels...)

// Config is what a SQL model needs to open.
type Config struct {
	DSN string
	// Database overrides the model's default database (pushpull_push or
	// pushpull_pull).
	Database string
	// MaxConns caps the connection pool; 0 means the store's default.
	MaxConns int
	// Force lets the schema be applied to a database pushpull did not
	// create.
	Force bool
}

// Open opens model. Unknown names give an error listing the known ones.
func Open(ctx context.Context, model string, cfg Config) (timeline.Store, error) {
	switch model {
	case Memory:
		return timeline.NewMemory(), nil
	case Push:
		return push.Open(ctx, push.Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force})
	}
	if strategy, ok := strings.CutPrefix(model, "pull-"); ok {
		return pull.Open(ctx, pull.Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force, Strategy: pull.Strategy(strategy)})
	}
	return nil, fmt.Errorf("unknown model %q (want one of %s)", model, strings.Join(Models, ", "))
}

// Database returns the default database of a SQL model.
func Database(model string) string {
	if model == Push {
		return push.DefaultDatabase
	}
	return pull.DefaultDatabase
}

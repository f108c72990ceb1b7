package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/async"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline/counter"
)

func newFanoutCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var workers, chunk int
	var poll, every time.Duration
	cmd := &cobra.Command{
		Use:   "fanout [--dsn DSN] [--database NAME] [--workers N] [--chunk N] [--poll D] [--progress D]",
		Short: "Run " + async.ModelName + " fan-out workers until interrupted",
		Long: `fanout applies the ` + async.ModelName + ` model's queued fan-out jobs, as a process of
its own beside the application's: each job writes a posted message into the
mailbox of every follower of its author, --chunk followers per transaction.
Any number of fanout processes and stores may serve one database; a job is
claimed with SELECT ... FOR UPDATE SKIP LOCKED, and a process killed at any
moment loses nothing: the chunk it had not committed is applied by the next
worker, and a chunk applied twice writes nothing twice.

A store opened as ` + async.ModelName + ` runs its own workers too (option workers; -1
for none). It runs until interrupted (Ctrl-C or SIGTERM), printing a line of
progress to stderr every --progress: jobs finished, chunks and mailbox rows
written, errors retried, jobs still queued, and the fan-out lag of the jobs
finished since the previous line.`,
		Example: `  pushpull fanout --workers 4
  pushpull fanout --database pushpull_push --chunk 500 --progress 5s`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("fanout takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case workers < 1 || workers > async.MaxWorkers:
				return usagef("--workers %d: want 1 to %d", workers, async.MaxWorkers)
			case chunk < 1 || chunk > async.MaxChunk:
				return usagef("--chunk %d: want 1 to %d", chunk, async.MaxChunk)
			case poll <= 0 || every <= 0:
				return usagef("--poll and --progress must be above 0")
			}
			dsn, err := sf.resolveDSN()
			if err != nil {
				return err
			}
			if err := checkDatabase(sf.database); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, err := async.Open(ctx, push.Config{DSN: dsn, Database: sf.database, MaxConns: workers + 2}, async.Options{Workers: -1})
			if err != nil {
				return err
			}
			defer s.Close()
			return runFanout(ctx, s, workers, chunk, poll, every, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&sf.dsn, "dsn", "", "go-sql-driver DSN of the server, e.g. 'user:pass@tcp(127.0.0.1:3306)/' (default $"+dsnEnv+")")
	cmd.Flags().StringVar(&sf.database, "database", "", "database of the "+async.ModelName+" store (default "+push.DefaultDatabase+")")
	cmd.Flags().IntVar(&workers, "workers", async.DefaultWorkers, "workers in this process")
	cmd.Flags().IntVar(&chunk, "chunk", async.DefaultChunk, "followers written per transaction")
	cmd.Flags().DurationVar(&poll, "poll", async.DefaultPoll, "how often an idle worker looks at the queue")
	cmd.Flags().DurationVar(&every, "progress", time.Second, "interval between progress lines")
	return cmd
}

// runFanout runs the workers on s's database until ctx ends, printing
// progress to w.
func runFanout(ctx context.Context, s *async.Store, workers, chunk int, poll, every time.Duration, w io.Writer) error {
	stats := async.NewStats()
	var wg sync.WaitGroup
	for range workers {
		wk := &async.Worker{DB: s.DB(), Chunk: chunk, Stats: stats, Poll: poll}
		wg.Go(func() { wk.Run(ctx) })
	}
	fmt.Fprintf(w, "fanout: %d workers, chunks of %d followers; interrupt to stop\n", workers, chunk)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			fmt.Fprintf(w, "fanout: stopped; %s\n", progressLine(stats.Counters(), -1, nil))
			return nil
		case <-tick.C:
			queued, err := async.Pending(ctx, s.DB())
			if err != nil {
				queued = -1 // the database is away; the workers retry
			}
			fmt.Fprintf(w, "fanout: %s\n", progressLine(stats.Counters(), queued, stats.TakeLag()))
		}
	}
}

// progressLine describes the counts, the queue (if known, >= 0) and the
// lags of the jobs finished in a stretch (nil or empty for none).
func progressLine(c map[string]int64, queued int64, lag *hdrhistogram.Histogram) string {
	line := fmt.Sprintf("%d jobs, %d chunks, %d rows, %d errors", c[counter.FanoutJobs], c[counter.FanoutChunks],
		c[counter.FanoutRows], c[counter.FanoutErrors])
	if queued >= 0 {
		line += fmt.Sprintf(", %d queued", queued)
	}
	if f := results.LagFigures("", lag); f != nil {
		line += fmt.Sprintf(", lag p50 %.1f ms, p99 %.1f ms, max %.1f ms", f["lag_p50_ms"], f["lag_p99_ms"], f["lag_max_ms"])
	}
	return line
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/sweep"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Sweep defaults: shorter phases and a smaller dataset than the paper's
// run, because a sweep runs the benchmark once per value.
const (
	sweepScale    = "0.2"
	sweepDuration = "2s"
	sweepWarmup   = "300ms"
)

// sweepModels are the models a sweep measures unless told: the paper's
// models that are not slow by design.
func sweepModels() []string {
	var out []string
	for _, m := range registry.Listed() {
		if m.Bench.Paper && !m.Bench.Slow {
			out = append(out, m.Name)
		}
	}
	return out
}

func newSweepCmd() *cobra.Command {
	var (
		bf       benchFlags
		vary     string
		values   []float64
		out      string
		maxRows  int64
		noTables bool
	)
	cmd := &cobra.Command{
		Use:   "sweep --vary PARAM --values V1,V2,... [flags]",
		Short: "Run the benchmark at several values of one parameter and plot how each design grows",
		Long:  sweepLong(),
		Example: `  pushpull sweep --vary followers --values 10,100,1000 --models {push},{pull}   # push's post cost against the author's followers
  pushpull sweep --vary followees --values 10,30,100,300,1000 --models {push},{pull}
  pushpull sweep --vary messages --values 0.1,0.3,1,3,10 --scale 1
  pushpull sweep --vary read-share --values 0.5,0.8,0.9,0.95,0.99
  pushpull sweep --vary option:threshold --values 30,100,300,1000,3000 --models hybrid,{push} --graph powerlaw`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if vary == "" || len(values) == 0 {
				return usagef("sweep needs --vary PARAM and --values V1,V2,... (see --help)")
			}
			param, err := sweep.ParseParam(vary)
			if err != nil {
				return &usageError{fmt.Errorf("--vary: %w", err)}
			}
			if param == sweep.Scale && cmd.Flags().Changed("scale") {
				return usagef("--vary scale sets the scale; leave out --scale")
			}
			if !cmd.Flags().Changed("models") {
				bf.models = sweepModels()
			}
			if err := bf.check(cmd); err != nil {
				return err
			}
			if maxRows < 0 {
				return usagef("--max-mailbox-rows %d: want a positive count, or 0 for the default", maxRows)
			}
			stderr := cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg := sweep.Config{
				Bench: bf.cfg, Base: bf.base, Param: param, Values: values, MaxMailboxRows: maxRows,
				Command: commandLine(cmd), Progress: stderr,
			}
			s, runErr := sweep.Run(ctx, cfg)
			var ve *sweep.ValueError
			if errors.As(runErr, &ve) {
				return &usageError{runErr}
			}
			if s == nil || len(s.Points) == 0 {
				return withHint(runErr)
			}
			if err := saveLongRun(cmd, results.RunDir(out, s.StartedAt), results.SweepFiles,
				func(dir string) error { return results.SaveSweep(dir, s) },
				func(w io.Writer) { writeSweepTable(w, s) }, noTables); err != nil {
				return errors.Join(runErr, err)
			}
			if runErr != nil {
				return withHint(runErr)
			}
			if s.Failed() {
				return errors.New("a run of the sweep failed; see its failures in sweep.json")
			}
			return nil
		},
	}
	f := cmd.Flags()
	bf.register(f)
	setDefault(f, "scale", sweepScale)
	setDefault(f, "duration", sweepDuration)
	setDefault(f, "extra-duration", sweepDuration)
	setDefault(f, "warmup", sweepWarmup)
	f.Lookup("models").Usage = "models to measure, comma-separated (default " + strings.Join(sweepModels(), ",") + ")"
	f.StringVar(&vary, "vary", "", "the parameter to vary: "+paramNames())
	f.Float64SliceVar(&values, "values", nil, "its values, comma-separated, in the order to run them")
	f.Int64Var(&maxRows, "max-mailbox-rows", sweep.DefaultMaxMailboxRows, "skip the push models at a value whose mailbox would hold more rows than this (disk and load time)")
	f.StringVar(&out, "out", "results/sweeps", "directory under which the sweep's directory is made")
	f.BoolVar(&noTables, "quiet", false, "print no table (the files are still saved)")
	return cmd
}

// saveLongRun saves what a long run measured into dir (also when the run
// ended in an error: the parts measured before it took long enough),
// prints its table unless quiet, and names the files saved on stderr.
func saveLongRun(cmd *cobra.Command, dir string, files []string, save func(dir string) error, table func(io.Writer), quiet bool) error {
	if err := save(dir); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintln(cmd.OutOrStdout())
		table(cmd.OutOrStdout())
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "saved %s/{%s}\n", dir, strings.Join(files, ","))
	return nil
}

func paramNames() string {
	var names []string
	for _, p := range sweep.Params {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

func sweepLong() string {
	var params strings.Builder
	for _, p := range sweep.Params {
		fmt.Fprintf(&params, "  %-11s %s\n", p, p.Help())
	}
	d, _ := time.ParseDuration(sweepDuration)
	w, _ := time.ParseDuration(sweepWarmup)
	perModel := 3 * (d + w)
	return fmt.Sprintf(`sweep runs the benchmark (see pushpull bench --help) once per value of one
parameter, each time on a fresh dataset and a fresh sandbox, and plots how
each model's rate, p99 latency, data size and cost per operation (rows read
and written, from MariaDB's own counters) grow with it:

%s
Every value is checked before anything runs. The push models are skipped at
a value whose mailbox (one row per message and follower) would hold more
than --max-mailbox-rows rows, and the sweep says so.

The other flags are bench's, with shorter defaults: --scale %s (2,000 users,
200,000 messages), --duration and --extra-duration %s, --warmup %s. Each
point takes the dataset's generation and load (a few seconds at the default
scale, about 2 minutes at --scale 1) plus, per model, three phases (newest
page, older page, submission) of warm-up and duration: %v, and as much again
with --mix. The default models are %s: about a minute per point.

The sweep is saved under --out as <UTC timestamp>/sweep.json (every point's
whole result), sweep.csv (a run's CSV per point, after the parameter and its
value), and sweep-rate.png, sweep-p99.png, sweep-cost.png (a panel per phase,
a line per model) and sweep-size.png. Axes are logarithmic where the values
span 10x or more. A table of the rates and costs goes to stdout. With
--find-rate, each run also searches every model's highest rate of the mixed
traffic at p99 ≤ --slo: the table gets a section of it, sweep-rate.png a
panel, and sweep.csv a row per model and point (phase rate_search).`,
		params.String(), sweepScale, sweepDuration, sweepWarmup, perModel, strings.Join(sweepModels(), ", "))
}

// sweepSLO is the objective of the sweep's rate searches, e.g. "50 ms".
func sweepSLO(s *results.Sweep) string {
	return strconv.FormatFloat(s.SearchSLOMs(), 'g', -1, 64) + " ms"
}

// writeSweepTable prints, per phase, a row per value with each model's rate
// and rows read and written per operation, and, when the runs searched for
// it (--find-rate), each model's highest rate at p99 within the objective.
func writeSweepTable(w io.Writer, s *results.Sweep) {
	names := s.ModelNames()
	phase := func(get func(*results.Model) *results.Phase) func(*results.Model) (string, bool) {
		return func(m *results.Model) (string, bool) {
			p := get(m)
			if p == nil || !p.Ran() {
				return "", false
			}
			cell := fmt.Sprintf("%.0f/s", p.OpsPerSec)
			if c := p.Cost; c != nil {
				cell += fmt.Sprintf("; %.1f", c[cost.RowsRead]+c[cost.RowsWritten])
			}
			return cell, true
		}
	}
	sections := []struct {
		label string
		cell  func(*results.Model) (string, bool)
	}{
		{"submission (msg/s; rows read+written per post)", phase(func(m *results.Model) *results.Phase { return &m.Submit })},
		{"newest page (timelines/s; rows read+written per page)", phase(func(m *results.Model) *results.Phase { return &m.Retrieve })},
		{"older page (timelines/s; rows read+written per page)", phase(func(m *results.Model) *results.Phase { return &m.RetrieveOlder })},
		{"mixed traffic (ops/s; rows read+written per op)", phase(func(m *results.Model) *results.Phase {
			if m.Traffic == nil {
				return nil
			}
			return &m.Traffic.Total
		})},
		{fmt.Sprintf("highest rate of the mixed traffic at p99 ≤ %s (ops/s)", sweepSLO(s)), func(m *results.Model) (string, bool) {
			if !m.Traffic.Searched() {
				return "", false
			}
			if m.Traffic.Search.BestPerSec <= 0 {
				return "none held", true
			}
			return fmt.Sprintf("%.0f/s", m.Traffic.Search.BestPerSec), true
		}},
	}
	for _, sec := range sections {
		var rows []string
		for _, pt := range s.Points {
			cells := []string{strconv.FormatFloat(pt.Value, 'g', -1, 64)}
			ran := false
			for _, name := range names {
				cell := "–"
				if pt.Result != nil {
					if m := pt.Result.Model(name); m != nil {
						if c, ok := sec.cell(m); ok {
							ran, cell = true, c
						}
					} else if _, skipped := pt.Skipped[name]; skipped {
						cell = "skipped"
					}
				}
				cells = append(cells, cell)
			}
			if ran {
				rows = append(rows, strings.Join(cells, "\t"))
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s against %s\n", sec.label, s.Label)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\t%s\t\n", s.Param, strings.Join(names, "\t"))
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t\n", r)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

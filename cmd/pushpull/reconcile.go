package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
)

// exitDrift is reconcile's exit code when drift is left: found by a
// check, or left by a repair.
const exitDrift = 3

// driftError is drift left at the end of a reconcile run.
type driftError struct{ left int64 }

func (e *driftError) Error() string { return fmt.Sprintf("%d drift items left", e.left) }

func newReconcileCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var (
		model, jsonOut, statePath string
		repair                    bool
		batch, keep               int
		rate                      float64
		timeout                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "reconcile --model MODEL [--repair] [--batch N] [--rate ROWS] [--timeout D] [--state FILE] [--json FILE] [--keep N]",
		Short: "Check a model's derived views against the record, and repair them",
		Long: `reconcile walks the users of a model's database in batches of --batch and
checks every view the model keeps beside the record (the follows and
messages tables): mailboxes, floors and entry counts, active-reader flags,
fan-out jobs, pulled authors and edges, feeds and indexes in Redis, author
lists, indexes, follow tokens and cached pages in memcached, and on Vitess
the mailbox's copies of its messages and the followers table. Each batch
is compared with what the model's rule says its views must hold: in one
consistent snapshot where the views are in one database, in two looks a
second apart where they are in Redis, memcached or on a sharded keyspace,
so that writes running meanwhile are never taken for drift. It reports
drift by kind:

  missing      an entry the rule says must be there is not
  extra        an entry of the record the rule says must not be there
  unfollowed   an entry of an author the user does not follow
  deleted      an entry of a message that is gone
  wrong-state  a floor, count or flag that disagrees with its entries
  stale        memcached or Redis state, or a copy of a message, that differs
               from the record

With --repair it fixes what it finds, re-checking each item under the locks
the model's writes take, so it is safe under live traffic: it writes only
derived state, never the record, removes an entry only while the record says
it must not be there, and adds one only while the record says it may; a
drifted key in Redis or memcached is deleted, for the next read to rebuild
from the record. Each repaired batch is checked again. A repair is
idempotent.

It reads at most --rate rows a second (0: no limit), averaged over the walk:
by default 20,000, and 5,000 for a model on Vitess, where every row read
costs vtgate and a tablet besides mysqld, on the cores the traffic uses
(docs/reconcile.md says what each cost live traffic).
A server that stops answering ends the run after --timeout (each list of
users, check of a batch and repair of a user must finish within it) with an
error naming the batch; with --state, the next run resumes there.
On a terminal it shows its progress on stderr. At the end it prints a summary
table on stdout (or, with --json -, the report as JSON), and with --json FILE
writes the report there too. With --state FILE it saves the report after
every batch; a later run given the same file resumes after the last user
finished, adding to its counts (stop a run with Ctrl-C). A complete state
file starts a new walk.

The exit code is 0 when no drift is left, 3 when some is (found by a check,
or not fixed by a repair), 2 for a bad command line, 1 for any other error.

--model takes the models that declare a checker (see --model below); the
others are refused. docs/reconcile.md gives each model's rule.`,
		Example: `  pushpull reconcile --model {push}
  pushpull reconcile --model {push} --repair --rate 5000 --state reconcile.json
  pushpull reconcile --model {push} --json - > report.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := storeModel(model)
			if err != nil {
				return err
			}
			if m.Reconcile == nil {
				return usagef("--model %s declares no checker of its views: want one of %s", model, strings.Join(withView(), ", "))
			}
			switch {
			case batch < 1 || batch > reconcile.MaxBatch:
				return usagef("--batch %d: want 1 to %d users", batch, reconcile.MaxBatch)
			case rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0):
				return usagef("--rate %v: want rows a second, 0 for no limit", rate)
			case keep < 0:
				return usagef("--keep %d: want 0 or more drift items", keep)
			case timeout <= 0:
				return usagef("--timeout %v: want a duration above 0", timeout)
			}
			if !cmd.Flags().Changed("rate") {
				rate = m.ReconcileRate()
			}
			opts := reconcile.Options{Batch: batch, Rate: rate, Repair: repair, Keep: keep, Timeout: timeout}
			if rate == 0 {
				opts.Rate = math.Inf(1)
			}
			if keep == 0 {
				opts.Keep = -1
			}
			if statePath != "" {
				from, err := readState(statePath, m.Name, repair)
				if err != nil {
					return err
				}
				opts.From = from
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, err := sf.openStore(ctx, m)
			if err != nil {
				return err
			}
			defer s.Close()
			c, err := m.Checker(s)
			if err != nil {
				return err
			}
			progress := newProgress(cmd.ErrOrStderr())
			var saveErr error
			opts.Progress = func(r reconcile.Report) {
				r.Model = m.Name
				progress.show(r)
				if statePath != "" && saveErr == nil {
					saveErr = writeJSONFile(statePath, r)
				}
			}
			r, runErr := reconcile.Run(ctx, c, opts)
			progress.done()
			r.Model = m.Name
			if statePath != "" {
				if err := writeJSONFile(statePath, r); err != nil && saveErr == nil {
					saveErr = err
				}
			}
			if err := writeReport(cmd.OutOrStdout(), r, jsonOut); err != nil {
				return err
			}
			switch {
			case runErr != nil && ctx.Err() != nil && cmd.Context().Err() == nil:
				hint := ""
				if statePath != "" {
					hint = fmt.Sprintf("; run again with --state %s to resume", statePath)
				}
				return fmt.Errorf("interrupted after user %d%s", r.Last, hint)
			case runErr != nil:
				return runErr
			case saveErr != nil:
				return fmt.Errorf("saving --state: %w", saveErr)
			}
			if _, left := r.Found(); left > 0 {
				return &driftError{left}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model whose views to check, one of: "+strings.Join(withView(), ", "))
	cmd.Flags().BoolVar(&repair, "repair", false, "fix the drift found")
	cmd.Flags().IntVar(&batch, "batch", reconcile.DefaultBatch, "users checked per batch (one snapshot each)")
	cmd.Flags().Float64Var(&rate, "rate", reconcile.DefaultRate, fmt.Sprintf("rows read a second at most; 0 for no limit (on Vitess, %d unless given)", reconcile.DefaultVitessRate))
	cmd.Flags().DurationVar(&timeout, "timeout", reconcile.DefaultTimeout, "longest wait for a server: each list of users, check of a batch and repair of a user")
	cmd.Flags().StringVar(&statePath, "state", "", "file to save progress to after every batch, and to resume from")
	cmd.Flags().StringVar(&jsonOut, "json", "", "write the report as JSON to this file; - for stdout instead of the table")
	cmd.Flags().IntVar(&keep, "keep", reconcile.DefaultKeep, "drift items the report lists (the counts have them all)")
	sf.register(cmd)
	return cmd
}

// withView names the models that declare a checker of their views.
func withView() []string {
	var out []string
	for _, m := range registry.Listed() {
		if m.Persistent() && m.Reconcile != nil {
			out = append(out, m.Name)
		}
	}
	return out
}

// readState reads the report of a run to resume from path: nil if there
// is no file or its run is complete.
func readState(path, model string, repair bool) (*reconcile.Report, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, usagef("--state: %v", err)
	}
	var r reconcile.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, usagef("--state %s is not a reconcile report: %v", path, err)
	}
	switch {
	case r.Complete:
		return nil, nil
	case r.Model != model:
		return nil, usagef("--state %s is a run of %s, not of %s", path, r.Model, model)
	case r.Repair != repair:
		return nil, usagef("--state %s is a run with --repair=%v; give the same, or another file", path, r.Repair)
	}
	return &r, nil
}

// writeJSONFile writes v as indented JSON to path, through a temporary
// file renamed over it, so that an interrupted write leaves the old one.
func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// writeReport prints r: the table on w, or the JSON on w (jsonOut "-"),
// and the JSON to the file jsonOut names.
func writeReport(w io.Writer, r reconcile.Report, jsonOut string) error {
	switch jsonOut {
	case "-":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "":
	default:
		if err := writeJSONFile(jsonOut, r); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	return reconcile.WriteTable(w, r)
}

// progress rewrites one line of progress on a terminal, at most ten times
// a second; elsewhere it writes nothing.
type progress struct {
	w    io.Writer
	tty  bool
	last time.Time
	wide int
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) show(r reconcile.Report) {
	if !p.tty || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	found, _ := r.Found()
	line := fmt.Sprintf("%s: %d users, %d rows, %.0f rows/s, %d drift, last user %d", r.Model, r.Users, r.Rows, r.RowsPerSecond, found, r.Last)
	fmt.Fprintf(p.w, "\r%-*s", p.wide, line)
	p.wide = max(p.wide, len(line))
}

func (p *progress) done() {
	if p.tty && p.wide > 0 {
		fmt.Fprintf(p.w, "\r%*s\r", p.wide, "")
	}
}

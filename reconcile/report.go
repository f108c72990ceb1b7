package reconcile

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes r as a summary: the walk's figures, then one line per
// kind of drift and view, with what was found and what is left.
func WriteTable(w io.Writer, r Report) error {
	status := "complete"
	if !r.Complete {
		status = fmt.Sprintf("stopped after user %d (resume to continue)", r.Last)
	}
	found, left := r.Found()
	fmt.Fprintf(w, "%s %s: %s; %d users, %d rows in %.1fs (%.0f rows/s)", mode(r.Repair), r.Model, status,
		r.Users, r.Rows, r.Seconds, r.RowsPerSecond)
	if r.Repair {
		fmt.Fprintf(w, "; %d entries repaired", r.Repaired)
	}
	fmt.Fprintln(w)
	if found == 0 {
		_, err := fmt.Fprintln(w, "no drift")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tview\tfound\tleft\t")
	for _, c := range r.Counts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", c.Kind, c.View, c.Found, c.Left)
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t\n", found, left)
	return tw.Flush()
}

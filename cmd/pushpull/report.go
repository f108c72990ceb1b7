package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/results"
)

func newReportCmd() *cobra.Command {
	var showCost bool
	cmd := &cobra.Command{
		Use:   "report RUN [RUN2]",
		Short: "Show a saved benchmark run, or compare two",
		Long: `report re-renders the table of a run saved by 'pushpull bench' (a directory
holding result.json, or the file itself). Given two runs it shows them side by
side, per model and figure (sizes, each phase's rate and p99, and the highest
rate within the latency objective where a run searched for it, --find-rate),
with the ratio of the second to the first.`,
		Example: `  pushpull report evidence/bench
  pushpull report evidence/bench results/runs/20261123T101500Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("report takes one run directory, or two to compare; got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := results.Load(args[0])
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if err := results.WriteTable(cmd.OutOrStdout(), a); err != nil {
					return err
				}
				if !showCost {
					return nil
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return results.WriteCostTable(cmd.OutOrStdout(), a)
			}
			b, err := results.Load(args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "A: %s\nB: %s\n\n", args[0], args[1])
			return results.WriteComparison(cmd.OutOrStdout(), a, b)
		},
	}
	cmd.Flags().BoolVar(&showCost, "cost", false, "also print the run's cost per operation of every phase")
	return cmd
}

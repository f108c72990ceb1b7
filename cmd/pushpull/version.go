package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of pushpull and how it was built",
		Long: `version prints the module path and version of this binary, the Go version
and platform it was built with, and, when the build recorded it, the version
control revision and whether the work tree had uncommitted changes.

Builds made with -buildvcs=false, or outside a git checkout, record no
revision; version says so.`,
		Example: `  pushpull version`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			info, ok := debug.ReadBuildInfo()
			if !ok {
				fmt.Fprintf(out, "pushpull (no build information)\ngo: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			}
			version := info.Main.Version
			if version == "" {
				version = "(unknown)"
			}
			fmt.Fprintf(out, "pushpull %s\n", version)
			fmt.Fprintf(out, "module:   %s\n", info.Main.Path)
			fmt.Fprintf(out, "go:       %s %s/%s\n", info.GoVersion, runtime.GOOS, runtime.GOARCH)
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if rev := settings["vcs.revision"]; rev != "" {
				fmt.Fprintf(out, "revision: %s", rev)
				if settings["vcs.modified"] == "true" {
					fmt.Fprint(out, " (with uncommitted changes)")
				}
				fmt.Fprintln(out)
				if t := settings["vcs.time"]; t != "" {
					fmt.Fprintf(out, "commit time: %s\n", t)
				}
			} else {
				fmt.Fprintln(out, "revision: not recorded (built with -buildvcs=false or outside a git checkout)")
			}
			return nil
		},
	}
}

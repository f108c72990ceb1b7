// Command pushpull runs the pushpull home-timeline engine by hand: it starts
// private database servers, applies the schema, posts, follows and reads
// timelines on the push and pull models, and demonstrates that every model
// serves the same timelines.
//
// Run `pushpull --help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pushpull/pushpull/timeline"
)

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line or its input was wrong
	// exitDrift (3): reconcile left drift (reconcile.go).
)

// execute runs one pushpull command line and returns the process exit code.
// Errors are printed to stderr as "pushpull: <message>".
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	root := newRootCmd(getenv)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "pushpull: %v\n", err)
	code := exitCode(err)
	if code == exitUsage && cmd != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return code
}

// exitCode maps an error to the process exit code: 2 for a bad command line
// or bad input (anything matching timeline.ErrInvalidInput), 3 for drift
// reconcile left, 1 otherwise.
func exitCode(err error) int {
	var ue *usageError
	var de *driftError
	switch {
	case errors.As(err, &ue) || errors.Is(err, timeline.ErrInvalidInput):
		return exitUsage
	case errors.As(err, &de):
		return exitDrift
	}
	return exitError
}

// usageError is a mistake on the command line: an unknown command or flag, a
// missing flag, the wrong number of arguments.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

//go:build tools

// Package tools pins the Vitess commands the sandbox runs. It is a module of
// its own so that Vitess's few hundred dependencies stay out of pushpull's
// go.mod; package vitess (Install) builds the commands from it.
package tools

import (
	_ "vitess.io/vitess/go/cmd/mysqlctl"
	_ "vitess.io/vitess/go/cmd/vtcombo"
	_ "vitess.io/vitess/go/cmd/vttestserver"
)

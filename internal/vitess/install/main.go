// Command install builds the Vitess programs the sandbox runs, unless they
// are built already, and prints where they are. `make deps` runs it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pushpull/pushpull/internal/vitess"
)

func main() {
	dir, err := vitess.Install(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(dir)
}

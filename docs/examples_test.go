package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goBlocks returns the fenced Go code blocks of a Markdown page.
func goBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestExamplesCompile: the Go examples of the README and the library page
// compile against the code as it is, so that they cannot go stale. An
// example is a block with a function of its own; one without a package
// clause is taken as a file of a package of its own. Blocks of a few
// statements, shown inside a function the reader writes, are not.
func TestExamplesCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the examples with the go command")
	}
	n := 0
	for _, page := range []string{filepath.Join(root, "README.md"), "contract.md"} {
		for _, block := range goBlocks(t, page) {
			if !strings.HasPrefix(block, "func ") && !strings.Contains(block, "\nfunc ") {
				continue
			}
			if !strings.HasPrefix(strings.TrimSpace(block), "package ") {
				block = "package example\n\n" + block
			}
			// A folder whose name starts with "_" is one that ./... leaves
			// out, so that no other go command of the run sees it.
			dir, err := os.MkdirTemp(root, "_example")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.WriteFile(filepath.Join(dir, "example.go"), []byte(block), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "vet", "./"+filepath.Base(dir))
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("an example of %s does not compile: %v\n%s\n%s", page, err, out, block)
			}
			n++
		}
	}
	if n < 2 {
		t.Fatalf("found %d Go examples, want the README's and the library page's", n)
	}
}

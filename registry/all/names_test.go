package all_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/registry"
)

// TestNoModelNamesOutsideModels: the benchmark (package loadgen and every
// package below it), the results and the command line learn models from
// the registry, so none of their Go files (tests aside) holds a model's
// name in a string literal: neither a literal that is a model's name, nor
// one that mentions a model whose name is not a plain word (such as
// "pull-sp" or "push+memcache"). A family's name may be a model's too
// ("push" is both): results names the paper's families.
func TestNoModelNamesOutsideModels(t *testing.T) {
	families := map[string]bool{string(registry.FamilyPush): true, string(registry.FamilyPull): true}
	// The generator's vocabulary of message bodies holds English words, one
	// of which names the memory model.
	vocabulary := filepath.Join("../../loadgen", "dataset", "body.go")
	var exact []string
	var mentioned []*regexp.Regexp
	for _, m := range registry.Listed() {
		exact = append(exact, m.Name)
		if strings.ContainsAny(m.Name, "-+") {
			mentioned = append(mentioned, regexp.MustCompile(`(^|[^\w+-])`+regexp.QuoteMeta(m.Name)+`($|[^\w+-])`))
		}
	}
	if len(exact) < 5 {
		t.Fatalf("only %d models registered: %v", len(exact), exact)
	}
	// The benchmark's packages are the tree below loadgen; results and
	// the command are one folder each.
	var files []string
	err := filepath.WalkDir("../../loadgen", func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../../results", "../../cmd/pushpull", "../../reconcile"} {
		matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			for _, name := range exact {
				if s == name && !families[s] && path != vocabulary {
					t.Errorf("%s: the literal %q is a model's name", fset.Position(lit.Pos()), s)
				}
			}
			for _, re := range mentioned {
				if loc := re.FindString(s); loc != "" {
					t.Errorf("%s: a literal mentions a model: %q", fset.Position(lit.Pos()), strings.TrimSpace(loc))
				}
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked only %d files", checked)
	}
	if !slices.Contains(files, vocabulary) {
		t.Fatalf("the vocabulary %s is not among the files checked: has it moved?", vocabulary)
	}
}

package docs

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/registry"
	_ "github.com/pushpull/pushpull/registry/all" // every model
)

var updateDoc = flag.Bool("update", false, "TestOptionsDoc: rewrite the options table of designs.md from the declarations")

// designsDoc is the page whose "Model options" section lists every
// declared option, between these markers.
const (
	designsDoc   = "designs.md"
	tableBegins  = "<!-- options table: generated from the models' declarations by TestOptionsDoc (docs/options_test.go); go test ./docs -run TestOptionsDoc -update rewrites it -->"
	tableEnds    = "<!-- end of the options table -->"
	tableColumns = "| option | models | default | values | what it sets |\n| --- | --- | --- | --- | --- |\n"
)

// optionsTable is the Markdown table of every declared option: one row
// per declaration, with the models that declare it alike (in the order
// --help lists models, variants last as +VARIANT).
func optionsTable() string {
	type row struct {
		o      registry.Option
		owners []string
	}
	var rows []*row
	add := func(owner string, opts []registry.Option) {
		for _, o := range opts {
			i := slices.IndexFunc(rows, func(r *row) bool { return sameOption(r.o, o) })
			if i < 0 {
				rows = append(rows, &row{o: o})
				i = len(rows) - 1
			}
			rows[i].owners = append(rows[i].owners, owner)
		}
	}
	for _, m := range registry.Models() {
		add(m.Name, m.Options)
	}
	for _, v := range registry.Variants() {
		add("`+"+v.Name+"`", v.Options)
	}
	var b strings.Builder
	b.WriteString(tableColumns)
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", r.o.Name, strings.Join(r.owners, ", "), r.o.Default, r.o.Values(), r.o.Help)
	}
	return b.String()
}

// sameOption reports whether two declarations are alike in all but
// their owner.
func sameOption(a, b registry.Option) bool {
	return a.Name == b.Name && a.Kind == b.Kind && a.Default == b.Default && a.Help == b.Help && a.Values() == b.Values()
}

// TestOptionsDoc: the options table of docs/designs.md is the models'
// declarations, so that the page cannot drift from the code; -update
// rewrites it.
func TestOptionsDoc(t *testing.T) {
	src, err := os.ReadFile(designsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	before, rest, ok1 := strings.Cut(doc, tableBegins+"\n")
	table, after, ok2 := strings.Cut(rest, tableEnds)
	if !ok1 || !ok2 || !strings.Contains(before, "\n## Model options\n") {
		t.Fatalf("%s has no options table between the markers in its Model options section:\n%s\n...\n%s", designsDoc, tableBegins, tableEnds)
	}
	want := optionsTable()
	if table == want {
		return
	}
	if *updateDoc {
		if err := os.WriteFile(designsDoc, []byte(before+tableBegins+"\n"+want+tableEnds+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the options table of %s differs from the declarations; run go test ./docs -run TestOptionsDoc -update\n--- the page:\n%s--- the declarations:\n%s", designsDoc, table, want)
}

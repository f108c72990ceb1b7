package all_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path every package of pushpull starts with.
const module = "github.com/pushpull/pushpull"

// embedded are the packages a Go service embeds to serve timelines: the
// contract, every design and the catalogue. They stay light: whatever they
// import is compiled into the service.
var embedded = []string{
	"./timeline/...",
	"./push/...",
	"./pull/...",
	"./hybrid/...",
	"./memcache/...",
	"./registry/...",
	"./reconcile",
}

// heavy are the import path prefixes an embedded package must not reach:
// plotting, fonts, PDF and SVG (what package results renders with), the
// project's own report, harness and command line, and the HTTP server
// with the Prometheus client it brings (a service that embeds a store
// serves it its own way).
var heavy = []string{
	"gonum.org/",
	"codeberg.org/go-fonts/",
	"codeberg.org/go-latex/",
	"codeberg.org/go-pdf/",
	"git.sr.ht/~sbinet/",
	"github.com/ajstarks/svgo",
	"github.com/golang/freetype",
	"golang.org/x/image/",
	module + "/results",
	module + "/loadgen",
	module + "/cmd/",
	module + "/httpapi",
	"github.com/prometheus/",
}

// goPackage is what go list -json says of a package that this test reads.
type goPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// importGraph lists patterns and every package they depend on, and returns
// the roots (the packages the patterns name) and who imports whom. Test
// files are left out: they are not compiled into a service.
func importGraph(t *testing.T, patterns ...string) (roots []string, imports map[string][]string) {
	t.Helper()
	list := func(args ...string) []goPackage {
		cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports,Standard"}, args...)...)
		cmd.Dir = "../.."
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		var pkgs []goPackage
		for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
			var p goPackage
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			pkgs = append(pkgs, p)
		}
		return pkgs
	}
	for _, p := range list(patterns...) {
		roots = append(roots, p.ImportPath)
	}
	imports = map[string][]string{}
	for _, p := range list(append([]string{"-deps"}, patterns...)...) {
		if !p.Standard {
			imports[p.ImportPath] = p.Imports
		}
	}
	return roots, imports
}

// forbiddenChains returns, for each root that reaches a package banned
// says is forbidden, one shortest import chain from the root to it.
func forbiddenChains(roots []string, imports map[string][]string, banned func(string) bool) [][]string {
	var chains [][]string
	for _, root := range roots {
		from := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if banned(p) {
				var chain []string
				for q := p; q != ""; q = from[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				chains = append(chains, chain)
				break
			}
			for _, q := range imports[p] {
				if _, seen := from[q]; !seen {
					from[q] = p
					queue = append(queue, q)
				}
			}
		}
	}
	return chains
}

func isHeavy(path string) bool {
	return slices.ContainsFunc(heavy, func(prefix string) bool {
		if strings.HasSuffix(prefix, "/") {
			return strings.HasPrefix(path, prefix)
		}
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	})
}

func short(chain []string) string {
	out := make([]string, len(chain))
	for i, p := range chain {
		out[i] = strings.TrimPrefix(p, module+"/")
	}
	return strings.Join(out, " -> ")
}

// TestEmbeddedPackagesStayLight: no package a service embeds reaches a
// plotting, font, PDF or SVG package, nor the report, the harness, the
// command line, the HTTP server or Prometheus. A failure names the import chain that does.
func TestEmbeddedPackagesStayLight(t *testing.T) {
	roots, imports := importGraph(t, embedded...)
	if len(roots) < 10 {
		t.Fatalf("only %d packages match %v: %v", len(roots), embedded, roots)
	}
	for _, chain := range forbiddenChains(roots, imports, isHeavy) {
		t.Errorf("%s imports %s, which a service that embeds it should not compile: %s",
			short(chain[:1]), short(chain[len(chain)-1:]), short(chain))
	}
}

// TestKitImportsOnlyTheContract: the conformance kit stands on the
// contract alone, so any store can run it without what sits above.
func TestKitImportsOnlyTheContract(t *testing.T) {
	roots, imports := importGraph(t, "./timeline/timelinetest")
	above := func(path string) bool {
		return strings.HasPrefix(path, module+"/") && path != module+"/timeline/timelinetest" &&
			path != module+"/timeline" && !strings.HasPrefix(path, module+"/timeline/counter")
	}
	for _, chain := range forbiddenChains(roots, imports, above) {
		t.Errorf("the kit reaches above the contract: %s", short(chain))
	}
}

// TestForbiddenChains: the search finds a chain through a package in the
// middle, and none where there is none.
func TestForbiddenChains(t *testing.T) {
	imports := map[string][]string{
		module + "/push":         {module + "/registry", "example.com/light"},
		module + "/registry":     {module + "/results"},
		module + "/results":      {"gonum.org/v1/plot"},
		"example.com/light":      nil,
		module + "/pull":         {"example.com/light"},
		module + "/timeline":     nil,
		module + "/loadgen/load": {module + "/timeline"},
	}
	got := forbiddenChains([]string{module + "/push", module + "/pull"}, imports, isHeavy)
	want := "push -> registry -> results"
	if len(got) != 1 || short(got[0]) != want {
		t.Fatalf("chains %v, want one: %s", got, want)
	}
	if !isHeavy("gonum.org/v1/plot/vg") || !isHeavy(module+"/loadgen/load") || isHeavy(module+"/loadgenerator") || isHeavy(module+"/timeline") ||
		!isHeavy(module+"/httpapi") || !isHeavy("github.com/prometheus/client_golang/prometheus") {
		t.Fatal("isHeavy misjudges a path")
	}
}

// redisClientMay are the only packages outside the standard library and
// pushpull that the Redis client (internal/redisx, which push-redis and
// pull-redis embed) may reach: rueidis and what it needs.
var redisClientMay = []string{"github.com/redis/rueidis", "golang.org/x/sys/"}

// TestRedisClientStaysLight: the Redis client brings in rueidis alone.
func TestRedisClientStaysLight(t *testing.T) {
	roots, imports := importGraph(t, "./internal/redisx")
	foreign := func(path string) bool {
		if _, listed := imports[path]; !listed || strings.HasPrefix(path, module+"/") {
			return false // the standard library (importGraph lists no such package), or pushpull
		}
		return !slices.ContainsFunc(redisClientMay, func(prefix string) bool { return strings.HasPrefix(path, prefix) })
	}
	for _, chain := range forbiddenChains(roots, imports, foreign) {
		t.Errorf("the Redis client reaches %s: %s", short(chain[len(chain)-1:]), short(chain))
	}
	if _, ok := imports["github.com/redis/rueidis"]; !ok {
		t.Fatal("the Redis client does not import rueidis: the test checks nothing")
	}
}

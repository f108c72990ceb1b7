// Package docs holds the guide's pages (Markdown) and the test that keeps
// their links whole.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this folder.
const root = ".."

// pages are the Markdown files whose links must resolve: the README, the
// guide's pages and the notes beside saved runs.
func pages(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"*.md"} {
		m, err := filepath.Glob(filepath.Join(root, "docs", pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	err := filepath.WalkDir(filepath.Join(root, "evidence"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// link is one [text](target) of a page, outside code.
type link struct {
	line   int
	target string
}

var (
	linkPattern    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingPattern = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	codeSpan       = regexp.MustCompile("`[^`]*`")
)

// parse returns a page's links, outside fenced code blocks and code
// spans, and the anchors its headings make.
func parse(path string) (links []link, anchors map[string]bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	anchors = map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			slug := Slug(m[2])
			if k := seen[slug]; k > 0 {
				anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			links = append(links, link{n, m[1]})
		}
	}
	return links, anchors, sc.Err()
}

// Slug is the anchor GitHub gives a heading: lower case, letters, digits,
// '-' and '_' kept, spaces made '-', everything else dropped (Markdown's
// emphasis and code marks among it).
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestLinksResolve: every relative link in the README, docs/ and the
// notes of saved runs names a file or folder that exists, and every
// #anchor a heading of the page it points into.
func TestLinksResolve(t *testing.T) {
	files := pages(t)
	if len(files) < 10 {
		t.Fatalf("only %d pages: %v", len(files), files)
	}
	anchorsOf := map[string]map[string]bool{}
	linksOf := map[string][]link{}
	for _, path := range files {
		links, anchors, err := parse(path)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[filepath.Clean(path)] = anchors
		linksOf[path] = links
	}
	checked := 0
	for _, path := range files {
		for _, l := range linksOf[path] {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			checked++
			where := fmt.Sprintf("%s:%d: %s", strings.TrimPrefix(path, root+"/"), l.line, l.target)
			file, anchor, _ := strings.Cut(l.target, "#")
			target := filepath.Clean(path)
			if file != "" {
				target = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: no such file or folder", where)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			anchors, ok := anchorsOf[target]
			if !ok {
				t.Errorf("%s: an anchor into a page this test does not read", where)
				continue
			}
			if !anchors[anchor] {
				t.Errorf("%s: no heading makes the anchor #%s", where, anchor)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d links", checked)
	}
}

// TestSlug: headings become GitHub's anchors.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Quick start":                          "quick-start",
		"push-async: fan-out after the commit": "push-async-fan-out-after-the-commit",
		"The `+memcache` variant":              "the-memcache-variant",
		"Which design? (`pushpull recommend`)": "which-design-pushpull-recommend",
		"16 and 256 shards, projected":         "16-and-256-shards-projected",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

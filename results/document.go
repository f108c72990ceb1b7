package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A document is what a command saves in a directory of its own: a run
// (Result), a Sweep, a Recommendation or a DecisionMap. Each is one JSON
// file, stamped with its format version, beside the files derived from it
// (CSV, tables, plots); each is saved and loaded by the same two functions
// below, which a docKind parameterises.
type docKind[T any] struct {
	// name is what errors call the document: "save sweep: ...".
	name string
	// jsonFile is the JSON file's name in the directory.
	jsonFile string
	// version is the format version this code writes.
	version int
	// versionOf points at the document's version field.
	versionOf func(*T) *int
	// prepare returns the copy of a document to save: times in UTC, no
	// non-finite number (JSON has none), the original left untouched.
	prepare func(*T) *T
	// derived writes the files derived from the prepared copy into dir.
	derived func(dir string, doc *T) error
	// upgrade converts a loaded document of another version to this
	// one in place, or refuses it; nil accepts only version.
	upgrade func(*T) error
}

// saveDoc creates dir and writes doc there: its JSON (indented, with the
// format version stamped when doc has none), then the derived files.
func saveDoc[T any](k docKind[T], dir string, doc *T) error {
	if err := saveDocFiles(k, dir, doc); err != nil {
		return fmt.Errorf("save %s: %w", k.name, err)
	}
	return nil
}

func saveDocFiles[T any](k docKind[T], dir string, doc *T) error {
	c := k.prepare(doc)
	if v := k.versionOf(c); *v == 0 {
		*v = k.version
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, k.jsonFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return k.derived(dir, c)
}

// loadDoc reads the document saved in path by saveDoc: the directory, or
// its JSON file itself.
func loadDoc[T any](k docKind[T], path string) (*T, error) {
	doc, err := loadDocFile(k, path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", k.name, err)
	}
	return doc, nil
}

func loadDocFile[T any](k docKind[T], path string) (*T, error) {
	path, err := fileIn(path, k.jsonFile)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc := new(T)
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if k.upgrade != nil {
		err = k.upgrade(doc)
	} else if v := *k.versionOf(doc); v != k.version {
		err = fmt.Errorf("format version %d, want %d", v, k.version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// writeFile writes what write produces into dir/name.
func writeFile(dir, name string, write func(w io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
}

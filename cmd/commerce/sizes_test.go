package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxFileLines is the most lines a hand-written non-test file of the
// service may have: past it, the file is split by responsibility into
// files of its package, so that each can be read whole.
const maxFileLines = 500

// servicePackages are the folders of the service's own packages; bench,
// client and examples are not the service.
var servicePackages = []string{"api", "integrations", "db", "domain", "workflows", "activities", "internal", "cmd"}

// generatedMarker is the line a code generator writes at the top of a
// file it made (client/client.gen.go carries one): such a file is not
// split by hand.
var generatedMarker = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// TestNoHandWrittenFileOver500Lines holds every hand-written non-test Go
// file of the service's packages to maxFileLines. It walks the folders
// rather than asking git, so it holds in any checkout.
func TestNoHandWrittenFileOver500Lines(t *testing.T) {
	checked := 0
	for _, dir := range servicePackages {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				// The go tool builds no package from these folders either.
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			if generated(src) {
				return nil
			}
			if n := lineCount(src); n > maxFileLines {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s has %d lines, more than %d: split it by responsibility into files of its package", filepath.ToSlash(rel), n, maxFileLines)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", dir, err)
		}
	}
	// A test that found nothing to check would pass whatever the files are.
	if checked == 0 {
		t.Fatalf("no Go files under %v from %s", servicePackages, root)
	}
}

// generated reports whether src carries the generated-code marker before
// its package clause, where Go's convention puts it.
func generated(src []byte) bool {
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if generatedMarker.MatchString(line) {
			return true
		}
	}
	return false
}

// lineCount is the number of lines of src, as wc -l counts them, and one
// more for a last line with no newline.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top, from this package.
const root = "../.."

// citation finds a cited document of docs/ and its heading: in code,
// "docs/design.md#replay"; in a document of docs/, "(design.md#replay)".
var citation = regexp.MustCompile(`(?:docs/|\()([a-z0-9_-]+\.md)(?:#([a-z0-9_-]+))?`)

// TestEveryCitedDocumentAndHeadingExists holds the design record to the
// code: every docs/<file>.md#<heading> that a comment, a migration or a
// document cites names a file of docs/ and a heading in it.
func TestEveryCitedDocumentAndHeadingExists(t *testing.T) {
	headings := map[string]map[string]bool{}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no documents in docs/: %v", err)
	}
	for _, path := range docs {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors := map[string]bool{}
		inCode := false
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "```") {
				inCode = !inCode
			}
			if !inCode && strings.HasPrefix(line, "#") {
				anchors[slug(strings.TrimLeft(line, "# "))] = true
			}
		}
		headings[filepath.Base(path)] = anchors
	}
	cited := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", "node_modules", "testdata", ".commerce":
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".go" && ext != ".sql" && ext != ".md" && ext != ".yml" && d.Name() != "Makefile" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		inDocs := filepath.Base(filepath.Dir(path)) == "docs"
		for _, m := range citation.FindAllStringSubmatch(string(raw), -1) {
			if strings.HasPrefix(m[0], "(") && !inDocs {
				continue // a link of a document outside docs/ is relative to it
			}
			anchors, ok := headings[m[1]]
			if !ok {
				if strings.HasPrefix(m[0], "docs/") {
					t.Errorf("%s cites docs/%s, which does not exist", path, m[1])
				}
				continue
			}
			cited++
			if m[2] != "" && !anchors[m[2]] {
				t.Errorf("%s cites %s#%s: no such heading", path, m[1], m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 20 {
		t.Fatalf("found %d citations of docs/; the pattern no longer matches how the code cites", cited)
	}
}

// slug is a heading's anchor as GitHub makes it: lower case, letters,
// digits, hyphens and underscores kept, spaces made hyphens, the rest
// dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// staticFile is one embedded static file, as is and gzipped.
type staticFile struct {
	raw, gz []byte
	ctype   string
	etag    string
}

// staticHandler serves the embedded static files: gzipped to a browser
// that takes gzip, with an ETag, and (the headers middleware) cacheable
// for a day. The files are read and compressed once, when the console is
// made.
func staticHandler(files fs.FS) http.Handler {
	served := map[string]staticFile{}
	_ = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		sum := sha256.Sum256(raw)
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = http.DetectContentType(raw)
		}
		served[name] = staticFile{raw: raw, gz: gz.Bytes(), ctype: ctype, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := served[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("Vary", "Accept-Encoding")
		body := f.raw
		etag := f.etag
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && len(f.gz) < len(f.raw) {
			h.Set("Content-Encoding", "gzip")
			body, etag = f.gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
		}
		h.Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

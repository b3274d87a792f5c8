// Package static holds the console's CSS, vendored htmx and icons, embedded into the
// binary and served with a content hash in the URL so browsers can cache them forever.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed *.css *.js *.svg vendor
var files embed.FS

// Prefix is where static files are served.
const Prefix = "/static/"

var hashes = func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := files.ReadFile(p)
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])[:12]
		return nil
	})
	return out
}()

// URL returns the cache-busting URL of a static file, e.g. /static/app.css?v=3f2a…
func URL(name string) string {
	if h, ok := hashes[name]; ok {
		return Prefix + name + "?v=" + h
	}
	return Prefix + name
}

// Handler serves the static files. A request carrying the current hash is cacheable for
// a year; any other is revalidated.
func Handler() http.Handler {
	fileServer := http.StripPrefix(Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean(r.URL.Path), Prefix)
		if v := r.URL.Query().Get("v"); v != "" && v == hashes[name] {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		fileServer.ServeHTTP(w, r)
	})
}

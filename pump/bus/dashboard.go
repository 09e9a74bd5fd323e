package bus

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// dashboardFiles are the dashboard's assets, embedded in the binary (no
// CDN: it works offline).
//
//go:embed dashboard
var dashboardFiles embed.FS

// dashboardCSP confines the dashboard to its own origin: its scripts and
// styles come from /ui/, its data from the API and its WebSockets (/ws,
// /api/v1/ws) — connect-src 'self' covers the page's own ws: and wss:
// origin (CSP Level 3), and no other host.
const dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// dashboardHandler serves GET / (the page) and GET /ui/{file} (its
// script and style). They are open: the page holds no data and logs in
// through POST /auth/login like any client, so every API call it makes is
// the logged-in user's, with that user's role.
func dashboardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", dashboardCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		name := "index.html"
		if r.URL.Path != "/" {
			name = strings.TrimPrefix(r.URL.Path, "/ui/")
		}
		if !fs.ValidPath(name) || strings.Contains(name, "/") {
			writeError(w, http.StatusNotFound, http.StatusText(http.StatusNotFound))
			return
		}
		if _, err := fs.Stat(dashboardFiles, "dashboard/"+name); err != nil {
			writeError(w, http.StatusNotFound, http.StatusText(http.StatusNotFound))
			return
		}
		http.ServeFileFS(w, r, dashboardFiles, "dashboard/"+name)
	})
}

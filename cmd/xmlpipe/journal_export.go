package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// runJournalExport is `xmlpipe journal export [--out DIR]`: one XML document
// per thread, <thread id=…><entry seq=… time=… direction=…>envelope</entry>…</thread>,
// written to DIR/<thread>.xml.
func runJournalExport(_ context.Context, args []string, std streams) int {
	fs := newFlags("journal export", "[--out DIR] [--data DIR] [--config organism.yaml]", std.err)
	outDir := fs.String("out", "journal-export", "directory the documents are written to")
	sf := addStoreFlags(fs)
	_, s, code, ok := sf.begin(fs, args, 0, 0, std.err)
	if !ok {
		return code
	}
	defer closeStore(s, std.err)
	threads, err := s.Threads(0, 0, store.ThreadFilter{})
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal export:", err)
		return exitFailure
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal export:", err)
		return exitFailure
	}
	slices.SortFunc(threads, func(a, b store.ThreadSummary) int { return a.First.Compare(b.First) })
	bar := newProgress(std.err, "exporting threads")
	for i, t := range threads {
		entries, err := s.Thread(t.ID)
		if err == nil {
			err = os.WriteFile(filepath.Join(*outDir, safeName(t.ID)+".xml"), threadDocument(t.ID, entries), 0o644)
		}
		if err != nil {
			bar.Done()
			fmt.Fprintln(std.err, "xmlpipe journal export:", err)
			return exitFailure
		}
		bar.Update(int64(i+1), int64(len(threads)))
	}
	bar.Done()
	fmt.Fprintf(std.out, "%d thread(s) exported to %s\n", len(threads), *outDir)
	return exitOK
}

// threadDocument is the export of one thread.
func threadDocument(id string, entries []store.Entry) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, "<thread id=\"%s\">\n", html.EscapeString(id))
	for _, e := range entries {
		fmt.Fprintf(&b, "<entry seq=\"%d\" time=\"%s\" direction=\"%s\" kind=\"%s\" from=\"%s\" to=\"%s\">",
			e.Seq, e.Time.Format(time.RFC3339Nano), e.Direction, e.Kind, html.EscapeString(e.From), html.EscapeString(e.To))
		if wellFormed(e.Bytes) {
			b.Write(e.Bytes)
		} else { // a dead letter's raw input: kept as text
			b.WriteString(html.EscapeString(string(e.Bytes)))
		}
		b.WriteString("</entry>\n")
	}
	b.WriteString("</thread>\n")
	return b.Bytes()
}

// wellFormed reports whether b is one well-formed XML element without a
// declaration (a journaled envelope is).
func wellFormed(b []byte) bool {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("<?")) {
		return false
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return depth == 0 && roots == 1
		}
		if err != nil {
			return false
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.Directive:
			return false
		}
	}
}

// safeName keeps a thread id usable as a file name ("-" for unknown threads).
func safeName(id string) string {
	out := []byte(id)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			out[i] = '_'
		}
	}
	if len(out) == 0 {
		return "_"
	}
	return string(out)
}

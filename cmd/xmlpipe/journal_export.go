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
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// exportPage is how many journal entries export reads per query.
const exportPage = 2048

// runJournalExport is `xmlpipe journal export [--out DIR]`: one XML document
// per thread, <thread id=…><entry seq=… time=… direction=…>envelope</entry>…</thread>,
// written to DIR/<thread>.xml. It reads the journal once, in seq order,
// holding only the threads still open at the current seq in memory, and
// writes each document when its thread's last entry has been read.
func runJournalExport(_ context.Context, args []string, std streams) int {
	fs := newFlags("journal export", "[--out DIR] [--data DIR] [--config organism.yaml]", std.err)
	outDir := fs.String("out", "journal-export", "directory the documents are written to")
	sf := addStoreFlags(fs)
	_, s, code, ok := sf.begin(fs, args, 0, 0, std.err)
	if !ok {
		return code
	}
	defer closeStore(s, std.err)
	n, err := exportThreads(s, *outDir, exportPage, newProgress(std.err, "exporting journal"))
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal export:", err)
		return exitFailure
	}
	fmt.Fprintf(std.out, "%d thread(s) exported to %s\n", n, *outDir)
	return exitOK
}

// exportThreads writes one document per thread of the journal read by s into
// dir, reading page entries per query, and returns how many it wrote.
func exportThreads(s *store.Reader, dir string, page int, bar *progress) (int, error) {
	defer bar.Done()
	// The export covers the journal up to last; a running organism may append
	// (and a retention sweep delete) meanwhile, so a thread whose recorded end
	// lies beyond last, or was deleted, is written when the read stops.
	last, err := s.LastSeq()
	if err != nil {
		return 0, err
	}
	ends, err := s.ThreadEnds()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	open := map[string][]store.Entry{}
	written := 0
	flush := func(id string) error {
		if err := os.WriteFile(filepath.Join(dir, safeName(id)+".xml"), threadDocument(id, open[id]), 0o644); err != nil {
			return err
		}
		delete(open, id)
		written++
		return nil
	}
	for after := int64(0); after < last; {
		entries, err := s.After(after, page)
		if err != nil {
			return written, err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if e.Seq > last {
				break
			}
			open[e.Thread] = append(open[e.Thread], e)
			if e.Seq < ends[e.Thread] {
				continue
			}
			if err := flush(e.Thread); err != nil {
				return written, err
			}
		}
		after = entries[len(entries)-1].Seq
		bar.Update(after, last)
	}
	for id := range open {
		if err := flush(id); err != nil {
			return written, err
		}
	}
	return written, nil
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

// safeName keeps a thread id usable as a file name: the journal's "-"
// (entries refused before they had a thread) is "no-thread", and no name
// begins with "-", which a shell command would read as an option.
func safeName(id string) string {
	if id == "-" {
		return "no-thread"
	}
	if strings.HasPrefix(id, "-") {
		id = "_" + id
	}
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

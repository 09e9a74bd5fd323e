package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestExportThreadsOnePass: threads interleaved across several read pages
// each come out as one document holding exactly their entries, in seq order.
func TestExportThreadsOnePass(t *testing.T) {
	data := t.TempDir()
	s, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	threads := []string{"t-a", "t-b", "t-a", "t-c", "t-b", "t-a", "t-c", "t-a", "t-b", "t-d"}
	want := map[string][]int64{}
	for i, th := range threads {
		e := store.Entry{Thread: th, Conversation: "conv", Direction: store.Inbound, Kind: store.Message,
			From: "console", To: "greeter", Listener: "greeter", PayloadTag: "Greeting",
			Bytes: fmt.Appendf(nil, `<message xmlns="urn:x"><Greeting><Name>%d</Name></Greeting></message>`, i)}
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
		want[th] = append(want[th], int64(i+1))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	out := t.TempDir()
	n, err := exportThreads(r, out, 3, newProgress(io.Discard, "exporting"))
	if err != nil || n != len(want) {
		t.Fatalf("exportThreads = %d, %v; want %d threads", n, err, len(want))
	}
	got := map[string][]int64{}
	for th := range want {
		doc, err := os.ReadFile(filepath.Join(out, th+".xml"))
		if err != nil {
			t.Fatal(err)
		}
		var parsed struct {
			ID      string `xml:"id,attr"`
			Entries []struct {
				Seq int64 `xml:"seq,attr"`
			} `xml:"entry"`
		}
		if err := xml.Unmarshal(doc, &parsed); err != nil || parsed.ID != th {
			t.Fatalf("%s.xml: id %q, %v\n%s", th, parsed.ID, err, doc)
		}
		for _, e := range parsed.Entries {
			got[th] = append(got[th], e.Seq)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("exported seqs per thread (-want +got):\n%s", d)
	}
}

// An exported file name never begins with "-": the journal's "-" (entries
// refused before they had a thread) was written as -.xml, which `cat -.xml`
// or `rm *` in the export directory reads as options.
func TestSafeNameNoLeadingDash(t *testing.T) {
	tests := []struct{ id, want string }{
		{"-", "no-thread"},
		{"-rf", "_-rf"},
		{"6f1c0000-0000-4000-8000-000000000001", "6f1c0000-0000-4000-8000-000000000001"},
		{"a/b", "a_b"},
		{"", "_"},
	}
	for _, tt := range tests {
		if got := safeName(tt.id); got != tt.want {
			t.Errorf("safeName(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

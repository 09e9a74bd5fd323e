package route

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func capNamed(t *testing.T, name string) Capability {
	t.Helper()
	for _, c := range shipped(t) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no capability %s", name)
	return Capability{}
}

func TestExtractive(t *testing.T) {
	for _, tc := range []struct{ cap, need, payload string }{
		{"calculate", "I need to multiply six by seven", `<Calculate xmlns=""><Expression>6*7</Expression></Calculate>`},
		{"files", "read notes/todo.txt please", `<Files xmlns=""><Op>read</Op><Path>notes/todo.txt</Path></Files>`},
		{"files", "list the directory notes/", `<Files xmlns=""><Op>list</Op><Path>notes/</Path></Files>`},
		{"fetch", "fetch https://example.org/a?b=c.", `<Fetch xmlns=""><URL>https://example.org/a?b=c</URL></Fetch>`},
		{"fetch", "POST to https://example.org/api", `<Fetch xmlns=""><URL>https://example.org/api</URL><Method>POST</Method></Fetch>`},
		{"greeter", "say hello to Dan", `<Greeting xmlns=""><Name>say hello to Dan</Name></Greeting>`},
		{"web_search", "search the web for cats & dogs", `<WebSearch xmlns=""><Query>search the web for cats &amp; dogs</Query></WebSearch>`},
		{"xml_to_json", "convert <a x=\"1\">b</a> to JSON", `<XMLToJSON xmlns=""><XML>&lt;a x="1"&gt;b&lt;/a&gt;</XML></XMLToJSON>`},
	} {
		f, err := Extractive{}.Fill(context.Background(), tc.need, capNamed(t, tc.cap))
		if err != nil {
			t.Errorf("Fill(%s, %q): %v", tc.cap, tc.need, err)
			continue
		}
		if string(f.Payload) != tc.payload || f.By != ExtractiveName {
			t.Errorf("Fill(%s, %q) = %s by %s, want %s", tc.cap, tc.need, f.Payload, f.By, tc.payload)
		}
	}
}

func TestExtractiveGivesUp(t *testing.T) {
	for _, tc := range []struct{ cap, need, says string }{
		{"files", "read the notes file", "Path"},
		{"files", "read and delete notes/a.txt", "read and delete"},
		{"calculate", "say hello", "no arithmetic"},
		{"run_command", "run the date program", "cannot tell which of Command, Stdin"},
		{"fetch", "fetch the example page", "no http(s) URL"},
		{"key_value", "remember my name", "Op"},
	} {
		_, err := Extractive{}.Fill(context.Background(), tc.need, capNamed(t, tc.cap))
		var fe *FillError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFill) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Fill(%s, %q): %v; want a FillError saying %q", tc.cap, tc.need, err, tc.says)
		}
	}
}

// Words inside a URL or a path are not a request: fetching
// https://example.org/delete is a GET.
func TestExtractiveEnumIgnoresURLs(t *testing.T) {
	f, err := Extractive{}.Fill(context.Background(), "fetch https://example.org/delete", capNamed(t, "fetch"))
	if err != nil || strings.Contains(string(f.Payload), "<Method>") {
		t.Fatalf("Fill = %s, %v; want no method", f.Payload, err)
	}
	f, err = Extractive{}.Fill(context.Background(), "read notes/delete-me.txt", capNamed(t, "files"))
	if err != nil || string(f.Payload) != `<Files xmlns=""><Op>read</Op><Path>notes/delete-me.txt</Path></Files>` {
		t.Fatalf("Fill = %s, %v", f.Payload, err)
	}
}

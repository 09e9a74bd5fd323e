package stage

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"
)

// TestInternTable: the table returns equal Go-owned strings, the same copy
// each time, stops keeping new names at internMax, and is safe for
// concurrent use.
func TestInternTable(t *testing.T) {
	var tab internTable
	buf := []byte("greeter")
	view := unsafe.String(&buf[0], len(buf)) // like a libxml2 text view
	first := tab.get(view)
	buf[0] = 'X' // the document's memory changes (is freed) later
	if first != "greeter" {
		t.Fatalf("interned %q, want the text as it was", first)
	}
	if again := tab.get("greeter"); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("a second get copied the name again")
	}

	for i := 0; len(*tab.m.Load()) < internMax; i++ {
		tab.get(fmt.Sprintf("sender-%d", i))
	}
	over := tab.get("one-too-many")
	if over != "one-too-many" || len(*tab.m.Load()) != internMax {
		t.Errorf("past the bound: got %q, table holds %d; want the name, %d kept", over, len(*tab.m.Load()), internMax)
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				name := fmt.Sprintf("c-%d-%d", g, i%20)
				if got := (&names).get(name); got != name {
					t.Errorf("get(%q) = %q", name, got)
				}
			}
		}()
	}
	wg.Wait()
}

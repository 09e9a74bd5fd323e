package store

import (
	"database/sql/driver"
	"unsafe"
)

// The journal's INSERT binds 14 values a row. Boxing them as driver values
// the ordinary way (any(s)) allocates a copy of each string header, int64
// above 255 and slice header: 9-11 allocations a row, which the garbage
// collector then has to find. The views below are interface values that
// point at a value the writer already holds, in place, so binding a row
// allocates nothing. The driver only reads them, during the Exec, and the
// writer neither changes nor frees what they point at until the Exec has
// returned (pending.reset then clears the values).

// eface is the layout of an empty interface value.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// typeWord returns the type word of the interface value v.
func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// The type words of the driver values the views hold.
var (
	stringWord = typeWord("")
	int64Word  = typeWord(int64(0))
	bytesWord  = typeWord([]byte(nil))
)

// view returns the interface value of type word typ whose data is *p.
func view(typ, p unsafe.Pointer) driver.Value {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// stringView returns *p as a driver value without copying it.
func stringView(p *string) driver.Value { return view(stringWord, unsafe.Pointer(p)) }

// optionalView is stringView for a column the INSERT wraps in
// a coalesce: an empty string is bound as NULL, which the driver binds
// without allocating, copying and freeing C memory for it.
func optionalView(p *string) driver.Value {
	if *p == "" {
		return nil
	}
	return stringView(p)
}

// int64View returns *p as a driver value without copying it.
func int64View(p *int64) driver.Value { return view(int64Word, unsafe.Pointer(p)) }

// bytesView returns *p as a driver value without copying it.
func bytesView(p *[]byte) driver.Value { return view(bytesWord, unsafe.Pointer(p)) }

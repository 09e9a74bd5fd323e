package lx

/*
#include "shim.h"
*/
import "C"

// parserCtxt is a reusable libxml2 parser context. One goroutine uses it at a
// time; it is recreated after maxCtxtUses documents to bound the growth of its
// string dictionary (go-deps.md §5).
type parserCtxt struct {
	p    *C.xmlParserCtxt
	uses int
}

const maxCtxtUses = 10000

// ctxtPool is a bounded free list of parser contexts. A channel, not a
// sync.Pool: pooled C memory must be freed explicitly, never dropped by the GC.
var ctxtPool = make(chan *parserCtxt, 64)

func getCtxt() *parserCtxt {
	select {
	case c := <-ctxtPool:
		return c
	default:
		return &parserCtxt{p: C.xmlNewParserCtxt()}
	}
}

func putCtxt(c *parserCtxt) {
	c.uses++
	if c.uses >= maxCtxtUses {
		C.xmlFreeParserCtxt(c.p)
		return
	}
	select {
	case ctxtPool <- c:
	default:
		C.xmlFreeParserCtxt(c.p)
	}
}

package lx

/*
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <pthread.h>

// lx_xp_err is one evaluation's state shared with lx's callbacks: the first
// error, the concat() bound, and what lx_xpath_stop needs to trip it from
// another thread (live is the evaluation's context while it runs, stopped
// says the evaluation was asked to stop; both under lx_xp_mu).
typedef struct {
	char msg[256];
	int set;
	int code;
	int pos;
	size_t max_string;
	xmlXPathContextPtr live;
	int stopped;
} lx_xp_err;

// lx_xp_mu guards every lx_xp_err's live and stopped, so a context is
// tripped only while it exists.
static pthread_mutex_t lx_xp_mu = PTHREAD_MUTEX_INITIALIZER;

// lx_xpath_stop makes the evaluation behind err give up at its next
// operation: libxml2 checks opCount against opLimit before every step and
// for every node it tests, so lowering opLimit to 1 fails it there with
// "operation limit exceeded" (err->stopped tells that from the real one).
// Called before the evaluation starts, it stops it from starting.
static void lx_xpath_stop(lx_xp_err *err) {
	pthread_mutex_lock(&lx_xp_mu);
	err->stopped = 1;
	if (err->live != NULL) __atomic_store_n(&err->live->opLimit, 1UL, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&lx_xp_mu);
}

// lx_xpath_stopped reports whether lx_xpath_stop was called for err.
static int lx_xpath_stopped(lx_xp_err *err) {
	pthread_mutex_lock(&lx_xp_mu);
	int s = err->stopped;
	pthread_mutex_unlock(&lx_xp_mu);
	return s;
}

// lx_xp_onerror records the first XPath error (libxml2 2.9 passes the code
// and the position, not a message, on this path).
static void lx_xp_onerror(void *data, xmlErrorPtr e) {
	lx_xp_err *err = (lx_xp_err *)data;
	if (err->set || e == NULL) return;
	err->code = e->code - XML_XPATH_EXPRESSION_OK;
	err->pos = e->int1;
	if (e->message != NULL) snprintf(err->msg, sizeof err->msg, "%s", e->message);
	err->set = 1;
}

// lx_xp_concat replaces libxml2's concat(): libxml2 2.9 appends each
// argument to the result with xmlStrcat, in one operation the op limit does
// not see, so concat(/,/,…,/) takes time quadratic and memory linear in the
// number of arguments times the document's text (minutes and gigabytes from
// a short expression). This one converts the arguments one by one, stops as
// soon as their total passes the context's lx_xp_err max_string (an error,
// recorded there) and copies each once.
static void lx_xp_concat(xmlXPathParserContextPtr ctxt, int nargs) {
	if (ctxt == NULL || ctxt->context == NULL || ctxt->context->userData == NULL) return;
	lx_xp_err *err = (lx_xp_err *)ctxt->context->userData;
	if (nargs < 2) XP_ERROR(XPATH_INVALID_ARITY);
#if LIBXML_VERSION < 21200
	if (ctxt->valueNr < ctxt->valueFrame + nargs) XP_ERROR(XPATH_STACK_ERROR);
#else
	if (ctxt->valueNr < nargs) XP_ERROR(XPATH_STACK_ERROR); // 2.12 dropped valueFrame
#endif
	xmlChar **parts = calloc((size_t)nargs, sizeof *parts);
	size_t *lens = calloc((size_t)nargs, sizeof *lens);
	if (parts == NULL || lens == NULL) {
		free(parts);
		free(lens);
		XP_ERROR(XPATH_MEMORY_ERROR);
	}
	size_t total = 0;
	int failed = 0;
	for (int i = nargs - 1; i >= 0; i--) { // the last argument is on top
		xmlXPathObjectPtr o = valuePop(ctxt);
		if (o == NULL) {
			failed = XPATH_STACK_ERROR;
			break;
		}
		if (!failed) {
			parts[i] = xmlXPathCastToString(o);
			if (parts[i] == NULL) {
				failed = XPATH_MEMORY_ERROR;
			} else {
				lens[i] = strlen((const char *)parts[i]);
				total += lens[i];
				if (total > err->max_string) failed = XPATH_MEMORY_ERROR;
			}
		}
		xmlXPathFreeObject(o);
	}
	xmlChar *out = NULL;
	if (!failed && (out = xmlMalloc(total + 1)) == NULL) failed = XPATH_MEMORY_ERROR;
	if (!failed) {
		size_t at = 0;
		for (int i = 0; i < nargs; i++) {
			memcpy(out + at, parts[i], lens[i]);
			at += lens[i];
		}
		out[at] = 0;
	}
	for (int i = 0; i < nargs; i++) xmlFree(parts[i]);
	free(parts);
	free(lens);
	if (failed) {
		if (total > err->max_string && !err->set) {
			snprintf(err->msg, sizeof err->msg, "concat() would make a string of more than %zu bytes",
				err->max_string);
			err->set = 1;
		}
		XP_ERROR(failed);
	}
	valuePush(ctxt, xmlXPathWrapString(out));
}

// lx_xp_lookup resolves the functions lx replaces (see lx_xp_concat); NULL
// leaves a name to libxml2's own table.
static xmlXPathFunction lx_xp_lookup(void *data, const xmlChar *name, const xmlChar *ns_uri) {
	(void)data;
	if (ns_uri == NULL && xmlStrEqual(name, BAD_CAST "concat")) return lx_xp_concat;
	return NULL;
}

static xmlXPathObjectPtr lx_xpath_eval(xmlDocPtr doc, const char *expr, char **prefixes, char **uris, int nns,
		unsigned long opLimit, lx_xp_err *err) {
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	if (ctx == NULL) {
		snprintf(err->msg, sizeof err->msg, "out of memory");
		err->set = 1;
		return NULL;
	}
	ctx->opLimit = opLimit;
	ctx->userData = err;
	ctx->error = lx_xp_onerror;
	xmlXPathRegisterFuncLookup(ctx, lx_xp_lookup, NULL);
	for (int i = 0; i < nns; i++) {
		if (xmlXPathRegisterNs(ctx, (const xmlChar *)prefixes[i], (const xmlChar *)uris[i]) != 0) {
			snprintf(err->msg, sizeof err->msg, "cannot register namespace prefix %s", prefixes[i]);
			err->set = 1;
			xmlXPathFreeContext(ctx);
			return NULL;
		}
	}
	pthread_mutex_lock(&lx_xp_mu);
	int stopped = err->stopped;
	if (!stopped) err->live = ctx;
	pthread_mutex_unlock(&lx_xp_mu);
	xmlXPathObjectPtr obj = NULL;
	if (!stopped) obj = xmlXPathEvalExpression((const xmlChar *)expr, ctx);
	pthread_mutex_lock(&lx_xp_mu);
	err->live = NULL;
	pthread_mutex_unlock(&lx_xp_mu);
	xmlXPathFreeContext(ctx);
	return obj;
}

static int lx_xpath_count(xmlXPathObjectPtr o) {
	return (o->nodesetval == NULL) ? 0 : o->nodesetval->nodeNr;
}
static xmlNodePtr lx_xpath_node(xmlXPathObjectPtr o, int i) { return o->nodesetval->nodeTab[i]; }
static int lx_xpath_type(xmlXPathObjectPtr o) { return (int)o->type; }
static int lx_xpath_bool(xmlXPathObjectPtr o) { return o->boolval; }
static double lx_xpath_num(xmlXPathObjectPtr o) { return o->floatval; }
static const char *lx_xpath_str(xmlXPathObjectPtr o) { return (const char *)o->stringval; }
static const char *lx_ns_prefix(xmlNodePtr n) { xmlNsPtr ns = (xmlNsPtr)n; return (const char *)ns->prefix; }
static const char *lx_ns_href(xmlNodePtr n) { xmlNsPtr ns = (xmlNsPtr)n; return (const char *)ns->href; }

// lx_text_over reports whether the text of top's descendants (its XPath
// string-value) is longer than max, counting no further than that.
static int lx_text_over(xmlNodePtr top, size_t max) {
	size_t total = 0;
	xmlNodePtr n = top->children;
	while (n != NULL) {
		if ((n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) && n->content != NULL) {
			total += strlen((const char *)n->content);
			if (total > max) return 1;
		}
		if (n->type == XML_ELEMENT_NODE && n->children != NULL) {
			n = n->children;
			continue;
		}
		while (n != top && n->next == NULL) n = n->parent;
		if (n == top) break;
		n = n->next;
	}
	return 0;
}

// lx_node_string returns n's string-value, or NULL with *over set when an
// element's or document's would pass max bytes (it is measured before it
// is copied).
static char *lx_node_string(xmlNodePtr n, size_t max, int *over) {
	*over = 0;
	if ((n->type == XML_ELEMENT_NODE || n->type == XML_DOCUMENT_NODE) && lx_text_over(n, max)) {
		*over = 1;
		return NULL;
	}
	return (char *)xmlXPathCastNodeToString(n);
}
static void lx_xfree(void *p) { xmlFree(p); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"unsafe"
)

// XPath result types.
const (
	XPathNodeSet = C.XPATH_NODESET
	XPathBoolean = C.XPATH_BOOLEAN
	XPathNumber  = C.XPATH_NUMBER
	XPathString  = C.XPATH_STRING
)

// Node types of XPath results beyond the ones above.
const (
	AttributeNode NodeType = C.XML_ATTRIBUTE_NODE
	DocumentNode  NodeType = C.XML_DOCUMENT_NODE
	NamespaceNode NodeType = C.XML_NAMESPACE_DECL
)

// XPathOpLimit bounds the work of one evaluation (libxml2's opLimit).
const XPathOpLimit = 10_000_000

// XPathMaxString bounds the string concat() may build (a larger one is an
// evaluation error): libxml2 counts a concat() as one operation whatever
// its arguments weigh.
const XPathMaxString = 4 << 20

// XPathMaxResult is the result bound XPath applies when given none.
const XPathMaxResult = 4 << 20

// XPath errors.
var (
	// ErrXPath is an XPath compile or evaluation error.
	ErrXPath = errors.New("xpath")
	// ErrXPathTooLarge means a result passes the bound XPath was given.
	ErrXPathTooLarge = errors.New("xpath result too large")
	// ErrXPathStopped means the evaluation's context ended before it did;
	// it comes wrapped in ErrXPath, with the context's cause.
	ErrXPathStopped = errors.New("evaluation stopped")
)

// XPathValue is one XPath result. For a node-set, Nodes hold the nodes
// (valid while the Doc lives); namespace nodes are given as Prefix/URI.
type XPathValue struct {
	Type    int
	Nodes   []XPathNode
	Boolean bool
	Number  float64
	String  string
}

// XPathNode is one node of a node-set.
type XPathNode struct {
	Node Node
	Type NodeType
	// Name is the node's name (element, attribute, PI) or the prefix of a
	// namespace node; Namespace its namespace URI (the href of a namespace node).
	Name, Namespace string
	// Value is the node's XPath string-value.
	Value string
}

// XPath evaluates expr (XPath 1.0) on the document, with ns binding prefixes
// to namespace URIs. ctx stops the evaluation: once it is done, libxml2
// gives up at its next operation and XPath returns an error wrapping
// ctx.Err(). maxResult bounds the result's bytes (a string's, or the sum of
// a node-set's names and string-values; <= 0: XPathMaxResult): past it,
// XPath stops and returns an error wrapping ErrXPathTooLarge, having copied
// no string-value that would pass it.
func (d *Doc) XPath(ctx context.Context, expr string, ns map[string]string, maxResult int) (XPathValue, error) {
	if maxResult <= 0 {
		maxResult = XPathMaxResult
	}
	if err := ctx.Err(); err != nil {
		return XPathValue{}, fmt.Errorf("%w: %w before it started: %w", ErrXPath, ErrXPathStopped, context.Cause(ctx))
	}
	cexpr := C.CString(expr)
	defer C.free(unsafe.Pointer(cexpr))
	var prefixes, uris []*C.char
	for p, u := range ns {
		prefixes = append(prefixes, C.CString(p))
		uris = append(uris, C.CString(u))
	}
	defer func() {
		for i := range prefixes {
			C.free(unsafe.Pointer(prefixes[i]))
			C.free(unsafe.Pointer(uris[i]))
		}
	}()
	var pp, up **C.char
	if len(prefixes) > 0 {
		pp = (**C.char)(C.malloc(C.size_t(len(prefixes)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		up = (**C.char)(C.malloc(C.size_t(len(prefixes)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		defer C.free(unsafe.Pointer(pp))
		defer C.free(unsafe.Pointer(up))
		copy(unsafe.Slice(pp, len(prefixes)), prefixes)
		copy(unsafe.Slice(up, len(uris)), uris)
	}
	cerr := (*C.lx_xp_err)(C.calloc(1, C.size_t(unsafe.Sizeof(C.lx_xp_err{}))))
	cerr.max_string = C.size_t(XPathMaxString)
	// The watchdog trips the evaluation when ctx ends; cerr outlives it.
	tripped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(tripped)
		C.lx_xpath_stop(cerr)
	})
	defer func() {
		if !stop() {
			<-tripped
		}
		C.free(unsafe.Pointer(cerr))
	}()
	obj := C.lx_xpath_eval(d.p, cexpr, pp, up, C.int(len(prefixes)), C.ulong(XPathOpLimit), cerr)
	if C.lx_xpath_stopped(cerr) != 0 {
		if obj != nil {
			C.xmlXPathFreeObject(obj)
		}
		return XPathValue{}, fmt.Errorf("%w: %w: %w", ErrXPath, ErrXPathStopped, context.Cause(ctx))
	}
	if obj == nil || cerr.set != 0 {
		if obj != nil {
			C.xmlXPathFreeObject(obj)
		}
		msg := "invalid expression"
		if cerr.set != 0 {
			msg = C.GoString(&cerr.msg[0])
			if msg == "" {
				msg = xpathMessage(int(cerr.code))
				if cerr.pos > 0 && int(cerr.code) != opLimitExceeded {
					msg += fmt.Sprintf(" at offset %d", int(cerr.pos))
				}
			}
		}
		return XPathValue{}, fmt.Errorf("%w: %s", ErrXPath, trimNL(msg))
	}
	defer C.xmlXPathFreeObject(obj)
	v := XPathValue{Type: int(C.lx_xpath_type(obj))}
	switch v.Type {
	case XPathBoolean:
		v.Boolean = C.lx_xpath_bool(obj) != 0
	case XPathNumber:
		v.Number = float64(C.lx_xpath_num(obj))
	case XPathString:
		if s := C.lx_xpath_str(obj); s != nil {
			if n := int(C.strlen(s)); n > maxResult {
				return XPathValue{}, fmt.Errorf("%w: the string is %d bytes (max: %d)", ErrXPathTooLarge, n, maxResult)
			}
			v.String = C.GoString(s)
		}
	case XPathNodeSet:
		n := int(C.lx_xpath_count(obj))
		size := 0
		for i := 0; i < n; i++ {
			p := C.lx_xpath_node(obj, C.int(i))
			xn := XPathNode{Node: Node{p: p}, Type: NodeType(p._type)}
			if xn.Type == NamespaceNode {
				xn.Node = Node{}
				if s := C.lx_ns_prefix(p); s != nil {
					xn.Name = C.GoString(s)
				}
				if s := C.lx_ns_href(p); s != nil {
					xn.Namespace, xn.Value = C.GoString(s), C.GoString(s)
				}
			} else {
				if p.name != nil && xn.Type != TextNode && xn.Type != CommentNode && xn.Type != DocumentNode {
					xn.Name = C.GoString((*C.char)(unsafe.Pointer(p.name)))
				}
				// A document node is an xmlDoc, which has no ns field:
				// its bytes there are other fields (-1 ints), not a pointer.
				if xn.Type != DocumentNode && p.ns != nil && p.ns.href != nil {
					xn.Namespace = C.GoString((*C.char)(unsafe.Pointer(p.ns.href)))
				}
				var over C.int
				s := C.lx_node_string(p, C.size_t(max(maxResult-size-len(xn.Name)-len(xn.Namespace), 0)), &over)
				if over != 0 {
					return XPathValue{}, nodeSetTooLarge(i, n, maxResult)
				}
				if s != nil {
					xn.Value = C.GoString(s)
					C.lx_xfree(unsafe.Pointer(s))
				}
			}
			if size += len(xn.Name) + len(xn.Namespace) + len(xn.Value); size > maxResult {
				return XPathValue{}, nodeSetTooLarge(i, n, maxResult)
			}
			v.Nodes = append(v.Nodes, xn)
		}
	default:
		return XPathValue{}, fmt.Errorf("%w: unsupported result type %d", ErrXPath, v.Type)
	}
	return v, nil
}

// nodeSetTooLarge is the error for a node-set whose nodes up to the i-th
// (of n) pass max bytes.
func nodeSetTooLarge(i, n, max int) error {
	return fmt.Errorf("%w: the first %d of %d nodes pass %d bytes (names and string-values)", ErrXPathTooLarge,
		i+1, n, max)
}

// xpathMessages are libxml2's texts for its XPath error codes
// (xmlXPathErrorMessages, not exported).
var xpathMessages = []string{"ok", "number encoding", "unfinished literal", "start of literal",
	"expected $ for variable reference", "undefined variable", "invalid predicate", "invalid expression",
	"missing closing curly brace", "unregistered function", "invalid operand", "invalid type",
	"invalid number of arguments", "invalid context size", "invalid context position", "memory allocation error",
	"syntax error", "resource error", "sub resource error", "undefined namespace prefix", "encoding error",
	"character out of XML range", "invalid or incomplete context", "stack usage error", "forbidden variable",
	"operation limit exceeded", "recursion limit exceeded"}

const opLimitExceeded = 25

func xpathMessage(code int) string {
	if code >= 0 && code < len(xpathMessages) {
		return xpathMessages[code]
	}
	return fmt.Sprintf("error %d", code)
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}

// The C half of package lx: every libxml2 call that may report errors runs inside
// one of these functions, with libxml2's thread-local structured error handler
// pointed at a per-call list, so diagnostics are complete, never printed to
// stderr and never mixed between goroutines.
#include "shim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parserInternals.h>
#include <libxml/xmlIO.h>
#include <libxml/xmlschemastypes.h>

static void lx_silent(void *ctx, const char *msg, ...) {
	(void)ctx;
	(void)msg;
}

static void lx_collect(void *ud, xmlErrorPtr e) {
	lx_errs *es = (lx_errs *)ud;
	if (es == NULL || e == NULL) return;
	if (es->n >= es->max) {
		es->dropped++;
		return;
	}
	if (es->n == es->cap) {
		int ncap = es->cap ? es->cap * 2 : 8;
		lx_err *ni = (lx_err *)realloc(es->items, (size_t)ncap * sizeof(lx_err));
		if (ni == NULL) {
			es->dropped++;
			return;
		}
		es->items = ni;
		es->cap = ncap;
	}
	lx_err *it = &es->items[es->n];
	memset(it, 0, sizeof(*it));
	it->level = (int)e->level;
	it->domain = e->domain;
	it->code = e->code;
	it->line = e->line;
	it->col = e->int2;
	const char *m = e->message ? e->message : "";
	size_t ml = strlen(m);
	while (ml > 0 && (m[ml - 1] == '\n' || m[ml - 1] == '\r')) ml--;
	it->msg = (char *)malloc(ml + 1);
	if (it->msg == NULL) return;
	memcpy(it->msg, m, ml);
	it->msg[ml] = 0;
	if (e->node != NULL && (e->domain == XML_FROM_SCHEMASV || e->domain == XML_FROM_VALID)) {
		xmlNodePtr n = (xmlNodePtr)e->node;
		xmlChar *p = xmlGetNodePath(n);
		if (p != NULL) {
			it->path = strdup((const char *)p);
			xmlFree(p);
		}
		if (it->line == 0) it->line = (int)xmlGetLineNo(n);
	}
	es->n++;
}

void lx_errs_free(lx_errs *es) {
	if (es == NULL) return;
	for (int i = 0; i < es->n; i++) {
		free(es->items[i].msg);
		free(es->items[i].path);
	}
	free(es->items);
	es->items = NULL;
	es->n = es->cap = 0;
}

/* Resources: in-memory documents the loader may hand out (schema imports).
   Everything else is denied. */
typedef struct lx_res {
	char *url;
	char *data;
	int len;
	struct lx_res *next;
} lx_res;

static lx_res *lx_resources = NULL;
static pthread_rwlock_t lx_res_lock = PTHREAD_RWLOCK_INITIALIZER;

int lx_register_resource(const char *url, const char *data, int len) {
	lx_res *r = (lx_res *)calloc(1, sizeof(lx_res));
	if (r == NULL) return -1;
	r->url = strdup(url);
	r->data = (char *)malloc((size_t)len + 1);
	if (r->url == NULL || r->data == NULL) {
		free(r->url);
		free(r->data);
		free(r);
		return -1;
	}
	memcpy(r->data, data, (size_t)len);
	r->data[len] = 0;
	r->len = len;
	pthread_rwlock_wrlock(&lx_res_lock);
	r->next = lx_resources;
	lx_resources = r;
	pthread_rwlock_unlock(&lx_res_lock);
	return 0;
}

static xmlParserInputPtr lx_loader(const char *url, const char *id, xmlParserCtxtPtr ctxt) {
	(void)id;
	if (url == NULL) return NULL;
	const char *data = NULL;
	int len = 0;
	pthread_rwlock_rdlock(&lx_res_lock);
	for (lx_res *r = lx_resources; r != NULL; r = r->next) {
		if (strcmp(r->url, url) == 0) {
			data = r->data;
			len = r->len;
			break;
		}
	}
	pthread_rwlock_unlock(&lx_res_lock);
	if (data == NULL) return NULL; /* denied: libxml2 reports the failed load */
	xmlParserInputBufferPtr ib = xmlParserInputBufferCreateStatic(data, len, XML_CHAR_ENCODING_NONE);
	if (ib == NULL) return NULL;
	xmlParserInputPtr in = xmlNewIOInputStream(ctxt, ib, XML_CHAR_ENCODING_NONE);
	if (in == NULL) {
		xmlFreeParserInputBuffer(ib);
		return NULL;
	}
	in->filename = (char *)xmlStrdup((const xmlChar *)url);
	return in;
}

void lx_init(void) {
	xmlInitParser();
	xmlSchemaInitTypes();
	xmlSetExternalEntityLoader(lx_loader);
	xmlThrDefSetGenericErrorFunc(NULL, lx_silent);
	xmlThrDefSetStructuredErrorFunc(NULL, NULL);
	xmlSetGenericErrorFunc(NULL, lx_silent);
}

#define LX_BEGIN(es)                              \
	xmlSetGenericErrorFunc(NULL, lx_silent);      \
	xmlSetStructuredErrorFunc((es), lx_collect)
#define LX_END() xmlSetStructuredErrorFunc(NULL, NULL)

xmlDocPtr lx_parse(const char *buf, int len, const char *url, int opts, lx_errs *es) {
	LX_BEGIN(es);
	xmlDocPtr doc = NULL;
	xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
	if (ctxt != NULL) {
		doc = xmlCtxtReadMemory(ctxt, buf, len, url, NULL, opts);
		xmlFreeParserCtxt(ctxt);
	}
	LX_END();
	return doc;
}

/* lx_parse_with parses with a caller-owned, reusable parser context
   (xmlCtxtReadMemory resets it first). xmlCtxtReset leaves the context's
   SAX handler alone, and options rewrite it: NOBLANKS installs a handler
   that drops whitespace, NOCDATA removes the CDATA one, and neither is
   undone for a later parse without the option. So the handler goes back to
   the SAX2 defaults a fresh context has before every parse. */
xmlDocPtr lx_parse_with(xmlParserCtxtPtr ctxt, const char *buf, int len, int opts, lx_errs *es) {
	LX_BEGIN(es);
	if (ctxt->sax != NULL) xmlSAXVersion(ctxt->sax, 2);
	xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, len, NULL, NULL, opts);
	LX_END();
	return doc;
}

int lx_has_dtd(xmlDocPtr doc) {
	return doc != NULL && (doc->intSubset != NULL || doc->extSubset != NULL);
}

static int lx_visible(void *ud, xmlNodePtr node, xmlNodePtr parent) {
	xmlNodePtr root = (xmlNodePtr)ud;
	xmlNodePtr n = node;
	if (n == NULL) return 0;
	if (n->type == XML_NAMESPACE_DECL || n->type == XML_ATTRIBUTE_NODE) n = parent;
	for (; n != NULL; n = n->parent) {
		if (n == root) return 1;
	}
	return 0;
}

/* lx_take_output copies an output buffer's content into malloc'd memory. */
static int lx_take_output(xmlOutputBufferPtr ob, char **out, int *outlen) {
	const xmlChar *content = xmlOutputBufferGetContent(ob);
	size_t size = xmlOutputBufferGetSize(ob);
	char *copy = (char *)malloc(size + 1);
	if (copy == NULL) return -1;
	if (size > 0) memcpy(copy, content, size);
	copy[size] = 0;
	*out = copy;
	*outlen = (int)size;
	return 0;
}

/* lx_hidden hides the subtree at ud (the node, its attributes, its
   namespace nodes and its descendants) and shows everything else: the
   enveloped-signature transform of XML-DSig. */
static int lx_hidden(void *ud, xmlNodePtr node, xmlNodePtr parent) {
	xmlNodePtr hide = (xmlNodePtr)ud;
	xmlNodePtr n = node;
	if (n == NULL) return 1;
	if (n->type == XML_NAMESPACE_DECL || n->type == XML_ATTRIBUTE_NODE) n = parent;
	for (; n != NULL; n = n->parent) {
		if (n == hide) return 0;
	}
	return 1;
}

/* lx_c14n_run runs xmlC14NExecute with the visibility callback vis (NULL: the
   whole document) and its user data ud. */
static int lx_c14n_run(xmlDocPtr doc, xmlC14NIsVisibleCallback vis, void *ud, int mode, int comments,
                       char **incl, int nincl, char **out, int *outlen, lx_errs *es) {
	*out = NULL;
	*outlen = 0;
	LX_BEGIN(es);
	int rc = -1;
	xmlChar **list = NULL;
	if (nincl > 0) {
		list = (xmlChar **)calloc((size_t)nincl + 1, sizeof(xmlChar *));
		if (list == NULL) goto done;
		for (int i = 0; i < nincl; i++) list[i] = (xmlChar *)incl[i];
	}
	xmlOutputBufferPtr ob = xmlAllocOutputBuffer(NULL);
	if (ob == NULL) goto done;
	if (xmlC14NExecute(doc, vis, ud, mode, list, comments, ob) >= 0) {
		rc = lx_take_output(ob, out, outlen);
	}
	xmlOutputBufferClose(ob);
done:
	free(list);
	LX_END();
	return rc;
}

int lx_c14n(xmlDocPtr doc, xmlNodePtr root, int mode, int comments, char **incl, int nincl,
            char **out, int *outlen, lx_errs *es) {
	return lx_c14n_run(doc, root ? lx_visible : NULL, root, mode, comments, incl, nincl, out, outlen, es);
}

/* lx_c14n_child canonicalises the subtree at n, an element child of the
   document element, in time proportional to that subtree. xmlC14NExecute
   walks the whole document whatever the visibility callback says, so
   canonicalising each of a document's N children in place costs O(N²)
   (a model reply of 20,000 elements took over a minute). For the call n
   takes the document element's place — its ancestors then are the
   document alone, as far as C14N sees — and afterwards it goes back where
   it was. Only the exclusive modes are exact this way (inclusive C14N
   would also render the namespaces and xml:* attributes n inherits from
   the document element); for them, and for any other node, it falls back
   to lx_c14n. */
int lx_c14n_child(xmlDocPtr doc, xmlNodePtr n, int mode, int comments, char **incl, int nincl,
                  char **out, int *outlen, lx_errs *es) {
	xmlNodePtr root = xmlDocGetRootElement(doc);
	if (n == NULL || root == NULL || n->parent != root || n->type != XML_ELEMENT_NODE ||
	    mode != XML_C14N_EXCLUSIVE_1_0 || root->nsDef != NULL) {
		return lx_c14n(doc, n, mode, comments, incl, nincl, out, outlen, es);
	}
	xmlNodePtr next = n->next;
	xmlUnlinkNode(n);
	xmlNodePtr old = xmlDocSetRootElement(doc, n); /* old == root, now unlinked */
	int rc = lx_c14n_run(doc, lx_visible, n, mode, comments, incl, nincl, out, outlen, es);
	xmlDocSetRootElement(doc, old); /* n is unlinked again */
	if (next != NULL) {
		xmlAddPrevSibling(next, n);
	} else {
		xmlAddChild(old, n);
	}
	return rc;
}

int lx_c14n_without(xmlDocPtr doc, xmlNodePtr hide, int mode, int comments, char **incl, int nincl,
                    char **out, int *outlen, lx_errs *es) {
	return lx_c14n_run(doc, lx_hidden, hide, mode, comments, incl, nincl, out, outlen, es);
}

char *lx_node_text(xmlNodePtr n) {
	xmlChar *c = xmlNodeGetContent(n);
	if (c == NULL) return NULL;
	char *r = strdup((const char *)c);
	xmlFree(c);
	return r;
}

char *lx_node_path(xmlNodePtr n) {
	xmlChar *p = xmlGetNodePath(n);
	if (p == NULL) return NULL;
	char *r = strdup((const char *)p);
	xmlFree(p);
	return r;
}

long lx_node_line(xmlNodePtr n) { return xmlGetLineNo(n); }

xmlSchemaPtr lx_schema_compile(const char *buf, int len, const char *url, xmlDocPtr *docOut, lx_errs *es) {
	*docOut = NULL;
	LX_BEGIN(es);
	xmlSchemaPtr s = NULL;
	xmlDocPtr doc = NULL;
	xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
	if (ctxt != NULL) {
		doc = xmlCtxtReadMemory(ctxt, buf, len, url, NULL, XML_PARSE_NONET);
		xmlFreeParserCtxt(ctxt);
	}
	if (doc != NULL) {
		xmlSchemaParserCtxtPtr pc = xmlSchemaNewDocParserCtxt(doc);
		if (pc != NULL) {
			xmlSchemaSetParserStructuredErrors(pc, lx_collect, es);
			s = xmlSchemaParse(pc);
			xmlSchemaFreeParserCtxt(pc);
		}
		if (s == NULL) {
			xmlFreeDoc(doc);
			doc = NULL;
		}
	}
	*docOut = doc;
	LX_END();
	return s;
}

/* lx_validate runs one validation (of the document when n is NULL, else of
   the subtree at n) with a fresh validation context. */
static int lx_validate(xmlSchemaPtr s, xmlDocPtr d, xmlNodePtr n, lx_errs *es) {
	LX_BEGIN(es);
	int rc = -1;
	xmlSchemaValidCtxtPtr v = xmlSchemaNewValidCtxt(s);
	if (v != NULL) {
		xmlSchemaSetValidStructuredErrors(v, lx_collect, es);
		rc = n != NULL ? xmlSchemaValidateOneElement(v, n) : xmlSchemaValidateDoc(v, d);
		xmlSchemaFreeValidCtxt(v);
	}
	LX_END();
	return rc;
}

int lx_validate_doc(xmlSchemaPtr s, xmlDocPtr d, lx_errs *es) { return lx_validate(s, d, NULL, es); }

int lx_validate_elem(xmlSchemaPtr s, xmlNodePtr n, lx_errs *es) { return lx_validate(s, NULL, n, es); }

void lx_set_text(xmlNodePtr n, const char *s) {
	xmlNodePtr c = n->children;
	while (c != NULL) {
		xmlNodePtr next = c->next;
		xmlUnlinkNode(c);
		xmlFreeNode(c);
		c = next;
	}
	xmlNodePtr t = xmlNewDocText(n->doc, (const xmlChar *)s);
	if (t != NULL) xmlAddChild(n, t);
}

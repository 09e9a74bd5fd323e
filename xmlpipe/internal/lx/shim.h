#ifndef XMLPIPE_LX_SHIM_H
#define XMLPIPE_LX_SHIM_H

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlschemas.h>
#include <libxml/c14n.h>

/* lx_err is one diagnostic collected from libxml2's structured error channel. */
typedef struct {
	int level, domain, code, line, col;
	char *msg;  /* malloc'd, never NULL */
	char *path; /* malloc'd node path or NULL */
} lx_err;

/* lx_errs is a bounded list of diagnostics. max is set by the caller. */
typedef struct {
	lx_err *items;
	int n, cap, max, dropped;
} lx_errs;

void lx_init(void);
void lx_errs_free(lx_errs *es);

xmlDocPtr lx_parse(const char *buf, int len, const char *url, int opts, lx_errs *es);
xmlDocPtr lx_parse_with(xmlParserCtxtPtr ctxt, const char *buf, int len, int opts, lx_errs *es);
int lx_has_dtd(xmlDocPtr doc);
int lx_c14n(xmlDocPtr doc, xmlNodePtr root, int mode, int comments, char **incl, int nincl,
            char **out, int *outlen, lx_errs *es);
int lx_c14n_child(xmlDocPtr doc, xmlNodePtr n, int mode, int comments, char **incl, int nincl,
                  char **out, int *outlen, lx_errs *es);
int lx_c14n_without(xmlDocPtr doc, xmlNodePtr hide, int mode, int comments, char **incl, int nincl,
                    char **out, int *outlen, lx_errs *es);
char *lx_node_text(xmlNodePtr n);
char *lx_node_path(xmlNodePtr n);
long lx_node_line(xmlNodePtr n);

int lx_register_resource(const char *url, const char *data, int len);
xmlSchemaPtr lx_schema_compile(const char *buf, int len, const char *url, xmlDocPtr *docOut, lx_errs *es);
int lx_validate_doc(xmlSchemaPtr s, xmlDocPtr d, lx_errs *es);
int lx_validate_elem(xmlSchemaPtr s, xmlNodePtr n, lx_errs *es);


void lx_set_text(xmlNodePtr n, const char *s);
#endif

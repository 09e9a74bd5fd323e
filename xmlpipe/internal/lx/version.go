package lx

/*
#include <libxml/parser.h>
#include <libxml/xmlversion.h>

static const char *lx_built_version(void) { return LIBXML_DOTTED_VERSION; }
static const char *lx_running_version(void) { return xmlParserVersion; }
*/
import "C"

import "strconv"

// Version returns the version of the libxml2 the process runs — from the
// library's xmlParserVersion ("20914" → "2.9.14") — and the one it was
// compiled against (LIBXML_DOTTED_VERSION). They differ when the shared
// library was upgraded after the build.
func Version() (running, built string) {
	Init()
	built = C.GoString(C.lx_built_version())
	running = dotted(C.GoString(C.lx_running_version()))
	return running, built
}

// dotted formats libxml2's numeric version ("20914": major*10000 +
// minor*100 + patch) as "2.9.14"; anything else is returned unchanged.
func dotted(v string) string {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return v
	}
	return strconv.Itoa(n/10000) + "." + strconv.Itoa(n/100%100) + "." + strconv.Itoa(n%100)
}

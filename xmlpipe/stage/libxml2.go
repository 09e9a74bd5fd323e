package stage

import "github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"

// LibXML2Version is the version of the libxml2 the stages run on ("2.9.14"),
// with the one the binary was compiled against when they differ ("2.12.1,
// built with 2.9.14").
func LibXML2Version() string {
	running, built := lx.Version()
	if running == built {
		return running
	}
	return running + ", built with " + built
}

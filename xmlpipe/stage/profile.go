package stage

import "github.com/xml-pipeline/xmlpipe/xmlpipe"

// Reaches reports whether p reaches name; a nil p reaches everything.
func Reaches(p xmlpipe.Profile, name string) bool { return p == nil || p.Reaches(name) }

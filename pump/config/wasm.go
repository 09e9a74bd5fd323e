package config

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// FieldList is a payload contract written in organism.yaml instead of a Go
// type: a root element with simple-typed children, from which the XSD, the
// example and the prompt fragment are derived like any other payload's. WASM
// listeners use it for their payload and response. Root is required when
// Fields is set; each Field needs a Name and a Type among FieldTypes.
type FieldList = fields.List

// Field is one child element of a FieldList.
type Field = fields.Field

// FieldTypes are the Type values a Field accepts.
var FieldTypes = []string{"string", "integer", "double", "boolean"}

// Capabilities bound what a WASM listener's sandbox may use.
type Capabilities struct {
	// MemoryMB caps the guest's linear memory (default 64).
	MemoryMB int `yaml:"memory_mb"`
	// Timeout bounds one call; a guest still running is interrupted
	// (default 5s).
	Timeout Duration `yaml:"timeout"`
	// Dir is a host directory preopened as /data ("" = no filesystem).
	Dir string `yaml:"dir"`
	// DirWritable mounts Dir read-write (default read-only).
	DirWritable bool `yaml:"dir_writable"`
	// MaxDiskBytes caps what a writable Dir may hold, in bytes: its files'
	// sizes and its links' targets in whole 4 KiB blocks (a sparse file its
	// whole size) and a block a name, so it bounds the disk the dir takes,
	// what is there when the listener is built included (default 64 MiB).
	// A write, truncate or new name past it fails in the guest.
	MaxDiskBytes int `yaml:"max_disk_bytes"`
	// Env lists the host environment variables the guest sees (default none).
	Env []string `yaml:"env"`
	// Instances is how many instances may run at once (default 4); idle
	// ones are kept warm, calls beyond it wait.
	Instances int `yaml:"instances"`
	// MaxOutputBytes caps what the guest may write per call (default 1 MiB).
	MaxOutputBytes int `yaml:"max_output_bytes"`
}

var xmlName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// checkFieldList reports a malformed field list at path.
func checkFieldList(r *reporter, path string, f FieldList) {
	if f.IsZero() {
		return
	}
	if !xmlName.MatchString(f.Root) {
		r.add(path+".root", "want an XML element name, got %q", f.Root)
	}
	seen := map[string]bool{}
	for i, fd := range f.Fields {
		fp := childIndex(path+".fields", i)
		if !xmlName.MatchString(fd.Name) {
			r.add(fp+".name", "want an XML element name, got %q", fd.Name)
		}
		if seen[fd.Name] {
			r.add(fp+".name", "duplicate field %q", fd.Name)
		}
		seen[fd.Name] = true
		if fd.Type != "" && !containsFold(FieldTypes, fd.Type) {
			r.add(fp+".type", "unknown field type %q (want %s)", fd.Type, strings.Join(FieldTypes, ", "))
		}
		if len(fd.Enum) > 0 && fd.Type != "" && !strings.EqualFold(fd.Type, "string") {
			r.add(fp+".enum", "only string fields take an enum")
		}
		for _, v := range fd.Enum {
			if strings.Contains(v, "|") {
				r.add(fp+".enum", "enum value %q holds a '|'", v)
			}
		}
	}
}

// checkCapabilities reports out-of-range sandbox limits, and a dir that is
// the organism's data directory, lies inside it or contains it (the guest
// would see the organism's keys, journal and certificates).
func checkCapabilities(r *reporter, path string, c Capabilities, dataDir string) {
	r.nonNegative(path+".memory_mb", c.MemoryMB)
	if c.MemoryMB > 4096 {
		r.add(path+".memory_mb", "at most 4096 (the wasm32 address space), got %d", c.MemoryMB)
	}
	if c.Timeout < 0 {
		r.add(path+".timeout", "must not be negative, got %s", c.Timeout)
	}
	r.nonNegative(path+".instances", c.Instances)
	r.nonNegative(path+".max_output_bytes", c.MaxOutputBytes)
	if c.DirWritable && c.Dir == "" {
		r.add(path+".dir_writable", "set dir to mount a directory")
	}
	r.nonNegative(path+".max_disk_bytes", c.MaxDiskBytes)
	if c.MaxDiskBytes > 0 && !c.DirWritable {
		r.add(path+".max_disk_bytes", "caps a writable dir: set dir and dir_writable: true (a read-only dir never grows)")
	}
	if c.Dir != "" && dataDir != "" && overlapping(c.Dir, dataDir) {
		r.add(path+".dir", "%s overlaps organism.data_dir %s, where the organism keeps its keys, journal and certificates: "+
			"give the guest a directory of its own", c.Dir, dataDir)
	}
}

// overlapping reports whether paths a and b, as written, are the same or
// one lies inside the other (the organism checks them again with symbolic
// links resolved, and against the data directory actually used).
func overlapping(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	inside := func(dir, p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	return inside(a, b) || inside(b, a)
}

// IsZero reports whether no capability was written.
func (c Capabilities) IsZero() bool {
	return c.MemoryMB == 0 && c.Timeout == 0 && c.Dir == "" && !c.DirWritable && c.MaxDiskBytes == 0 && len(c.Env) == 0 &&
		c.Instances == 0 && c.MaxOutputBytes == 0
}

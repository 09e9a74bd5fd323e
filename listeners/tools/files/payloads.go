package files

// Files reads, writes, lists or deletes a file inside the configured roots.
type Files struct {
	Op        string `enum:"read|write|list|delete" doc:"read, write, list or delete"`
	Path      string `doc:"the file or directory: its first segment names a root (notes/a.txt is a.txt in the root named notes); any other relative path is inside the first root"`
	Content   string `xml:",omitempty" doc:"write: the text to write"`
	Append    bool   `xml:",omitempty" doc:"write: append instead of replacing"`
	Recursive bool   `xml:",omitempty" doc:"list: descend into directories; delete: remove a directory and its contents"`
}

// FilesResult is the outcome of a Files operation.
type FilesResult struct {
	Op           string
	Path         string
	Content      string  `xml:",omitempty" doc:"read: the file's text"`
	Size         int64   `xml:",omitempty" doc:"read: the file's size in bytes"`
	BytesWritten int     `xml:",omitempty" doc:"write: bytes written"`
	Entries      []Entry `xml:"Entries>Entry,omitempty" doc:"list: the entries, sorted by name"`
	Truncated    bool    `xml:",omitempty" doc:"list: more entries than returned"`
	Error        string  `xml:",omitempty" doc:"why the operation was refused or failed"`
}

// Entry is one listed file or directory.
type Entry struct {
	Name string `doc:"path relative to the listed directory"`
	Type string `enum:"file|dir|other"`
	Size int64
}

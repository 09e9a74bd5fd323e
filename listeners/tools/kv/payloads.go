package kv

// KeyValue gets, sets or deletes a value.
type KeyValue struct {
	Op         string `enum:"get|set|delete" doc:"get, set or delete"`
	Key        string `doc:"the key (at most 256 bytes)"`
	Value      string `xml:",omitempty" doc:"set: the value"`
	Namespace  string `xml:",omitempty" doc:"a namespace of your own (or one the configuration shares); default: this thread's, which no other thread reaches"`
	TTLSeconds int64  `xml:",omitempty" doc:"set: seconds until the value expires (0 = never)"`
}

// KeyValueResult is the outcome of a KeyValue operation.
type KeyValueResult struct {
	Op    string
	Key   string
	Value string `xml:",omitempty" doc:"get: the value"`
	Found bool   `doc:"get: the key has a live value; delete: it existed"`
	Error string `xml:",omitempty" doc:"why the operation was refused or failed"`
}

package config

import (
	"fmt"
	"strings"
)

// pythonTools maps the Python reference's native tool names
// (agentserver/tools, python-reference.md §9.1) to the tool doing the same
// here; the ones of equal name (calculate, web_search, run_command,
// xml_to_json, json_to_xml, xml_extract) need no entry.
var pythonTools = map[string]string{
	"fetch_url":        "fetch",
	"read_file":        "files",
	"write_file":       "files",
	"list_dir":         "files",
	"delete_file":      "files",
	"key_value_get":    "key_value",
	"key_value_set":    "key_value",
	"key_value_delete": "key_value",
	"librarian_store":  "librarian",
	"librarian_get":    "librarian",
	"librarian_query":  "librarian",
	"librarian_search": "librarian",
}

// PythonToolHint returns, for a tools: entry naming one of the Python
// reference's native tools by its Python name, the suffix of the unknown
// tool error saying which tool to write instead; "" for any other name.
func PythonToolHint(name string) string {
	t, ok := pythonTools[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (the Python server's name: here the tool is %q; write it in tools:)", t)
}

package config

import "regexp"

// pythonCLIKeys are the keys of the Python reference's second loader
// (agentserver/config/loader.py and the starter files of its template.py,
// python-reference.md §3.4), which its runtime never read. They stay
// unknown keys here, but the error says what to write instead: the generic
// "did you mean" guess sends "tool" to tools and "server" to an MCP mount.
// Keys are section paths with list indexes written "[]", then the key.
var pythonCLIKeys = map[string]string{
	"llm_backends":              "the Python CLI's backend list: write the entries under llm: {backends: [...]} (name, provider, model, api_key_env, base_url and priority are the same)",
	"server":                    "the Python CLI's server block: xmlpipe run always serves the bus; write host and port as organism: {bind: HOST, port: PORT}",
	"organism.version":          "the Python CLI's; nothing reads it: remove it",
	"organism.description":      "the Python CLI's; nothing reads it: remove it",
	"auth.enabled":              "the Python CLI's; every bus user logs in with a password and a TOTP code: remove it",
	"auth.totp_secret_env":      "the Python CLI's; each user has their own TOTP secret, printed by xmlpipe users add NAME: remove it",
	"listeners[].tool":          "the Python CLI's tool marker: a listener an agent calls is named in that agent's peers; remove it",
	"listeners[].gateway":       "the Python CLI's gateway marker: a remote organism is a gateways: entry (name, remote_url, trusted_identity); remove it",
	"listeners[].allowed_tools": "the Python CLI's: write tools: [...] (the native tools the agent may call)",
	"listeners[].blocked_tools": "the Python CLI's: tools: [...] lists the native tools the agent may call; leave the blocked ones out and remove blocked_tools",
}

// listIndex matches the index of a list item in a section path.
var listIndex = regexp.MustCompile(`\[\d+\]`)

// pythonCLIHint returns what to write instead of key, written in the
// section at path, when it is a key of the Python reference's CLI loader.
func pythonCLIHint(path, key string) (string, bool) {
	h, ok := pythonCLIKeys[childKey(listIndex.ReplaceAllString(path, "[]"), key)]
	return h, ok
}

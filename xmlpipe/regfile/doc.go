// Package regfile opens and reads files named by configuration or by a
// request (a module, a schema, a key, a certificate, a policy document)
// without ever blocking on them: a path naming a FIFO, a device or a socket
// is refused with ErrNotRegular instead of waiting for a writer that may
// never come.
package regfile

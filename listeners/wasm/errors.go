package wasm

import (
	"errors"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// Errors of compiling and calling modules. Call errors wrap one of them.
var (
	// ErrNotModule means the file is no WebAssembly binary module (it
	// does not begin with "\x00asm").
	ErrNotModule = errors.New("wasm: not a WebAssembly binary module")
	// ErrABI means the module is neither a reactor (handle) nor a command
	// (_start), or exports one of them, or describe, of the wrong type.
	ErrABI = errors.New("wasm: module does not export the listener ABI")
	// ErrImport means the module imports something the sandbox does not offer.
	ErrImport = errors.New("wasm: module imports outside wasi_snapshot_preview1")
	// ErrTimeout means the guest was interrupted at its deadline.
	ErrTimeout = errors.New("wasm: guest interrupted at its deadline")
	// ErrTrap means the guest trapped (or its runtime aborted).
	ErrTrap = errors.New("wasm: guest trapped")
	// ErrExit means the guest exited with a non-zero status.
	ErrExit = errors.New("wasm: guest exited")
	// ErrMemory means the guest ran out of its memory cap.
	ErrMemory = errors.New("wasm: guest exceeded its memory limit")
	// ErrFailed means the guest reported a failure (handle returned non-zero).
	ErrFailed = errors.New("wasm: guest reported a failure")
	// ErrOutputTooLarge means the guest wrote more than the output cap.
	ErrOutputTooLarge = errors.New("wasm: guest output over the cap")
	// ErrBadOutput means the guest's output is not the declared response.
	ErrBadOutput = errors.New("wasm: guest output is not a valid response")
	// ErrContract means a payload or response contract is malformed (the
	// field lists' own error, fields.ErrContract).
	ErrContract = fields.ErrContract
	// ErrNotRegular means a module or xsd path names no regular file (a
	// FIFO, a device, a directory): regfile.ErrNotRegular.
	ErrNotRegular = regfile.ErrNotRegular
	// ErrDiskQuota means the guest's writable dir refused a change past
	// its max_disk_bytes during a call that then failed (the guest itself
	// saw EIO).
	ErrDiskQuota = errors.New("wasm: guest's dir is at its disk quota")
	// ErrClosed means the module was closed.
	ErrClosed = errors.New("wasm: module closed")
)

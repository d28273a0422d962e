// Package fail maps heatsible's errors to its documented exit codes. Hooks
// branch on these codes, so they are part of the interface: never renumber.
package fail

import (
	"context"
	"errors"
)

// Exit codes. README.md has the same table.
const (
	OK          = 0   // everything done (or, with --check, nothing failed)
	Internal    = 1   // a bug or an unexpected local error
	Invalid     = 2   // bad input: request, topology, package, flags
	Unreachable = 3   // a host (node or Ansible host) could not be reached or authenticated, or its host key is wrong
	HostFailed  = 4   // a task failed on at least one host
	Discovery   = 5   // OpenStack/Heat could not be read (auth, stack not found, contract not met)
	Refused     = 6   // refused for safety: a Bound PV on heal, another operation holds the cluster lock
	Interrupted = 130 // Ctrl-C or SIGTERM
)

// Error carries an exit code with the error.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// With wraps err with code (nil stays nil).
func With(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Code returns the exit code for err: the outermost *Error's code,
// Interrupted for a cancelled context, Internal otherwise.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return Internal
}

// Package fail maps heatsible's errors to its documented exit codes. Hooks
// branch on these codes, so they are part of the interface: never renumber.
//
// The mapping is here, once: a package tags its own errors, either as a
// Sentinel it declares (var ErrX = fail.Sentinel(fail.Unreachable, "...")),
// which its errors wrap, or with With where it decides a code itself; Code
// finds the tag, through wrapped and joined errors.
package fail

import "context"

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
func (e *Error) exitCode() int { return e.Code }

// With wraps err with code (nil stays nil).
func With(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// sentinel is an error value that carries its exit code.
type sentinel struct {
	code int
	msg  string
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) exitCode() int { return s.code }

// Sentinel returns a new sentinel error (compare it with errors.Is) whose
// exit code is code: an error that wraps it exits with code, unless a tag
// Code meets first says otherwise.
func Sentinel(code int, msg string) error { return &sentinel{code: code, msg: msg} }

// coded is what carries a code: only this package's types (the method is
// unexported), so that no other type's ExitCode (os/exec's, ansible's
// exit status) is taken for heatsible's.
type coded interface{ exitCode() int }

// Code returns the exit code for err: OK for nil, else the code of the
// first tag found walking err's tree as errors.As does (depth first, each
// error before what it wraps, joined errors in order), so the outermost
// tag wins and, of joined errors, the first one's. A tag is an *Error, a
// Sentinel, or context.Canceled (Interrupted). No tag: Internal.
func Code(err error) int {
	if err == nil {
		return OK
	}
	if c, ok := find(err); ok {
		return c
	}
	return Internal
}

func find(err error) (int, bool) {
	for err != nil {
		if c, ok := err.(coded); ok {
			return c.exitCode(), true
		}
		if err == context.Canceled {
			return Interrupted, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if c, ok := find(e); ok {
					return c, true
				}
			}
			return 0, false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return 0, false
		}
	}
	return 0, false
}

// compile-time: both tags are coded.
var _, _ coded = (*Error)(nil), (*sentinel)(nil)

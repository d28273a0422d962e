package ansible

import (
	"errors"
	"fmt"
	"testing"

	"github.com/heatsible/heatsible/internal/fail"
)

// TestErrorsHaveTheDocumentedCodes: this package's errors carry the exit
// codes docs/cli.md documents (a failed task 4; an unreachable host or a
// lost lock 3; a busy or stale lock, no flock, a role's refusal 6; an
// ansible-playbook failure no host explains is heatsible's bug, 1), also
// as a run returns them.
func TestErrorsHaveTheDocumentedCodes(t *testing.T) {
	failed := Result{ExitCode: 2, Recap: map[string]HostRecap{"a": {Failed: 1}}}
	unreachable := Result{ExitCode: 4, Recap: map[string]HostRecap{"a": {Unreachable: 1}}}
	both := Result{ExitCode: 4, Recap: map[string]HostRecap{"a": {Failed: 1}, "b": {Unreachable: 1}}}
	refused := failed
	refused.Events = []Event{{Kind: KindResult, Host: "a", Status: StatusFailed, Task: "pv_register : Check", Refused: true}}
	plainFail := failed
	plainFail.Events = []Event{{Kind: KindResult, Host: "a", Status: StatusFailed, Task: "pv_register : Refuse"}}
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"ErrHostFailed", ErrHostFailed, fail.HostFailed},
		{"ErrUnreachable", ErrUnreachable, fail.Unreachable},
		{"ErrPlaybook", ErrPlaybook, fail.Internal},
		{"ErrLockBusy", ErrLockBusy, fail.Refused},
		{"ErrLockStale", ErrLockStale, fail.Refused},
		{"ErrNoFlock", ErrNoFlock, fail.Refused},
		{"ErrLockLost", ErrLockLost, fail.Unreachable},
		{"a busy lock, as Lock says it", fmt.Errorf("locking: %w", &LockError{ErrLockBusy, "cluster c is busy"}), fail.Refused},
		{"a lost lock, as a staging exchange says it", fmt.Errorf("%w (h): %w", ErrLockLost, errors.New("EOF")), fail.Unreachable},
		{"a failed task", failed.Err(), fail.HostFailed},
		{"an unreachable host", unreachable.Err(), fail.Unreachable},
		{"failed and unreachable hosts", both.Err(), fail.Unreachable},
		{"no host to blame", (&Result{ExitCode: 4}).Err(), fail.Internal},
		{"a role's refusal", refusal(&refused, refused.Err()), fail.Refused},
		{"a refusal after a lost connection", refusal(&refused, fmt.Errorf("lost the connection: %w", errors.New("EOF"))), fail.Refused},
		{"a failed task named Refuse", refusal(&plainFail, plainFail.Err()), fail.HostFailed},
		{"no error, no refusal", refusal(&refused, nil), fail.OK},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fail.Code(c.err); got != c.want {
				t.Errorf("exit code %d, want %d (%v)", got, c.want, c.err)
			}
		})
	}
}

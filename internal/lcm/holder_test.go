package lcm

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/state"
)

// TestLockHoldersAgree: the local lock's holder (state.Holder) becomes the
// Ansible host's (ansible.Holder) by a conversion, which compiles only
// while their fields are the same; their JSON (the lock files) and their
// words (busy-lock messages) must be the same too, and so must the lock
// files' names.
func TestLockHoldersAgree(t *testing.T) {
	h := state.Holder{Operation: "heal-end", PID: 42, Host: "tacker-1", Started: time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC), Record: "/var/lib/heatsible/runs/k8s-a/x"}
	a := ansible.Holder(h)
	if a.String() != h.String() {
		t.Errorf("ansible says %q, state %q", a, h)
	}
	js, _ := json.Marshal(h)
	ja, _ := json.Marshal(a)
	if string(js) != string(ja) {
		t.Errorf("lock file JSON: state %s, ansible %s", js, ja)
	}
	for _, c := range []string{"k8s-a", "a/b c", "", "..."} {
		if s, a := state.LockName(c), ansible.LockName(c); s != a {
			t.Errorf("lock name of %q: state %q, ansible %q", c, s, a)
		}
	}
}

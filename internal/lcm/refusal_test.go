package lcm

import (
	"context"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/heatsible/heatsible/collection"
	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/roles"
)

// refusalProbe is a role that refuses through the collection's refusal
// action (heatsible.nfv.refuse, as every role does) with tasks named
// against the grain:
// a refusal that is not called "Refuse", and a plain failure that is.
const refusalProbe = `---
- name: Check the widgets
  heatsible.nfv.refuse:
    msg: widget w1 is Bound to claim default/c1
  when: probe_case == 'marker'

- name: Refuse on request, with no marker (a plain failure)
  ansible.builtin.fail:
    msg: plain failure
  when: probe_case == 'named'

- name: Refuse once per item
  heatsible.nfv.refuse:
    msg: "{{ item }} is not safe"
  loop: [a, b]
  when: probe_case == 'loop'
`

// runRoles runs play (a playbook) on localhost, connection local, with the
// given roles and vars, through the real ansible-playbook.
func runRoles(t *testing.T, roleFS fs.FS, play, vars string) (*ansible.Result, error) {
	t.Helper()
	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster: "refusal", Operation: "test", BaseDir: t.TempDir(),
		Inventory:   []byte("all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n    node-a: {}\n"),
		Playbook:    []byte(play),
		Roles:       roleFS,
		Collections: map[string]fs.FS{collection.FQCN: collection.FS},
		GroupVars:   map[string][]byte{"all": []byte(vars)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return ansible.LocalRunner{}.Run(ctx, b, ansible.PlaybookOptions{})
}

// TestRefusalMarker: a task that fails through heatsible.nfv.refuse (the
// marker, heatsible_refused in its result) is exit code 6 whatever it is
// called; a task that merely fails is 4, also when it is called "Refuse
// ...". The real cinder_volume role refuses a volume without a device
// (6) and fails on a parameter problem (4).
func TestRefusalMarker(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	probe := fstest.MapFS{
		"probe/tasks/main.yml": {Data: []byte(refusalProbe)},
	}
	const probePlay = "- name: Probe\n  hosts: all\n  gather_facts: false\n  roles:\n    - probe\n"
	const cinderPlay = "- name: Storage\n  hosts: all\n  gather_facts: false\n  roles:\n    - cinder_volume\n"
	tests := []struct {
		name        string
		roles       fs.FS
		play, vars  string
		code        int
		task, msg   string
		wantRefused bool
	}{
		{"marker, any name", probe, probePlay, "probe_case: marker\n", fail.Refused, "probe : Check the widgets", "widget w1 is Bound to claim default/c1", true},
		{"named Refuse, no marker", probe, probePlay, "probe_case: named\n", fail.HostFailed, "probe : Refuse on request, with no marker (a plain failure)", "plain failure", false},
		{"marker in a loop", probe, probePlay, "probe_case: loop\n", fail.Refused, "probe : Refuse once per item", "", true},
		{"cinder_volume: no device", roles.FS, cinderPlay,
			`{"cinder_volumes": [{"id": "0123456789abcdef0123456789", "device": "/dev/hs-no-such-device", "mount_to": "/hs-no-such-mount"}], "nfs_exports": [{"dir": "/hs-no-such-mount/a"}]}` + "\n",
			fail.Refused, "cinder_volume : Refuse disks that are not provably the volume", "no block device found for volume 0123456789abcdef0123456789 ", true},
		{"cinder_volume: bad parameter", roles.FS, cinderPlay,
			`{"cinder_volumes": [{"id": "v1"}], "nfs_exports": [{"dir": "/volume/a"}]}` + "\n",
			fail.HostFailed, "cinder_volume : Validating arguments against arg spec 'main'", "missing required arguments: mount_to found in cinder_volumes", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runRoles(t, tc.roles, tc.play, tc.vars)
			if err == nil {
				t.Fatal("the play did not fail")
			}
			if code := fail.Code(err); code != tc.code {
				t.Errorf("exit code %d, want %d (%v)", code, tc.code, err)
			}
			var found bool
			for _, e := range res.Events {
				if e.Kind != ansible.KindResult || e.Status != ansible.StatusFailed {
					continue
				}
				found = true
				if !strings.HasPrefix(e.Task, tc.task) || !strings.Contains(e.Msg, tc.msg) || e.Refused != tc.wantRefused {
					t.Errorf("failed task %q (refused %v): %s; want %q (refused %v) saying %q", e.Task, e.Refused, e.Msg, tc.task, tc.wantRefused, tc.msg)
				}
			}
			if !found {
				t.Errorf("no failed task in %+v", res.Events)
			}
		})
	}
}

// rescueProbe refuses inside a block that rescues it, or with
// ignore_errors, and may then fail plainly.
const rescueProbe = `---
- name: Refuse, rescued
  when: probe_case in ['rescued', 'rescued then failed']
  block:
    - name: Refuse the widgets
      heatsible.nfv.refuse:
        msg: widget w1 is Bound
  rescue:
    - name: Carry on
      ansible.builtin.debug:
        msg: rescued

- name: Refuse, ignored
  heatsible.nfv.refuse:
    msg: widget w2 is Bound
  ignore_errors: true
  when: probe_case == 'ignored then failed'

- name: Fail plainly
  ansible.builtin.fail:
    msg: plain failure
  when: probe_case in ['failed', 'rescued then failed', 'ignored then failed']
`

// TestRefusalJudgedPerRun: exit code 6 is judged on one ansible-playbook
// run, each phase of an operation being one. A refusal rescued in one run
// leaves that run a success, and a plain failure in the next run (the
// operation's next phase) is 4; within one run, a refusal that was
// rescued or ignored still makes a later plain failure of that run 6.
// (No role or playbook rescues or ignores a refusal: docs/hooks.md.)
func TestRefusalJudgedPerRun(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	probe := fstest.MapFS{"probe/tasks/main.yml": {Data: []byte(rescueProbe)}}
	const play = "- name: Probe\n  hosts: all\n  gather_facts: false\n  roles:\n    - probe\n"
	run := func(c string) error {
		res, err := runRoles(t, probe, play, "probe_case: "+c+"\n")
		if strings.Contains(c, "rescued") || strings.Contains(c, "ignored") {
			refused := false
			for _, e := range res.Events {
				refused = refused || e.Refused
			}
			if !refused {
				t.Errorf("%s: no refused task among the events: %+v", c, res.Events)
			}
		}
		return err
	}
	// Two phases: the first rescues its refusal, the second fails.
	if err := run("rescued"); err != nil {
		t.Fatalf("a run whose refusal was rescued failed: %v", err)
	}
	if code := fail.Code(run("failed")); code != fail.HostFailed {
		t.Errorf("the next run's plain failure: exit code %d, want %d", code, fail.HostFailed)
	}
	// One run.
	for _, c := range []string{"rescued then failed", "ignored then failed"} {
		if code := fail.Code(run(c)); code != fail.Refused {
			t.Errorf("%s in one run: exit code %d, want %d", c, code, fail.Refused)
		}
	}
}

package roles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/collection"
)

func TestFSHasEveryRole(t *testing.T) {
	for _, name := range append(append([]string(nil), Names...), Helpers...) {
		for _, f := range []string{"tasks/main.yml", "defaults/main.yml", "meta/main.yml", "README.md"} {
			p := name + "/" + f
			b, err := fs.ReadFile(FS, p)
			if err != nil {
				t.Errorf("embedded FS: %v", err)
				continue
			}
			if len(bytes.TrimSpace(b)) == 0 {
				t.Errorf("embedded %s is empty", p)
			}
		}
	}
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(Names)+len(Helpers) {
		t.Errorf("embedded FS has %d top-level entries, want %d (%v and %v)", len(entries), len(Names)+len(Helpers), Names, Helpers)
	}
}

// ansibleEnv keeps Ansible's caches and temp files inside the test's
// temporary directory, and puts the embedded collection heatsible.nfv (the
// roles' modules, action plugins and filters) on the collections path, as
// a run bundle does.
func ansibleEnv(t *testing.T) []string {
	t.Helper()
	tmp := t.TempDir()
	colls, err := collection.Lay(filepath.Join(tmp, "collections"))
	if err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(tmp, "local"),
		"ANSIBLE_HOME="+filepath.Join(tmp, "home"),
		// The tree's ansible_collections/ itself, which Ansible takes as
		// the tree: Debian's ansible-lint 6.13 loads collections, under
		// ansible-core 2.14, from the directory above the path it names.
		"ANSIBLE_COLLECTIONS_PATH="+filepath.Join(colls, "ansible_collections"),
		"ANSIBLE_NOCOLOR=1",
		// no __pycache__ in the collection's plugins: go:embed would ship it
		"PYTHONDONTWRITEBYTECODE=1",
		"ANSIBLE_FORCE_COLOR=0",
		"NO_COLOR=1",
		// The target is this machine standing in for a Debian node: its
		// python3. Interpreter discovery would take the first of Ansible's
		// list found on PATH, which differs by version (2.19 tries
		// python3.13 first) and here finds a pyenv shim that cannot run.
		"ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3",
	)
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s: %s", name, bytes.TrimSpace(out))
}

func TestAnsibleLint(t *testing.T) {
	if _, err := exec.LookPath("ansible-lint"); err != nil {
		t.Skip("ansible-lint is not on PATH (CI installs Debian's ansible-lint)")
	}
	// As make lint runs it: the repository's .ansible-lint (production
	// profile, strict, offline), every role, and the collection
	// heatsible.nfv on the collections path (without it ansible-lint cannot
	// resolve the roles' heatsible.nfv.* modules and mocks the filters,
	// checking nothing behind them).
	var dirs []string
	for _, r := range append(append([]string{}, Names...), Helpers...) {
		dirs = append(dirs, "roles/"+r+"/")
	}
	run(t, "..", ansibleEnv(t), "ansible-lint", append([]string{"--nocolor", "-c", ".ansible-lint"}, dirs...)...)
}

const syntaxPlaybook = `---
- name: Storage server
  hosts: nfs_server
  become: true
  roles:
    - role: cinder_volume
    - role: nfs_server
- name: NFS clients
  hosts: nfs_client
  become: true
  roles:
    - role: nfs_client
- name: PersistentVolumes
  hosts: kube_control_plane[0]
  roles:
    - role: pv_register
`

func TestPlaybookSyntax(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	roles, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inv := "[nfs_server]\nstorage\n[nfs_client]\nmaster-0\nworker-0\n[kube_control_plane]\nmaster-0\n"
	for name, content := range map[string]string{"site.yml": syntaxPlaybook, "inventory.ini": inv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles)
	run(t, dir, env, "ansible-playbook", "--syntax-check", "-i", "inventory.ini", "site.yml")
}

// TestCinderVolumeRefusals runs cinder_volume on this machine (connection
// local, no become) with inputs it must refuse, and checks each message and
// that nothing after the refusal ran. Every case fails before anything is
// changed: the argument spec is checked first, and the probe before the
// device check only reads (mountpoint, /etc/fstab, -b tests).
func TestCinderVolumeRefusals(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	roles, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, vars string
		task, want string
	}{
		{
			// the role's interface (meta/argument_specs.yml); the request's
			// rules (absolute, under a volume, ...) are heatsible's
			"mount_to missing",
			`{"cinder_volumes": [{"id": "v1"}], "nfs_exports": [{"dir": "/volume/a"}]}`,
			"Validating arguments against arg spec 'main'",
			`missing required arguments: mount_to found in cinder_volumes`,
		},
		{
			"no block device",
			`{"cinder_volumes": [{"id": "0123456789abcdef0123456789", "device": "/dev/hs-no-such-device", "mount_to": "/hs-no-such-mount"}], "nfs_exports": [{"dir": "/hs-no-such-mount/a"}]}`,
			"Refuse disks that are not provably the volume",
			`no block device found for volume 0123456789abcdef0123456789 (mount_to /hs-no-such-mount): neither its by-id names nor Heat's device name '/dev/hs-no-such-device' exist as block devices. Is the volume attached to this server? Looked for /dev/disk/by-id/virtio-0123456789abcdef0123 and ata-QEMU_HARDDISK_<id>, scsi-0QEMU_QEMU_HARDDISK_<id>, scsi-SQEMU_QEMU_HARDDISK_<id> (`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pb := "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: cinder_volume\n"
			if err := os.WriteFile(filepath.Join(dir, "site.yml"), []byte(pb), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", "localhost,", "-c", "local", "-e", tc.vars, "site.yml")
			cmd.Dir = dir
			cmd.Env = append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("ansible-playbook: %v, want exit 2 (a task failed)\n%s", err, out)
			}
			s := string(out)
			if !strings.Contains(s, "TASK [cinder_volume : "+tc.task) || !strings.Contains(s, tc.want) {
				t.Errorf("want a failure of %q saying %q:\n%s", tc.task, tc.want, s)
			}
			if strings.Contains(s, "Format, mount and create") {
				t.Errorf("the role went on after refusing:\n%s", s)
			}
		})
	}
}

// TestRefusalsAreMarked: a task of the roles whose name says it refuses
// ("Refuse ...") refuses through heatsible.nfv.refuse: the name alone means
// nothing to heatsible (a failed task without the marker is exit code 4).
func TestRefusalsAreMarked(t *testing.T) {
	var walk func(file string, tasks []map[string]any)
	walk = func(file string, tasks []map[string]any) {
		for _, task := range tasks {
			name, _ := task["name"].(string)
			if strings.HasPrefix(name, "Refuse") {
				if _, ok := task["heatsible.nfv.refuse"]; !ok {
					t.Errorf("%s: task %q refuses without heatsible.nfv.refuse: heatsible would report it as a failure (exit 4), not a refusal (6)", file, name)
				}
			}
			for _, k := range []string{"block", "rescue", "always"} {
				if sub, ok := task[k].([]any); ok {
					var list []map[string]any
					for _, s := range sub {
						if m, ok := s.(map[string]any); ok {
							list = append(list, m)
						}
					}
					walk(file, list)
				}
			}
		}
	}
	n := 0
	err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, "/tasks/") || !strings.HasSuffix(p, ".yml") {
			return err
		}
		b, err := fs.ReadFile(FS, p)
		if err != nil {
			return err
		}
		var tasks []map[string]any
		if err := yaml.Unmarshal(b, &tasks); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		n++
		walk(p, tasks)
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("reading the roles' task files (%d read): %v", n, err)
	}
}

// TestNoCompiledPython: the embedded roles carry no __pycache__ (the
// roles' script tests compile them on this machine; embedding without
// "all:" leaves out names starting with "_" or ".").
func TestNoCompiledPython(t *testing.T) {
	err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "__pycache__" || strings.HasSuffix(p, ".pyc") {
			t.Errorf("embedded: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShellJSONEncoderOneCopy: the host-side probes print JSON with
// the shell function j(), which keeps a hostile path or blkid value a JSON
// string. It has one copy, the collection's filter with_json_encoder
// (collection/plugins/filter/shell.py), which the tasks put in front of
// each script they send with raw: no script defines j() itself, and every
// script that calls it is sent through the filter by its role's tasks.
func TestShellJSONEncoderOneCopy(t *testing.T) {
	scripts, err := fs.Glob(FS, "*/files/*.sh")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range scripts {
		data, err := fs.ReadFile(FS, s)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if strings.Contains(text, "\nj() {") {
			t.Errorf("%s defines j() itself: use the collection's (hand the script through heatsible.nfv.with_json_encoder)", s)
		}
		if !strings.Contains(text, "$(j ") {
			continue
		}
		n++
		role, name := strings.Split(s, "/")[0], path.Base(s)
		tasks, err := fs.Glob(FS, role+"/tasks/*.yml")
		if err != nil {
			t.Fatal(err)
		}
		want := "lookup('ansible.builtin.file', '" + name + "') | heatsible.nfv.with_json_encoder"
		sent := false
		for _, task := range tasks {
			b, err := fs.ReadFile(FS, task)
			if err != nil {
				t.Fatal(err)
			}
			sent = sent || strings.Contains(string(b), want)
		}
		if !sent {
			t.Errorf("%s calls j() but no task of %s sends it through the filter (%s): on a host j is not defined", s, role, want)
		}
	}
	if n < 3 {
		t.Errorf("found j() called in %d scripts, want the 3 probes (cinder_volume probe.sh, nfs_server state.sh and verify.sh)", n)
	}
}

package roles

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestFSHasEveryRole(t *testing.T) {
	for _, name := range Names {
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
	if len(entries) != len(Names) {
		t.Errorf("embedded FS has %d top-level entries, want %d (%v)", len(entries), len(Names), Names)
	}
}

// ansibleEnv keeps Ansible's caches and temp files inside the test's
// temporary directory.
func ansibleEnv(t *testing.T) []string {
	tmp := t.TempDir()
	return append(os.Environ(),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(tmp, "local"),
		"ANSIBLE_HOME="+filepath.Join(tmp, "home"),
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
		"NO_COLOR=1",
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
	// --offline: never install collections or roles from Galaxy.
	run(t, ".", ansibleEnv(t), "ansible-lint", append([]string{"--offline", "--nocolor", "-p"}, Names...)...)
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

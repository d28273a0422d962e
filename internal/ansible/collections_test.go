package ansible

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// whoami is an action plugin that fails saying where it was loaded from.
func whoami(from string) []byte {
	return []byte(`from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return {'failed': True, 'msg': 'heatsible.nfv.whoami of ` + from + `'}
`)
}

// TestBundleCollectionFirst: a play calling heatsible.nfv.whoami gets the
// bundle's collection, not a heatsible.nfv of the same name installed in
// the user's ~/.ansible/collections (which ansible-galaxy would fill) or
// named by ANSIBLE_COLLECTIONS_PATH(S) in the environment heatsible runs
// in (2.14 reads both names, 2.19 the first only); without the bundle's,
// the user's own is found (the collections path keeps Ansible's default
// places, where ansible.posix and community.general may live).
func TestBundleCollectionFirst(t *testing.T) {
	needAnsible(t)
	home, env := t.TempDir(), t.TempDir()
	for dir, from := range map[string]string{filepath.Join(home, ".ansible", "collections"): "home", env: "env"} {
		p := filepath.Join(dir, "ansible_collections", "heatsible", "nfv", "plugins", "action")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "whoami.py"), whoami(from), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("ANSIBLE_COLLECTIONS_PATH", env)
	t.Setenv("ANSIBLE_COLLECTIONS_PATHS", env)
	mine := fstest.MapFS{"plugins/action/whoami.py": {Data: whoami("the bundle")}}

	for _, tc := range []struct {
		name        string
		collections map[string]fs.FS
		want        string
	}{
		{"bundle's", map[string]fs.FS{"heatsible.nfv": mine}, "heatsible.nfv.whoami of the bundle"},
		{"none in the bundle", nil, "heatsible.nfv.whoami of home"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBundle(BundleSpec{
				Cluster: "test", Operation: "collections", BaseDir: t.TempDir(),
				Inventory:   []byte("all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n    node-a: {}\n"),
				Playbook:    []byte("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: Who\n      heatsible.nfv.whoami: {}\n"),
				Collections: tc.collections,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := LocalRunner{}.Run(ctx, b, PlaybookOptions{})
			if err == nil {
				t.Fatal("the play did not fail")
			}
			var msgs []string
			for _, e := range res.Events {
				if e.Kind == KindResult {
					msgs = append(msgs, e.Msg)
				}
			}
			if len(msgs) != 1 || msgs[0] != tc.want {
				t.Errorf("results %q, want one saying %q (%v)", msgs, tc.want, err)
			}
		})
	}
}

// TestConfigReadByAnsible: the ansible-core on PATH reads the bundle's
// ansible.cfg as written, in the environment a run gets (cleanEnv, runEnv):
// `ansible-config dump --only-changed` names the file as where
// COLLECTIONS_PATHS, roles_path and local_tmp come from, the bundle's
// collections first, and says no warning (a deprecated or renamed key warns
// there: collections_paths under 2.16-2.18; 2.19 no longer reads it, which
// only the first check sees). TestBundleCollectionFirst alone cannot tell:
// the playbook's own collections/ and ~/.ansible/collections are searched
// whatever the setting.
func TestConfigReadByAnsible(t *testing.T) {
	needAnsible(t)
	if _, err := exec.LookPath("ansible-config"); err != nil {
		t.Skip("ansible-config not on PATH")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	b, err := NewBundle(BundleSpec{
		Cluster: "test", Operation: "config", BaseDir: t.TempDir(),
		Inventory: []byte("all:\n  hosts:\n    node-a: {}\n"),
		Playbook:  []byte("- hosts: all\n  tasks: []\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-config", "dump", "--only-changed")
	cmd.Dir = b.Dir
	cmd.Env = append(cleanEnv(os.Environ()), runEnv(b, b.Dir, PlaybookOptions{})...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-config dump: %v\n%s", err, out)
	}
	cfg := filepath.Join(b.Dir, ConfigFile)
	for _, want := range []string{
		"COLLECTIONS_PATHS(" + cfg + ") = ['" + b.Dir + "/" + CollectionsDir + "', '" + home + "/.ansible/collections', '/usr/share/ansible/collections']\n",
		"DEFAULT_ROLES_PATH(" + cfg + ") = ['" + b.Dir + "/" + RolesDir + "']\n",
		"DEFAULT_LOCAL_TMP(" + cfg + ") = " + b.Dir + "/" + TmpDir,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ansible-config dump lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "WARNING") {
		t.Errorf("ansible-config dump warns:\n%s", out)
	}
}

package ansible

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
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

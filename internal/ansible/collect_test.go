package ansible

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// collectPlaybook writes a token into the bundle the way the k8s_vim role
// does: a no_log task on the controller (delegate_to localhost), so that
// no event carries it.
const collectPlaybook = `---
- name: Collect
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the token for heatsible
      ansible.builtin.copy:
        content: '{"token": "{{ collect_token }}"}'
        dest: "{{ playbook_dir }}/out/info.json"
        mode: "0600"
      delegate_to: localhost
      become: false
      no_log: true
      changed_when: false
`

const collectToken = "eyJhbGciOiJSUzI1NiJ9.collect-me.sig"

func collectBundle(t *testing.T) *Bundle {
	t.Helper()
	spec := probeSpec(t, t.TempDir(), map[string]string{"node-a": ""})
	spec.Playbook = []byte(collectPlaybook)
	spec.GroupVars = map[string][]byte{"all": []byte("collect_token: " + collectToken + "\n")}
	spec.Files = map[string][]byte{"out/.keep": nil}
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestCollect: Collect reads back the files a run wrote into its bundle
// (locally and from the Ansible host's staging directory, before it is
// removed), skips those it did not write, and the file's content reaches
// no event. Fails on a runner that ignores Collect.
func TestCollect(t *testing.T) {
	needAnsible(t)
	rr, base := remoteRunner(t)
	for _, tc := range []struct {
		name   string
		runner Runner
	}{{"local", LocalRunner{}}, {"remote", rr}} {
		t.Run(tc.name, func(t *testing.T) {
			b := collectBundle(t)
			var rec recorder
			res, err := tc.runner.Run(context.Background(), b, PlaybookOptions{OnEvent: rec.on, Collect: []string{"out/info.json", "out/none.json"}})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, res.Stderr)
			}
			want := `{"token": "` + collectToken + `"}`
			if got := string(res.Collected["out/info.json"]); got != want {
				t.Errorf("collected %q, want %q", got, want)
			}
			if _, ok := res.Collected["out/none.json"]; ok || len(res.Collected) != 1 {
				t.Errorf("collected %d files, want only out/info.json", len(res.Collected))
			}
			for _, e := range rec.events {
				if strings.Contains(e.Msg+e.Diff, "collect-me") {
					t.Errorf("event %s/%s carries the token", e.Kind, e.Task)
				}
			}
			if out := strings.Join(res.Stdout, "\n") + res.Stderr; strings.Contains(out, "collect-me") {
				t.Errorf("ansible-playbook's output carries the token:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(b.Dir, "out", "info.json")); err == nil && tc.name == "local" {
				t.Error("the collected file stays in the local bundle")
			}
			assertEmptyDir(t, base)
		})
	}
}

func TestCollectRefusesPathsOutsideTheBundle(t *testing.T) {
	b := collectBundle(t)
	for _, rel := range []string{"../x.json", "/etc/passwd", "secrets.yml", "inventory/hosts.yml", "a/../b", "."} {
		if _, err := (LocalRunner{}).Run(context.Background(), b, PlaybookOptions{Collect: []string{rel}}); err == nil || !strings.Contains(err.Error(), "collect") {
			t.Errorf("Collect %q: %v, want refused", rel, err)
		}
	}
}

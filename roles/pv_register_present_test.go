package roles

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// presentKubectl answers what pv_register's present.yml and
// present-stdin.yml ask kubectl: /readyz (refused while $DIR/down exists),
// the kubeconfig's server, apply (stdin saved to $DIR/applied; "created"
// the first time, "unchanged" afterwards) and the PVs' phases ($DIR/phase)
// as custom columns or JSON. Every call is logged to $DIR/log.
const presentKubectl = `#!/bin/sh
if [ "$1" = --kubeconfig ]; then shift 2; fi
echo "$*" >> "$DIR/log"
phase=$(cat "$DIR/phase")
case "$*" in
*"get --raw /readyz"*) [ ! -e "$DIR/down" ] || { echo "The connection to the server was refused" >&2; exit 1; } ;;
*"config view"*) printf 'https://10.10.0.10:6443' ;;
*"apply -f -"*)
  cat > "$DIR/applied"
  if [ -e "$DIR/exists" ]; then echo "persistentvolume/nfs-pv1 unchanged"; else echo "persistentvolume/nfs-pv1 created"; fi
  case "$*" in *--dry-run*) ;; *) touch "$DIR/exists" ;; esac ;;
*"-o json"*) printf '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"nfs-pv1"},"status":{"phase":"%s"}}' "$phase" ;;
*"get persistentvolumes"*) echo "nfs-pv1   $phase" ;;
*) echo "fake kubectl: unexpected: $*" >&2; exit 3 ;;
esac
`

// A manifest whose annotation holds Jinja that would run a command on the
// controller if Ansible templated it, and Jinja that does not parse.
const hostileManifest = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv1
  annotations:
    note: "{{ lookup('pipe', 'touch PWNED') }} {% raw %} {# ${HOME} $(id) '"
`

// TestPVRegisterPresent runs pv_register (pv_state=present) on this machine
// against a fake kubectl, through present.yml's one command (files/pv.sh)
// and present-stdin.yml (pv_register_raw_max 10): the manifest reaches
// kubectl byte for byte, a re-run changes nothing, check mode applies with
// --dry-run=server and waits for nothing, and a PV that stays Pending or an
// API server that does not answer fails with the message that says so.
func TestPVRegisterPresent(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	roles, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, variant := range []struct{ name, extra string }{{"one command", ""}, {"stdin", `"pv_register_raw_max": 10, `}} {
		t.Run(variant.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range map[string]string{
				"kubectl": presentKubectl, "nfs-pv1.yaml": hostileManifest, "admin.conf": "apiVersion: v1\nkind: Config\n",
				"site.yml": "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: pv_register\n",
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			play := func(phase string, args ...string) (int, string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, "phase"), []byte(phase), 0o600); err != nil {
					t.Fatal(err)
				}
				vars := `{` + variant.extra + `"pv_manifests": [{"name": "nfs-pv1", "src": "` + filepath.Join(dir, "nfs-pv1.yaml") + `"}],
					"kubectl_bin": "` + filepath.Join(dir, "kubectl") + `", "kubectl_kubeconfig": "` + filepath.Join(dir, "admin.conf") + `",
					"pv_wait_timeout": 2, "pv_wait_delay": 1, "pv_register_api_timeout": 2, "pv_register_api_delay": 1}`
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "ansible-playbook", append([]string{"-v", "-i", "localhost,", "-c", "local", "-e", vars, "site.yml"}, args...)...)
				cmd.Dir = dir
				cmd.Env = append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false", "DIR="+dir)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatalf("ansible-playbook: %v\n%s", err, out)
				}
				return cmd.ProcessState.ExitCode(), strings.Join(strings.Fields(string(out)), " ")
			}
			calls := func() string {
				b, _ := os.ReadFile(filepath.Join(dir, "log"))
				os.Remove(filepath.Join(dir, "log"))
				return string(b)
			}

			if code, out := play("Available", "--check"); code != 0 || !strings.Contains(out, "changed=1") {
				t.Fatalf("check mode: exit %d, want 0 and changed=1\n%s", code, out)
			}
			if c := calls(); !strings.Contains(c, "apply -f - --dry-run=server") || strings.Contains(c, "get persistentvolumes") {
				t.Errorf("check mode: want apply --dry-run=server and no wait, kubectl was called with:\n%s", c)
			}
			if code, out := play("Available"); code != 0 || !strings.Contains(out, "changed=1") || !strings.Contains(out, "nfs-pv1: Available") {
				t.Fatalf("first run: exit %d, want 0, changed=1 and the phase\n%s", code, out)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "applied")); !strings.Contains(string(b), "---\n"+hostileManifest) {
				t.Errorf("kubectl got\n%s\nwant the manifest as written", b)
			}
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Errorf("the manifest's Jinja ran on the controller")
			}
			if code, out := play("Bound"); code != 0 || !strings.Contains(out, "changed=0") || !strings.Contains(out, "nfs-pv1: Bound") {
				t.Errorf("re-run: exit %d, want 0 and changed=0\n%s", code, out)
			}
			if code, out := play("Pending"); code != 2 || !strings.Contains(out, "PersistentVolumes not Available or Bound after 2 s (--wait pv=SECONDS for a longer wait): nfs-pv1 Pending") {
				t.Errorf("a PV Pending: exit %d, want 2 and the phase in the message\n%s", code, out)
			}
			calls()
			if err := os.WriteFile(filepath.Join(dir, "down"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := play("Available")
			if want := "the Kubernetes API server https://10.10.0.10:6443 did not answer localhost within 2 s (The connection to the server was refused). Nothing was changed."; code != 2 || !strings.Contains(out, want) {
				t.Errorf("API server down: exit %d, want 2 and %q\n%s", code, want, out)
			}
			if c := calls(); strings.Contains(c, "apply") {
				t.Errorf("API server down: kubectl apply ran:\n%s", c)
			}
		})
	}
}

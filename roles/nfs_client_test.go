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

// fakeSystemctl answers "systemctl show -p ... -- UNIT..." as systemd 252
// does, from $STATES (lines "UNIT LOADSTATE [UNITFILESTATE]"; a unit not
// listed is not-found), logging each call to $LOG.
const fakeSystemctl = `#!/bin/sh
echo "$*" >> "$LOG"
[ "$1" = show ] || { echo "fake systemctl: unexpected: $*" >&2; exit 3; }
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
first=1
for u in "$@"; do
  [ $first = 1 ] || echo
  first=0
  line=$(grep "^$u " "$STATES")
  set -- $line
  echo "Id=$u"
  echo "LoadState=${2:-not-found}"
  [ -n "$3" ] && echo "UnitFileState=$3"
done
exit 0
`

// fakeDpkgQuery says hs-nfs-fake is installed when $INSTALLED is 1.
const fakeDpkgQuery = `#!/bin/sh
[ "$INSTALLED" = 1 ] || exit 1
case "$*" in
*hs-nfs-fake*) echo "installed hs-nfs-fake" ;;
esac
`

// TestNFSClientStatdRefusal runs nfs_client on this machine (connection
// local) against a fake systemctl and dpkg-query, in a mount namespace
// whose /run/systemd/system says systemd booted it: a node whose rpc-statd
// or rpcbind is masked fails (exit 4 in heatsible) before anything is
// installed, in check mode too, when a PV mounts with NFSv3 and locks; the
// same node passes without such a PV, and systemd is then not even asked
// (issue 28, hardened nodes).
func TestNFSClientStatdRefusal(t *testing.T) {
	roles := needRootAnsible(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux) for a private /run/systemd")
	}
	const pvs = `[{"name": "nfs-pv1", "mount_options": ["nfsvers=3", "hard"], "field": "spec.mountOptions"}]`
	const all = "rpc-statd.service masked masked\nrpcbind.service masked masked\nrpcbind.socket masked masked\n"
	tests := []struct {
		name      string
		states    string
		pvs       string
		installed bool
		check     bool
		code      int
		want      string // in the output
		asked     bool   // systemctl was called
	}{
		{"all masked, installed", all, pvs, true, false, 2,
			"localhost: rpc-statd.service, rpcbind.service and rpcbind.socket are masked (systemd), but PersistentVolume nfs-pv1 (spec.mountOptions: nfsvers=3, hard) mounts with NFSv3 and remote locks, which need rpc.statd and rpcbind running on every node that mounts it: the kubelet's mounts would fail there (mount.nfs: rpc.statd is not running but is required for remote locking). Nothing was changed by nfs_client. Either unmask them on the node, if your hardening allows it (systemctl unmask rpc-statd.service rpcbind.service rpcbind.socket), or mount that PersistentVolume with NFSv4 (nfsvers=4.1) or without remote locks (nolock) in its manifest; then re-run.",
			true},
		{"all masked, check mode", all, pvs, true, true, 2, "are masked (systemd), but PersistentVolume nfs-pv1", true},
		{"all masked, to be installed", all, pvs, false, false, 2, "are masked (systemd), but PersistentVolume nfs-pv1", true},
		{"rpcbind.socket masked at run time", "rpc-statd.service loaded enabled\nrpcbind.service loaded enabled\nrpcbind.socket masked masked-runtime\n", pvs, true, false, 2,
			"localhost: rpcbind.socket is masked (systemd), but PersistentVolume nfs-pv1 (spec.mountOptions: nfsvers=3, hard) mounts with NFSv3 and remote locks, which need rpc.statd and rpcbind running on every node that mounts it: the kubelet's mounts would fail there (mount.nfs: rpc.statd is not running but is required for remote locking). Nothing was changed by nfs_client. Either unmask it on the node, if your hardening allows it (systemctl unmask --runtime rpcbind.socket), or mount",
			true},
		{"nothing masked", "rpc-statd.service loaded enabled\nrpcbind.service loaded enabled\nrpcbind.socket loaded enabled\n", pvs, true, false, 0, "", true},
		{"not found: the install brings them", "", pvs, true, false, 0, "", true},
		{"all masked, NFSv4 PVs only", all, "[]", true, false, 0, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{"systemctl": fakeSystemctl, "dpkg-query": fakeDpkgQuery} {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			states, log := filepath.Join(dir, "states"), filepath.Join(dir, "systemctl.log")
			if err := os.WriteFile(states, []byte(tc.states), 0o600); err != nil {
				t.Fatal(err)
			}
			installed := "0"
			if tc.installed {
				installed = "1"
			}
			pb := "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: nfs_client\n"
			if err := os.WriteFile(filepath.Join(dir, "site.yml"), []byte(pb), 0o600); err != nil {
				t.Fatal(err)
			}
			// apt_wait would run before apt on a node that lacks the
			// package: it must not be reached when the role fails.
			vars := `{"nfs_client_packages": ["hs-nfs-fake"], "nfs_client_nlm_pvs": ` + tc.pvs + `, "apt_wait_timeout": 1}`
			args := []string{"-i", "localhost,", "-c", "local", "-e", vars, "site.yml"}
			if tc.check {
				args = append(args, "--check")
			}
			// A private /run/systemd with system/ in it: dpkg.sh asks
			// systemd only on a host that systemd booted.
			script := `mount -t tmpfs tmpfs /run/systemd 2>/dev/null || mount -t tmpfs tmpfs /run || exit 99
mkdir -p /run/systemd/system && exec ansible-playbook "$@"`
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh"}, args...)...)
			cmd.Dir = dir
			cmd.Env = append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false",
				"PATH="+bin+":"+os.Getenv("PATH"), "STATES="+states, "LOG="+log, "INSTALLED="+installed)
			b, err := cmd.CombinedOutput()
			out := string(b)
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code == 99 {
				t.Skip("cannot mount a tmpfs in a private mount namespace here")
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			// Ansible folds long messages: compare without line breaks.
			flat := strings.Join(strings.Fields(out), " ")
			if tc.want != "" && !strings.Contains(flat, tc.want) {
				t.Errorf("the output does not say %q:\n%s", tc.want, out)
			}
			if tc.code != 0 {
				for _, never := range []string{"apt_wait", "Install the NFS client packages"} {
					if strings.Contains(out, never) {
						t.Errorf("the role went on to %q after failing:\n%s", never, out)
					}
				}
			}
			calls, _ := os.ReadFile(log)
			if asked := len(calls) > 0; asked != tc.asked {
				t.Errorf("systemctl asked: %v, want %v (calls: %q)", asked, tc.asked, calls)
			}
			if tc.asked && !strings.Contains(string(calls), "show -p Id -p LoadState -p UnitFileState -- rpc-statd.service rpcbind.service rpcbind.socket") {
				t.Errorf("systemctl calls: %q", calls)
			}
		})
	}
}

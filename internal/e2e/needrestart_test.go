package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestNeedrestartLeavesServices: installing the NFS client on a node must
// not restart its services behind the operator's back. needrestart (Ubuntu
// 22.04 and later; 24.04 restarts without asking, also when apt runs
// non-interactively) runs from apt's post-invoke hook and restarts every
// service whose binary or libraries an install replaced: on a node, the
// kubelet and containerd after a libc or libssl update that nfs-common's
// install pulls in.
//
// The bed (Debian 12) has no needrestart and no kubelet: the test installs
// Debian's needrestart on a worker, configured to restart without asking
// (as 24.04's does), and stands for the kubelet with a service whose
// binary is replaced under it, as an upgrade replaces a library. A control
// step shows that the bed's needrestart does restart it after an apt-get
// install without heatsible's setting; heatsible's install of nfs-common
// (NEEDRESTART_SUSPEND) leaves it running.
func TestNeedrestartLeavesServices(t *testing.T) {
	b := needBed(t)
	const host = "worker-1"
	const unit = "hs-e2e-daemon.service"
	const bin = "/usr/local/lib/hs-e2e/daemon"
	// Registered before anything changes: the worker as the bed made it
	// (no needrestart, no stand-in service, nfs-common installed).
	t.Cleanup(func() {
		if out, err := b.try(host, "sh", "-c", `systemctl stop `+unit+` 2>/dev/null
rm -f /etc/systemd/system/`+unit+` /etc/needrestart/conf.d/hs-e2e.conf && systemctl daemon-reload && rm -rf /usr/local/lib/hs-e2e
export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
dpkg-query -W -f='${Status}' needrestart 2>/dev/null | grep -q 'install ok installed' && apt-get purge -y -q needrestart >/dev/null
dpkg-query -W -f='${Status}' nfs-common 2>/dev/null | grep -q 'install ok installed' || apt-get install -y -q --no-install-recommends nfs-common >/dev/null`); err != nil {
			t.Errorf("putting %s back: %v\n%s", host, err, out)
		}
	})

	b.exec(t, host, "sh", "-c", `set -e
export DEBIAN_FRONTEND=noninteractive
apt-get -q update >/dev/null
apt-get install -y -q --no-install-recommends needrestart >/dev/null
mkdir -p /etc/needrestart/conf.d
echo "\$nrconf{restart} = 'a';" > /etc/needrestart/conf.d/hs-e2e.conf
mkdir -p /usr/local/lib/hs-e2e && cp /bin/sleep `+bin+`
printf '[Service]\nExecStart=`+bin+` infinity\n' > /etc/systemd/system/`+unit+`
systemctl daemon-reload && systemctl start `+unit)
	mainPID := func() string {
		return strings.TrimSpace(b.exec(t, host, "systemctl", "show", "-P", "MainPID", unit))
	}
	// replace: the binary replaced under the running service, as an
	// upgrade replaces a library; needrestart now lists the service.
	replace := func() {
		t.Helper()
		b.exec(t, host, "sh", "-c", "cp /bin/sleep "+bin+".new && mv "+bin+".new "+bin)
		if out := b.exec(t, host, "needrestart", "-b", "-r", "l"); !strings.Contains(out, "NEEDRESTART-SVC: "+unit) {
			t.Fatalf("the bed cannot show it: needrestart does not list %s after its binary was replaced:\n%s", unit, out)
		}
	}

	// Control: an apt-get install without heatsible's setting restarts it.
	replace()
	before := mainPID()
	b.exec(t, host, "sh", "-c", "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall --no-install-recommends nfs-common >/dev/null 2>&1")
	if after := mainPID(); after == before || after == "0" {
		t.Fatalf("control: %s's MainPID %s -> %s after apt-get install --reinstall nfs-common: the bed's needrestart did not restart it, so this test could not see heatsible's install do it", unit, before, after)
	}

	// heatsible installs nfs-common on the worker: the service keeps running.
	replace()
	b.exec(t, host, "sh", "-c", "DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get purge -y -q nfs-common >/dev/null 2>&1")
	before = mainPID()
	code, _, errs, took := b.heatsible(t, b.runArgs("--tags", "nfs_client")...)
	t.Logf("nfs_client on %s with needrestart: exit %d in %s", host, code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, tail(errs, 30))
	}
	if st := b.exec(t, host, "dpkg-query", "-W", "-f=${Status}", "nfs-common"); st != "install ok installed" {
		t.Fatalf("nfs-common on %s: %q, want installed by the run", host, st)
	}
	if after := mainPID(); after != before {
		t.Errorf("%s's MainPID %s -> %s: heatsible's install of nfs-common let needrestart restart it", unit, before, after)
	}
}

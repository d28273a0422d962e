package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// storageOS lays the storage host out as os (bed storage-os: ubuntu-20.04
// or debian-12) until the test ends, then puts it back as Debian 12 (the
// cleanup is registered before the change, and runs before the
// restoreStorage a caller registered earlier).
func (b *bed) storageOS(t *testing.T, os string) {
	t.Helper()
	if was := b.bedScript(t, "storage-os"); was != "debian-12" {
		t.Fatalf("the storage host is laid out as %q, want debian-12: bring the bed up with this tree's testbed/bin/bed", was)
	}
	t.Cleanup(func() {
		b.bedScript(t, "storage-os", "debian-12")
		if id := strings.TrimSpace(b.exec(t, "storage", "sh", "-c", ". /etc/os-release && echo $ID $VERSION_ID")); id != "debian 12" {
			t.Errorf("after bed storage-os debian-12 the storage host's /etc/os-release says %q, want debian 12", id)
		}
		if out, err := b.try("storage", "sh", "-c",
			"test ! -e /usr/lib/systemd/system/nfs-config.service && test ! -e /usr/lib/systemd/scripts/nfs-utils_env.sh && test ! -e /run/sysconfig/nfs-utils"); err != nil {
			t.Errorf("after bed storage-os debian-12 the storage host still has Ubuntu 20.04's nfs-config: %v %s", err, out)
		}
	})
	b.bedScript(t, "storage-os", os)
}

// TestUbuntu2004NFSServer: the storage host laid out as Ubuntu 20.04 (bed
// storage-os ubuntu-20.04: its /etc/os-release, nfs-config.service and
// nfs-utils_env.sh; Debian 12's /etc/default/nfs-* files), so that
// nfs_server takes its nfs-utils 1.3.4 branch: the pinned NFSv3 side ports
// go into /etc/default/nfs-kernel-server and nfs-common, nfs-config turns
// them into /run/sysconfig/nfs-utils, statd (nfs-ganesha-lock, from
// $STATDARGS) listens on the pinned port, heatsible's /etc/nfs.conf.d file
// (which 1.3.4 would not read) is removed, every export is read over NFS,
// and a re-run changes nothing. The storage host is Debian 12 again after.
func TestUbuntu2004NFSServer(t *testing.T) {
	b := needBed(t)
	b.restoreStorage(t)
	k := b.request(t).AdditionalParams.K
	// The bed's converged Debian 12 branch: the ports in nfs.conf.d.
	b.exec(t, "storage", "test", "-f", "/etc/nfs.conf.d/zz-heatsible.conf")
	b.storageOS(t, "ubuntu-20.04")
	if id := strings.TrimSpace(b.exec(t, "storage", "sh", "-c", ". /etc/os-release && echo $ID $VERSION_ID")); id != "ubuntu 20.04" {
		t.Fatalf("bed storage-os ubuntu-20.04: /etc/os-release says %q", id)
	}

	args := b.storageArgs(t, nil)
	code, out, errs, took := b.heatsible(t, args...)
	t.Logf("storage as Ubuntu 20.04: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail(errs, 30))
	}
	if changed, _ := storageRecap(t, out); changed == 0 {
		t.Errorf("the run changed nothing on the storage server: the test proves nothing")
	}
	if v := lineWith(out+errs, "served by 10.231.0.11 (ganesha)"); !strings.Contains(v, "read over NFSv") ||
		!strings.Contains(v, "NFSv3 side ports pinned (mountd 20048, nlockmgr 32768, statd 32765)") {
		t.Errorf("the verification does not say the exports were read over NFS with the ports pinned:\n%s", tail(out+errs, 20))
	} else {
		t.Logf("verification: %s", strings.TrimSpace(v))
	}

	// The ports in /etc/default, where nfs-utils 1.3.4 takes them from.
	defaults := b.exec(t, "storage", "grep", "-hE", "^(RPCMOUNTDOPTS|STATDOPTS)=", "/etc/default/nfs-kernel-server", "/etc/default/nfs-common")
	for _, want := range []string{`RPCMOUNTDOPTS="--manage-gids --port 20048"`,
		`STATDOPTS="--port 32765 --outgoing-port 32766 --nlm-port 32768 --nlm-udp-port 32768"`} {
		if !strings.Contains(defaults, want+"\n") {
			t.Errorf("/etc/default/nfs-* have no %s:\n%s", want, defaults)
		}
	}
	// nfs.conf.d: heatsible's file gone (1.3.4 would not read it; the
	// bed's 2.6.2 daemons would, and it would hide a missing /etc/default).
	if out, err := b.try("storage", "sh", "-c", "ls /etc/nfs.conf.d/*heatsible* 2>/dev/null"); err == nil {
		t.Errorf("heatsible's nfs.conf.d file is still there on Ubuntu 20.04: %s", strings.TrimSpace(out))
	}
	// nfs-config ran (nothing else writes /run/sysconfig/nfs-utils, which
	// bed storage-os refuses to find there) and made the daemons' arguments.
	sysconfig := b.exec(t, "storage", "cat", "/run/sysconfig/nfs-utils")
	for _, want := range []string{`STATDARGS="--port 32765 --outgoing-port 32766 --nlm-port 32768 --nlm-udp-port 32768"`,
		`RPCMOUNTDARGS="--manage-gids --port 20048"`} {
		if !strings.Contains(sysconfig, want+"\n") {
			t.Errorf("/run/sysconfig/nfs-utils has no %s:\n%s", want, sysconfig)
		}
	}
	if st := strings.TrimSpace(b.exec(t, "storage", "systemctl", "show", "-p", "Result", "--value", "nfs-config.service")); st != "success" {
		t.Errorf("nfs-config.service: Result=%s, want success", st)
	}
	// statd took the port from its command line ($STATDARGS), and listens.
	cmdline := b.exec(t, "storage", "sh", "-c", `tr '\0' ' ' < /proc/$(pgrep -xo rpc.statd)/cmdline`)
	t.Logf("rpc.statd: %s", strings.TrimSpace(cmdline))
	if !strings.Contains(cmdline, "--port 32765 --outgoing-port 32766") {
		t.Errorf("rpc.statd does not run with the pinned ports on its command line: %s", cmdline)
	}
	if rpc := b.exec(t, "storage", "rpcinfo", "-p"); !strings.Contains(rpc, "tcp  32765  status") {
		t.Errorf("statd is not on 32765:\n%s", rpc)
	}
	if ss := b.exec(t, "storage", "ss", "-ltnp", "sport", "= :32765"); !strings.Contains(ss, "rpc.statd") {
		t.Errorf("nothing of rpc.statd listens on TCP 32765:\n%s", ss)
	}
	// Every export (the PVs' directories) read over NFS from a worker.
	for _, e := range k.Storage.Exports {
		if out, err := b.try("worker-0", "nfs-ls", fmt.Sprintf("nfs://10.231.0.11%s", e.Dir)); err != nil {
			t.Errorf("%s is not served on Ubuntu 20.04: %v %s", e.Dir, err, out)
		}
	}

	code, out, errs, took = b.heatsible(t, args...)
	t.Logf("re-run: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s", code, tail(errs, 30))
	}
	if changed, _ := storageRecap(t, out); changed != 0 {
		t.Errorf("re-run changed %d on the storage server, want 0", changed)
	}
}

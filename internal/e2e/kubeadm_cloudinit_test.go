package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestKubeadmJoinAfterCloudInit: a worker whose image has no kubeadm and
// whose user data installs it, in its first minutes (bed first-boot
// --kubeadm: cloud-init runs for 30 s and installs the kubeadm stand-in as
// it finishes). heal-end of that worker, its Node gone (heal-start removed
// it), starts while cloud-init still runs: heatsible waits for cloud-init
// (roles/apt_wait, as before an install), then finds kubeadm, joins the
// node (exit 0) and the Node is back. Without the wait heal-end looked at
// once and refused (exit 6, "has neither kubeadm nor a kubelet"). Before
// it, heal-end --check says it would wait and that the node is still
// booting (exit 0, nothing run), where it used to refuse.
func TestKubeadmJoinAfterCloudInit(t *testing.T) {
	const cloudInit = 30 * time.Second
	b := needBed(t)
	b.kubeadmStandIn(t, "master-0", "worker-0") // its cleanup purges worker-0's too, however it got there
	b.standIn(t, "off", "worker-0")             // an image without kubeadm
	b.isolateWorkerNodes(t)                     // no Node for worker-0: heal-start removed it
	victim, ok := nodeByAddress(b.topology(t), "10.231.0.20")
	if !ok {
		t.Fatal("Heat has no worker at 10.231.0.20")
	}
	state := t.TempDir()

	t.Cleanup(func() { b.bedScript(t, "first-boot", "worker-0", "off") })
	b.bedScript(t, "first-boot", "worker-0", "30", "0", "apt-get", "--kubeadm")
	booted := time.Now()
	if s := b.bedScript(t, "kubeadm"); !strings.Contains(s, "worker-0 off") {
		t.Fatalf("worker-0 has kubeadm before its cloud-init ended:\n%s", s)
	}

	// --check first, while cloud-init runs: it says what a real run waits
	// for and that the verdict comes after the wait; it neither waits nor
	// refuses (it did: "would wait", then exit 6 for the missing kubeadm).
	masterSeen := 0 // the master's last kubeadm record before the check
	for _, r := range b.kubeadmRecords(t, "master-0", 0) {
		masterSeen = max(masterSeen, r.Seq)
	}
	code, _, errs := b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID, "--check")
	checked := time.Since(booted)
	booting := "still booting: " + victim.Name + " (has neither kubeadm nor a kubelet now); a real run waits for their cloud-init and dpkg lock"
	t.Logf("heal-end --check: exit %d, %s after cloud-init started\n%s", code, checked.Round(time.Second), lineWith(errs, "still booting"))
	if checked >= cloudInit {
		t.Fatalf("heal-end --check took until cloud-init was over (%s): the bed is too slow for this test's %s of cloud-init", checked.Round(time.Second), cloudInit)
	}
	if code != 0 || !strings.Contains(errs, victim.Name+": would wait for cloud-init to finish") || !strings.Contains(errs, booting) {
		t.Errorf("heal-end --check while cloud-init runs: exit %d, want 0 saying it would wait and %q\n%s", code, booting, tail(errs, 30))
	}
	if got := commandsOf(b.kubeadmRecords(t, "master-0", masterSeen)); got != "" {
		t.Errorf("kubeadm on master-0 during heal-end --check: %q, want nothing but version (no join command made)", got)
	}

	code, _, errs = b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID)
	end := time.Since(booted)
	waiting := victim.Name + ": waiting for cloud-init to finish (cloud-init status: running), at most 600 s"
	waited := lineWith(errs, victim.Name+": waited ")
	t.Logf("heal-end: exit %d, %s after cloud-init started (%s)\n%s\n%s", code, end.Round(time.Second), cloudInit,
		lineWith(errs, waiting), waited)
	if code != 0 {
		t.Fatalf("heal-end while cloud-init installs kubeadm: exit %d, want 0 (wait, then join)\n%s", code, tail(errs, 40))
	}
	if !strings.Contains(errs, waiting) {
		t.Errorf("heal-end does not say that it waits for %s's cloud-init (%q)", victim.Name, waiting)
	}
	if !strings.Contains(waited, "for cloud-init (") || !strings.HasSuffix(strings.TrimSpace(waited), "heatsible can look for kubeadm and a kubelet") {
		t.Errorf("the wait's report: %q", waited)
	}
	if end < cloudInit-5*time.Second {
		t.Errorf("heal-end ended %s after cloud-init started, before it finished (%s)", end.Round(time.Second), cloudInit)
	}
	if n, ok := b.nodeWithIP(t, "10.231.0.20"); !ok || n.Name != "worker-0" || n.Labels["heatsible.test/stand-in"] != "kubeadm" {
		t.Errorf("after heal-end: Node %+v, want worker-0 with InternalIP 10.231.0.20, joined by the kubeadm stand-in", n)
	}
	if got := commandsOf(b.kubeadmRecords(t, "worker-0", 0)); !strings.Contains(got, "join(0)") {
		t.Errorf("kubeadm on worker-0: %q, want a join", got)
	}
}

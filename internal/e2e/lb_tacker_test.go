package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tackerLBScript is heatsible's own script of Tacker's
// install_external_lb.sh contract (testdata/package/Scripts), run for real
// on the bed's lb host.
const tackerLBScript = "Scripts/install_external_lb.sh"

// lbState is what the test reads on the lb host after each step.
type lbState struct {
	cfg      string // /etc/haproxy/haproxy.cfg
	backend  string // its backend kubernetes-nodeport section
	pids     string // the haproxy processes (master and workers), sorted
	mainPID  string // systemd's MainPID of haproxy.service (the master)
	reloads  int    // "Reloading" lines of haproxy.service in the journal since the test started
	checkOut string // what haproxy -c said on the live file
}

func (b *bed) lbState(t *testing.T, since string) lbState {
	t.Helper()
	lb := b.env["BED_LB"]
	var s lbState
	s.cfg = b.exec(t, lb, "cat", "/etc/haproxy/haproxy.cfg")
	s.backend = section(s.cfg, "backend kubernetes-nodeport")
	s.pids = strings.Join(strings.Fields(b.exec(t, lb, "sh", "-c", "pgrep -x haproxy | sort -n")), " ")
	s.mainPID = strings.TrimSpace(b.exec(t, lb, "systemctl", "show", "-p", "MainPID", "--value", "haproxy"))
	j := b.exec(t, lb, "journalctl", "-u", "haproxy", "--since", since, "-o", "cat", "--no-pager")
	s.reloads = strings.Count(j, "Reloading HAProxy")
	out, err := b.try(lb, "haproxy", "-c", "-f", "/etc/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatalf("haproxy -c refuses the live haproxy.cfg on %s: %v\n%s\n%s", lb, err, out, s.cfg)
	}
	s.checkOut = out
	if active := strings.TrimSpace(b.exec(t, lb, "sh", "-c", "systemctl is-active haproxy || true")); active != "active" {
		t.Fatalf("haproxy on %s is %s", lb, active)
	}
	return s
}

// section is the section of cfg that starts with the line header, up to
// the next line that starts at column 0 and is not a comment.
func section(cfg, header string) string {
	var out []string
	in := false
	for _, l := range strings.Split(cfg, "\n") {
		if in && l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '#' {
			break
		}
		if l == header {
			in = true
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// serverLine is a worker's line in Tacker's format.
func serverLine(addr string) string {
	return "    server  worker" + addr[strings.LastIndex(addr, ".")+1:] + " " + addr + " check"
}

// lbRun runs "heatsible -o json -v run OP" with the test's request and
// package; it fails the test on a non-zero exit.
func (b *bed) lbRun(t *testing.T, state, request, pkg, op string, extra ...string) runResult {
	t.Helper()
	args := []string{"-o", "json", "-v", "run", op, "--request", request, "--package", pkg,
		"--stack", b.env["HEATSIBLE_STACK"], "--known-hosts", filepath.Join(b.dir, "known_hosts")}
	cmd := b.command(t, state, append(args, extra...)...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("heatsible run %s %s: %v after %s\n%s", op, strings.Join(extra, " "), err, took.Round(time.Millisecond), tail(e.String(), 60))
	}
	r := parseRun(t, o.String())
	t.Logf("run %s %s: exit %d in %s; load balancer: %+v", op, strings.Join(extra, " "), r.ExitCode, took.Round(time.Millisecond), r.Recap[lbHost(r)])
	return r
}

// lbHost is the load balancer's inventory name in a run's recap.
func lbHost(r runResult) string {
	for h := range r.Recap {
		if strings.Contains(h, "lb") {
			return h
		}
	}
	return "external-lb"
}

// taskStatuses are the result statuses (changed, ok, skipped, failed) of
// the task whose name ends with suffix in the newest run record (run.log)
// of op under state, one per host and loop item.
func taskStatuses(t *testing.T, state, op, suffix string) []string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(state, "runs", "*", "*-"+op, "run.log"))
	if len(logs) == 0 {
		t.Fatalf("no run record for %s under %s", op, state)
	}
	slices.Sort(logs)
	b, err := os.ReadFile(logs[len(logs)-1])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		var l struct{ Task, Status string }
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasSuffix(l.Task, suffix) && l.Status != "" {
			out = append(out, l.Status)
		}
	}
	return out
}

// TestTackerContractLBScript: a VNF package whose script_path is a script of
// Tacker's install_external_lb.sh contract works unchanged. On the bed's lb
// host, made a fresh VM (Debian's haproxy.cfg): a dry run changes nothing;
// instantiate-end runs the
// script once, as Tacker does (it writes backend kubernetes-nodeport with a
// line per worker); a re-run does not run it again, changes nothing and
// does not reload haproxy; Heat scales out a spare worker and scale-end adds
// its line (haproxy reloaded, not restarted); scale-in removes it; a node
// heal removes and re-adds a worker's line; haproxy -c passes after every
// step. The lb host is put back as it was, and so are the kubespray
// inventory on the Ansible host, the storage server's volume record, the
// Node objects, the NFS clients the test takes off and the stand-in's
// reset mark, however the test ends.
//
// The same operations are the kubespray stand-in's scale and heal scenario
// (it was TestKubesprayStandInScaleAndHeal, which ran them once more with
// the sample script; the sample script's route edits are
// contrib/external-lb's TestRoleOnLocalhost and TestCommands, its service
// reload on the bed every kubespray instantiate-end, e.g.
// TestKubesprayAnsibleSplit): instantiate-end runs cluster.yml from the
// kubespray root; the worker Heat adds is scaled out (inventory, facts.yml,
// scale.yml --limit, NFS client); scaled in (drained, remove-node.yml
// without a prompt, inventory without it) and Heat removes it; then a worker
// is healed (drained and removed, then re-added with its NFS client
// reinstalled); the dry runs run no kubespray playbook; terminate-end
// removes the inventory heatsible wrote and leaves no staging directory.
func TestTackerContractLBScript(t *testing.T) {
	b := needBed(t)
	for _, k := range []string{"BED_LB", "BED_KUBESPRAY_ROOT", "BED_SPARE_WORKER", "BED_SPARE_WORKER_IP"} {
		if b.env[k] == "" {
			t.Fatalf("the bed has no %s (testbed/run/env): it needs the lb host, the kubespray stand-in and a spare worker (docs/testbed.md)", k)
		}
	}
	lb := b.env["BED_LB"]
	since := fmt.Sprintf("@%d", time.Now().Unix()-1)

	// The package: the bed's, plus the script; the request: the bed's
	// kubespray request naming it.
	pkg := filepath.Join(t.TempDir(), "package")
	if out, err := exec.Command("cp", "-a", filepath.Join(b.dir, "package"), pkg).CombinedOutput(); err != nil {
		t.Fatalf("copying the package: %v\n%s", err, out)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", "package", tackerLBScript))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, tackerLBScript), script, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(b.dir, "request-kubespray.json"))
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	k := body["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	k["external_lb_param"].(map[string]any)["script_path"] = tackerLBScript
	raw, _ = json.Marshal(body)
	request := filepath.Join(t.TempDir(), "request-tacker-lb.json")
	if err := os.WriteFile(request, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs, _ := b.heatsible(t, "validate", "--request", request, "--package", pkg); code != 0 {
		t.Fatalf("validate refuses the request with the Tacker-contract script: exit %d\n%s", code, errs)
	}

	// The lb host as a fresh VM: Debian's haproxy.cfg (the sample script
	// keeps it as haproxy.cfg.heatsible-orig), no script, no sample state.
	const save = "/root/heatsible-e2e-lb-tacker.tar"
	b.exec(t, lb, "sh", "-c", `set -e
cd /
set --
for p in etc/haproxy var/lib/heatsible-lb usr/local/lib/heatsible; do [ -e "$p" ] && set -- "$@" "$p"; done
tar -cpf `+save+` "$@"`)
	t.Cleanup(func() {
		out, err := b.try(lb, "sh", "-c", `set -e
rm -rf /etc/haproxy/haproxy.cfg /var/lib/heatsible-lb /usr/local/lib/heatsible
tar -C / -xpf `+save+`
rm -f `+save+`
systemctl restart haproxy`)
		if err != nil {
			t.Errorf("putting %s back: %v\n%s", lb, err, out)
		}
	})
	b.exec(t, lb, "sh", "-c", `set -e
cd /etc/haproxy
if head -1 haproxy.cfg | grep -q '^# Managed by heatsible'; then cp haproxy.cfg.heatsible-orig haproxy.cfg; fi
if grep -q kubernetes-nodeport haproxy.cfg; then echo "no Debian haproxy.cfg to start from" >&2; exit 1; fi
rm -rf /var/lib/heatsible-lb /usr/local/lib/heatsible
systemctl restart haproxy`)
	fresh := b.exec(t, lb, "cat", "/etc/haproxy/haproxy.cfg")

	ks := b.env["BED_KUBESPRAY_ROOT"]
	seq := lastRecordSeq(b.ksRecords(t, 0))
	start := b.topology(t)
	workerNames := workersOf(start)
	var workers, masters []string
	for _, n := range start {
		switch n.Role {
		case "worker":
			workers = append(workers, n.Address)
		case "master":
			masters = append(masters, n.Address)
		}
	}
	state := t.TempDir()
	// What the runs change on the bed besides the lb host, put back as it
	// is now however the test ends: the kubespray inventory heatsible
	// writes on the Ansible host (one naming the spare's member would make
	// the next scale-out's run refuse, exit 6), the storage server's
	// volume record cinder_volume writes, and the Node objects the
	// stand-in registers and removes.
	b.keepFile(t, "ansible", ks+"/inventory/heatsible/hosts.yaml")
	b.keepFile(t, "storage", "/var/lib/heatsible/volumes.json")
	b.keepNodes(t)
	check := func(step string, s lbState, want, notWant []string) {
		t.Helper()
		if n := strings.Count(s.cfg, "backend kubernetes-nodeport\n"); n != 1 {
			t.Errorf("%s: haproxy.cfg has %d backend kubernetes-nodeport sections, want 1", step, n)
		}
		if n := strings.Count(s.cfg, "frontend kubernetes-apiserver\n"); n != 1 {
			t.Errorf("%s: haproxy.cfg has %d frontend kubernetes-apiserver sections, want 1 (the script ran again?)", step, n)
		}
		if !strings.HasPrefix(s.cfg, fresh) {
			t.Errorf("%s: the part of haproxy.cfg before the script's sections changed", step)
		}
		lines := strings.Split(s.backend, "\n")
		for _, m := range masters {
			if l := "    server  master" + m[strings.LastIndex(m, ".")+1:] + " " + m + " check"; !slices.Contains(lines, l) {
				t.Errorf("%s: backend lacks the master's line %q", step, l)
			}
		}
		for _, w := range want {
			if n := slices.Index(lines, serverLine(w)); n < 0 || slices.Index(lines[n+1:], serverLine(w)) >= 0 {
				t.Errorf("%s: backend has %q not exactly once:\n%s", step, serverLine(w), s.backend)
			}
		}
		for _, w := range notWant {
			if slices.Contains(lines, serverLine(w)) {
				t.Errorf("%s: backend still has %q:\n%s", step, serverLine(w), s.backend)
			}
		}
	}

	// 0. A dry run on the fresh VM: says it would run the script, changes
	// nothing (no haproxy.cfg change, no script installed).
	pids0 := b.exec(t, lb, "sh", "-c", "pgrep -x haproxy | sort -n")
	r := b.lbRun(t, state, request, pkg, "instantiate-end", "--check")
	if c := r.Recap[lbHost(r)].Changed; c == 0 {
		t.Errorf("the dry run of instantiate-end reports no change on the load balancer")
	}
	if got := b.exec(t, lb, "cat", "/etc/haproxy/haproxy.cfg"); got != fresh {
		t.Errorf("the dry run changed haproxy.cfg:\n%s", got)
	}
	if out, err := b.try(lb, "test", "-e", "/usr/local/lib/heatsible/external_lb.sh"); err == nil {
		t.Errorf("the dry run installed the script %s", out)
	}
	if got := b.exec(t, lb, "sh", "-c", "pgrep -x haproxy | sort -n"); got != pids0 {
		t.Errorf("the dry run restarted haproxy: %q -> %q", pids0, got)
	}
	if recs := b.ksRecords(t, seq); len(recs) != 0 {
		t.Errorf("the dry run ran the stand-in's %s (kubespray has no check mode: heatsible skips it)", playbooksOf(recs))
	}

	// 1. instantiate-end: the script runs, once, and writes the backend.
	// The VIM is registered where Tacker's kubespray driver registers it:
	// the load balancer's frontend kubernetes-apiserver, 8383, without a CA
	// (the API server's certificate does not name the LB), and the API
	// server answers its token there, through haproxy.
	r = b.lbRun(t, state, request, pkg, "instantiate-end")
	checkVIMThroughLB(t, r, "https://"+b.env["BED_LB_IP"]+":8383")
	if got := taskStatuses(t, state, "instantiate-end", "Run the script (bash SCRIPT -m MASTERS -w WORKERS)"); !slices.Equal(got, []string{"changed"}) {
		t.Errorf("instantiate-end ran the script %v, want once (changed)", got)
	}
	s1 := b.lbState(t, since)
	check("instantiate-end", s1, workers, nil)
	if listen := b.exec(t, lb, "ss", "-Hlnt", "( sport = :8383 )"); strings.TrimSpace(listen) == "" {
		t.Errorf("nothing listens on 8383 on %s after the script", lb)
	}
	t.Logf("after instantiate-end:\n%s", s1.backend)
	recs := b.ksRecords(t, seq)
	seq = lastRecordSeq(recs)
	if got := playbooksOf(recs); got != "cluster.yml(-)" {
		t.Fatalf("instantiate-end ran the stand-in's %s, want cluster.yml once, without --limit", got)
	}
	if rec := recs[0]; rec.Cwd != ks || fmt.Sprint(rec.ConfigTimeout) != "37" {
		t.Errorf("cluster.yml ran in %q with timeout %v: want %s and its ansible.cfg (timeout 37)", rec.Cwd, rec.ConfigTimeout, ks)
	}
	if want := ks + "/inventory/heatsible/hosts.yaml"; !slices.Contains(recs[0].Sources, want) {
		t.Errorf("inventory sources %q, want %s", recs[0].Sources, want)
	}
	if got := recs[0].Groups["kube_node"]; !slices.Equal(got, workerNames) {
		t.Errorf("kube_node %q, want the stack's workers %q", got, workerNames)
	}
	if len(recs[0].Groups["nfs_server"]) > 0 || len(recs[0].Groups["external_lb"]) > 0 {
		t.Errorf("kubespray's inventory has heatsible's groups: %v", recs[0].Groups)
	}
	for _, w := range workerNames {
		if !b.nodeExists(t, w) {
			t.Errorf("node %s not registered after cluster.yml", w)
		}
	}

	// 2. The same again: no script, no change, no reload.
	r = b.lbRun(t, state, request, pkg, "instantiate-end")
	if got := taskStatuses(t, state, "instantiate-end", "Run the script (bash SCRIPT -m MASTERS -w WORKERS)"); slices.Contains(got, "changed") || slices.Contains(got, "ok") {
		t.Errorf("the re-run ran the script again: %v", got)
	}
	s2 := b.lbState(t, since)
	if s2.cfg != s1.cfg {
		t.Errorf("the re-run changed haproxy.cfg:\n--- before\n%s\n--- after\n%s", s1.cfg, s2.cfg)
	}
	if s2.pids != s1.pids || s2.reloads != s1.reloads {
		t.Errorf("the re-run reloaded or restarted haproxy: pids %q -> %q, reloads %d -> %d", s1.pids, s2.pids, s1.reloads, s2.reloads)
	}
	if c := r.Recap[lbHost(r)].Changed; c != 0 {
		t.Errorf("the re-run changed %d thing(s) on the load balancer", c)
	}
	seq = lastRecordSeq(b.ksRecords(t, seq))

	// 3. Scale-out: Heat adds the spare worker; scale-end adds its line and
	// reloads haproxy (same master process, new workers).
	// The new VM comes without the NFS client.
	spare, spareIP := b.env["BED_SPARE_WORKER"], b.env["BED_SPARE_WORKER_IP"]
	b.keepNFSClient(t, spare)
	b.removeNFSClient(t, spare)
	n := b.scaleOutSpare(t, len(workers))
	newNode := n.Name
	// A dry run first: nothing changes on the load balancer.
	r = b.lbRun(t, state, request, pkg, "scale-end", "--nodes", n.MemberStackID, "--check")
	if sc := b.lbState(t, since); sc.cfg != s2.cfg || sc.pids != s2.pids || r.Recap[lbHost(r)].Changed == 0 {
		t.Errorf("the dry run of scale-end: changed %d on the LB (want > 0), haproxy.cfg changed %v, pids %q -> %q",
			r.Recap[lbHost(r)].Changed, sc.cfg != s2.cfg, s2.pids, sc.pids)
	}
	if recs := b.ksRecords(t, seq); len(recs) != 0 {
		t.Errorf("the dry run of scale-end ran the stand-in's %s", playbooksOf(recs))
	}
	b.lbRun(t, state, request, pkg, "scale-end", "--nodes", n.MemberStackID)
	recs = b.ksRecords(t, seq)
	seq = lastRecordSeq(recs)
	if got, want := playbooksOf(recs), "facts.yml(-) scale.yml("+newNode+")"; got != want {
		t.Errorf("scale-end ran the stand-in's %s, want %s", got, want)
	}
	for _, rec := range recs {
		if !slices.Contains(rec.Groups["kube_node"], newNode) {
			t.Errorf("%s's inventory lacks the new node %s: %v", rec.Playbook, newNode, rec.Groups["kube_node"])
		}
	}
	if !strings.Contains(b.ksInventory(t), newNode+":") {
		t.Errorf("the inventory on the Ansible host lacks %s", newNode)
	}
	if !b.nfsClient(spare) {
		t.Errorf("the new node %s (%s) has no NFS client after scale-end", newNode, spare)
	}
	if !b.nodeExists(t, newNode) {
		t.Errorf("node %s not registered after scale.yml", newNode)
	}
	s3 := b.lbState(t, since)
	check("scale-end", s3, append(slices.Clone(workers), spareIP), nil)
	if s3.mainPID != s2.mainPID || s3.pids == s2.pids || s3.reloads != s2.reloads+1 {
		t.Errorf("scale-end: want one reload (same master %s, new workers), got master %s -> %s, pids %q -> %q, reloads %d -> %d",
			s2.mainPID, s2.mainPID, s3.mainPID, s2.pids, s3.pids, s2.reloads, s3.reloads)
	}
	t.Logf("LB backend after scale-out (%s joined):\n%s", n.Name, s3.backend)

	// 4. Scale-in of the same worker (named by its member, as Tacker does).
	// The stand-in's remove-node.yml leaves its reset mark on the spare.
	b.keepFile(t, spare, "/var/lib/kubespray-stand-in/reset")
	b.lbRun(t, state, request, pkg, "scale-start", "--nodes", n.Member)
	s4 := b.lbState(t, since)
	check("scale-start", s4, workers, []string{spareIP})
	if s4.reloads != s3.reloads+1 || s4.mainPID != s3.mainPID {
		t.Errorf("scale-start: want one reload, got reloads %d -> %d, master %s -> %s", s3.reloads, s4.reloads, s3.mainPID, s4.mainPID)
	}
	t.Logf("LB backend after scale-in (%s left):\n%s", n.Name, s4.backend)
	if !drained(t, state, "scale-start") {
		t.Errorf("scale-start did not drain %s (no changed drain task in its run.log)", newNode)
	}
	recs = b.ksRecords(t, seq)
	seq = lastRecordSeq(recs)
	if got := playbooksOf(recs); got != "remove-node.yml(-)" {
		t.Fatalf("scale-start ran the stand-in's %s, want remove-node.yml", got)
	}
	if ev := recs[0].ExtraVars; fmt.Sprint(ev["node"]) != newNode || fmt.Sprint(ev["skip_confirmation"]) != "true" {
		t.Errorf("remove-node.yml got %v, want node=%s skip_confirmation=true", ev, newNode)
	}
	if b.nodeExists(t, newNode) {
		t.Errorf("node %s still in Kubernetes after scale-start", newNode)
	}
	if strings.Contains(b.ksInventory(t), newNode+":") {
		t.Errorf("the inventory on the Ansible host still has %s", newNode)
	}
	b.stackScale(t, len(workers), n.Member)
	if _, ok := nodeByAddress(b.topology(t), spareIP); ok {
		t.Fatalf("Heat still has the member at %s after the scale-in", spareIP)
	}

	// 5. Heal a worker: its line goes at heal-start and comes back at
	// heal-end; a re-run of heal-end changes nothing.
	var victim topoNode
	for _, x := range b.topology(t) {
		if x.Role == "worker" {
			victim = x
			break
		}
	}
	others := slices.DeleteFunc(slices.Clone(workers), func(a string) bool { return a == victim.Address })
	host := bedHostAt(t, victim.Address)
	b.lbRun(t, state, request, pkg, "heal-start", "--node", victim.Name)
	s5 := b.lbState(t, since)
	check("heal-start", s5, others, []string{victim.Address})
	if !drained(t, state, "heal-start") {
		t.Errorf("heal-start did not drain %s", victim.Name)
	}
	recs = b.ksRecords(t, seq)
	seq = lastRecordSeq(recs)
	if got := playbooksOf(recs); got != "remove-node.yml(-)" {
		t.Fatalf("heal-start ran the stand-in's %s, want remove-node.yml", got)
	}
	if ev := recs[0].ExtraVars; fmt.Sprint(ev["node"]) != victim.Name || fmt.Sprint(ev["reset_nodes"]) != "false" || fmt.Sprint(ev["skip_confirmation"]) != "true" {
		t.Errorf("remove-node.yml got %v, want node=%s reset_nodes=false skip_confirmation=true", ev, victim.Name)
	}
	if b.nodeExists(t, victim.Name) {
		t.Errorf("node %s still in Kubernetes after heal-start", victim.Name)
	}
	// The replaced VM comes without the NFS client.
	b.keepNFSClient(t, host)
	b.removeNFSClient(t, host)
	b.lbRun(t, state, request, pkg, "heal-end", "--vnfc-resource-id", victim.ServerID)
	s6 := b.lbState(t, since)
	check("heal-end", s6, workers, nil)
	recs = b.ksRecords(t, seq)
	seq = lastRecordSeq(recs)
	if got, want := playbooksOf(recs), "facts.yml(-) scale.yml("+victim.Name+")"; got != want {
		t.Errorf("heal-end ran the stand-in's %s, want %s", got, want)
	}
	if !b.nfsClient(host) {
		t.Errorf("the NFS client was not reinstalled on %s (%s)", victim.Name, host)
	}
	if !b.nodeExists(t, victim.Name) {
		t.Errorf("node %s not back in Kubernetes after heal-end", victim.Name)
	}
	// The same lines as the script wrote (the healed worker's now last).
	if a, b := strings.Split(s1.backend, "\n"), strings.Split(s6.backend, "\n"); !slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) {
		t.Errorf("after the heal the backend's lines differ from the script's:\n--- script\n%s\n--- now\n%s", s1.backend, s6.backend)
	}
	t.Logf("LB backend after the heal of %s:\n%s", victim.Name, s6.backend)
	r = b.lbRun(t, state, request, pkg, "heal-end", "--vnfc-resource-id", victim.ServerID)
	s7 := b.lbState(t, since)
	if s7.cfg != s6.cfg || s7.pids != s6.pids || s7.reloads != s6.reloads || r.Recap[lbHost(r)].Changed != 0 {
		t.Errorf("re-run of heal-end: changed %d, pids %q -> %q, reloads %d -> %d", r.Recap[lbHost(r)].Changed, s6.pids, s7.pids, s6.reloads, s7.reloads)
	}
	if s7.reloads != s4.reloads+2 {
		t.Errorf("the heal reloaded haproxy %d times, want 2 (heal-start, heal-end)", s7.reloads-s4.reloads)
	}
	t.Logf("haproxy reloads during the test: %d (scale-out, scale-in, heal-start, heal-end), master process %s throughout; haproxy -c on the live file after each step: %s",
		s7.reloads, s7.mainPID, strings.Join(strings.Fields(s7.checkOut), " "))

	// 6. terminate-end: the inventory heatsible wrote goes from the Ansible
	// host (the stand-in's own files stay), no staging directory is left.
	b.lbRun(t, state, request, pkg, "terminate-end")
	if out, err := b.try("ansible", "test", "-e", ks+"/inventory/heatsible/hosts.yaml"); err == nil {
		t.Errorf("terminate-end left the kubespray inventory on the Ansible host: %s", out)
	}
	b.exec(t, "ansible", "test", "-f", ks+"/cluster.yml")
	if left := b.exec(t, "ansible", "sh", "-c", "ls -d /home/*/.heatsible/runs/heatsible-* /tmp/heatsible-* 2>/dev/null; true"); strings.TrimSpace(left) != "" {
		t.Errorf("staging directories left on the Ansible host after terminate-end:\n%s", left)
	}
}

// keepNFSClient puts back the NFS client on host when the test ends, if
// host has it now (the test takes it off).
func (b *bed) keepNFSClient(t *testing.T, host string) {
	t.Helper()
	if b.nfsClient(host) {
		b.ensureNFSClient(t, host)
	}
}

// keepNodes puts the cluster's Node objects back as they are now when the
// test ends: those it registered deleted, those it removed created again,
// a cordon it left undone.
func (b *bed) keepNodes(t *testing.T) {
	t.Helper()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(b.kubectl(t, "get", "nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	saved := map[string]map[string]any{}
	for _, n := range list.Items {
		meta := n["metadata"].(map[string]any)
		for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
			delete(meta, k)
		}
		delete(n, "status")
		saved[meta["name"].(string)] = n
	}
	t.Cleanup(func() {
		present := map[string]bool{}
		for _, n := range b.clusterNodes(t) {
			present[n.Name] = true
			s, ok := saved[n.Name]
			if !ok {
				if out, err := b.try("master-0", kubectlArgv("delete", "node", n.Name, "--ignore-not-found")...); err != nil {
					t.Errorf("deleting the Node %s the test registered: %v\n%s", n.Name, err, out)
				}
				continue
			}
			spec, _ := s["spec"].(map[string]any)
			if want, _ := spec["unschedulable"].(bool); n.Unschedulable != want {
				if out, err := b.try("master-0", kubectlArgv("patch", "node", n.Name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, want))...); err != nil {
					t.Errorf("putting back the Node %s's unschedulable %v: %v\n%s", n.Name, want, err, out)
				}
			}
		}
		var missing []map[string]any
		for name, s := range saved {
			if !present[name] {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			doc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": missing})
			b.kubectlStdin(t, string(doc), "create", "-f", "-")
		}
	})
}

// checkVIMThroughLB: the run's VIM is server (the load balancer's API
// frontend), carries no CA, and the API server answers its bearer token
// there as Tacker connects (TLS not verified).
func checkVIMThroughLB(t *testing.T, r runResult, server string) {
	t.Helper()
	if r.VIM == nil {
		t.Errorf("instantiate-end prepared no VIM (no \"vim\" in -o json)")
		return
	}
	if r.VIM.Server != server {
		t.Errorf("the VIM's server is %s, want the load balancer's API frontend %s (where Tacker's kubespray driver registers it)", r.VIM.Server, server)
	}
	if r.VIM.CACert != "" {
		t.Errorf("the VIM carries a CA for %s, whose certificate cannot name the load balancer", r.VIM.Server)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest("GET", r.VIM.Server+"/api", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.VIM.BearerToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("the API server through the load balancer (%s/api): %v", r.VIM.Server, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"APIVersions"`) {
		t.Errorf("GET %s/api with the VIM's token: HTTP %d, want 200 with the APIVersions object", r.VIM.Server, resp.StatusCode)
	}
}

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The stack TestThreeMasters creates beside the bed's: three master
// members at the three master hosts' addresses (master-0 .12, master-1
// .14, master-2 .15), the bed's workers and storage server at their
// addresses, the bed's number of volumes, and a VIP port vip_CP at .16.
// Its networks are "separate" (the Heat stand-in's pools, testbed/heat):
// their addresses are unique within each network only, as Neutron's, so
// the stack gets the very addresses the bed's stack "bed" holds on the
// bed's networks, and "bed" is not touched.
const (
	threeStack = "bed-three-masters"
	threePool  = "bed-three-masters.json"
	threeVIP   = "10.231.0.16"
)

// TestThreeMasters: a real instantiate-end on a cluster of three masters.
// The bed runs master-1 and master-2 for it (bed masters 3; removed again
// by bed masters 1 in the cleanup, unless the bed ran them before); the
// API server is master-0's only (the bed's kube-apiserver, through
// master-0's forward), master-0 being the first master by address.
//
// The first run names the seeds' cluster_cp_name, a master member's CP
// (masterNode_CP1): exit 0, the one-master warning, nfs_client on all
// three masters (master-2 without nfs-common beforehand: it gets it), the
// bed's PVs registered once (from the first master; as many PVs as the
// request names, none more), the VIM at the first master's address. The
// second run names vip_CP, the top stack's VIP port, at an address that
// master-0 holds as a second one with a forward of the API server (as
// keepalived would give the VIP to the master that has it): the VIM at the
// VIP, no one-master warning, and 0 changed (it is the re-run of the
// first). The bed's API server certificate does not name the VIP, so
// heatsible warns that Tacker will not verify TLS there and gives the VIM
// no CA: what a real cluster whose certificate lacks its VIP gets.
//
// Before the runs, plan (which connects to no host) names the same VIM
// endpoints for both: the first master with the whole one-master warning,
// and the VIP without it.
//
// Cleanup, registered before each change: the stack and its pool, the
// volume links and the storage server's volume record, the VIP and its
// forward on master-0, the cluster lock file on the Ansible host, and the
// master hosts.
func TestThreeMasters(t *testing.T) {
	b := needBed(t)
	start := time.Now()
	bedSH := filepath.Join(b.root, "testbed", "bin", "bed")
	heatSH := filepath.Join(b.root, "testbed", "heat", "heat.sh")
	run := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "HEAT_RUN="+filepath.Join(b.dir, "heat"))
		t0 := time.Now()
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			out = append(out, ee.Stderr...)
		}
		t.Logf("%s %s: %s (%v)", filepath.Base(name), strings.Join(args, " "), time.Since(t0).Round(time.Millisecond), err)
		return string(out), err
	}
	workers, err := strconv.Atoi(b.env["BED_WORKERS"])
	if err != nil || workers < 1 {
		t.Fatalf("testbed/run/env: BED_WORKERS=%q, want a number of workers >= 1", b.env["BED_WORKERS"])
	}
	volumes, err := strconv.Atoi(b.env["BED_VOLUMES"])
	if err != nil || volumes < 1 {
		t.Fatalf("testbed/run/env: BED_VOLUMES=%q", b.env["BED_VOLUMES"])
	}

	// The master hosts.
	had, err := run(bedSH, "masters")
	if err != nil {
		t.Fatalf("bed masters: %v\n%s", err, had)
	}
	if strings.TrimSpace(had) != "3" {
		t.Cleanup(func() {
			if out, err := run(bedSH, "masters", "1"); err != nil {
				t.Errorf("bed masters 1: %v\n%s", err, out)
			}
		})
		if out, err := run(bedSH, "masters", "3"); err != nil {
			t.Fatalf("bed masters 3: %v\n%s", err, out)
		}
	}
	masterIPs := []string{"10.231.0.12", "10.231.0.14", "10.231.0.15"}
	// master-2 without the NFS client: nfs_client has work to do on a
	// master that is not the first (a host this test started, or removes
	// again; one the bed ran before gets nfs-common back)
	if strings.TrimSpace(had) == "3" {
		t.Cleanup(func() {
			if out, err := b.try("master-2", "apt-get", "install", "-y", "-q", "nfs-common"); err != nil {
				t.Errorf("master-2: apt-get install nfs-common: %v\n%s", err, out)
			}
		})
	}
	b.exec(t, "master-2", "sh", "-c", "dpkg-query -W -f='${Status}' nfs-common 2>/dev/null | grep 'ok installed' >/dev/null || exit 0; apt-get purge -y -q nfs-common >/dev/null")

	// The stack, on separate networks with the bed hosts' addresses.
	var wips []string
	for i := 0; i < workers; i++ {
		wips = append(wips, fmt.Sprintf("10.231.0.%d", 20+i))
	}
	pools := map[string]any{
		"networks": map[string][]string{
			"net_m3_master": masterIPs, "net_m3_worker": wips, "net_m3_storage": {"10.231.0.11"}, "net_m3_vip": {threeVIP},
		},
		"separate": []string{"net_m3_master", "net_m3_worker", "net_m3_storage", "net_m3_vip"},
	}
	poolFile := filepath.Join(b.dir, "heat", "pools.d", threePool)
	t.Cleanup(func() {
		if out, err := run(heatSH, "stack-delete", threeStack); err != nil {
			t.Errorf("heat.sh stack-delete %s: %v\n%s", threeStack, err, out)
		}
		if err := os.Remove(poolFile); err != nil && !os.IsNotExist(err) {
			t.Error(err)
		}
	})
	pj, _ := json.Marshal(pools)
	if err := os.WriteFile(poolFile, append(pj, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(heatSH, "stack-create", threeStack, strconv.Itoa(workers), strconv.Itoa(volumes),
		"--networks", "net_m3_master,net_m3_worker,net_m3_storage", "--masters", "3", "--vip", "--vip-network", "net_m3_vip",
		"--no-state", "--replace")
	if err != nil {
		hint := ""
		if strings.Contains(out, "already allocated") || strings.Contains(out, "is exhausted") {
			hint = "\n(heat-all runs a stand-in plugin without separate networks: testbed/heat/heat.sh up restarts it with this tree's)"
		}
		t.Fatalf("heat.sh stack-create: %v\n%s%s", err, out, hint)
	}
	var created struct {
		Volumes []struct{ Resource, ID, Device string }
		Ports   []struct{ Resource, Member, IP string }
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &created); err != nil {
		t.Fatalf("stack-create's JSON: %v\n%s", err, out)
	}

	// The stack's volumes are the bed's disks: storage gets each new
	// volume id's by-id link to the disk the bed's volume is (the same
	// device, as a volume that a second stack would attach), and its
	// record of volumes is put back afterwards.
	var bedStack struct {
		Volumes []struct{ Resource, ID string }
	}
	data, err := os.ReadFile(filepath.Join(b.dir, "heat", "stack.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &bedStack); err != nil {
		t.Fatalf("testbed/run/heat/stack.json: %v", err)
	}
	const record = "/var/lib/heatsible/volumes.json"
	// A record that cannot be read is not one that is missing: only a
	// missing one is removed afterwards.
	hadRecord := strings.TrimSpace(b.exec(t, "storage", "sh", "-c", `if [ -e "$1" ]; then echo yes; else echo no; fi`, "sh", record)) == "yes"
	rec := ""
	if hadRecord {
		rec = b.exec(t, "storage", "cat", record)
	}
	t.Cleanup(func() {
		var err error
		if !hadRecord {
			_, err = b.try("storage", "rm", "-f", record)
		} else {
			_, err = b.try("storage", "sh", "-c", `printf '%s' "$1" > "$2"`, "sh", rec, record)
		}
		if err != nil {
			t.Errorf("putting back %s on storage: %v", record, err)
		}
	})
	for _, v := range created.Volumes {
		var bedID string
		for _, bv := range bedStack.Volumes {
			if bv.Resource == v.Resource {
				bedID = bv.ID
			}
		}
		if bedID == "" || len(v.ID) < 20 {
			t.Fatalf("volume %s (%s): no bed volume of that resource in stack.json %+v", v.Resource, v.ID, bedStack.Volumes)
		}
		link := "/dev/disk/by-id/virtio-" + v.ID[:20]
		t.Cleanup(func() { b.try("storage", "rm", "-f", link) })
		b.exec(t, "storage", "sh", "-c", `ln -s "$(readlink "$1")" "$2"`, "sh", "/dev/disk/by-id/virtio-"+bedID[:20], link)
	}

	// The VIP on master-0, with a forward of the API server, as the
	// master holding it has.
	t.Cleanup(func() {
		b.try("master-0", "sh", "-c", "systemctl stop hs-vip-forward.service 2>/dev/null; systemctl reset-failed hs-vip-forward.service 2>/dev/null; true")
		b.try("master-0", "ip", "addr", "del", threeVIP+"/24", "dev", "eth0")
	})
	b.exec(t, "master-0", "ip", "addr", "add", threeVIP+"/24", "dev", "eth0")
	b.exec(t, "master-0", "systemd-run", "--unit=hs-vip-forward", "--quiet", "/usr/bin/socat",
		"TCP-LISTEN:6443,bind="+threeVIP+",reuseaddr,fork", "TCP:10.231.0.1:26443")
	t.Cleanup(func() {
		// heatsible's cluster lock file of this stack on the Ansible host
		f := "/home/" + b.env["BED_USER"] + "/.heatsible/locks/" + threeStack + ".lock"
		b.try("ansible", "sh", "-c", `flock -n "$1" rm -f "$1"`, "sh", f)
	})

	// The topology: three masters, master-0 first.
	reqDoc := b.requestDoc(t)
	master := func(doc map[string]any) map[string]any {
		return doc["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)["master_node"].(map[string]any)
	}
	memberReq := writeRequest(t, reqDoc)
	master(reqDoc)["cluster_cp_name"] = "vip_CP"
	vipReq := writeRequest(t, reqDoc)
	code, tout, errs, _ := b.heatsible(t, "-o", "json", "topology", "--request", vipReq, "--stack", threeStack)
	if code != 0 {
		t.Fatalf("heatsible topology --stack %s: exit %d\n%s", threeStack, code, tail(errs, 20))
	}
	var topo struct {
		Nodes []topoNode        `json:"nodes"`
		CPs   map[string]string `json:"cps"`
	}
	if err := json.Unmarshal([]byte(tout), &topo); err != nil {
		t.Fatalf("topology JSON: %v\n%s", err, tout)
	}
	var masters []topoNode
	for _, n := range topo.Nodes {
		if n.Role == "master" {
			masters = append(masters, n)
		}
	}
	if len(masters) != 3 || masters[0].Address != masterIPs[0] || topo.CPs["vip_CP"] != threeVIP {
		t.Fatalf("stack %s: masters %+v, vip_CP %q; want 3 at %v, master-0's first, and vip_CP %s", threeStack, masters, topo.CPs["vip_CP"], masterIPs, threeVIP)
	}
	for i, m := range masters {
		if m.Address != masterIPs[i] {
			t.Fatalf("master %d %s at %s, want %s", i, m.Name, m.Address, masterIPs[i])
		}
	}

	// plan, which connects to no host, names the same VIM endpoints: the
	// first master's address with the one-master warning, and the VIP
	// without it (this was TestSeveralMasters, on a stack of its own).
	vimServer := regexp.MustCompile(`Tacker's Kubernetes VIM \(k8s_vim\): server https://([^:]+):`)
	plan := func(req string) (string, string) {
		t.Helper()
		code, out, errs, took := b.heatsible(t, "plan", "instantiate-end", "--request", req, "--package", filepath.Join(b.dir, "package"), "--stack", threeStack)
		t.Logf("heatsible plan instantiate-end (cluster_cp_name %s): exit %d in %s", master(mustDoc(t, req))["cluster_cp_name"], code, took.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("plan instantiate-end: exit %d, want 0\n%s\n%s", code, tail(out, 20), tail(errs, 20))
		}
		m := vimServer.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("plan prints no VIM server:\n%s", out)
		}
		return m[1], out + errs
	}
	planWarning := "warning: master_node.cluster_cp_name masterNode_CP1 is the address of the master " + masters[0].Name + ", one of the cluster's 3 masters, not a VIP: " +
		"Tacker reaches the API server through that master only, and loses it while that master is down or healed; " +
		"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name"
	if host, all := plan(memberReq); host != masterIPs[0] || !strings.Contains(all, planWarning) {
		t.Errorf("plan, masterNode_CP1: VIM endpoint %s, want the first master's %s, and the warning\n%s\nin\n%s", host, masterIPs[0], planWarning, all)
	}
	if host, all := plan(vipReq); host != threeVIP || strings.Contains(all, "not a VIP") {
		t.Errorf("plan, vip_CP: VIM endpoint %s, want the VIP port's %s, and no warning about one master:\n%s", host, threeVIP, all)
	}

	instantiate := func(req string) (runResult, string) {
		t.Helper()
		code, out, errs, took := b.heatsible(t, "-o", "json", "-v", "run", "instantiate-end", "--request", req,
			"--package", filepath.Join(b.dir, "package"), "--stack", threeStack, "--known-hosts", filepath.Join(b.dir, "known_hosts"))
		t.Logf("instantiate-end (cluster_cp_name %s): exit %d in %s", master(mustDoc(t, req))["cluster_cp_name"], code, took.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("instantiate-end: exit %d, want 0\n%s\n%s", code, tail(out, 20), tail(errs, 60))
		}
		return parseRun(t, out), errs
	}
	notVIP := "warning: master_node.cluster_cp_name masterNode_CP1 is the address of the master " + masters[0].Name + ", one of the cluster's 3 masters, not a VIP"
	ranOn := regexp.MustCompile(`(?m)^.*\b(nfs_client|pv_register|k8s_vim) : .*$`)

	// Run 1: the member's CP.
	r, errs := instantiate(memberReq)
	if r.VIM == nil || r.VIM.Server != "https://"+masterIPs[0]+":6443" {
		t.Errorf("masterNode_CP1: VIM %+v, want server https://%s:6443 (the first master, whose API server answers)", r.VIM, masterIPs[0])
	}
	if !strings.Contains(errs, notVIP) {
		t.Errorf("masterNode_CP1: no warning %q in\n%s", notVIP, tail(errs, 40))
	}
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "warning:") {
			t.Logf("heatsible says: %s", l)
		}
	}
	for _, m := range masters {
		rc, ok := r.Recap[m.Name]
		if !ok || rc.OK == 0 || rc.Failed != 0 || rc.Unreachable != 0 {
			t.Errorf("master %s (%s): recap %+v (present %v), want tasks run, none failed", m.Name, m.Address, rc, ok)
		}
	}
	for i, ip := range masterIPs {
		h := fmt.Sprintf("master-%d", i)
		if st, err := b.try(h, "dpkg-query", "-W", "-f=${Status}", "nfs-common"); err != nil || st != "install ok installed" {
			t.Errorf("%s (%s): nfs-common %q %v, want installed by nfs_client", h, ip, st, err)
		}
	}
	if rc := r.Recap[masters[2].Name]; rc.Changed == 0 {
		t.Errorf("master %s (master-2): nothing changed, want nfs_client to have installed nfs-common", masters[2].Name)
	}
	// What ran where, from the progress lines ("HOST STATUS ROLE : TASK"):
	// nfs_client on every master, pv_register and k8s_vim on the first only.
	ran := map[string]map[string]bool{}
	for _, l := range ranOn.FindAllString(errs, -1) {
		t.Logf("ran: %s", strings.TrimSpace(l))
		f := strings.Fields(l)
		for i, w := range f {
			if i > 0 && (w == "nfs_client" || w == "pv_register" || w == "k8s_vim") && i+1 < len(f) && f[i+1] == ":" {
				host := f[i-2]
				if ran[w] == nil {
					ran[w] = map[string]bool{}
				}
				ran[w][host] = true
				break
			}
		}
	}
	for _, m := range masters {
		if !ran["nfs_client"][m.Name] {
			t.Errorf("nfs_client did not run on master %s (%s): ran on %v", m.Name, m.Address, ran["nfs_client"])
		}
	}
	for _, role := range []string{"pv_register", "k8s_vim"} {
		if len(ran[role]) != 1 || !ran[role][masters[0].Name] {
			t.Errorf("%s ran on %v, want the first master %s only", role, ran[role], masters[0].Name)
		}
	}
	checkPVs(t, b, len(b.request(t).AdditionalParams.K.PVs), "Available")

	// Run 2: the VIP; the re-run, so nothing changes.
	r, errs = instantiate(vipReq)
	if r.VIM == nil || r.VIM.Server != "https://"+threeVIP+":6443" {
		t.Errorf("vip_CP: VIM %+v, want server https://%s:6443 (the VIP port's)", r.VIM, threeVIP)
	}
	if strings.Contains(errs, "not a VIP") {
		t.Errorf("vip_CP: a warning about one master:\n%s", tail(errs, 40))
	}
	tls := "warning: Tacker will not verify the TLS certificate of https://" + threeVIP + ":6443"
	if !strings.Contains(errs, tls) || r.VIM == nil || r.VIM.CACert != "" {
		t.Errorf("vip_CP: want %q (the bed's API server certificate does not name the VIP) and no CA; VIM CA %d bytes\n%s", tls, len(caOf(r)), tail(errs, 40))
	}
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "warning:") {
			t.Logf("heatsible says: %s", l)
		}
	}
	checkNoChange(t, r)
	checkPVs(t, b, len(b.request(t).AdditionalParams.K.PVs), "Available")
	t.Logf("TestThreeMasters body: %s", time.Since(start).Round(time.Millisecond))
}

func caOf(r runResult) string {
	if r.VIM == nil {
		return ""
	}
	return r.VIM.CACert
}

func mustDoc(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mastersStack is the stack TestSeveralMasters creates beside the bed's:
// three master members and a VIP port vip_CP (heat.sh stack-create
// --masters 3 --vip), on a network of its own whose pool (mastersPool, in
// the stand-in's pools.d) holds addresses no bed host has.
const (
	mastersStack   = "bed-masters"
	mastersNetwork = "net_bed_masters"
	mastersPool    = "bed-masters.json"
)

// TestSeveralMasters: with three masters, the seeds' cluster_cp_name (a
// master member's CP, masterNode_CP1) is discovered as the first master's
// address (exit 0, not 5), and plan warns that Tacker's VIM endpoint is
// that one master rather than a VIP; a VIP port of the top stack (vip_CP,
// Tacker's complex flavour) is the endpoint as is, with no warning. The
// stack is the real Heat's (the bed's Keystone and Heat), created beside
// the bed's stack "bed", which it leaves alone (so no kubespray inventory
// is forgotten, docs/testbed.md); plan connects to no host, so its masters
// need no hosts. Cleanup deletes the stack and the pool even on failure.
func TestSeveralMasters(t *testing.T) {
	b := needBed(t)
	// this tree's heat.sh (--masters and --vip are new), on the bed's state
	heatSH, err := filepath.Abs(filepath.Join("..", "..", "testbed", "heat", "heat.sh"))
	if err != nil {
		t.Fatal(err)
	}
	pool := filepath.Join(b.dir, "heat", "pools.d", mastersPool)
	heat := func(args ...string) (string, error) {
		cmd := exec.Command(heatSH, args...)
		cmd.Env = append(os.Environ(), "HEAT_RUN="+filepath.Join(b.dir, "heat"))
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("heat.sh %s: %s (%v)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), err)
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := heat("stack-delete", mastersStack); err != nil {
			t.Errorf("heat.sh stack-delete %s: %v\n%s", mastersStack, err, out)
		}
		if err := os.Remove(pool); err != nil && !os.IsNotExist(err) {
			t.Error(err)
		}
	})
	// .90-.95: beyond the workers' pool (.20-.83) and every bed host
	if err := os.WriteFile(pool, []byte(`{"networks": {"`+mastersNetwork+`": ["10.231.0.90-10.231.0.95"]}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nets := mastersNetwork + "," + mastersNetwork + "," + mastersNetwork
	if out, err := heat("stack-create", mastersStack, "0", "1", "--networks", nets, "--masters", "3", "--vip", "--no-state", "--replace"); err != nil {
		t.Fatalf("heat.sh stack-create: %v\n%s", err, out)
	}

	reqDoc := b.requestDoc(t)
	master := func(doc map[string]any) map[string]any {
		return doc["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)["master_node"].(map[string]any)
	}
	if cp := master(reqDoc)["cluster_cp_name"]; cp != "masterNode_CP1" {
		t.Fatalf("the bed's request names cluster_cp_name %v, want masterNode_CP1 (the seeds')", cp)
	}
	memberReq := writeRequest(t, reqDoc)
	master(reqDoc)["cluster_cp_name"] = "vip_CP"
	vipReq := writeRequest(t, reqDoc)

	// The stack as heatsible discovers it: 3 masters, the first by address.
	code, out, errs, _ := b.heatsible(t, "-o", "json", "topology", "--request", vipReq, "--stack", mastersStack)
	if code != 0 {
		t.Fatalf("heatsible topology --stack %s: exit %d\n%s", mastersStack, code, tail(errs, 20))
	}
	var topo struct {
		Nodes []topoNode        `json:"nodes"`
		CPs   map[string]string `json:"cps"`
	}
	if err := json.Unmarshal([]byte(out), &topo); err != nil {
		t.Fatalf("topology JSON: %v\n%s", err, out)
	}
	var masters []topoNode
	for _, n := range topo.Nodes {
		if n.Role == "master" {
			masters = append(masters, n)
		}
	}
	vip := topo.CPs["vip_CP"]
	if len(masters) != 3 || vip == "" {
		t.Fatalf("stack %s: %d masters (want 3), vip_CP %q:\n%s", mastersStack, len(masters), vip, out)
	}
	for _, m := range masters {
		if m.Address == vip {
			t.Fatalf("vip_CP %s is master %s's address", vip, m.Name)
		}
	}
	first := masters[0]
	t.Logf("masters %s %s, %s %s, %s %s; vip_CP %s", masters[0].Name, masters[0].Address, masters[1].Name, masters[1].Address, masters[2].Name, masters[2].Address, vip)

	server := regexp.MustCompile(`Tacker's Kubernetes VIM \(k8s_vim\): server https://([^:]+):`)
	plan := func(req string) (string, string) {
		t.Helper()
		code, out, errs, took := b.heatsible(t, "plan", "instantiate-end", "--request", req, "--package", filepath.Join(b.dir, "package"), "--stack", mastersStack)
		t.Logf("heatsible plan instantiate-end (%s): exit %d in %s", filepath.Base(filepath.Dir(req)), code, took.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("plan instantiate-end: exit %d, want 0\n%s\n%s", code, tail(out, 20), tail(errs, 20))
		}
		m := server.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("plan prints no VIM server:\n%s", out)
		}
		return m[1], out + errs
	}

	host, all := plan(memberReq)
	want := "warning: master_node.cluster_cp_name masterNode_CP1 is the address of the master " + first.Name + ", one of the cluster's 3 masters, not a VIP: " +
		"Tacker reaches the API server through that master only, and loses it while that master is down or healed; " +
		"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name"
	if host != first.Address {
		t.Errorf("masterNode_CP1: VIM endpoint %s, want the first master %s's address %s", host, first.Name, first.Address)
	}
	if !strings.Contains(all, want) {
		t.Errorf("masterNode_CP1: no warning\n%s\nin\n%s", want, all)
	}
	for _, l := range strings.Split(all, "\n") {
		if strings.Contains(l, "not a VIP") {
			t.Logf("heatsible says: %s", l)
		}
	}

	host, all = plan(vipReq)
	if host != vip {
		t.Errorf("vip_CP: VIM endpoint %s, want the VIP port's address %s", host, vip)
	}
	if strings.Contains(all, "not a VIP") {
		t.Errorf("vip_CP: a warning about one master:\n%s", all)
	}
}

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubesprayTackerNames: a cluster built by Tacker's kubespray driver has
// an inventory (transferring_inventory_path/hosts.yaml) naming the nodes
// master<last octet> and worker<last octet>, the names kubespray registered
// them under. Scale and heal through kubespray are refused (exit 6) before
// anything changes: no kubespray playbook runs, the inventory stays Tacker's,
// no node is drained; instantiate-end too. With --tags for the storage roles
// (kubespray left alone) the run goes on.
func TestKubesprayTackerNames(t *testing.T) {
	b := needBed(t)
	inv := b.env["BED_KUBESPRAY_ROOT"] + "/inventory/heatsible/hosts.yaml"
	b.keepFile(t, "ansible", inv) // put back whatever is there now, first
	nodes := b.topology(t)
	var hosts, masters, workers strings.Builder
	var worker string
	for _, n := range nodes {
		if n.Role != "master" && n.Role != "worker" {
			continue
		}
		name := n.Role + n.Address[strings.LastIndex(n.Address, ".")+1:]
		fmt.Fprintf(&hosts, "    %s:\n      ansible_host: %s\n      ansible_user: %s\n      ip: %s\n", name, n.Address, b.env["BED_USER"], n.Address)
		if n.Role == "master" {
			fmt.Fprintf(&masters, "        %s: null\n", name)
		} else {
			fmt.Fprintf(&workers, "        %s: null\n", name)
			worker = n.Name
		}
	}
	tacker := "all:\n  children:\n    calico_rr:\n      hosts: {}\n    etcd:\n      hosts:\n" + masters.String() +
		"    k8s_cluster:\n      children:\n        kube_control_plane: null\n        kube_node: null\n" +
		"    kube_control_plane:\n      hosts:\n" + masters.String() + "    kube_node:\n      hosts:\n" + workers.String() +
		"  hosts:\n" + hosts.String()
	b.exec(t, "ansible", "sh", "-c", "mkdir -p "+filepath.Dir(inv)+" && cat > "+inv+" <<'EOF'\n"+tacker+"EOF\nchown -R "+b.env["BED_USER"]+" "+filepath.Dir(inv))
	sum := b.exec(t, "ansible", "md5sum", inv)
	seq := lastRecordSeq(b.ksRecords(t, 0))

	base := []string{"-o", "json", "-v", "run", "--request", filepath.Join(b.dir, "request-kubespray.json"), "--package", filepath.Join(b.dir, "package"),
		"--stack", b.env["HEATSIBLE_STACK"], "--known-hosts", filepath.Join(b.dir, "known_hosts")}
	for _, op := range [][]string{{"heal-start", "--node", worker}, {"scale-end", "--nodes", worker}, {"instantiate-end"}} {
		args := append(append([]string{}, base[:4]...), op[0])
		args = append(append(args, base[4:]...), op[1:]...)
		code, out, errs, _ := b.heatsible(t, args...)
		if code != 6 {
			t.Errorf("%s: exit %d, want 6\n%s", strings.Join(op, " "), code, tail(errs, 20))
			continue
		}
		for _, want := range []string{"names the nodes otherwise than heatsible does: ", " is heatsible's " + worker,
			"Tacker's kubespray driver, which names them master<last octet> and worker<last octet>", "Nothing was changed"} {
			if !strings.Contains(out+errs, want) {
				t.Errorf("%s: the refusal does not say %q\n%s", op[0], want, tail(out+errs, 10))
			}
		}
		if strings.Contains(out+errs, `"recap"`) {
			t.Errorf("%s: a playbook ran:\n%s", op[0], tail(out+errs, 20))
		}
	}
	if recs := b.ksRecords(t, seq); len(recs) != 0 {
		t.Errorf("the stand-in ran: %s", playbooksOf(recs))
	}
	if got := b.exec(t, "ansible", "md5sum", inv); got != sum {
		t.Errorf("Tacker's inventory changed: %s -> %s", sum, got)
	}
	if out := b.kubectl(t, "get", "nodes", "-o", "jsonpath={.items[*].spec.unschedulable}"); strings.Contains(out, "true") {
		t.Errorf("a node was cordoned: %q", out)
	}

	// The storage roles leave kubespray (and its inventory) alone.
	args := append(append(append([]string{}, base[:4]...), "instantiate-end"), base[4:]...)
	code, _, errs, _ := b.heatsible(t, append(args, "--tags", "nfs_client")...)
	if code != 0 {
		t.Errorf("instantiate-end --tags nfs_client: exit %d\n%s", code, tail(errs, 20))
	}
}

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests in this file run heatsible with the bed's request-kubespray.json:
// kubespray_root_path is the kubespray STAND-IN on the bed's Ansible host
// (testbed/kubespray, docs/testbed.md), not kubespray, which cannot run here
// (it downloads from the internet). The stand-ins record how heatsible called
// them (playbook, working directory and ansible.cfg, inventory, --limit, extra
// vars) and act as kubespray does on the Node objects; the tests assert on
// those records. Everything else is real: Heat scales the stack, the nodes
// get the NFS client over SSH, kubectl drains on the real API server, the
// external load balancer's script runs haproxy on the bed's lb host.

// ksRecord is one record of a stand-in playbook run.
type ksRecord struct {
	Seq           int                 `json:"seq"`
	Playbook      string              `json:"playbook"`
	Cwd           string              `json:"cwd"`
	ConfigTimeout any                 `json:"config_timeout"`
	Limit         *string             `json:"ansible_limit"`
	Sources       []string            `json:"ansible_inventory_sources"`
	Groups        map[string][]string `json:"groups"`
	ExtraVars     map[string]any      `json:"extra_vars"`
}

// ksRecords returns the stand-in's records with a sequence number above after.
func (b *bed) ksRecords(t *testing.T, after int) []ksRecord {
	t.Helper()
	return standInRecords[ksRecord](t, b, "ansible", b.env["BED_KUBESPRAY_ROOT"]+"/records", after)
}

// seqRecord is a stand-in's record (kubespray's, kubeadm's): one JSON file
// per call, numbered.
type seqRecord interface{ seq() int }

func (r ksRecord) seq() int { return r.Seq }

// standInRecords reads the records a stand-in left in dir on host, those
// with a seq above after, in seq order.
func standInRecords[R seqRecord](t *testing.T, b *bed, host, dir string, after int) []R {
	t.Helper()
	out := b.exec(t, host, "sh", "-c", "for f in "+dir+"/[0-9]*.json; do [ -f \"$f\" ] && cat \"$f\"; done; true")
	var recs []R
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var r R
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("stand-in records in %s on %s: %v\n%s", dir, host, err, out)
		}
		if r.seq() > after {
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b R) int { return a.seq() - b.seq() })
	return recs
}

// lastRecordSeq is the seq of the newest of recs (0: none).
func lastRecordSeq[R seqRecord](recs []R) int {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].seq()
}

func playbooksOf(recs []ksRecord) string {
	var out []string
	for _, r := range recs {
		l := "-"
		if r.Limit != nil {
			l = *r.Limit
		}
		out = append(out, r.Playbook+"("+l+")")
	}
	return strings.Join(out, " ")
}

// ksRun runs "heatsible -o json -v run OP" with request-kubespray.json,
// keeping its records in state; it fails the test on a non-zero exit.
func (b *bed) ksRun(t *testing.T, state, op string, extra ...string) (runResult, string) {
	t.Helper()
	args := []string{"-o", "json", "-v", "run", op,
		"--request", filepath.Join(b.dir, "request-kubespray.json"),
		"--package", filepath.Join(b.dir, "package"),
		"--stack", b.env["HEATSIBLE_STACK"],
		"--known-hosts", filepath.Join(b.dir, "known_hosts")}
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
	var recap []string
	for h, x := range r.Recap {
		recap = append(recap, fmt.Sprintf("%s ok=%d changed=%d failed=%d", h, x.OK, x.Changed, x.Failed))
	}
	slices.Sort(recap)
	t.Logf("run %s %s: exit %d in %s; recap: %s", op, strings.Join(extra, " "), r.ExitCode, took.Round(time.Millisecond), strings.Join(recap, "; "))
	return r, e.String()
}

// topoNode is a node of "heatsible topology -o json".
type topoNode struct {
	Name          string `json:"name"`
	Role          string `json:"role"`
	Address       string `json:"address"`
	ServerID      string `json:"server_id"`
	Member        string `json:"member"`
	MemberStackID string `json:"member_stack_id"`
}

// topology reads the cluster from Heat, as heatsible sees it.
func (b *bed) topology(t *testing.T) []topoNode {
	t.Helper()
	code, out, errs, _ := b.heatsible(t, "-o", "json", "topology", "--request", filepath.Join(b.dir, "request-kubespray.json"), "--stack", b.env["HEATSIBLE_STACK"])
	if code != 0 {
		t.Fatalf("heatsible topology: exit %d\n%s", code, errs)
	}
	var doc struct {
		Nodes []topoNode `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("topology JSON: %v\n%s", err, out)
	}
	return doc.Nodes
}

func nodeByAddress(nodes []topoNode, addr string) (topoNode, bool) {
	for _, n := range nodes {
		if n.Address == addr {
			return n, true
		}
	}
	return topoNode{}, false
}

func workersOf(nodes []topoNode) []string {
	var out []string
	for _, n := range nodes {
		if n.Role == "worker" {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// stackScale resizes the bed stack's worker group the way Tacker does
// (victims marked unhealthy first).
// scaleOutSpare has Heat add the spare worker (workers+1 members) and
// returns its member. The scale back to workers is registered before the
// scale-out, so a test that stops anywhere after leaves the stack as it was
// (a test that scales back itself leaves the cleanup nothing to do).
func (b *bed) scaleOutSpare(t *testing.T, workers int) topoNode {
	t.Helper()
	spareIP := b.env["BED_SPARE_WORKER_IP"]
	t.Cleanup(func() {
		if n, ok := nodeByAddress(b.topology(t), spareIP); ok {
			b.stackScale(t, workers, n.Member)
		}
	})
	b.stackScale(t, workers+1)
	n, ok := nodeByAddress(b.topology(t), spareIP)
	if !ok || n.MemberStackID == "" || n.Member == "" {
		t.Fatalf("after the scale-out Heat has no member at %s (or no member ids): %+v", spareIP, n)
	}
	return n
}

func (b *bed) stackScale(t *testing.T, n int, victims ...string) {
	t.Helper()
	args := []string{"stack-scale", b.env["HEATSIBLE_STACK"], fmt.Sprint(n)}
	for _, v := range victims {
		args = append(args, "--victim", v)
	}
	cmd := exec.Command(filepath.Join(b.root, "testbed", "heat", "heat.sh"), args...)
	cmd.Env = append(os.Environ(), "HEAT_RUN="+filepath.Join(b.dir, "heat"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("heat.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("heat.sh %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

// nodeExists reports whether Kubernetes has the Node.
func (b *bed) nodeExists(t *testing.T, name string) bool {
	t.Helper()
	out := b.kubectl(t, "get", "nodes", "-o", "name")
	return slices.Contains(strings.Fields(out), "node/"+name)
}

// ksInventory is the inventory heatsible wrote for kubespray.
func (b *bed) ksInventory(t *testing.T) string {
	t.Helper()
	return b.exec(t, "ansible", "cat", b.env["BED_KUBESPRAY_ROOT"]+"/inventory/heatsible/hosts.yaml")
}

// bedHostAt is the bed host (worker-I) with the internal address addr.
func bedHostAt(t *testing.T, addr string) string {
	t.Helper()
	var a, b2, c, d int
	if _, err := fmt.Sscanf(addr, "%d.%d.%d.%d", &a, &b2, &c, &d); err != nil || d < 20 || d > 35 {
		t.Fatalf("%s is not a bed worker's address", addr)
	}
	return fmt.Sprintf("worker-%d", d-20)
}

// nfsClient reports whether host has the NFS client (package and helper).
func (b *bed) nfsClient(host string) bool {
	_, err := b.try(host, "sh", "-c", "dpkg-query -W -f='${Status}' nfs-common | grep -q 'install ok installed' && test -x /sbin/mount.nfs")
	return err == nil
}

// removeNFSClient makes host look like a fresh VM without the NFS client.
func (b *bed) removeNFSClient(t *testing.T, host string) {
	t.Helper()
	b.exec(t, host, "sh", "-c", "DEBIAN_FRONTEND=noninteractive apt-get -y -q purge nfs-kernel-server nfs-common >/dev/null 2>&1; ! dpkg-query -W -f='${Status}' nfs-common 2>/dev/null | grep -q 'install ok installed'")
}

// drained reports whether the run recorded in state drained on the first
// master: the k8s_node drain task changed something (cordoned the node).
func drained(t *testing.T, state, op string) bool {
	t.Helper()
	return slices.Contains(taskStatuses(t, state, op, "Drain the nodes"), "changed")
}

package params

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/topology"
)

// seedBodies are the sample request bodies of the seed documents
// (../shared/seeds/*.rst), kept verbatim in testdata/seeds/<seed>.json, and
// the fields whose placeholders testdata/seeds/<seed>.concrete.json makes
// concrete (host1:port1 is no port; 0.0.0.0 is no host; "" is no path).
var seedBodies = []struct {
	seed         string
	placeholders []string
}{
	{"kubespray-spec", []string{"ansible.ip_address", "ansible.kubespray_root_path", "ansible.transferring_inventory_path", "proxy.http_proxy", "proxy.https_proxy"}},
	{"pv-spec", []string{"proxy.http_proxy", "proxy.https_proxy"}},
	{"pv-usage-guide", []string{"proxy.http_proxy", "proxy.https_proxy"}},
}

// TestSeedBodies validates every seed's sample body as the document gives
// it and with its placeholders made concrete, against the seeds' package
// (testdata/seeds/package), and compares the whole outcome with
// testdata/golden/seeds/. The concrete bodies must be valid, and differ from
// the verbatim ones only in the placeholder fields.
func TestSeedBodies(t *testing.T) {
	dir := filepath.Join(testdata, "seeds")
	for _, sb := range seedBodies {
		t.Run(sb.seed, func(t *testing.T) {
			verbatim := filepath.Join(dir, sb.seed+".json")
			concrete := filepath.Join(dir, sb.seed+".concrete.json")
			var want []string
			for _, f := range sb.placeholders {
				want = append(want, Prefix+"."+f)
			}
			if got := jsonDiff(t, verbatim, concrete); !slices.Equal(got, want) {
				t.Errorf("the concrete body differs from the seed's in %q; want only the placeholders %q", got, want)
			}
			for _, f := range []string{verbatim, concrete} {
				got := seedOutcome(f)
				golden := filepath.Join("testdata", "golden", "seeds", strings.TrimSuffix(filepath.Base(f), ".json")+".txt")
				compareGolden(t, golden, got)
				if f == concrete && !strings.HasSuffix(got, "valid\n") {
					t.Errorf("%s is refused:\n%s", f, got)
				}
			}
		})
	}
}

func seedOutcome(path string) string {
	var b strings.Builder
	req, err := Load(path)
	if err == nil {
		err = req.Validate(Options{PackageDir: filepath.Join(testdata, "seeds", "package"), RequirePackage: true})
	}
	if req != nil {
		for _, w := range req.Warnings {
			b.WriteString("warning: " + w + "\n")
		}
	}
	if err != nil {
		for _, p := range err.(Problems) {
			b.WriteString("problem: " + p.String() + "\n")
		}
	} else {
		b.WriteString("valid\n")
	}
	return b.String()
}

func compareGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("no golden file (go test -run %s -update writes it): %v", t.Name(), err)
	}
	if got != string(want) {
		t.Errorf("outcome differs from %s\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

// jsonDiff returns the paths (as Validate names them) of every leaf that
// differs between the two JSON files, sorted.
func jsonDiff(t *testing.T, a, b string) []string {
	t.Helper()
	load := func(p string) any {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return v
	}
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		xm, xok := x.(map[string]any)
		ym, yok := y.(map[string]any)
		if xok && yok {
			keys := map[string]bool{}
			for k := range xm {
				keys[k] = true
			}
			for k := range ym {
				keys[k] = true
			}
			for k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, xm[k], ym[k])
			}
			return
		}
		xl, xok := x.([]any)
		yl, yok := y.([]any)
		if xok && yok && len(xl) == len(yl) {
			for i := range xl {
				walk(fmt.Sprintf("%s[%d]", path, i), xl[i], yl[i])
			}
			return
		}
		xj, _ := json.Marshal(x)
		yj, _ := json.Marshal(y)
		if string(xj) != string(yj) {
			out = append(out, path)
		}
	}
	walk("", load(a), load(b))
	sort.Strings(out)
	return out
}

// TestProxyPortNeverEchoesThePassword: the message about a proxy URL's bad
// port quotes the port, never what stands before the host, whatever a
// password holds (QQ marks the secret parts).
func TestProxyPortNeverEchoesThePassword(t *testing.T) {
	for _, u := range []string{
		"http://QQuser:QQpw@host1:port1",
		"http://QQuser:QQp/a:ss@QQrd@host:port1",
		"http://QQuser:QQs?x:y@host:port1",
		"http://QQuser:QQs#frag:zz@host:port1",
		"http://QQuser:QQpw@host:99999",
		"http://QQuser:QQpw@host:port2/path:x",
	} {
		var ps Problems
		validateProxy(&ps, "proxy", &Proxy{HTTPProxy: u})
		if len(ps) != 1 {
			t.Errorf("%s: %v, want one problem", u, ps)
			continue
		}
		if strings.Contains(ps[0].Msg, "QQ") {
			t.Errorf("%s: the message echoes a secret part: %s", u, ps[0].Msg)
		}
	}
}

// TestKubesprayCIDRs: with kubespray, pod_cidr and cluster_cidr go to
// kubespray's IPv4 variables: an IPv6 network is refused with its field
// path; without kubespray heatsible does not use them and says nothing.
func TestKubesprayCIDRs(t *testing.T) {
	for _, tc := range []struct {
		kubespray bool
		pod       string
		want      string
	}{
		{true, "fd00:10::/56", Prefix + `.master_node.pod_cidr: "fd00:10::/56" is an IPv6 network; heatsible hands kubespray kube_pods_subnet, which is IPv4`},
		{false, "fd00:10::/56", ""},
		{true, "192.168.0.0/16", ""},
	} {
		req, err := Load(filepath.Join(testdata, "seeds", "kubespray-spec.concrete.json"))
		if err != nil {
			t.Fatal(err)
		}
		req.Cluster.MasterNode.PodCIDR = tc.pod
		if !tc.kubespray {
			req.Cluster.Ansible.KubesprayRootPath, req.Cluster.Ansible.TransferringInventoryPath = "", ""
		}
		err = req.Validate(Options{PackageDir: filepath.Join(testdata, "seeds", "package")})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("kubespray %v, pod_cidr %s: %v", tc.kubespray, tc.pod, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("kubespray %v, pod_cidr %s: %v, want %q", tc.kubespray, tc.pod, err, tc.want)
		}
	}
}

// TestKubesprayNodeAddressesAreIPs: kubespray takes a node's ip and
// access_ip (heatsible's address) as IP addresses: etcd's certificate lists
// them as IP SANs (roles/etcd/templates/openssl.conf.j2), the kubelet
// binds to it. A host name there is refused with its topology path when
// the request drives kubespray, and accepted otherwise (heatsible's roles
// take either). The SSH address may stay a host name.
func TestKubesprayNodeAddressesAreIPs(t *testing.T) {
	topo, err := topology.Load(filepath.Join(testdata, "seeds", "topology-kubespray.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	topo.Nodes[1].Address = "worker-1.cluster.example"
	topo.Nodes[2].SSHAddress = "worker-2.example.com"
	for _, kubespray := range []bool{true, false} {
		req, err := Load(filepath.Join(testdata, "seeds", "kubespray-spec.concrete.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !kubespray {
			req.Cluster.Ansible.KubesprayRootPath, req.Cluster.Ansible.TransferringInventoryPath = "", ""
		}
		err = req.ValidateTopology(topo)
		want := `topology.nodes[1].address: "worker-1.cluster.example" is a host name; kubespray takes a node's ip and access_ip as IP addresses`
		switch {
		case kubespray && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("with kubespray: %v, want %q", err, want)
		case kubespray && strings.Contains(err.Error(), "nodes[2]"):
			t.Errorf("with kubespray, the SSH address was refused: %v", err)
		case !kubespray && err != nil:
			t.Errorf("without kubespray: %v", err)
		}
	}
}

// TestWorldPrefix: an export_to network that is the world in disguise is
// refused like /0; a cluster's network, private or not, is not.
func TestWorldPrefix(t *testing.T) {
	for v, world := range map[string]bool{
		"10.0.0.0/8": false, "10.10.0.0/24": false, "192.0.2.0/24": false, "fd00::/8": false,
		"2001:db8::/32": false, "::ffff:10.0.0.0/104": false, "64:ff9b::a0a:0/120": false,
		"0.0.0.0/0": true, "0.0.0.0/1": true, "128.0.0.0/2": true, "8.0.0.0/7": true, "::/0": true, "::/1": true,
		"fc00::/7": true, "2000::/3": true, "::ffff:0.0.0.0/96": true, "::ffff:0.0.0.0/100": true,
		"::/96": true, "64:ff9b::/96": true, "::/8": true,
	} {
		var ps Problems
		checkExportTo(&ps, "x", v)
		if got := len(ps) > 0; got != world {
			t.Errorf("%s: refused %v, want %v (%v)", v, got, world, ps)
		}
	}
}

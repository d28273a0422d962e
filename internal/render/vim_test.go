package render

import (
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
)

func TestVIMEndpoint(t *testing.T) {
	valid, topo := fixture(t, "valid")
	lbReq, lbTopo := scaleFixture(t, "kubespray_lb")
	noCP := loadRequest(t, "valid")
	noCP.Cluster.MasterNode.ClusterCPName = ""
	badCP := loadRequest(t, "valid")
	badCP.Cluster.MasterNode.ClusterCPName = "nowhere_CP"
	// three masters: masterNode_CP1 is the first master's address (as
	// discovery resolves a member's CP), vip_CP a top-stack VIP port's
	three := *topo
	three.Nodes = append([]topology.Node{}, topo.Nodes...)
	three.Nodes = append(three.Nodes,
		topology.Node{Name: "masternode-b", Role: topology.RoleMaster, SSHAddress: "192.0.2.11", Address: "10.10.0.11"},
		topology.Node{Name: "masternode-c", Role: topology.RoleMaster, SSHAddress: "192.0.2.12", Address: "10.10.0.12"})
	three.CPs = map[string]string{"masterNode_CP1": "10.10.0.10", "vip_CP": "10.10.0.9", "storage_server_CP": "10.10.0.45"}
	vip := loadRequest(t, "valid")
	vip.Cluster.MasterNode.ClusterCPName = "vip_CP"
	tacker := func(req *params.Request, pkgDir string) (int, string, bool) {
		return 8383, "the frontend kubernetes-apiserver of Tacker's install_external_lb.sh", true
	}
	tests := []struct {
		name   string
		req    *params.Request
		topo   *topology.Topology
		lbPort func(*params.Request, string) (int, string, bool)
		want   VIMEndpoint
		err    string
	}{
		{"cluster_cp_name, the kubeconfig's port", valid, topo, nil,
			VIMEndpoint{Host: "10.10.0.10", HostFrom: "master_node.cluster_cp_name masterNode_CP1", PortFrom: "the admin kubeconfig's server URL"}, ""},
		{"no cluster_cp_name: the first master's address", noCP, topo, nil,
			VIMEndpoint{Host: "10.10.0.10", HostFrom: "the first master's address (the request has no master_node.cluster_cp_name)", PortFrom: "the admin kubeconfig's server URL"}, ""},
		{"cluster_cp_name without an address", badCP, topo, nil, VIMEndpoint{}, `master_node.cluster_cp_name: "nowhere_CP" has no address`},
		{"three masters, cluster_cp_name a master's CP: that master, with a warning", valid, &three, nil,
			VIMEndpoint{Host: "10.10.0.10", HostFrom: "master_node.cluster_cp_name masterNode_CP1", PortFrom: "the admin kubeconfig's server URL",
				Warning: "master_node.cluster_cp_name masterNode_CP1 is the address of the master master-0, one of the cluster's 3 masters, not a VIP: " +
					"Tacker reaches the API server through that master only, and loses it while that master is down or healed; " +
					"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name"}, ""},
		{"three masters, cluster_cp_name a VIP port: no warning", vip, &three, nil,
			VIMEndpoint{Host: "10.10.0.9", HostFrom: "master_node.cluster_cp_name vip_CP", PortFrom: "the admin kubeconfig's server URL"}, ""},
		{"external LB whose script fronts no API server", lbReq, lbTopo, nil,
			VIMEndpoint{Host: "10.10.0.10", HostFrom: "master_node.cluster_cp_name masterNode_CP1", PortFrom: "the admin kubeconfig's server URL",
				Note: "the external load balancer's script (external_lb_param.script_path) follows heatsible's interface, whose load balancer routes to the workers' NodePorts only, not to the API server: Tacker reaches the API server directly",
				Warning: "master_node.cluster_cp_name masterNode_CP1 is the address of the master master-0, one of the cluster's 3 masters, not a VIP: " +
					"Tacker reaches the API server through that master only, and loses it while that master is down or healed; " +
					"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name"}, ""},
		{"Tacker-contract LB script: its address and 8383", lbReq, lbTopo, tacker,
			VIMEndpoint{Host: "10.10.0.50", HostFrom: "the external load balancer (external_lb_param.ssh_cp_name externalLB_CP)", Port: 8383,
				PortFrom: "the frontend kubernetes-apiserver of Tacker's install_external_lb.sh"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.lbPort != nil {
				saved := vimLBAPIPort
				vimLBAPIPort = tt.lbPort
				defer func() { vimLBAPIPort = saved }()
			}
			got, err := vimEndpoint(tt.req, tt.topo, "../../testdata/package")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("endpoint\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestVIMEndpointRecordedThreeMasters: the VIM's endpoint on the topology
// internal/heat discovers from the real Heat's answers for a stack of three
// masters with a VIP port (internal/heat/testdata/golden/three-masters.yaml,
// from testdata/recorded/three-masters/): the seeds' cluster_cp_name
// masterNode_CP1 is the first master's address, with the one-master
// warning naming that master; vip_CP is the VIP's, with no warning.
func TestVIMEndpointRecordedThreeMasters(t *testing.T) {
	topo, err := topology.Load("../heat/testdata/golden/three-masters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ms := topo.ByRole(topology.RoleMaster)
	if len(ms) != 3 {
		t.Fatalf("%d masters in the recorded stack, want 3", len(ms))
	}
	member := loadRequest(t, "valid")
	if member.Cluster.MasterNode.ClusterCPName != "masterNode_CP1" {
		t.Fatalf("the valid request names cluster_cp_name %q, want masterNode_CP1", member.Cluster.MasterNode.ClusterCPName)
	}
	e, err := vimEndpoint(member, topo, "../../testdata/package")
	if err != nil {
		t.Fatal(err)
	}
	want := "master_node.cluster_cp_name masterNode_CP1 is the address of the master " + ms[0].Name + ", one of the cluster's 3 masters, not a VIP: " +
		"Tacker reaches the API server through that master only, and loses it while that master is down or healed; " +
		"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name"
	if e.Host != ms[0].Address || e.Warning != want {
		t.Errorf("masterNode_CP1: endpoint %s, warning %q; want the first master's %s and\n%q", e.Host, e.Warning, ms[0].Address, want)
	}
	vip := loadRequest(t, "valid")
	vip.Cluster.MasterNode.ClusterCPName = "vip_CP"
	e, err = vimEndpoint(vip, topo, "../../testdata/package")
	if err != nil {
		t.Fatal(err)
	}
	if e.Host != topo.CPs["vip_CP"] || e.Host == "" || e.Warning != "" {
		t.Errorf("vip_CP: endpoint %s, warning %q; want the VIP's %q and none", e.Host, e.Warning, topo.CPs["vip_CP"])
	}
	for _, m := range ms {
		if m.Address == e.Host {
			t.Errorf("vip_CP %s is master %s's address", e.Host, m.Name)
		}
	}
}

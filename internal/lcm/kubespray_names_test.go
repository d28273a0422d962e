package lcm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// tackerHostsYAML is the inventory Tacker's kubespray driver writes for t
// (kubespray_mgmt.py, _create_hosts_yaml at openstack/tacker fea54ab7):
// master<last octet of the NIC address> and worker<...>, with ansible_host
// (the SSH address), ip (the NIC address) and the credentials in clear.
func tackerHostsYAML(t *topology.Topology) string {
	var hosts, masters, workers strings.Builder
	for _, n := range t.Nodes {
		role := ""
		switch n.Role {
		case topology.RoleMaster:
			role = "master"
		case topology.RoleWorker:
			role = "worker"
		default:
			continue
		}
		name := role + n.Address[strings.LastIndex(n.Address, ".")+1:]
		fmt.Fprintf(&hosts, "    %s:\n      ansible_host: %s\n      ansible_password: secret\n      ansible_user: ubuntu\n      ip: %s\n", name, n.SSHAddress, n.Address)
		if role == "master" {
			fmt.Fprintf(&masters, "        %s: null\n", name)
		} else {
			fmt.Fprintf(&workers, "        %s: null\n", name)
		}
	}
	return "all:\n  children:\n    calico_rr:\n      hosts: {}\n    etcd:\n      hosts:\n" + masters.String() +
		"    k8s_cluster:\n      children:\n        kube_control_plane: null\n        kube_node: null\n" +
		"    kube_control_plane:\n      hosts:\n" + masters.String() + "    kube_node:\n      hosts:\n" + workers.String() +
		"  hosts:\n" + hosts.String()
}

// TestKubesprayNamesOfAnotherTool: a kubespray inventory already at
// transferring_inventory_path that names the cluster's nodes otherwise
// (Tacker's master<octet>/worker<octet>) is refused with exit code 6,
// naming each node both ways and how to go on; heatsible's own inventory
// (YAML or INI), one of other hosts, and none at all are not.
func TestKubesprayNamesOfAnotherTool(t *testing.T) {
	topo, err := topology.Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conn := inventory.KubesprayConn{User: "ubuntu", Password: true}
	var nodes []inventory.Node
	for _, n := range topo.Nodes {
		nodes = append(nodes, inventory.Node{Name: n.Name, Role: inventory.Role(n.Role), SSHAddress: n.SSHAddress, Address: n.Address})
	}
	own := map[string][]byte{}
	for _, f := range []inventory.Format{inventory.YAML, inventory.INI} {
		b, err := inventory.Kubespray(nodes, conn, conn, nil, f)
		if err != nil {
			t.Fatal(err)
		}
		own["hosts."+string(f)] = b
	}
	for name, data := range own {
		if err := checkKubesprayNames(topo, "/k/inventory/mycluster/"+name, data, "here"); err != nil {
			t.Errorf("heatsible's own %s refused: %v", name, err)
		}
	}
	if err := checkKubesprayNames(topo, "/k/inventory/mycluster/hosts.yaml", nil, "here"); err != nil {
		t.Errorf("no inventory: %v", err)
	}
	other := "all:\n  hosts:\n    node1: {ansible_host: 192.0.2.1, ip: 192.0.2.1}\n"
	if err := checkKubesprayNames(topo, "/k/inventory/mycluster/hosts.yaml", []byte(other), "here"); err != nil {
		t.Errorf("an inventory of other hosts: %v", err)
	}

	tacker := tackerHostsYAML(topo)
	err = checkKubesprayNames(topo, "/k/inventory/mycluster/hosts.yaml", []byte(tacker), "the Ansible host 10.10.0.5")
	var fe *fail.Error
	if !errors.As(err, &fe) || fe.Code != fail.Refused {
		t.Fatalf("Tacker's inventory: %v, want a refusal (exit 6)\n%s", err, tacker)
	}
	for _, n := range topo.Nodes {
		if n.Role != topology.RoleMaster && n.Role != topology.RoleWorker {
			continue
		}
		role := map[topology.Role]string{topology.RoleMaster: "master", topology.RoleWorker: "worker"}[n.Role]
		want := fmt.Sprintf("%s%s (%s) is heatsible's %s", role, n.Address[strings.LastIndex(n.Address, ".")+1:], n.Address, n.Name)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	for _, want := range []string{"the kubespray inventory /k/inventory/mycluster/hosts.yaml on the Ansible host 10.10.0.5 names the nodes otherwise",
		"Tacker's kubespray driver, which names them master<last octet> and worker<last octet>", "Nothing was changed",
		"--tags cinder_volume,nfs_server,nfs_client,pv_register", "heal-end --cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the refusal shows the inventory's password: %v", err)
	}
	if _, err := inventoryHosts("hosts.yaml", []byte("all: [")); err == nil {
		t.Error("a broken YAML inventory was read")
	}
}

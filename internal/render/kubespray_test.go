package render

import (
	"reflect"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/params"
)

// TestKubesprayVars: what each request field becomes for kubespray, and
// that only fields the request gives are set.
func TestKubesprayVars(t *testing.T) {
	nodes := "10.10.0.10,10.10.0.11,10.10.0.12,10.10.0.21,10.10.0.22,fd00::23"
	tests := []struct {
		name string
		edit func(c *params.Cluster)
		want map[string]any
	}{
		{"the request as it is", func(c *params.Cluster) {}, map[string]any{
			"kube_pods_subnet":                    "192.168.0.0/16", // pod_cidr 192.168.3.0/16
			"kube_service_addresses":              "10.199.187.0/24",
			"http_proxy":                          "http://user1:password1@proxy.example.com:3128",
			"https_proxy":                         "http://user2:password2@proxy.example.com:3128",
			"additional_no_proxy":                 "192.168.246.0/24,10.0.0.1,10.10.0.0/24," + nodes,
			"supplementary_addresses_in_ssl_keys": []string{"10.10.0.10"},
		}},
		{"no proxy, CIDRs or cluster CP", func(c *params.Cluster) {
			c.Proxy = nil
			c.MasterNode.PodCIDR, c.MasterNode.ClusterCIDR, c.MasterNode.ClusterCPName = "", "", ""
		}, map[string]any{}},
		{"only k8s_node_cidr: no proxy to bypass", func(c *params.Cluster) {
			c.Proxy = &params.Proxy{K8sNodeCIDR: "10.10.0.0/24"}
		}, map[string]any{"kube_pods_subnet": "192.168.0.0/16", "kube_service_addresses": "10.199.187.0/24", "supplementary_addresses_in_ssl_keys": []string{"10.10.0.10"}}},
		{"https_proxy only, cluster CP elsewhere, no_proxy repeating a node", func(c *params.Cluster) {
			c.Proxy = &params.Proxy{HTTPSProxy: "https://proxy.example.com:3129", NoProxy: "10.10.0.21,.example.com"}
			c.MasterNode.ClusterCPName = "externalLB_CP"
		}, map[string]any{
			"kube_pods_subnet": "192.168.0.0/16", "kube_service_addresses": "10.199.187.0/24",
			"https_proxy":                         "https://proxy.example.com:3129",
			"additional_no_proxy":                 "10.10.0.21,.example.com," + strings.Replace(nodes, "10.10.0.21,", "", 1) + ",10.10.0.50",
			"supplementary_addresses_in_ssl_keys": []string{"10.10.0.50"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, topo := scaleFixture(t, "kubespray_lb")
			tt.edit(&req.Cluster)
			got := kubesprayVars(req, topo)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

package render

import (
	"strings"
	"testing"
)

// TestExternalLBAPIPort: the port the VIM endpoint uses through the load
// balancer.
func TestExternalLBAPIPort(t *testing.T) {
	req, _ := scaleFixture(t, "kubespray_lb")
	if p, err := ExternalLBAPIPort(req, testPackage); p != 0 || err != nil {
		t.Errorf("heatsible's interface: %d, %v; want 0 (no API frontend)", p, err)
	}
	req.Cluster.ExternalLBParam.ScriptPath = "./" + tackerScript
	if p, err := ExternalLBAPIPort(req, testPackage); p != 8383 || err != nil {
		t.Errorf("Tacker's contract: %d, %v; want 8383", p, err)
	}
	req.Cluster.ExternalLBParam.ScriptPath = "Scripts/missing.sh"
	if _, err := ExternalLBAPIPort(req, testPackage); err == nil || !strings.Contains(err.Error(), "external_lb_param.script_path") {
		t.Errorf("missing script: %v", err)
	}
	req.Cluster.ExternalLBParam = nil
	if p, err := ExternalLBAPIPort(req, testPackage); p != 0 || err != nil {
		t.Errorf("no external_lb_param: %d, %v", p, err)
	}
}

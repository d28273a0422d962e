// Package lcm runs an operation (a VNF lifecycle hook and its target): it
// reads the cluster's topology, has package render render the operation
// once, and runs the run's titled steps (steps.go) with the Ansible runner,
// recording the run; MakePlan says what those steps would do.
package lcm

import (
	"context"
	"errors"
	"fmt"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/heat"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
)

// Source says where the topology comes from: a Heat stack or a file.
type Source struct {
	Stack        string
	TopologyFile string
}

// Check reports a flag problem: exactly one of the two must be set.
func (s Source) Check() error {
	switch {
	case s.Stack == "" && s.TopologyFile == "":
		return fail.With(fail.Invalid, errors.New("give the cluster: --stack ID|NAME (read from Heat) or --topology FILE (saved earlier)"))
	case s.Stack != "" && s.TopologyFile != "":
		return fail.With(fail.Invalid, errors.New("give either --stack or --topology, not both"))
	}
	return nil
}

// Contract maps the request's names onto the Heat contract.
func Contract(req *params.Request) heat.Contract {
	c := req.Cluster
	var hc heat.Contract
	if m := c.MasterNode; m != nil {
		hc.MasterAspect, hc.MasterSSHCP, hc.MasterNICCP = m.AspectID, m.SSHCPName, m.NICCPName
		if m.ClusterCPName != "" {
			hc.ExtraCPs = append(hc.ExtraCPs, m.ClusterCPName)
		}
	}
	if w := c.WorkerNode; w != nil {
		hc.WorkerAspect, hc.WorkerSSHCP, hc.WorkerNICCP = w.AspectID, w.SSHCPName, w.NICCPName
	}
	if s := c.StorageServer; s != nil {
		hc.StorageSSHCP, hc.StorageNICCP = s.SSHCPName, s.NICCPName
		for _, v := range s.CinderVolumeSetupParams {
			hc.Volumes = append(hc.Volumes, v.VolumeResourceID)
		}
	}
	for _, pv := range c.PVRegistrationParams {
		hc.ExtraCPs = append(hc.ExtraCPs, pv.NFSServerCP)
	}
	if lb := c.ExternalLBParam; lb != nil {
		hc.ExtraCPs = append(hc.ExtraCPs, lb.SSHCPName)
	}
	hc.ExtraCPs = dedup(hc.ExtraCPs)
	return hc
}

// LoadTopology reads the topology from Heat or from a file, and checks that
// every name the request refers to exists in it. Errors carry exit codes:
// Discovery for Heat, Invalid for the file or a mismatch.
func LoadTopology(ctx context.Context, req *params.Request, src Source) (*topology.Topology, error) {
	if err := src.Check(); err != nil {
		return nil, err
	}
	var t *topology.Topology
	if src.TopologyFile != "" {
		var err error
		if t, err = topology.Load(src.TopologyFile); err != nil {
			return nil, fail.With(fail.Invalid, err)
		}
	} else {
		client, err := heat.NewClient(ctx)
		if err != nil {
			return nil, fail.With(fail.Discovery, err)
		}
		if t, err = heat.Discover(ctx, client, src.Stack, Contract(req)); err != nil {
			return nil, fail.With(fail.Discovery, fmt.Errorf("reading stack %s: %w", src.Stack, err))
		}
	}
	if err := req.ValidateTopology(t); err != nil {
		return nil, fail.With(fail.Invalid, err)
	}
	addExternalLB(req, t)
	return t, nil
}

// ExternalLBName is the inventory name of the external load balancer when
// Heat gives only its CP (external_lb_param.ssh_cp_name).
const ExternalLBName = "external-lb"

// addExternalLB makes the external load balancer a node of t (group
// external_lb) when the request has one and t knows it only as a CP.
func addExternalLB(req *params.Request, t *topology.Topology) {
	lb := req.Cluster.ExternalLBParam
	if lb == nil || len(t.ByRole(topology.RoleExternalLB)) > 0 {
		return
	}
	addr, ok := t.CPs[lb.SSHCPName]
	if !ok {
		return
	}
	t.Nodes = append(t.Nodes, topology.Node{Name: ExternalLBName, Role: topology.RoleExternalLB, SSHAddress: addr, Address: addr})
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Package render turns an operation (the request, the cluster's topology,
// the operation and its target) into a plain value: the inventory, the
// roles' variables, kubespray's and the external load balancer's inputs,
// the endpoint of Tacker's Kubernetes VIM and the plan (see Files). It
// runs nothing and connects to nothing: internal/lcm renders once per run
// and hands the value to its steps.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
	"github.com/heatsible/heatsible/playbooks"
)

// Files are an operation rendered: the files of its run bundle before the
// runner stages them with the roles, the inputs of its kubespray phases and
// of the external load balancer's play, the VIM's endpoint, and its plan.
// A plain value: Render touches nothing outside memory.
type Files struct {
	Inventory []byte
	Playbook  []byte
	// GroupVars maps a group name to its group_vars/<group>.yml. None of them
	// holds a secret: passwords are referenced as "{{ heatsible_secrets.* }}"
	// and defined only in Secrets. Every string in them and in Secrets is
	// tagged !unsafe except those references (see inventory.Marshal).
	GroupVars map[string][]byte
	// Secrets is the 0600 vars file passed with -e @file.
	Secrets []byte
	// Manifests maps a file name under manifests/ to a prepared PV manifest.
	Manifests map[string][]byte
	// SecretValues lists every secret, for masking in logs and records.
	SecretValues []string
	// Extra are more files of the bundle (relative path -> content), e.g.
	// the external load balancer's script.
	Extra map[string][]byte
	// LBInterface is the interface of the external load balancer's script
	// ("" without external_lb_param); see addExternalLB.
	LBInterface params.LBInterface

	// Phases are the steps of the run, in order (see Phase); Playbook is
	// what PhasePlaybook runs.
	Phases []Phase
	// KubesprayInventory is written to KubesprayInventoryPath on the machine
	// that runs Ansible (PhaseWriteInventory), in KubesprayInventoryFormat;
	// KubesprayRoot is kubespray_root_path. KubesprayVars are the variables
	// every kubespray run gets, in the bundle's KubesprayVarsFile (its
	// content: KubesprayVarsYAML). See kubespray.go.
	KubesprayInventory       []byte
	KubesprayInventoryPath   string
	KubesprayInventoryFormat inventory.Format
	KubesprayRoot            string
	KubesprayVars            map[string]any
	KubesprayVarsYAML        []byte

	// VIM is where Tacker's Kubernetes VIM will point (nil: the operation
	// prepares none); see vim.go.
	VIM *VIMEndpoint
	// VIMSkip says why --limit or --tags keep the k8s_vim role from
	// running ("" when it runs, or when the operation prepares no VIM).
	VIMSkip string

	// Plan is what the operation runs, play by play and phase by phase,
	// as "heatsible plan" shows it (kubespray's phases as a run without
	// --check would run them); PlanErr, when set, says why the plays could
	// not be resolved (Plan then has the phases only).
	Plan    *Plan
	PlanErr error
}

// Precheck is what run and plan check before they read anything: the operation
// and its flags, and that a request naming package files has the package.
func Precheck(op Op, req *params.Request, pkgDir string) error {
	if err := op.Check(); err != nil {
		return fail.With(fail.Invalid, err)
	}
	if req.NeedsPackage() && pkgDir == "" {
		return fail.With(fail.Invalid, errors.New("--package DIR: the request names files of the VNF package (PV manifests, scripts); give the package directory"))
	}
	if op.buildsCluster() && len(op.Tags) == 0 {
		if prob := req.ScriptPathProblem(); prob != nil {
			return fail.With(fail.Invalid, params.Problems{*prob})
		}
	}
	return nil
}

// Input is what an operation is rendered from.
type Input struct {
	Request  *params.Request
	Topology *topology.Topology
	// PackageDir is the VNF package (PV manifests, the load balancer's
	// script), read through os.Root by package params.
	PackageDir string
	Op         Op
	// Limit is the run's --limit, as ansible-playbook gets it: it decides
	// which plays run (Plan, VIMSkip).
	Limit   string
	Version string
}

// Render builds the operation's files: inventory, playbook, group_vars,
// secrets, prepared manifests, kubespray's and the load balancer's inputs,
// the VIM's endpoint and the plan. It reads the package's files and
// touches nothing else outside memory.
func Render(in Input) (*Files, error) {
	f, err := render(in.Request, in.Topology, in.PackageDir, in.Op, in.Version)
	if err != nil {
		return nil, err
	}
	f.Plan, f.PlanErr = makePlan(f, in)
	if f.VIM != nil && f.PlanErr == nil {
		f.VIMSkip = vimSkip(f.Plan)
	}
	return f, nil
}

func render(req *params.Request, t *topology.Topology, pkgDir string, op Op, version string) (*Files, error) {
	inv, err := Inventory(req, t)
	if err != nil {
		return nil, err
	}
	// YAML, not INI: when Ansible loads an inventory directory (the bundle's,
	// which holds group_vars too) it skips files ending in .ini.
	var buf bytes.Buffer
	if err := inv.WriteYAML(&buf); err != nil {
		return nil, err
	}
	f := &Files{Inventory: buf.Bytes()}
	if err := buildVars(req, t, pkgDir, op.Waits, f); err != nil {
		return nil, err
	}
	if op.Target == TargetStorageServer && req.Cluster.StorageServer == nil {
		return nil, fmt.Errorf("%s --storage-server: the request has no storage_server", op.Name)
	}
	phases, tmpl, nodes, err := op.plan(req, t)
	if err != nil {
		return nil, err
	}
	f.Phases = phases
	if err := f.addKubespray(req, t); err != nil {
		return nil, err
	}
	if tmpl == "" {
		return f, nil
	}
	masters := t.ByRole(topology.RoleMaster)
	d := playbooks.Data{
		Cluster:        t.Cluster,
		Operation:      op.Name,
		Target:         op.Target,
		DeleteReleased: op.DeleteReleased,
		FirstMaster:    masters[0].Name,
		Storage:        req.Cluster.StorageServer != nil,
		PVs:            len(req.Cluster.PVRegistrationParams) > 0,
		NFSClient:      req.NFSClient(),
		PVState:        "present",
		Version:        version,
		Kubespray:      kubespray(req),
	}
	workers := len(nodes) > 0
	for _, n := range nodes {
		d.Nodes = append(d.Nodes, n.Name)
		if d.Addresses == nil {
			d.Addresses = map[string]string{}
		}
		d.Addresses[n.Name] = n.Address
		workers = workers && n.Role == topology.RoleWorker
	}
	// Without kubespray, workers join with kubeadm (heal-end, scale-end),
	// and a worker's heal-start first checks that heal-end will be able to
	// (see Op.plan; masters were refused there unless --tags leaves their
	// membership alone).
	if !d.Kubespray && workers {
		d.KubeadmJoin = tmpl == "node_add"
		if tmpl == "node_remove" && op.Name == OpHealStart {
			d.JoinCheck = true
			for _, w := range t.ByRole(topology.RoleWorker) {
				if !slices.Contains(d.Nodes, w.Name) {
					d.Peers = append(d.Peers, w.Name)
				}
			}
		}
	}
	if err := f.addExternalLB(req, t, pkgDir, tmpl, nodes, &d); err != nil {
		return nil, err
	}
	if op.preparesVIM() {
		e, err := vimEndpoint(req, t, pkgDir)
		if err != nil {
			return nil, err
		}
		f.VIM = &e
		d.VIM, d.VIMHost, d.VIMPort = true, e.Host, e.Port
	}
	pb, err := playbooks.Render(tmpl, d)
	if err != nil {
		return nil, err
	}
	if !hasPlays(pb) {
		// e.g. scale-end with kubespray and without storage_server or an
		// external load balancer: kubespray's phases only
		// (ansible-playbook refuses an empty playbook).
		f.Phases = slices.DeleteFunc(f.Phases, func(p Phase) bool { return p.Kind == PhasePlaybook })
		return f, nil
	}
	f.Playbook = pb
	return f, nil
}

// hasPlays reports whether a rendered playbook has at least one play.
func hasPlays(pb []byte) bool {
	var plays []any
	// Not YAML (never, rendered from heatsible's templates): left for
	// ansible-playbook to say.
	return yaml.Unmarshal(pb, &plays) != nil || len(plays) > 0
}

// BundleFiles are the files a run bundle carries besides its inventory,
// playbook, roles and secrets.
func (f *Files) BundleFiles() map[string][]byte {
	out := map[string][]byte{}
	for name, b := range f.Manifests {
		out[ManifestDir+"/"+name] = b
	}
	for name, b := range f.Extra {
		out[name] = b
	}
	return out
}

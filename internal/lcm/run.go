package lcm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/playbooks"
	"github.com/heatsible/heatsible/roles"
)

// RunOptions is one "heatsible run" invocation.
type RunOptions struct {
	Operation string
	// Target and DeleteReleased complete the operation (see Op).
	Target         string
	DeleteReleased bool
	Nodes          []string
	Request        *params.Request
	PackageDir     string
	Source         Source

	// Local runs ansible-playbook on this machine; otherwise it runs on the
	// Ansible host: AnsibleHost if set, else the request's
	// ansible.ip_address.
	Local       bool
	AnsibleHost string
	// SSH to the Ansible host: the request's ansible.username/password, plus
	// these.
	SSHKeyFiles []string
	UseAgent    bool
	// KnownHosts verifies the Ansible host's key and, inside the bundle,
	// every node's key (~/.ssh/known_hosts if empty).
	KnownHosts            string
	InsecureIgnoreHostKey bool

	// BreakLock takes over the lock left by a run that was killed (see
	// Acquire); it never takes a lock from a live run.
	BreakLock bool

	Check     bool
	Tags      []string
	Limit     string
	Forks     int
	Verbosity int

	// OnEvent receives every Ansible event live.
	OnEvent func(ansible.Event)
	// Stderr receives ansible-playbook's stderr, masked.
	Stderr io.Writer
	Logger *slog.Logger
	// Version goes into rendered playbooks.
	Version string
}

// Outcome is what a run did.
type Outcome struct {
	Operation string
	Cluster   string
	Where     string // "local" or "ansible host ADDR"
	Check     bool
	Topology  *topology.Topology
	Result    *ansible.Result
	Started   time.Time
	Duration  time.Duration
	// Record is the run record's directory (see record.go).
	Record string
}

// Run runs an operation: topology, lock, bundle, ansible-playbook, recap.
// Errors carry exit codes (package fail) and end with "(log: PATH)": every
// run leaves a record under StateDir()/runs (see record.go).
func Run(ctx context.Context, o RunOptions) (*Outcome, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	rec := newRecord(o, log, time.Now())
	o.OnEvent = rec.onEvent(o.OnEvent)
	return rec.finish(runOp(ctx, o, rec))
}

func runOp(ctx context.Context, o RunOptions, rec *record) (*Outcome, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	start := rec.started
	op := Op{Name: o.Operation, Target: o.Target, DeleteReleased: o.DeleteReleased, Nodes: o.Nodes, Tags: o.Tags}
	req := o.Request
	t, files, err := load(ctx, op, req, o.PackageDir, o.Source, o.Version)
	if t != nil {
		rec.open(t.Cluster)
	}
	if err != nil {
		return nil, err
	}
	rec.files(files)
	// Everything that can be checked locally is checked before any host is
	// touched: the request and topology (above), known_hosts, where Ansible
	// runs.
	knownHosts, khPath, err := readKnownHosts(o.KnownHosts)
	if err != nil {
		return nil, err
	}
	var sshCfg *remote.Config
	where := "local"
	if !o.Local {
		cfg, err := ansibleHost(req, o, khPath)
		if err != nil {
			return nil, err
		}
		sshCfg = cfg
		where = "ansible host " + cfg.Address
	}
	lock, err := Acquire(t.Cluster, o.Operation, o.BreakLock)
	if err != nil {
		return nil, err
	}
	defer lock.Release()

	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster:       t.Cluster,
		Operation:     o.Operation,
		Inventory:     files.Inventory,
		InventoryName: "hosts.yml",
		Playbook:      files.Playbook,
		Roles:         roles.FS,
		GroupVars:     files.GroupVars,
		Secrets:       files.Secrets,
		SecretValues:  files.SecretValues,
		VarsFiles:     files.VarsFiles(),
		Files:         bundleFiles(files),
		KnownHosts:    knownHosts,
		Forks:         o.Forks,
	})
	if err != nil {
		return nil, fail.With(fail.Internal, fmt.Errorf("staging the run bundle: %w", err))
	}
	defer b.Close()

	var runner ansible.Runner = ansible.LocalRunner{}
	var fileOps ansible.Files = ansible.LocalRunner{}
	var remoteRunner *ansible.RemoteRunner
	if sshCfg != nil {
		sshCfg.Logger = log
		client, err := remote.Dial(ctx, *sshCfg)
		if err != nil {
			return nil, fail.With(sshExit(err), fmt.Errorf("connecting to the Ansible host: %w", err))
		}
		defer client.Close()
		remoteRunner = &ansible.RemoteRunner{Client: client, Logger: log}
		runner, fileOps = remoteRunner, remoteRunner
	}
	out := &Outcome{Operation: o.Operation, Cluster: t.Cluster, Where: where, Check: o.Check, Topology: t, Started: start}
	ph := &phaseRunner{o: o, files: files, bundle: b, runner: runner, fileOps: fileOps, remote: remoteRunner, cluster: t.Cluster, log: log}
	if err := ph.preflight(ctx); err != nil {
		return nil, err
	}
	err = ph.run(ctx)
	out.Result, out.Duration = ph.result, time.Since(start)
	if err != nil {
		if ph.result != nil && refused(ph.result) {
			return out, fail.With(fail.Refused, err)
		}
		return out, fail.With(runExit(err), err)
	}
	if ph.emptyPlaybook {
		// Ansible warns and exits 0 when no host matches; for heatsible
		// that is a run that did nothing, never a success.
		return out, fail.With(fail.Internal, fmt.Errorf("ansible-playbook ran on no host at all (the inventory did not load, or matched nothing); see its warnings above"))
	}
	if op.Name == OpTerminateEnd && !o.Check {
		lock.Remove()
	}
	return out, nil
}

// load is what run and plan share: the operation checked, the topology read
// (and checked against the request), the operation's files rendered. The
// topology is returned even when rendering fails, so a run record can name
// the cluster.
func load(ctx context.Context, op Op, req *params.Request, pkgDir string, src Source, version string) (*topology.Topology, *Files, error) {
	if err := op.Check(); err != nil {
		return nil, nil, fail.With(fail.Invalid, err)
	}
	if req.NeedsPackage() && pkgDir == "" {
		return nil, nil, fail.With(fail.Invalid, errors.New("--package DIR: the request names files of the VNF package (PV manifests, scripts); give the package directory"))
	}
	t, err := LoadTopology(ctx, req, src)
	if err != nil {
		return nil, nil, err
	}
	files, err := PrepareOp(req, t, pkgDir, op, version)
	if err != nil {
		if errors.As(err, new(*fail.Error)) {
			return t, nil, err // a refusal at plan time keeps its code (Refused)
		}
		return t, nil, fail.With(fail.Invalid, err)
	}
	return t, files, nil
}

// Prepare builds the files of operation op (no target); see PrepareOp.
func Prepare(req *params.Request, t *topology.Topology, pkgDir, op, version string) (*Files, error) {
	return PrepareOp(req, t, pkgDir, Op{Name: op}, version)
}

// PrepareOp builds the operation's files: inventory, playbook, group_vars,
// secrets and prepared manifests. It touches nothing outside memory.
func PrepareOp(req *params.Request, t *topology.Topology, pkgDir string, op Op, version string) (*Files, error) {
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
	if err := buildVars(req, t, pkgDir, f); err != nil {
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
	if lb := req.Cluster.ExternalLBParam; lb != nil {
		script, err := params.ReadPackageFile(pkgDir, lb.ScriptPath, params.MaxScriptSize)
		if err != nil {
			return nil, fmt.Errorf("%s.external_lb_param.script_path: %w", params.Prefix, err)
		}
		f.Extra = map[string][]byte{ExternalLBScript: script}
		d.LB = true
		d.LBInstall = tmpl == OpInstantiateEnd
		// The load balancer routes to the workers: all of them at
		// instantiate, the leaving or new ones otherwise.
		routeNodes := t.ByRole(topology.RoleWorker)
		if tmpl != OpInstantiateEnd {
			routeNodes = nodes
		}
		for _, n := range routeNodes {
			if n.Role != topology.RoleWorker {
				continue
			}
			if _, err := netip.ParseAddr(n.Address); err != nil {
				return nil, fmt.Errorf("external load balancer: worker %s has the address %q; the load balancer's script takes IP addresses (give the topology IPs)", n.Name, n.Address)
			}
			d.LBRoutes = append(d.LBRoutes, playbooks.Route{Name: n.Name, Address: n.Address})
		}
	}
	pb, err := playbooks.Render(tmpl, d)
	if err != nil {
		return nil, err
	}
	f.Playbook = pb
	return f, nil
}

// bundleFiles are the files a run bundle carries besides its inventory,
// playbook, roles and secrets.
func bundleFiles(f *Files) map[string][]byte {
	out := map[string][]byte{}
	for name, b := range f.Manifests {
		out[ManifestDir+"/"+name] = b
	}
	for name, b := range f.Extra {
		out[name] = b
	}
	return out
}

// readKnownHosts reads the known_hosts file every SSH connection is verified
// against. A missing file is an input error that says how to make one.
func readKnownHosts(p string) ([]byte, string, error) {
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, "", fail.With(fail.Invalid, errors.New("--known-hosts FILE: no home directory to find ~/.ssh/known_hosts in; give the file"))
		}
		p = filepath.Join(home, ".ssh", "known_hosts")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fail.With(fail.Invalid, fmt.Errorf("--known-hosts %s: %v; heatsible verifies every host key: collect the nodes' keys (ssh-keyscan, then check the fingerprints against the VMs' consoles) into this file", p, err))
	}
	return b, p, nil
}

// ansibleHost works out how to reach the Ansible host.
func ansibleHost(req *params.Request, o RunOptions, khPath string) (*remote.Config, error) {
	a := req.Cluster.Ansible
	addr := o.AnsibleHost
	if addr == "" && a != nil {
		addr = a.IPAddress
	}
	if addr == "" {
		return nil, fail.With(fail.Invalid, errors.New("no Ansible host: give additionalParams.k8s_cluster_installation_param.ansible.ip_address in the request, --ansible-host ADDR, or --local to run ansible-playbook on this machine"))
	}
	cfg := &remote.Config{Address: addr, KeyFiles: o.SSHKeyFiles, UseAgent: o.UseAgent, KnownHostsFile: khPath, InsecureIgnoreHostKey: o.InsecureIgnoreHostKey}
	if a != nil {
		cfg.User, cfg.Password = a.Username, a.Password
	}
	if cfg.User == "" {
		return nil, fail.With(fail.Invalid, errors.New("no user for the Ansible host: give ansible.username in the request"))
	}
	return cfg, nil
}

// refused reports whether a role refused for safety (its task is named
// "Refuse ...", e.g. pv_register with a Bound PV): exit code Refused, not
// HostFailed, so a hook can tell "fix the cluster first" from "broken".
func refused(res *ansible.Result) bool {
	for _, e := range res.Events {
		if e.Kind != ansible.KindResult || e.Status != ansible.StatusFailed {
			continue
		}
		name := e.Task // "pv_register : Refuse while ..."
		if i := strings.LastIndex(name, " : "); i >= 0 {
			name = name[i+3:]
		}
		if strings.HasPrefix(name, "Refuse") {
			return true
		}
	}
	return false
}

func sshExit(err error) int {
	var hk *remote.HostKeyError
	if errors.As(err, &hk) || errors.Is(err, remote.ErrUnreachable) {
		return fail.Unreachable
	}
	if errors.Is(err, context.Canceled) {
		return fail.Interrupted
	}
	return fail.Unreachable
}

func runExit(err error) int {
	switch {
	case errors.Is(err, context.Canceled):
		return fail.Interrupted
	case errors.Is(err, ansible.ErrUnreachable), errors.Is(err, remote.ErrUnreachable):
		return fail.Unreachable
	case errors.Is(err, ansible.ErrHostFailed):
		return fail.HostFailed
	}
	var hk *remote.HostKeyError
	if errors.As(err, &hk) {
		return fail.Unreachable
	}
	// ErrPlaybook (ansible-playbook failed with no host to blame: a syntax
	// error, a bad option) is heatsible's bug: Internal.
	return fail.Internal
}

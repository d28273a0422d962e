package lcm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/heatsible/heatsible/collection"
	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/hostpattern"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/playbooks"
	"github.com/heatsible/heatsible/roles"
	"gopkg.in/yaml.v3"
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
	// state.Acquire); it never takes a lock from a live run.
	BreakLock bool

	// Ansible says which ansible-playbook runs heatsible's roles and which
	// runs kubespray (flags over the request; see ansible.go).
	Ansible AnsibleSettings

	Check bool
	Tags  []string
	// Waits are the bounds set with --wait (ParseWaits).
	Waits     map[string]int
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

	// newRunner, for tests of a run with Local set, replaces
	// ansible.LocalRunner as the runner and the file operations.
	newRunner func() (ansible.Runner, ansible.FileOps)
}

// RunOutcome is what a run did.
type RunOutcome struct {
	Operation string
	Cluster   string
	Where     string // "local" or "ansible host ADDR"
	Check     bool
	Topology  *topology.Topology
	Result    *ansible.Result
	Started   time.Time
	Duration  time.Duration
	// Record is the run record's directory (see package state).
	Record string
	// VIM is Tacker's Kubernetes VIM the run prepared (nil: none; see
	// vim.go). Its BearerToken is a secret: every masker of the run knows
	// it, and only -o json's "vim" and the --vim-info file may show it.
	VIM *VIM
}

// Run runs an operation: topology, lock, bundle, ansible-playbook, recap.
// Errors carry exit codes (package fail) and end with "(log: PATH)": every
// run leaves a record under state.Dir()/runs (see package state).
//
// Once ctx is cancelled (a signal: see package interrupt) the outcome is
// exit code 130, whatever error the cancellation caused on its way (an SSH
// dial error, a Heat error, a failed task) and also when every step
// completed: that is decided here, in one place, after the run's cleanup.
func Run(ctx context.Context, o RunOptions) (*RunOutcome, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	rec := newRecord(o, log, time.Now())
	o.OnEvent = recordEvents(rec, o.OnEvent)
	defer interrupt.Track(ctx, interrupt.Leftover{Now: rec.Abandon})()
	if err := ctx.Err(); err != nil { // interrupted before it started: start nothing
		return finishRecord(rec, nil, interrupt.Err(ctx, err))
	}
	out, err := runOpSafe(ctx, o, rec)
	return finishRecord(rec, out, interrupt.Err(ctx, err))
}

// runOpSafe is runOp with a panic (a bug) turned into an Internal error
// once runOp's deferred cleanups (bundle, staging directory, lock) have
// run, so that the record and the exit code say what happened.
func runOpSafe(ctx context.Context, o RunOptions, rec *state.Record) (out *RunOutcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fail.With(fail.Internal, fmt.Errorf("internal error (a bug: please report it with this message): panic: %v\n%s", p, debug.Stack()))
		}
	}()
	return runOp(ctx, o, rec)
}

func runOp(ctx context.Context, o RunOptions, rec *state.Record) (_ *RunOutcome, runErr error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	start := rec.Started()
	op := Op{Name: o.Operation, Target: o.Target, DeleteReleased: o.DeleteReleased, Nodes: o.Nodes, Tags: o.Tags, Waits: o.Waits}
	req := o.Request
	// A limit file (--limit @FILE) is read here, as plan reads it, and its
	// patterns handed on: the Ansible host has no such file, and both must
	// mean the same hosts.
	limit, err := hostpattern.LimitArg(o.Limit)
	if err != nil {
		return nil, fail.With(fail.Invalid, err)
	}
	o.Limit = limit
	// The connection to the Ansible host is opened while Heat is read: both
	// mostly wait (about 0.1 s and 0.6 s on the test bed). Only then: with
	// --topology there is nothing to overlap, and it is opened after the
	// operation's files are rendered, as before; nor when the operation,
	// its flags or the package are wrong (precheck). So a run that fails
	// reading Heat (exit 5) or is refused at plan time (2, 6) may have
	// logged in there (docs/cli.md says so); logging in runs nothing. The
	// errors keep their order (the request and topology, known_hosts, where
	// Ansible runs, then the connection), and nothing is run on any host
	// before all of them are checked.
	knownHosts, khPath, khErr := readKnownHosts(o.KnownHosts)
	var sshCfg *remote.Config
	var cfgErr error
	var dial chan dialResult
	if khErr == nil && !o.Local {
		sshCfg, cfgErr = ansibleHost(req, o, khPath)
		if cfgErr == nil {
			sshCfg.Logger = log
		}
		if cfgErr == nil && o.Source.Stack != "" && precheck(op, req, o.PackageDir) == nil {
			dial = make(chan dialResult, 1)
			dctx, cancelDial := context.WithCancel(ctx)
			go func(cfg remote.Config) {
				began := time.Now()
				c, err := remote.Dial(dctx, cfg)
				dial <- dialResult{c, err, since(began)}
			}(*sshCfg)
			defer func() { // a run that ends before it uses the connection
				if dial != nil {
					cancelDial()
					if d := <-dial; d.client != nil {
						d.client.Close()
					}
				}
				cancelDial()
			}()
		}
	}
	t, files, err := load(ctx, op, req, o.PackageDir, o.Source, o.Version)
	log.Debug("read the cluster and rendered the operation's files", "took", since(start))
	if t != nil {
		rec.Open(t.Cluster)
	}
	if err != nil {
		return nil, err
	}
	recordFiles(rec, files)
	sweepBundles(t.Cluster, o.Stderr, log)
	if khErr != nil {
		return nil, khErr
	}
	if cfgErr != nil {
		return nil, cfgErr
	}
	if err := o.Ansible.check(); err != nil {
		return nil, err
	}
	wants := ansibleWants(req, o.Ansible, files, skipKubespray(o.Check, o.Tags, o.Limit))
	peek := kubesprayPeek(files, skipKubespray(o.Check, o.Tags, o.Limit))
	where := "local"
	if sshCfg != nil {
		where = "ansible host " + sshCfg.Address
	}
	lock, err := state.Acquire(t.Cluster, o.Operation, o.BreakLock)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	defer trackLock(ctx, lock, t.Cluster)()

	staging := time.Now()
	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster:       t.Cluster,
		Operation:     o.Operation,
		Inventory:     files.Inventory,
		InventoryName: "hosts.yml",
		Playbook:      files.Playbook,
		Roles:         roles.FS,
		Collections:   map[string]fs.FS{collection.FQCN: collection.FS},
		GroupVars:     files.GroupVars,
		Secrets:       files.Secrets,
		SecretValues:  files.SecretValues,
		VarsFiles:     files.VarsFiles(),
		Files:         bundleFiles(files),
		KnownHosts:    knownHosts,
		KnownHostsFor: knownHostsFor(t),
		Forks:         o.Forks,
	})
	if err != nil {
		return nil, fail.With(fail.Internal, fmt.Errorf("staging the run bundle: %w", err))
	}
	defer closeBundle(ctx, b, t.Cluster)()
	log.Debug("staged the run bundle", "dir", b.Dir, "took", since(staging))

	var runner ansible.Runner = ansible.LocalRunner{}
	var fileOps ansible.FileOps = ansible.LocalRunner{}
	if o.newRunner != nil {
		runner, fileOps = o.newRunner()
	}
	var remoteRunner *ansible.RemoteRunner
	var remoteLock *ansible.RemoteLock
	removeLock := false
	if sshCfg != nil {
		var d dialResult
		if dial != nil { // opened while Heat was read
			d = <-dial
			dial = nil
		} else {
			began := time.Now()
			c, err := remote.Dial(ctx, *sshCfg)
			d = dialResult{c, err, since(began)}
		}
		if d.err != nil {
			return nil, fmt.Errorf("connecting to the Ansible host: %w", d.err)
		}
		client := d.client
		defer client.Close()
		log.Debug("connected to the Ansible host", "took", d.took)
		remoteRunner = &ansible.RemoteRunner{Client: client, Logger: log, Ansibles: wants, Peek: peek}
		runner, fileOps = remoteRunner, remoteRunner
		// The cluster's lock on the Ansible host, for the whole remote
		// run: the lock above cannot see another machine.
		h := ansible.Holder(lock.Holder())
		h.Record = rec.Dir()
		locked := time.Now()
		remoteLock, err = remoteRunner.Lock(ctx, t.Cluster, h, o.BreakLock)
		if err != nil {
			return nil, err
		}
		log.Debug("took the cluster's lock on the Ansible host", "took", since(locked))
		defer func() {
			if err := releaseRemote(remoteLock, removeLock, *sshCfg, t.Cluster, o, log); err != nil {
				if runErr != nil { // the run's exit code, not the release's
					runErr = fail.With(fail.Code(runErr), fmt.Errorf("%w; %w", runErr, err))
				} else {
					log.Warn(err.Error())
				}
			}
		}()
		defer trackRemoteLock(ctx, remoteLock, sshCfg.Address, t.Cluster)()
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		go watchRemoteLock(ctx, stop, remoteLock, client, log)
	}
	// Records are pruned only now that this run holds the cluster's locks.
	rec.Prune()
	out := &RunOutcome{Operation: o.Operation, Cluster: t.Cluster, Where: where, Check: o.Check, Topology: t, Started: start}
	ph := &phaseRunner{o: o, files: files, bundle: b, runner: runner, fileOps: fileOps, remote: remoteRunner, cluster: t.Cluster, log: log}
	// The ansible-playbooks the phases run, found where they run (the lock
	// session's first answer on the Ansible host) and checked before
	// anything changes.
	if remoteLock != nil {
		if err := ph.checkAnsibles(wants, remoteLock.Ansibles(), "the Ansible host "+sshCfg.Address); err != nil {
			return nil, err
		}
		for _, p := range peek {
			if err := checkKubesprayNames(t, p, remoteLock.Peeked()[p], "the Ansible host "+sshCfg.Address); err != nil {
				return nil, err
			}
		}
	} else if pr, ok := runner.(prober); ok && len(wants) > 0 {
		found, err := pr.Probe(ctx, wants)
		if err != nil {
			return nil, fail.With(fail.Internal, err)
		}
		if err := ph.checkAnsibles(wants, found, "this machine"); err != nil {
			return nil, err
		}
		for _, p := range peek {
			data, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fail.With(fail.Refused, fmt.Errorf("reading the kubespray inventory already at %s: %w; heatsible would replace it: check it, then remove or fix it", p, err))
			}
			if err := checkKubesprayNames(t, p, data, "this machine"); err != nil {
				return nil, err
			}
		}
	}
	if err := ph.preflight(ctx); err != nil {
		return nil, err
	}
	err = ph.run(ctx)
	out.Result, out.Duration = ph.result, time.Since(start)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ansible.ErrLockLost) && !errors.Is(err, remote.ErrUnreachable) {
		return out, fail.With(fail.Unreachable, fmt.Errorf("%w; the run was stopped, so that no other run overlaps it: the nodes may be half-configured, re-run the operation (it is idempotent)", cause))
	}
	if err != nil {
		return out, err
	}
	if ph.emptyPlaybook {
		// Ansible warns and exits 0 when no host matches; for heatsible
		// that is a run that did nothing, never a success.
		return out, fail.With(fail.Internal, fmt.Errorf("ansible-playbook ran on no host at all (the inventory did not load, or matched nothing); see its warnings above"))
	}
	if files.VIM != nil {
		if out.VIM, err = ph.finishVIM(t, rec); err != nil {
			return out, err
		}
	}
	if op.Name == OpTerminateEnd && !o.Check {
		lock.Remove()
		removeLock = true
	}
	return out, nil
}

// dialResult is the connection to the Ansible host, opened beside Heat's
// discovery.
type dialResult struct {
	client *remote.Client
	err    error
	took   time.Duration
}

// since is the time from t to now, in milliseconds, for --debug's timings.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// finishVIM builds Tacker's Kubernetes VIM from what the k8s_vim role left,
// teaches the record's masker its token, and says what was prepared (or
// why nothing was: check mode, --tags or --limit leaving the role out).
func (p *phaseRunner) finishVIM(t *topology.Topology, rec *state.Record) (*VIM, error) {
	e := *p.files.VIM
	master := t.ByRole(topology.RoleMaster)[0].Name
	if p.o.Check {
		p.say("check mode: Tacker's Kubernetes VIM is not prepared; the run creates (or keeps) ServiceAccount %s/%s on %s and reports %s",
			VIMNamespace, VIMServiceAccount, master, e)
		return nil, nil
	}
	if p.vimInfo == nil {
		if why := vimLeftOut(p.files, p.o.Limit, p.o.Tags); why != "" {
			p.say("Tacker's Kubernetes VIM: not prepared (%s)", why)
			return nil, nil
		}
		return nil, fail.With(fail.Internal, fmt.Errorf("the %s role ran on %s but left no VIM info (%s): no VIM was prepared", VIMRole, master, VIMInfoFile))
	}
	vo, err := buildVIM(e, p.vimInfo, p.o.Request, t.Cluster, master, time.Now())
	p.vimInfo = nil
	if err != nil {
		return nil, fail.With(fail.HostFailed, err)
	}
	rec.Learn(vo.VIM.BearerToken)
	for _, w := range vo.Warnings {
		p.say("warning: %s", w)
	}
	p.say("%s", vo.Summary)
	return vo.VIM, nil
}

// vimLeftOut says why --limit or --tags keep the k8s_vim role from running,
// or "" when it runs.
func vimLeftOut(f *OpFiles, limit string, tags []string) string {
	plan, err := PlanFiles(f.Playbook, f.Inventory, limit, tags)
	if err != nil {
		return ""
	}
	for _, st := range plan.Steps {
		for _, r := range st.Roles {
			if r.Name != VIMRole {
				continue
			}
			switch {
			case !r.Selected:
				return "--tags/--role leave " + VIMRole + " out"
			case !st.Runs:
				return st.Skip
			}
			return ""
		}
	}
	return "the playbook has no " + VIMRole + " play"
}

// load is what run and plan share: the operation checked, the topology read
// (and checked against the request), the operation's files rendered. The
// topology is returned even when rendering fails, so a run record can name
// the cluster.
func load(ctx context.Context, op Op, req *params.Request, pkgDir string, src Source, version string) (*topology.Topology, *OpFiles, error) {
	if err := precheck(op, req, pkgDir); err != nil {
		return nil, nil, err
	}
	t, err := LoadTopology(ctx, req, src)
	if err != nil {
		return nil, nil, err
	}
	files, err := RenderOp(req, t, pkgDir, op, version)
	if err != nil {
		if errors.As(err, new(*fail.Error)) {
			return t, nil, err // a refusal at plan time keeps its code (Refused)
		}
		return t, nil, fail.With(fail.Invalid, err)
	}
	return t, files, nil
}

// precheck is what load checks before it reads anything: the operation
// and its flags, and that a request naming package files has the package.
func precheck(op Op, req *params.Request, pkgDir string) error {
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

// RenderOp builds the operation's files: inventory, playbook, group_vars,
// secrets and prepared manifests. It touches nothing outside memory.
func RenderOp(req *params.Request, t *topology.Topology, pkgDir string, op Op, version string) (*OpFiles, error) {
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
	f := &OpFiles{Inventory: buf.Bytes()}
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

// bundleFiles are the files a run bundle carries besides its inventory,
// playbook, roles and secrets.
func bundleFiles(f *OpFiles) map[string][]byte {
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

// watchRemoteLock stops the run (stop, with ErrLockLost) when the session
// holding the cluster's lock on the Ansible host ends while the run goes
// on over a live connection: someone killed it there, and another run
// could now start. A dead connection is left to the runner, which says so.
func watchRemoteLock(ctx context.Context, stop context.CancelCauseFunc, l *ansible.RemoteLock, c *remote.Client, log *slog.Logger) {
	select {
	case <-ctx.Done():
		return
	case <-l.Lost():
	}
	if ctx.Err() != nil {
		return
	}
	alive := make(chan bool, 1)
	go func() {
		_, _, err := c.SSH().SendRequest("keepalive@openssh.com", true, nil)
		alive <- err == nil
	}()
	select {
	case ok := <-alive:
		if !ok {
			return
		}
	case <-time.After(5 * time.Second):
		return
	case <-ctx.Done():
		return
	}
	log.Error("the session holding the cluster's lock on the Ansible host ended; stopping the run", "host", c.Address())
	stop(fmt.Errorf("%w %s: the session holding it ended while the run went on", ansible.ErrLockLost, c.Address()))
}

// releaseRemote lets the cluster's lock on the Ansible host go (remove: and
// deletes its file, at terminate-end). When the lock's session was lost
// with the connection, this run still ended and says so, so its record
// must not stay as a run that did not finish: it is cleared over a new
// connection, once the Ansible host has let the old session go. The error
// says what is left when that fails.
func releaseRemote(l *ansible.RemoteLock, remove bool, cfg remote.Config, cluster string, o RunOptions, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if remove {
		err = l.Remove(ctx)
	} else {
		err = l.Release(ctx)
	}
	if err == nil || !errors.Is(err, ansible.ErrLockLost) {
		return err
	}
	if o.Stderr != nil {
		fmt.Fprintf(o.Stderr, "heatsible: the connection that held cluster %s's lock on the Ansible host %s was lost; clearing this run's lock record over a new one\n", cluster, cfg.Address)
	}
	left := fmt.Errorf("the cluster's lock on the Ansible host %s (%s) still names this run, so the next run there is refused until --break-lock", cfg.Address, l.Path)
	cfg.Timeout = 20 * time.Second
	c, derr := remote.Dial(ctx, cfg)
	if derr != nil {
		return fmt.Errorf("%w (reconnecting to clear it: %w)", left, derr)
	}
	defer c.Close()
	cleared, cerr := (&ansible.RemoteRunner{Client: c, Logger: log}).ClearRecord(ctx, cluster, l.Holder())
	switch {
	case cerr != nil:
		return fmt.Errorf("%w (%w)", left, cerr)
	case !cleared:
		log.Debug("the cluster's lock record on the Ansible host no longer names this run, or another run holds the lock", "host", cfg.Address)
	}
	return nil
}

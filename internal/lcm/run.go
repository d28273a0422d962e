package lcm

import (
	"context"
	"errors"
	"fmt"
	"github.com/heatsible/heatsible/internal/render"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/hostpattern"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/internal/topology"
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

func runOp(ctx context.Context, o RunOptions, rec *state.Record) (*RunOutcome, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	start := rec.Started()
	op := render.Op{Name: o.Operation, Target: o.Target, DeleteReleased: o.DeleteReleased, Nodes: o.Nodes, Tags: o.Tags, Waits: o.Waits}
	req := o.Request
	// A limit file (--limit @FILE) is read here, as plan reads it, and its
	// patterns handed on: the Ansible host has no such file, and both must
	// mean the same hosts.
	limit, err := hostpattern.LimitArg(o.Limit)
	if err != nil {
		return nil, fail.With(fail.Invalid, err)
	}
	o.Limit = limit
	r := &run{o: o, op: op, rec: rec, log: log, start: start}
	// The operation and its flags, checked once, before anything is read.
	pre := render.Precheck(op, req, o.PackageDir)
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
	var cfgErr error
	if khErr == nil && !o.Local {
		r.sshCfg, cfgErr = ansibleHost(req, o, khPath)
		if cfgErr == nil {
			r.sshCfg.Logger = log
		}
		if cfgErr == nil && o.Source.Stack != "" && pre == nil {
			r.dial = make(chan dialResult, 1)
			dctx, cancelDial := context.WithCancel(ctx)
			go func(cfg remote.Config) {
				began := time.Now()
				c, err := remote.Dial(dctx, cfg)
				r.dial <- dialResult{c, err, since(began)}
			}(*r.sshCfg)
			defer func() { // a run that ends before it uses the connection
				if r.dial != nil {
					cancelDial()
					if d := <-r.dial; d.client != nil {
						d.client.Close()
					}
				}
				cancelDial()
			}()
		}
	}
	if pre != nil {
		log.Debug("read the cluster and rendered the operation's files", "took", since(start))
		return nil, pre
	}
	// The operation rendered, once: every step below reads this value.
	t, files, err := load(ctx, op, req, o.PackageDir, o.Source, o.Limit, o.Version)
	log.Debug("read the cluster and rendered the operation's files", "took", since(start))
	if t != nil {
		rec.Open(t.Cluster)
	}
	if err != nil {
		return nil, err
	}
	r.t, r.files, r.knownHosts = t, files, knownHosts
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
	skip := render.SkipKubespray(o.Check, o.Tags, o.Limit)
	r.wants = ansibleWants(req, o.Ansible, files, skip)
	r.peek = kubesprayPeek(files, skip)
	r.where = "local"
	if r.sshCfg != nil {
		r.where = "ansible host " + r.sshCfg.Address
	}
	r.runner, r.fileOps = ansible.LocalRunner{}, ansible.LocalRunner{}
	if o.newRunner != nil {
		r.runner, r.fileOps = o.newRunner()
	}
	// The steps' context: the cluster's lock on the Ansible host stops the
	// run with its cause when it is lost (watchRemoteLock).
	ctx, r.stop = context.WithCancelCause(ctx)
	defer r.stop(nil)
	err = runSteps(ctx, r.steps())
	return r.out, err
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

// load is what run and plan share once the operation is checked
// (render.Precheck): the topology read (and checked against the request),
// the operation rendered. The topology is returned even when rendering
// fails, so a run record can name the cluster.
func load(ctx context.Context, op render.Op, req *params.Request, pkgDir string, src Source, limit, version string) (*topology.Topology, *render.Files, error) {
	t, err := LoadTopology(ctx, req, src)
	if err != nil {
		return nil, nil, err
	}
	files, err := render.Render(render.Input{Request: req, Topology: t, PackageDir: pkgDir, Op: op, Limit: limit, Version: version})
	if err != nil {
		if errors.As(err, new(*fail.Error)) {
			return t, nil, err // a refusal at plan time keeps its code (Refused)
		}
		return t, nil, fail.With(fail.Invalid, err)
	}
	return t, files, nil
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

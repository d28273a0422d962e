package lcm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/heatsible/heatsible/collection"
	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/render"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/roles"
)

// A run is a list of titled steps, in the manner of k0sctl's phases: once
// the operation is rendered (package render), Run takes the cluster's lock,
// stages the bundle, connects to the Ansible host and takes the lock there,
// checks what the run needs there, runs the operation's phases one step
// each, prepares Tacker's VIM and lets the locks go. "heatsible plan" lists
// the same titles (Plan.Run), from the same list.

// step is one step of a run. run does it; cleanup, when set, lets go of
// what run took: it runs once run succeeded, whatever the later steps do
// (after a failure too, and a panic), in the reverse order of the steps,
// and may add to the run's error (err).
type step struct {
	title   string
	run     func(ctx context.Context) error
	cleanup func(err *error)
}

// runSteps runs steps in order and stops at the first that fails; then,
// as deferred calls do, the cleanups of the steps that ran.
func runSteps(ctx context.Context, steps []step) (err error) {
	for _, s := range steps {
		if err = s.run(ctx); err != nil {
			return err
		}
		if s.cleanup != nil {
			defer s.cleanup(&err)
		}
	}
	return nil
}

// stepTitles are the titles of steps, in order.
func stepTitles(steps []step) []string {
	out := make([]string, 0, len(steps))
	for _, s := range steps {
		out = append(out, s.title)
	}
	return out
}

// planSteps are the steps of a run of the rendered operation files on the
// Ansible host (plan does not know --local, which leaves out the two steps
// there), for their titles: none of them runs.
func planSteps(t *topology.Topology, files *render.Files) []step {
	r := &run{t: t, files: files, op: render.Op{Name: files.Plan.Operation}, sshCfg: &remote.Config{}}
	return r.steps()
}

// run is one operation's run: the rendered operation and what each step
// leaves for the next.
type run struct {
	o     RunOptions
	op    render.Op
	rec   *state.Record
	log   *slog.Logger
	start time.Time

	t          *topology.Topology
	files      *render.Files
	knownHosts []byte
	// sshCfg is how to reach the Ansible host (nil: Ansible runs on this
	// machine); dial, when set, is its connection, opened while Heat was
	// read.
	sshCfg *remote.Config
	dial   chan dialResult
	where  string
	// wants are the ansible-playbooks the phases run; peek the kubespray
	// inventory to look at before anything changes.
	wants []ansible.AnsibleWant
	peek  []string
	// stop ends the steps' context (watchRemoteLock).
	stop context.CancelCauseFunc

	lock         *state.Lock
	bundle       *ansible.Bundle
	runner       ansible.Runner
	fileOps      ansible.FileOps
	client       *remote.Client
	remoteRunner *ansible.RemoteRunner
	remoteLock   *ansible.RemoteLock
	// removeLock: the release removes the locks (terminate-end).
	removeLock bool
	// The trackers of what an exit at once leaves behind (leftovers.go),
	// and the bundle's removal.
	releaseLockTracked, remoteLockTracked, bundleClosed func()
	// begun is the run's outcome from the check step on; out is what Run
	// returns: begun once a phase has run (nil when the run stops
	// before: it did nothing to report).
	begun, out *RunOutcome
	ph         *phaseRunner
}

// steps are the run's steps, in order. Building them runs nothing.
func (r *run) steps() []step {
	steps := []step{
		{title: "take the cluster's lock on this machine", run: r.takeLock, cleanup: r.releaseLock},
		{title: "stage the run bundle", run: r.stage, cleanup: r.closeBundle},
	}
	if r.sshCfg != nil {
		steps = append(steps,
			step{title: "connect to the Ansible host", run: r.connect, cleanup: r.disconnect},
			step{title: "take the cluster's lock on the Ansible host", run: r.takeRemoteLock, cleanup: r.releaseRemoteLock})
	}
	check, kubespray := "find and check the ansible-playbooks where Ansible runs", false
	for _, ph := range r.files.Phases {
		switch ph.Kind {
		case render.PhaseKubespray:
			kubespray = true
			fallthrough
		case render.PhaseWriteInventory:
			check = "find and check the ansible-playbooks and the kubespray inventory already there, where Ansible runs"
		}
	}
	steps = append(steps, step{title: check, run: r.checkAnsibles})
	if kubespray {
		steps = append(steps, step{title: "find kubespray's playbooks under its root where Ansible runs", run: r.preflight})
	}
	for i, ph := range r.files.Phases {
		steps = append(steps, step{title: ph.String(), run: func(ctx context.Context) error { return r.runPhase(ctx, i) }})
	}
	if r.files.VIM != nil {
		steps = append(steps, step{title: "prepare Tacker's Kubernetes VIM from what k8s_vim left", run: r.finishVIM})
	}
	last := step{title: "release the cluster's locks (after a failure too)", run: r.release}
	if r.op.Name == render.OpTerminateEnd {
		last = step{title: "remove the cluster's locks: the cluster is gone (released only, with --check or after a failure)", run: r.markRemoval}
	}
	return append(steps, last)
}

func (r *run) takeLock(ctx context.Context) error {
	lock, err := state.Acquire(r.t.Cluster, r.o.Operation, r.o.BreakLock)
	if err != nil {
		return err
	}
	r.lock = lock
	r.releaseLockTracked = trackLock(ctx, lock, r.t.Cluster)
	return nil
}

func (r *run) releaseLock(*error) {
	r.releaseLockTracked()
	r.lock.Release()
}

func (r *run) stage(ctx context.Context) error {
	staging := time.Now()
	f := r.files
	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster:       r.t.Cluster,
		Operation:     r.o.Operation,
		Inventory:     f.Inventory,
		InventoryName: "hosts.yml",
		Playbook:      f.Playbook,
		Roles:         roles.FS,
		Collections:   map[string]fs.FS{collection.FQCN: collection.FS},
		GroupVars:     f.GroupVars,
		Secrets:       f.Secrets,
		SecretValues:  f.SecretValues,
		VarsFiles:     f.VarsFiles(),
		Files:         f.BundleFiles(),
		KnownHosts:    r.knownHosts,
		KnownHostsFor: knownHostsFor(r.t),
		Forks:         r.o.Forks,
	})
	if err != nil {
		return fail.With(fail.Internal, fmt.Errorf("staging the run bundle: %w", err))
	}
	r.bundle = b
	r.bundleClosed = closeBundle(ctx, b, r.t.Cluster)
	r.log.Debug("staged the run bundle", "dir", b.Dir, "took", since(staging))
	return nil
}

func (r *run) closeBundle(*error) { r.bundleClosed() }

func (r *run) connect(ctx context.Context) error {
	var d dialResult
	if r.dial != nil { // opened while Heat was read
		d = <-r.dial
		r.dial = nil
	} else {
		began := time.Now()
		c, err := remote.Dial(ctx, *r.sshCfg)
		d = dialResult{c, err, since(began)}
	}
	if d.err != nil {
		return fmt.Errorf("connecting to the Ansible host: %w", d.err)
	}
	r.client = d.client
	r.log.Debug("connected to the Ansible host", "took", d.took)
	r.remoteRunner = &ansible.RemoteRunner{Client: r.client, Logger: r.log, Ansibles: r.wants, Peek: r.peek}
	r.runner, r.fileOps = r.remoteRunner, r.remoteRunner
	return nil
}

func (r *run) disconnect(*error) { r.client.Close() }

// takeRemoteLock takes the cluster's lock on the Ansible host, for the
// whole remote run: the lock on this machine cannot see another machine.
func (r *run) takeRemoteLock(ctx context.Context) error {
	h := ansible.Holder(r.lock.Holder())
	h.Record = r.rec.Dir()
	locked := time.Now()
	l, err := r.remoteRunner.Lock(ctx, r.t.Cluster, h, r.o.BreakLock)
	if err != nil {
		return err
	}
	r.remoteLock = l
	r.log.Debug("took the cluster's lock on the Ansible host", "took", since(locked))
	r.remoteLockTracked = trackRemoteLock(ctx, l, r.sshCfg.Address, r.t.Cluster)
	go watchRemoteLock(ctx, r.stop, l, r.client, r.log)
	return nil
}

func (r *run) releaseRemoteLock(runErr *error) {
	r.stop(nil)
	r.remoteLockTracked()
	if err := releaseRemote(r.remoteLock, r.removeLock, *r.sshCfg, r.t.Cluster, r.o, r.log); err != nil {
		if *runErr != nil { // the run's exit code, not the release's
			*runErr = fail.With(fail.Code(*runErr), fmt.Errorf("%w; %w", *runErr, err))
		} else {
			r.log.Warn(err.Error())
		}
	}
}

// checkAnsibles begins the run's outcome, now that the run holds the
// cluster's locks, and checks the ansible-playbooks the phases run, found
// where they run (the lock session's first answer on the Ansible host),
// and the kubespray inventory already there, before anything changes.
func (r *run) checkAnsibles(ctx context.Context) error {
	// Records are pruned only now that this run holds the cluster's locks.
	r.rec.Prune()
	r.begun = &RunOutcome{Operation: r.o.Operation, Cluster: r.t.Cluster, Where: r.where, Check: r.o.Check, Topology: r.t, Started: r.start}
	r.ph = &phaseRunner{o: r.o, files: r.files, bundle: r.bundle, runner: r.runner, fileOps: r.fileOps, remote: r.remoteRunner, cluster: r.t.Cluster, log: r.log}
	ph, t := r.ph, r.t
	if r.remoteLock != nil {
		where := "the Ansible host " + r.sshCfg.Address
		if err := ph.checkAnsibles(r.wants, r.remoteLock.Ansibles(), where); err != nil {
			return err
		}
		for _, p := range r.peek {
			if err := checkKubesprayNames(t, p, r.remoteLock.Peeked()[p], where); err != nil {
				return err
			}
		}
	} else if pr, ok := r.runner.(prober); ok && len(r.wants) > 0 {
		found, err := pr.Probe(ctx, r.wants)
		if err != nil {
			return fail.With(fail.Internal, err)
		}
		if err := ph.checkAnsibles(r.wants, found, "this machine"); err != nil {
			return err
		}
		for _, p := range r.peek {
			data, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fail.With(fail.Refused, fmt.Errorf("reading the kubespray inventory already at %s: %w; heatsible would replace it: check it, then remove or fix it", p, err))
			}
			if err := checkKubesprayNames(t, p, data, "this machine"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run) preflight(ctx context.Context) error { return r.ph.preflight(ctx) }

// runPhase runs the operation's phase i; after the last, it checks that
// heatsible's playbook ran on some host.
func (r *run) runPhase(ctx context.Context, i int) error {
	ph := r.ph
	r.out = r.begun
	err := ph.runOne(ctx, i)
	r.out.Result, r.out.Duration = ph.result, time.Since(r.start)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ansible.ErrLockLost) && !errors.Is(err, remote.ErrUnreachable) {
		return fail.With(fail.Unreachable, fmt.Errorf("%w; the run was stopped, so that no other run overlaps it: the nodes may be half-configured, re-run the operation (it is idempotent)", cause))
	}
	if err != nil {
		return err
	}
	if i == len(r.files.Phases)-1 && ph.emptyPlaybook {
		// Ansible warns and exits 0 when no host matches; for heatsible
		// that is a run that did nothing, never a success.
		return fail.With(fail.Internal, fmt.Errorf("ansible-playbook ran on no host at all (the inventory did not load, or matched nothing); see its warnings above"))
	}
	return nil
}

func (r *run) finishVIM(context.Context) error {
	r.out = r.begun
	v, err := r.ph.finishVIM(r.t, r.rec)
	r.out.VIM = v
	return err
}

// markRemoval has the release remove the cluster's locks: terminate-end
// took the cluster away (not with --check, which changed nothing).
func (r *run) markRemoval(ctx context.Context) error {
	_ = r.release(ctx)
	if !r.o.Check {
		r.lock.Remove()
		r.removeLock = true
	}
	return nil
}

// release ends the run's steps with its outcome; the locks go in the
// cleanups of the steps that took them, which run after a failure too.
func (r *run) release(context.Context) error {
	r.out = r.begun
	return nil
}

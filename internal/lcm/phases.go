package lcm

import (
	"context"
	"fmt"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/internal/topology"
	"time"

	"log/slog"
	"maps"
	"path"
	"strings"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
)

// phaseRunner runs the phases of one operation (see Op.plan) on one
// bundle, in order, and stops at the first that fails.
type phaseRunner struct {
	o       RunOptions
	files   *render.Files
	bundle  *ansible.Bundle
	runner  ansible.Runner
	fileOps ansible.FileOps
	remote  *ansible.RemoteRunner // nil when Ansible runs on this machine
	cluster string
	log     *slog.Logger

	// kubespray maps a kubespray phase's playbook to its path under the
	// kubespray root, as found by preflight.
	kubespray map[string]string
	// result adds up the results of every ansible-playbook run.
	result *ansible.Result
	// emptyPlaybook: heatsible's playbook ran on no host at all.
	emptyPlaybook bool
	// vimInfo is what the k8s_vim role left in render.VIMInfoFile (it holds the
	// VIM's token), nil when it left nothing.
	vimInfo []byte
	// ansibles are the ansible-playbooks found for heatsible's roles and
	// for kubespray (ansible.ForRoles, ansible.ForKubespray).
	ansibles map[string]ansible.AnsibleFound
}

// skipKubespray says why kubespray and the files handed to it are left
// alone in this run, or "" when they are not.
func (p *phaseRunner) skipKubespray() string {
	return render.SkipKubespray(p.o.Check, p.o.Tags, p.o.Limit)
}

func (p *phaseRunner) say(format string, args ...any) {
	if p.o.Stderr != nil {
		fmt.Fprintf(p.o.Stderr, "heatsible: "+format+"\n", args...)
	}
}

// preflight checks, before any phase runs, what the kubespray phases need
// on the machine that runs Ansible: the root and each playbook (at the root,
// or under playbooks/ in newer layouts).
func (p *phaseRunner) preflight(ctx context.Context) error {
	p.kubespray = map[string]string{}
	root := p.files.KubesprayRoot
	for _, ph := range p.files.Phases {
		if ph.Kind != render.PhaseKubespray || p.skipKubespray() != "" || p.kubespray[ph.Playbook] != "" {
			continue
		}
		exists, isDir, err := p.fileOps.Stat(ctx, root)
		if err != nil {
			return fail.With(fail.Unreachable, err)
		}
		if !exists || !isDir {
			return fail.With(fail.Invalid, fmt.Errorf("%s.ansible.kubespray_root_path: %s is not a directory on %s; install kubespray there or fix the path", params.Prefix, root, p.fileOps.Where()))
		}
		found := ""
		for _, cand := range []string{ph.Playbook, "playbooks/" + ph.Playbook} {
			exists, isDir, err := p.fileOps.Stat(ctx, path.Join(root, cand))
			if err != nil {
				return fail.With(fail.Unreachable, err)
			}
			if exists && !isDir {
				found = cand
				break
			}
		}
		if found == "" {
			return fail.With(fail.Invalid, fmt.Errorf("kubespray root %s on %s has neither %s nor playbooks/%s; is it a kubespray checkout?", root, p.fileOps.Where(), ph.Playbook, ph.Playbook))
		}
		p.kubespray[ph.Playbook] = found
	}
	return nil
}

// runOne runs phase i of the operation, saying which it is when there
// are several.
func (p *phaseRunner) runOne(ctx context.Context, i int) error {
	n := len(p.files.Phases)
	ph := p.files.Phases[i]
	if err := ctx.Err(); err != nil {
		return err // interrupted: start nothing more
	}
	step := fmt.Sprintf("[%d/%d] %s", i+1, n, ph)
	if ph.Kind != render.PhasePlaybook {
		if why := p.skipKubespray(); why != "" && ph.Kind != render.PhaseCleanStaging {
			p.say("%s: skipped (%s)", step, why)
			return nil
		}
		if p.o.Check {
			p.say("%s: skipped (check mode)", step)
			return nil
		}
		p.say("%s", step)
	} else if n > 1 {
		p.say("%s", step)
	}
	if err := p.runPhase(ctx, ph); err != nil {
		if n > 1 {
			return fmt.Errorf("%s: %w", step, err)
		}
		return err
	}
	return nil
}

func (p *phaseRunner) runPhase(ctx context.Context, ph render.Phase) error {
	o := p.o
	base := ansible.PlaybookOptions{Verbosity: o.Verbosity, OnEvent: o.OnEvent, Stderr: o.Stderr, Logger: p.log}
	switch ph.Kind {
	case render.PhasePlaybook:
		ro := p.withAnsible(base, ansible.ForRoles)
		ro.Check, ro.Diff, ro.Limit, ro.Tags = o.Check, o.Check, o.Limit, o.Tags
		if p.files.VIM != nil && !o.Check {
			ro.Collect = []string{render.VIMInfoFile}
		}
		res, err := p.runner.Run(ctx, p.bundle, ro)
		if res != nil {
			// The token stays here, out of the result that reports and
			// records are made from.
			p.vimInfo, res.Collected = res.Collected[render.VIMInfoFile], nil
		}
		p.add(res)
		if err == nil && res != nil && len(res.Recap) == 0 && o.Limit == "" {
			p.emptyPlaybook = true
		}
		return err
	case render.PhaseKubespray:
		ro := p.withAnsible(base, ansible.ForKubespray)
		ro.Dir, ro.Playbooks = p.files.KubesprayRoot, []string{p.kubespray[ph.Playbook]}
		ro.ForeignConfig, ro.Inventory, ro.Become = true, p.files.KubesprayInventoryPath, true
		ro.Limit, ro.ExtraVars = ph.Limit, ph.ExtraVars
		// kubespray's variables and the passwords its inventory refers to;
		// not secrets.yml, whose heatsible variables kubespray must not get.
		ro.VarsFile = render.KubesprayVarsFile
		res, err := p.runner.Run(ctx, p.bundle, ro)
		p.add(res)
		return err
	case render.PhaseWriteInventory:
		return p.fileOps.PutFile(ctx, p.files.KubesprayInventoryPath, p.files.KubesprayInventory, 0o600)
	case render.PhaseRemoveInventory:
		return p.fileOps.RemoveFile(ctx, p.files.KubesprayInventoryPath, true)
	case render.PhaseCleanStaging:
		if p.remote == nil {
			return nil // local bundles go with their runs
		}
		removed, err := p.remote.CleanupStale(ctx, p.cluster, 0)
		p.say("removed %d leftover staging director%s", len(removed), map[bool]string{true: "y", false: "ies"}[len(removed) == 1])
		return err
	}
	return fmt.Errorf("unknown phase %q", ph.Kind)
}

// add adds one ansible-playbook run's result to the operation's.
func (p *phaseRunner) add(r *ansible.Result) {
	if r == nil {
		return
	}
	if p.result == nil {
		cp := *r
		cp.Recap = maps.Clone(r.Recap)
		if cp.Recap == nil {
			cp.Recap = map[string]ansible.HostRecap{}
		}
		p.result = &cp
		return
	}
	d := p.result
	d.Command, d.Dir, d.ExitCode, d.Finished = r.Command, r.Dir, r.ExitCode, r.Finished
	d.RecapComplete = d.RecapComplete && r.RecapComplete
	d.Events = append(d.Events, r.Events...)
	d.Stdout = append(d.Stdout, r.Stdout...)
	if r.Stderr != "" {
		d.Stderr = lastBytes(d.Stderr+r.Stderr, 64<<10)
	}
	for h, x := range r.Recap {
		y := d.Recap[h]
		y.OK += x.OK
		y.Changed += x.Changed
		y.Failed += x.Failed
		y.Unreachable += x.Unreachable
		y.Skipped += x.Skipped
		y.Rescued += x.Rescued
		y.Ignored += x.Ignored
		d.Recap[h] = y
	}
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// finishVIM builds Tacker's Kubernetes VIM from what the k8s_vim role left,
// teaches the record's masker its token, and says what was prepared (or
// why nothing was: check mode, --tags or --limit leaving the role out).
func (p *phaseRunner) finishVIM(t *topology.Topology, rec *state.Record) (*VIM, error) {
	e := *p.files.VIM
	master := t.ByRole(topology.RoleMaster)[0].Name
	if p.o.Check {
		p.say("check mode: Tacker's Kubernetes VIM is not prepared; the run creates (or keeps) ServiceAccount %s/%s on %s and reports %s",
			render.VIMNamespace, render.VIMServiceAccount, master, e)
		return nil, nil
	}
	if p.vimInfo == nil {
		if why := p.files.VIMSkip; why != "" {
			p.say("Tacker's Kubernetes VIM: not prepared (%s)", why)
			return nil, nil
		}
		return nil, fail.With(fail.Internal, fmt.Errorf("the %s role ran on %s but left no VIM info (%s): no VIM was prepared", render.VIMRole, master, render.VIMInfoFile))
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

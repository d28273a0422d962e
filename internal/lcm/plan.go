package lcm

import (
	"context"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/hostpattern"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
)

// PlanOptions is one "heatsible plan" invocation: the inputs of "heatsible
// run" that decide what runs where.
type PlanOptions struct {
	Operation string
	// Target and DeleteReleased complete the operation (see Op).
	Target         string
	DeleteReleased bool
	Nodes          []string
	Request        *params.Request
	PackageDir     string
	Source         Source
	Limit          string
	Tags           []string
	// Waits are the bounds set with --wait (ParseWaits).
	Waits   map[string]int
	Version string
	// Ansible says which ansible-playbook runs heatsible's roles and which
	// runs kubespray (flags over the request).
	Ansible AnsibleSettings
}

// Plan is what "heatsible run" would do: the rendered operation's plan
// (render.Plan: its plays and phases, what kubespray and the VIM get), the
// ansible-playbooks it would use, and the titles of the run's steps.
type Plan struct {
	render.Plan
	// Ansible are the ansible-playbooks the run will use (heatsible's
	// roles; kubespray's when a kubespray step runs) and what the run
	// checks of each on connecting.
	Ansible []AnsiblePlan `json:"ansible,omitempty"`
	// Run are the titles of the run's steps, in order (see steps.go): the
	// plays and phases above are some of them.
	Run []string `json:"run"`
}

// MakePlan reads the topology (from the file, or from Heat: never a node),
// renders the operation as Run does, and says what its run would do.
// Errors carry exit codes.
func MakePlan(ctx context.Context, o PlanOptions) (*Plan, error) {
	op := render.Op{Name: o.Operation, Target: o.Target, DeleteReleased: o.DeleteReleased, Nodes: o.Nodes, Tags: o.Tags, Waits: o.Waits}
	if _, err := hostpattern.LimitPatterns(o.Limit); err != nil {
		return nil, fail.With(fail.Invalid, err)
	}
	if err := render.Precheck(op, o.Request, o.PackageDir); err != nil {
		return nil, err
	}
	t, files, err := load(ctx, op, o.Request, o.PackageDir, o.Source, o.Limit, o.Version)
	if err != nil {
		return nil, err
	}
	if err := o.Ansible.check(); err != nil {
		return nil, err
	}
	if files.PlanErr != nil {
		return nil, fail.With(fail.Internal, files.PlanErr)
	}
	p := &Plan{Plan: *files.Plan}
	p.Ansible = planAnsibles(o.Request, o.Ansible, ansibleWants(o.Request, o.Ansible, files, render.SkipKubespray(false, o.Tags, o.Limit)))
	p.Run = stepTitles(planSteps(t, files))
	return p, nil
}

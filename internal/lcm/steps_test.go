package lcm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRunStepsCleanups: a step's cleanup runs once the step succeeded,
// after a later step failed too, in the reverse order of the steps; a step
// that failed has nothing to clean up, and the steps after it never run.
// A cleanup sees the run's error and may add to it (the remote lock's
// release does).
func TestRunStepsCleanups(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failAt int // -1: none
		want   []string
		err    string
	}{
		{"all succeed", -1, []string{"run a", "run b", "run c", "clean c", "clean b", "clean a (error: <nil>)"}, ""},
		{"the second fails", 1, []string{"run a", "run b", "clean a (error: b failed)"}, "b failed; released a"},
		{"the first fails", 0, []string{"run a"}, "a failed"},
		{"the last fails", 2, []string{"run a", "run b", "run c", "clean b", "clean a (error: c failed)"}, "c failed; released a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var steps []step
			for i, name := range []string{"a", "b", "c"} {
				s := step{title: name, run: func(context.Context) error {
					got = append(got, "run "+name)
					if i == tc.failAt {
						return errors.New(name + " failed")
					}
					return nil
				}}
				switch name {
				case "a":
					s.cleanup = func(err *error) {
						got = append(got, fmt.Sprintf("clean a (error: %v)", *err))
						if *err != nil {
							*err = fmt.Errorf("%w; released a", *err)
						}
					}
				default:
					s.cleanup = func(*error) { got = append(got, "clean "+name) }
				}
				steps = append(steps, s)
			}
			err := runSteps(context.Background(), steps)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ran\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestPlanListsTheRunSteps: plan's step titles are the run's, from the
// same list: the remote steps, one per phase, the VIM where the operation
// prepares one, the locks' removal at terminate-end.
func TestPlanListsTheRunSteps(t *testing.T) {
	req, _ := scaleFixture(t, "kubespray_lb")
	for _, tc := range []struct {
		op   Op
		want []string
	}{
		{Op{Name: OpTerminateEnd}, []string{"take the cluster's lock on this machine", "stage the run bundle", "connect to the Ansible host",
			"take the cluster's lock on the Ansible host", "find and check the ansible-playbooks where Ansible runs",
			"remove the cluster's leftover staging directories on the Ansible host", "remove the kubespray inventory heatsible wrote",
			"remove the cluster's locks: the cluster is gone (released only, with --check or after a failure)"}},
		{Op{Name: OpScaleStart, Nodes: []string{"workernode-c3d4e5f6a1b2"}}, []string{"take the cluster's lock on this machine", "stage the run bundle",
			"connect to the Ansible host", "take the cluster's lock on the Ansible host",
			"find and check the ansible-playbooks and the kubespray inventory already there, where Ansible runs",
			"find kubespray's playbooks under its root where Ansible runs", "heatsible playbook",
			"kubespray remove-node.yml -e node=workernode-c3d4e5f6a1b2 -e skip_confirmation=true",
			"write the kubespray inventory, without workernode-c3d4e5f6a1b2", "release the cluster's locks (after a failure too)"}},
	} {
		p, err := MakePlan(context.Background(), PlanOptions{Operation: tc.op.Name, Nodes: tc.op.Nodes, Request: req, PackageDir: testPkg,
			Source: Source{TopologyFile: "../../testdata/topology/k8s-lb.yaml"}, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Run, tc.want) {
			t.Errorf("%s: plan's run steps\n  %s\nwant\n  %s", tc.op.Name, strings.Join(p.Run, "\n  "), strings.Join(tc.want, "\n  "))
		}
	}
}

package lcm

import (
	"bytes"
	"log/slog"
	"strings"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
	"github.com/heatsible/heatsible/internal/report"
	"github.com/heatsible/heatsible/internal/state"
)

// A run's record (package state) is handed plain values from here: what
// the run is (runInfo), what it rendered (recordFiles), what it did
// (finishRecord).

// RequestSecrets lists every secret value of the request, for a masker
// (redact.New), which also masks the password inside a proxy URL.
func RequestSecrets(req *params.Request) []string {
	if req == nil {
		return nil
	}
	c := req.Cluster
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	for _, n := range []*params.Node{c.MasterNode, c.WorkerNode} {
		if n != nil {
			add(n.Password)
		}
	}
	if s := c.StorageServer; s != nil {
		add(s.Password)
	}
	if a := c.Ansible; a != nil {
		add(a.Password)
	}
	if lb := c.ExternalLBParam; lb != nil {
		add(lb.SSHPassword)
	}
	if p := c.Proxy; p != nil {
		for _, u := range []string{p.HTTPProxy, p.HTTPSProxy, p.NoProxy} {
			if strings.Contains(u, "@") {
				add(u)
			}
		}
	}
	return out
}

// newRecord starts the record of the run o.
func newRecord(o RunOptions, log *slog.Logger, started time.Time) *state.Record {
	return state.NewRecord(runInfo(o), log, started)
}

// runInfo is what the record of the run o says about it.
func runInfo(o RunOptions) state.RunInfo {
	return state.RunInfo{
		Operation: o.Operation, Check: o.Check, Limit: o.Limit, Tags: o.Tags, Version: o.Version,
		Where: recordWhere(o), Secrets: RequestSecrets(o.Request),
		TopologyFile: o.Source.TopologyFile, Stack: o.Source.Stack,
	}
}

// recordWhere says where Ansible runs, as RunOutcome.Where does.
func recordWhere(o RunOptions) string {
	if o.Local {
		return "local"
	}
	addr := o.AnsibleHost
	if addr == "" && o.Request != nil && o.Request.Cluster.Ansible != nil {
		addr = o.Request.Cluster.Ansible.IPAddress
	}
	return "ansible host " + addr
}

// recordFiles hands the record the run's rendered bundle (the secrets file
// apart: the record masks every value of it).
func recordFiles(rec *state.Record, f *render.Files) {
	out := map[string][]byte{
		ansible.InventoryDir + "/hosts.yml": f.Inventory,
		ansible.PlaybookFile:                f.Playbook,
	}
	for g, b := range f.GroupVars {
		out[ansible.GroupVarsDir+"/"+g+".yml"] = b
	}
	for name, b := range f.BundleFiles() {
		out[name] = b
	}
	// kubespray's vars file: passwords and proxy credentials are masked by
	// the record's masker like everything else; its other values are for
	// the reviewer.
	for name, b := range f.VarsFiles() {
		out[name] = b
	}
	rec.Bundle(out, ansible.SecretsFile, f.Secrets, f.SecretValues)
}

// recordEvents records each event in run.log, then passes it on.
func recordEvents(rec *state.Record, next func(ansible.Event)) func(ansible.Event) {
	return func(e ansible.Event) {
		rec.Log(report.LogLine{Event: e})
		if next != nil {
			next(e)
		}
	}
}

// finishRecord closes the record with what the run did: it returns err
// with " (log: PATH)" appended (same exit code), and sets out.Record.
func finishRecord(rec *state.Record, out *RunOutcome, err error) (*RunOutcome, error) {
	var s *state.Summary
	if out != nil && out.Result != nil {
		res := out.Result
		code := res.ExitCode
		s = &state.Summary{Recap: report.LogLine{
			Event:   ansible.Event{Kind: report.KindRecap, Time: res.Finished.UTC()},
			Command: res.Command, Recap: res.Recap, Complete: res.RecapComplete, ExitCode: &code,
		}}
		info := rec.Info()
		rep := report.Build(report.Input{Operation: out.Operation, Cluster: out.Cluster, Where: out.Where, Check: out.Check,
			Limit: info.Limit, Tags: info.Tags, Result: res, Err: err})
		var b bytes.Buffer
		if rep.WriteMarkdown(&b) == nil {
			s.Report = b.Bytes()
		}
	}
	dir, err := rec.Finish(s, err)
	if out != nil && dir != "" {
		out.Record = dir
	}
	return out, err
}

// RecordFailure records a run that failed before Run was called (its
// flags, its request) and returns err naming the record's log. The record
// goes under the topology file's cluster, the stack as given, or
// "unknown".
func RecordFailure(o RunOptions, err error) error {
	return state.RecordFailure(runInfo(o), err)
}

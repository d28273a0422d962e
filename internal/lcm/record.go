package lcm

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/report"
	"github.com/heatsible/heatsible/internal/topology"
)

// Run records: every "heatsible run" leaves one, also when it fails early.
//
//	<StateDir>/runs/<cluster>/<UTC timestamp>-<operation>/   0700
//	  run.log      0600  JSON lines (report.LogLine): start, every Ansible
//	                     event as it arrived, recap, error, end
//	  report.md    0600  the review report (internal/report), when
//	                     ansible-playbook ran
//	  bundle/      0700  the rendered bundle, secrets masked: inventory/
//	                     (hosts.yml, group_vars/), playbook.yml,
//	                     secrets.yml (every value masked), manifests/
//
// Every string written goes through a masker (internal/redact) that knows
// every form of every secret of the request (node, load balancer and
// Ansible host passwords, proxy URLs with credentials and their passwords)
// and of the secrets file. run.log's JSON is written without HTML escaping
// and masked as JSON, so that it stays valid.
const (
	// RunsDir is the records' directory under StateDir().
	RunsDir = "runs"
	// RecordsKept is how many records a cluster keeps; older ones are
	// removed when a run has taken the cluster's lock (a refused run
	// removes none).
	RecordsKept = 20
	// RunLog is the record's log file.
	RunLog = "run.log"
	// RecordReport is the record's review report.
	RecordReport = "report.md"
	// RecordBundle is the record's copy of the rendered bundle.
	RecordBundle = "bundle"
)

// recordNameRE matches record directory names, so that pruning never
// touches anything else.
var recordNameRE = regexp.MustCompile(`^\d{8}T\d{6}Z-[A-Za-z0-9_.-]+$`)

// record writes one run's record. Writing a record never fails a run: a
// problem is logged as a warning and the run goes on without it.
type record struct {
	o       RunOptions
	log     *slog.Logger
	started time.Time

	mu     sync.Mutex
	mask   *redact.Masker
	dir    string
	f      *os.File
	broken bool
}

func newRecord(o RunOptions, log *slog.Logger, started time.Time) *record {
	return &record{o: o, log: log, started: started, mask: redact.New(RequestSecrets(o.Request)...)}
}

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

// open creates the record directory of cluster and writes the start line.
func (r *record) open(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dir != "" || r.broken {
		return
	}
	if err := r.create(cluster); err != nil {
		r.broken = true
		r.log.Warn("cannot write the run record", "error", err)
		return
	}
	r.write(report.LogLine{
		Event:     ansible.Event{Kind: report.KindStart, Time: r.started.UTC()},
		Operation: r.o.Operation, Cluster: cluster, Where: r.where(), Check: r.o.Check,
		Limit: r.o.Limit, Tags: r.o.Tags, Version: r.o.Version,
	})
}

func (r *record) create(cluster string) error {
	base := filepath.Join(StateDir(), RunsDir, topology.SanitizeName(cluster))
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	name := r.started.UTC().Format("20060102T150405Z") + "-" + safeName(r.o.Operation)
	dir := filepath.Join(base, name)
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return err
		}
		dir = filepath.Join(base, fmt.Sprintf("%s.%d", name, i))
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, RunLog), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r.dir, r.f = dir, f
	return nil
}

// prune removes the cluster's oldest records beyond RecordsKept. Run calls
// it only once it holds the cluster's locks: a refused run must not push
// out the record of a killed one, which the stale-lock refusal tells the
// operator to read, however often a hook retries.
func (r *record) prune() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dir != "" {
		prune(filepath.Dir(r.dir), RecordsKept)
	}
}

var unsafeNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// safeName makes an operation name fit a directory name.
func safeName(s string) string {
	s = strings.Trim(unsafeNameRE.ReplaceAllString(s, "_"), "._-")
	if s == "" {
		return "run"
	}
	return s
}

// where says where Ansible runs, as RunOutcome.Where does.
func (r *record) where() string {
	if r.o.Local {
		return "local"
	}
	addr := r.o.AnsibleHost
	if addr == "" && r.o.Request != nil && r.o.Request.Cluster.Ansible != nil {
		addr = r.o.Request.Cluster.Ansible.IPAddress
	}
	return "ansible host " + addr
}

// write appends one masked line to run.log; r.mu is held.
func (r *record) write(l report.LogLine) {
	if r.f == nil {
		return
	}
	b, err := redact.Marshal(l)
	if err != nil {
		return
	}
	if _, err := r.f.Write(append(r.mask.MaskJSON(b), '\n')); err != nil {
		r.log.Warn("cannot write the run log", "error", err)
	}
}

// files learns the run's secrets and writes the rendered bundle, masked.
func (r *record) files(f *OpFiles) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, err := redact.FromYAML(f.Secrets, append(RequestSecrets(r.o.Request), f.SecretValues...)); err == nil {
		r.mask = m
	}
	if r.dir == "" {
		return
	}
	secrets, err := redact.MaskYAML(f.Secrets)
	if err != nil {
		secrets = []byte("# the secrets file could not be parsed; not recorded\n")
	}
	out := map[string][]byte{
		ansible.InventoryDir + "/hosts.yml": f.Inventory,
		ansible.PlaybookFile:                f.Playbook,
		ansible.SecretsFile:                 secrets,
	}
	for g, b := range f.GroupVars {
		out[ansible.GroupVarsDir+"/"+g+".yml"] = b
	}
	for name, b := range bundleFiles(f) {
		out[name] = b
	}
	// kubespray's vars file: passwords and proxy credentials are masked by
	// r.mask like everything else; its other values are for the reviewer.
	for name, b := range f.VarsFiles() {
		out[name] = b
	}
	for rel, b := range out {
		if err := r.writeFile(filepath.Join(RecordBundle, filepath.FromSlash(rel)), b); err != nil {
			r.log.Warn("cannot record the bundle", "file", rel, "error", err)
		}
	}
}

// writeFile writes a masked file under the record, 0600 in 0700
// directories; r.mu is held.
func (r *record) writeFile(rel string, data []byte) error {
	p := filepath.Join(r.dir, rel)
	if filepath.Dir(rel) != "." {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(r.mask.Mask(string(data))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// learn adds secrets found during the run (the VIM's token) to the
// record's masker, before the recap, the error and the report are written.
func (r *record) learn(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mask = redact.New(append(r.mask.Secrets(), secrets...)...)
}

// onEvent records each event, then passes it on.
func (r *record) onEvent(next func(ansible.Event)) func(ansible.Event) {
	return func(e ansible.Event) {
		r.mu.Lock()
		r.write(report.LogLine{Event: e})
		r.mu.Unlock()
		if next != nil {
			next(e)
		}
	}
}

// finish writes the recap, the error and the end, the review report, and
// closes the record. It returns err with " (log: PATH)" appended (same
// exit code), and sets out.Record.
func (r *record) finish(out *RunOutcome, err error) (*RunOutcome, error) {
	if r.dir == "" && !r.broken {
		r.open(r.fallbackCluster())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return out, err
	}
	now := time.Now().UTC()
	var res *ansible.Result
	if out != nil {
		res = out.Result
		out.Record = r.dir
	}
	if res != nil {
		code := res.ExitCode
		r.write(report.LogLine{
			Event:   ansible.Event{Kind: report.KindRecap, Time: res.Finished.UTC()},
			Command: res.Command, Recap: res.Recap, Complete: res.RecapComplete, ExitCode: &code,
		})
	}
	code := fail.Code(err)
	if err != nil {
		r.write(report.LogLine{Event: ansible.Event{Kind: report.KindError, Time: now}, Error: err.Error(), ExitCode: &code})
	}
	ok := err == nil
	r.write(report.LogLine{Event: ansible.Event{Kind: report.KindEnd, Time: now}, OK: &ok, ExitCode: &code, Seconds: now.Sub(r.started).Seconds()})
	if cerr := r.f.Close(); cerr != nil {
		r.log.Warn("cannot write the run log", "error", cerr)
	}
	r.f = nil
	if res != nil && out != nil {
		rep := report.Build(report.Input{Operation: out.Operation, Cluster: out.Cluster, Where: out.Where, Check: out.Check,
			Limit: r.o.Limit, Tags: r.o.Tags, Result: res, Err: err})
		var sb strings.Builder
		if rep.WriteMarkdown(&sb) == nil {
			if werr := r.writeFile(RecordReport, []byte(sb.String())); werr != nil {
				r.log.Warn("cannot write the run's report", "error", werr)
			}
		}
	}
	if err != nil {
		err = &loggedError{err: err, log: filepath.Join(r.dir, RunLog), mask: r.mask}
	}
	return out, err
}

// fallbackCluster names the record of a run that failed before its
// topology was read: the topology file's cluster if the file loads, else
// the stack as given, else "unknown".
func (r *record) fallbackCluster() string {
	if f := r.o.Source.TopologyFile; f != "" {
		if t, err := topology.Load(f); err == nil && t.Cluster != "" {
			return t.Cluster
		}
	}
	if s := r.o.Source.Stack; s != "" {
		return s
	}
	return "unknown"
}

// loggedError is a run's error with its run log's path appended, masked:
// it is what the CLI prints and puts in -o json and the review report.
type loggedError struct {
	err  error
	log  string
	mask *redact.Masker
}

func (e *loggedError) Error() string { return e.mask.Mask(e.err.Error()) + " (log: " + e.log + ")" }
func (e *loggedError) Unwrap() error { return e.err }

// As gives the CLI, which prints params.Problems one per line instead of
// the error's text, problems whose last one names the log: so that every
// error printed by "run" ends with "(log: PATH)".
func (e *loggedError) As(target any) bool {
	p, ok := target.(*params.Problems)
	if !ok {
		return false
	}
	var ps params.Problems
	if !errors.As(e.err, &ps) || len(ps) == 0 {
		return false
	}
	ps = slices.Clone(ps)
	for i := range ps {
		ps[i].Msg = e.mask.Mask(ps[i].Msg)
	}
	ps[len(ps)-1].Msg += " (log: " + e.log + ")"
	*p = ps
	return true
}

// RecordFailure records a run that failed before Run was called (its
// flags, its request) and returns err naming the record's log. The record
// goes under the topology file's cluster, the stack as given, or
// "unknown".
func RecordFailure(o RunOptions, err error) error {
	if err == nil {
		return nil
	}
	_, err = newRecord(o, slog.Default(), time.Now()).finish(nil, err)
	return err
}

// LogPath returns the run log named by a run's error, or "".
func LogPath(err error) string {
	var le *loggedError
	if errors.As(err, &le) {
		return le.log
	}
	return ""
}

// prune removes the oldest records of a cluster beyond keep. Only
// directories named like records are considered.
func prune(base string, keep int) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && recordNameRE.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		_ = os.RemoveAll(filepath.Join(base, names[0]))
		names = names[1:]
	}
}

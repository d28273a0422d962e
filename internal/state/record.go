package state

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/topology"
)

// Run records: every "heatsible run" leaves one, also when it fails early.
//
//	<Dir()>/runs/<cluster>/<UTC timestamp>-<operation>/   0700
//	  run.log      0600  JSON lines (report.LogLine reads them): start,
//	                     every Ansible event as it arrived, recap, error,
//	                     end; the record writes its Lines, the run hands it
//	                     the others (Log, Summary.Recap)
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
	// RunsDir is the records' directory under Dir().
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

// Kinds of the Lines a record writes itself (report.LogLine's Kind).
const (
	// KindStart opens a run: operation, cluster, where, check, limit, tags.
	KindStart = "start"
	// KindError is the run's error and heatsible's exit code.
	KindError = "error"
	// KindEnd closes a run: ok and the duration.
	KindEnd = "end"
)

// Line is a line of run.log the record writes itself: the start, the error,
// the end. Its JSON is that of report.LogLine, which reads run.log back.
type Line struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// KindStart.
	Operation string   `json:"operation,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Where     string   `json:"where,omitempty"`
	Check     bool     `json:"check,omitempty"`
	Limit     string   `json:"limit,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Version   string   `json:"version,omitempty"`
	// ExitCode is heatsible's (KindError, KindEnd).
	ExitCode *int `json:"exit_code,omitempty"`
	// KindError.
	Error string `json:"error,omitempty"`
	// KindEnd.
	OK      *bool   `json:"ok,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// recordNameRE matches record directory names, so that pruning never
// touches anything else.
var recordNameRE = regexp.MustCompile(`^\d{8}T\d{6}Z-[A-Za-z0-9_.-]+$`)

// RunInfo is what a record says about its run, from the run's options.
type RunInfo struct {
	Operation string
	Check     bool
	Limit     string
	Tags      []string
	Version   string
	// Where says where Ansible runs: "local" or "ansible host ADDR".
	Where string
	// Secrets are the request's secret values (lcm.RequestSecrets): the
	// record masks every form of each from its first line on.
	Secrets []string
	// TopologyFile and Stack name the record of a run that failed before
	// its topology was read (see fallbackCluster).
	TopologyFile string
	Stack        string
}

// Summary is what a finished run hands its record, as plain values (nil
// fields: the run ended before ansible-playbook ran).
type Summary struct {
	// Recap is run.log's recap line (a report.LogLine), written before the
	// error and the end.
	Recap any
	// Report is the review report (Markdown), written masked to
	// RecordReport.
	Report []byte
}

// Record writes one run's record. Writing a record never fails a run: a
// problem is logged as a warning and the run goes on without it.
type Record struct {
	o       RunInfo
	log     *slog.Logger
	started time.Time

	mu     sync.Mutex
	mask   *redact.Masker
	dir    string
	f      *os.File
	broken bool
}

// NewRecord starts the record of a run that started at started; nothing
// is written before Open.
func NewRecord(o RunInfo, log *slog.Logger, started time.Time) *Record {
	return &Record{o: o, log: log, started: started, mask: redact.New(o.Secrets...)}
}

// Info is what the record says about its run.
func (r *Record) Info() RunInfo { return r.o }

// Started is when the run started.
func (r *Record) Started() time.Time { return r.started }

// Dir is the record's directory ("" until Open has created it).
func (r *Record) Dir() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dir
}

// Open creates the record directory of cluster and writes the start line.
func (r *Record) Open(cluster string) {
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
	r.write(Line{
		Kind: KindStart, Time: r.started.UTC(),
		Operation: r.o.Operation, Cluster: cluster, Where: r.o.Where, Check: r.o.Check,
		Limit: r.o.Limit, Tags: r.o.Tags, Version: r.o.Version,
	})
}

func (r *Record) create(cluster string) error {
	base := filepath.Join(Dir(), RunsDir, topology.SanitizeName(cluster))
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

// Prune removes the cluster's oldest records beyond RecordsKept. lcm.Run
// calls it only once it holds the cluster's locks: a refused run must not push
// out the record of a killed one, which the stale-lock refusal tells the
// operator to read, however often a hook retries.
func (r *Record) Prune() {
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

// write appends one masked line to run.log; r.mu is held.
func (r *Record) write(l any) {
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

// Bundle learns the run's secrets (every string of the secrets file, and
// secretValues) and writes the rendered bundle, masked: files maps a path
// relative to the bundle to its content; the secrets file goes in as
// secretsName with every value masked.
func (r *Record) Bundle(files map[string][]byte, secretsName string, secrets []byte, secretValues []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, err := redact.FromYAML(secrets, append(slices.Clone(r.o.Secrets), secretValues...)); err == nil {
		r.mask = m
	}
	if r.dir == "" {
		return
	}
	masked, err := redact.MaskYAML(secrets)
	if err != nil {
		masked = []byte("# the secrets file could not be parsed; not recorded\n")
	}
	out := maps.Clone(files)
	if out == nil {
		out = map[string][]byte{}
	}
	out[secretsName] = masked
	for rel, b := range out {
		if err := r.writeFile(filepath.Join(RecordBundle, filepath.FromSlash(rel)), b); err != nil {
			r.log.Warn("cannot record the bundle", "file", rel, "error", err)
		}
	}
}

// writeFile writes a masked file under the record, 0600 in 0700
// directories; r.mu is held.
func (r *Record) writeFile(rel string, data []byte) error {
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

// Learn adds secrets found during the run (the VIM's token) to the
// record's masker, before the recap, the error and the report are written.
func (r *Record) Learn(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mask = redact.New(append(r.mask.Secrets(), secrets...)...)
}

// Log appends line (an ansible event, as it arrives) to run.log, masked.
func (r *Record) Log(line any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(line)
}

// Finish writes the recap, the error and the end, the review report (when
// s has them), and closes the record. It returns the record's directory
// ("" when no record was written) and err with " (log: PATH)" appended
// (same exit code).
func (r *Record) Finish(s *Summary, err error) (string, error) {
	if r.dir == "" && !r.broken {
		r.Open(r.fallbackCluster())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return "", err
	}
	now := time.Now().UTC()
	if s == nil {
		s = &Summary{}
	}
	if s.Recap != nil {
		r.write(s.Recap)
	}
	code := fail.Code(err)
	if err != nil {
		r.write(Line{Kind: KindError, Time: now, Error: err.Error(), ExitCode: &code})
	}
	ok := err == nil
	r.write(Line{Kind: KindEnd, Time: now, OK: &ok, ExitCode: &code, Seconds: now.Sub(r.started).Seconds()})
	if cerr := r.f.Close(); cerr != nil {
		r.log.Warn("cannot write the run log", "error", cerr)
	}
	r.f = nil
	if s.Report != nil {
		if werr := r.writeFile(RecordReport, s.Report); werr != nil {
			r.log.Warn("cannot write the run's report", "error", werr)
		}
	}
	if err != nil {
		err = &loggedError{err: err, log: filepath.Join(r.dir, RunLog), mask: r.mask}
	}
	return r.dir, err
}

// fallbackCluster names the record of a run that failed before its
// topology was read: the topology file's cluster if the file loads, else
// the stack as given, else "unknown".
func (r *Record) fallbackCluster() string {
	if f := r.o.TopologyFile; f != "" {
		if t, err := topology.Load(f); err == nil && t.Cluster != "" {
			return t.Cluster
		}
	}
	if s := r.o.Stack; s != "" {
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

// LogNamer is an error the CLI prints otherwise than by its text
// (params.Problems, one problem per line): found in a run's error with
// errors.As, it is told to mask itself and name the log, so that every
// error printed by "run" ends with "(log: PATH)".
type LogNamer interface {
	NameLog(mask func(string) string, log string)
}

// As finds target in the run's error; a LogNamer found is told the log.
func (e *loggedError) As(target any) bool {
	if !errors.As(e.err, target) {
		return false
	}
	if n, ok := target.(LogNamer); ok {
		n.NameLog(e.mask.Mask, e.log)
	}
	return true
}

// RecordFailure records a run that failed before it started (its flags,
// its request) and returns err naming the record's log. The record goes
// under the topology file's cluster, the stack as given, or "unknown".
func RecordFailure(o RunInfo, err error) error {
	if err == nil {
		return nil
	}
	_, err = NewRecord(o, slog.Default(), time.Now()).Finish(nil, err)
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

// Abandon is the record's part of an exit at once: the error and end
// lines (exit 130), and where the record is: a run's interrupt.Leftover. It never waits: if the record
// is being written, it says where it is and leaves it.
func (r *Record) Abandon() string {
	if !r.mu.TryLock() {
		return ""
	}
	defer r.mu.Unlock()
	if r.dir == "" {
		return ""
	}
	if r.f != nil {
		now := time.Now().UTC()
		code := fail.Interrupted
		ok := false
		r.write(Line{Kind: KindError, Time: now,
			Error: "exited at once on a second signal, without finishing the cleanup", ExitCode: &code})
		r.write(Line{Kind: KindEnd, Time: now, OK: &ok, ExitCode: &code, Seconds: now.Sub(r.started).Seconds()})
		_ = r.f.Close()
		r.f = nil
	}
	return "run record: " + filepath.Join(r.dir, RunLog)
}

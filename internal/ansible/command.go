package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apenella/go-ansible/v2/pkg/playbook"

	"github.com/heatsible/heatsible/internal/fail"
)

// Runner runs a bundle's playbook and reports live events and the recap.
type Runner interface {
	// Run runs ansible-playbook once. The Result is non-nil whenever
	// ansible-playbook started, also on error. The error is nil on exit 0;
	// otherwise it is a *HostsError (errors.Is ErrHostFailed /
	// ErrUnreachable, both joined if both happened), a *PlaybookError, or
	// wraps ctx.Err() when cancelled.
	Run(ctx context.Context, b *Bundle, opts PlaybookOptions) (*Result, error)
}

// PlaybookOptions select what one ansible-playbook run does.
type PlaybookOptions struct {
	// Check and Diff are --check and --diff.
	Check bool
	Diff  bool
	// Limit is --limit (hosts or groups, comma-separated).
	Limit string
	// Tags and SkipTags are --tags and --skip-tags.
	Tags     []string
	SkipTags []string
	// ExtraVars go into argv as JSON: non-secret values without Jinja
	// delimiters only (JSON cannot mark a value !unsafe). Command refuses
	// a value that matches a known secret or holds "{{", "{%" or "{#".
	ExtraVars map[string]any
	// VarsFile is the bundle's vars file passed with -e @ instead of
	// secrets.yml: one of BundleSpec.VarsFiles (e.g. kubespray's, which
	// must not get heatsible's own variables).
	VarsFile string
	// Playbooks replace the bundle's playbook.yml, e.g. "cluster.yml" of
	// kubespray; relative paths resolve against Dir.
	Playbooks []string
	// Dir is ansible-playbook's working directory (the bundle root if
	// empty), e.g. the kubespray root; for RemoteRunner a directory on the
	// Ansible host.
	Dir string
	// ForeignConfig runs with the ansible.cfg of Dir (kubespray's) instead
	// of the bundle's. heatsible still pins what it relies on through the
	// environment: heatsible's stdout callback (progress and results), strict host
	// key checking against the bundle's known_hosts (kubespray's own
	// ansible.cfg turns it off) and forks.
	ForeignConfig bool
	// Inventory replaces the bundle's inventory (an absolute path where
	// ansible-playbook runs), e.g. the inventory written for kubespray.
	Inventory string
	// Become adds --become --become-user=root (kubespray expects it).
	Become bool
	// Verbosity adds -v (1) to -vvvv (4); the extra output is kept in
	// Result.Stdout.
	Verbosity int
	// Binary is the ansible-playbook executable ("ansible-playbook").
	Binary string
	// Venv is the virtualenv Binary belongs to, if any: the run gets it
	// as an activated one would (VIRTUAL_ENV, its bin/ first in PATH), as
	// kubespray's docs have operators run it.
	Venv string
	// OnEvent receives every event as it arrives, in order, from a single
	// goroutine. It must not block for long: it holds up the reading of
	// ansible's output.
	OnEvent func(Event)
	// Stderr receives ansible-playbook's stderr (warnings, errors) live,
	// line by line, masked.
	Stderr io.Writer
	// Logger gets debug and warning messages (slog.Default() if nil).
	Logger *slog.Logger
	// Collect are files the playbook writes into its bundle (paths
	// relative to the bundle's root, e.g. "vim-info.json"), read back into
	// Result.Collected once ansible-playbook has exited and before the
	// bundle (or its staging directory on the Ansible host) is removed; a
	// missing one is skipped. It is how a value no event may carry (a
	// token) reaches heatsible: written by a no_log task, never printed.
	Collect []string
}

func (o PlaybookOptions) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// Command returns the ansible-playbook argv for bundle b located at root
// (its local Dir, or the staging directory on the Ansible host). Secrets are
// referenced only as "-e @<root>/secrets.yml".
func Command(b *Bundle, root string, opts PlaybookOptions) ([]string, error) {
	playbooks := opts.Playbooks
	if len(playbooks) == 0 {
		if len(b.spec.Playbook) == 0 {
			return nil, errors.New("building ansible-playbook command: the bundle has no playbook and none was given")
		}
		playbooks = []string{root + "/" + PlaybookFile}
	}
	inv := b.InventoryPath(root)
	if opts.Inventory != "" {
		inv = opts.Inventory
	}
	varsFile := SecretsFile
	if opts.VarsFile != "" {
		if _, ok := b.spec.VarsFiles[opts.VarsFile]; !ok {
			return nil, fmt.Errorf("building ansible-playbook command: the bundle has no vars file %q", opts.VarsFile)
		}
		varsFile = opts.VarsFile
	}
	// Host key pinning as extra vars too, which beat every inventory
	// variable: kubespray's runs read the operator's group_vars and
	// host_vars, where ansible_ssh_args would replace ssh_args (pinning
	// and all) and ansible_host_key_checking would turn checking off.
	extra := map[string]any{}
	for k, v := range opts.ExtraVars {
		extra[k] = v
	}
	for k, v := range pinnedVars(root) {
		extra[k] = v
	}
	pbo := &playbook.AnsiblePlaybookOptions{
		Inventory:     inv,
		ExtraVarsFile: []string{"@" + root + "/" + varsFile},
		ExtraVars:     extra,
		Check:         opts.Check,
		Diff:          opts.Diff,
		Limit:         opts.Limit,
		Tags:          strings.Join(opts.Tags, ","),
		SkipTags:      strings.Join(opts.SkipTags, ","),
	}
	if opts.Become {
		pbo.Become, pbo.BecomeUser = true, "root"
	}
	switch {
	case opts.Verbosity >= 4:
		pbo.VerboseVVVV = true
	case opts.Verbosity == 3:
		pbo.VerboseVVV = true
	case opts.Verbosity == 2:
		pbo.VerboseVV = true
	case opts.Verbosity == 1:
		pbo.VerboseV = true
	}
	bin := opts.Binary
	if bin == "" {
		bin = playbook.DefaultAnsiblePlaybookBinary
	}
	cmd := playbook.NewAnsiblePlaybookCmd(
		playbook.WithBinary(bin),
		playbook.WithPlaybooks(playbooks...),
		playbook.WithPlaybookOptions(pbo),
	)
	argv, err := cmd.Command()
	if err != nil {
		return nil, fmt.Errorf("building ansible-playbook command: %w", err)
	}
	// Extra vars on the command line are JSON, which cannot carry !unsafe:
	// Ansible would render any Jinja in them. heatsible puts only node
	// names (DNS labels) and booleans there; anything else is a bug.
	if js, err := json.Marshal(opts.ExtraVars); err == nil && jinjaRE.Match(js) {
		return nil, errors.New("building ansible-playbook command: an extra var holds a Jinja delimiter ({{, {% or {#), which Ansible would evaluate; pass it in a vars file")
	}
	for _, a := range argv {
		if b.masker.Contains(a) {
			return nil, errors.New("building ansible-playbook command: a secret value would appear on the command line (extra vars, limit or tags); pass it through the secrets file")
		}
	}
	return argv, nil
}

// keptEnv are the only variables ansible-playbook inherits from the
// environment heatsible runs in (locally, or the login session on the
// Ansible host, which /etc/environment, ~/.bashrc and ~/.ssh/environment
// fill): an ANSIBLE_SSH_ARGS there with StrictHostKeyChecking=no, an
// ANSIBLE_CONFIG, ANSIBLE_STDOUT_CALLBACK, ANSIBLE_ROLES_PATH or
// ANSIBLE_COLLECTIONS_PATH(S) (another heatsible.nfv), a PYTHONPATH, would
// otherwise change what the run does. The LC_* are the locale categories.
var keptEnv = []string{
	"PATH", "HOME", "LANG",
	"LC_ALL", "LC_ADDRESS", "LC_COLLATE", "LC_CTYPE", "LC_IDENTIFICATION", "LC_MEASUREMENT",
	"LC_MESSAGES", "LC_MONETARY", "LC_NAME", "LC_NUMERIC", "LC_PAPER", "LC_TELEPHONE", "LC_TIME",
	"TMPDIR",
}

// cleanEnv returns the keptEnv entries of env.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(keptEnv, k) {
			out = append(out, kv)
		}
	}
	return out
}

// sshArgs are Ansible's ssh_args for a bundle at root. Ansible puts
// ssh_args first on ssh's command line, before what host_key_checking,
// ssh_common_args and ssh_extra_args add, and ssh keeps the first value it
// reads of an option (command line, then ~/.ssh/config, then
// /etc/ssh/ssh_config): nothing later can switch the checks off. The
// bundle's known_hosts is the only authority: without
// GlobalKnownHostsFile=/dev/null a key in the Ansible host's
// /etc/ssh/ssh_known_hosts would still let a host whose key heatsible was
// told has changed through.
func sshArgs(root string) string {
	return "-o UserKnownHostsFile=\"" + root + "/" + KnownHostsFile + "\" -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes" +
		" -o ControlMaster=auto -o ControlPersist=60s"
}

// pinnedVars are the connection variables every run gets as extra vars
// (the highest precedence Ansible has): the ssh arguments that pin the
// bundle's known_hosts, and host key checking on for the ssh and paramiko
// connection plugins. An inventory's group_vars or host_vars (kubespray's
// inventory directory is the operator's) cannot override them; options
// they add through ansible_ssh_common_args or ansible_ssh_extra_args come
// after ssh_args on ssh's command line, where ssh keeps the first value.
func pinnedVars(root string) map[string]any {
	return map[string]any{
		"ansible_ssh_args":                   sshArgs(root),
		"ansible_host_key_checking":          true,
		"ansible_ssh_host_key_checking":      true,
		"ansible_paramiko_host_key_checking": true,
	}
}

// jinjaRE finds what starts a Jinja expression, statement or comment.
var jinjaRE = regexp.MustCompile(`\{[{%#]`)

// runEnv is what heatsible sets in ansible-playbook's environment, on top of
// keptEnv. None of it is secret. The callback, host key checking and ssh
// arguments are pinned here as well as in ansible.cfg, because a
// ForeignConfig run reads kubespray's ansible.cfg (which turns host key
// checking off), and an environment variable beats ansible.cfg.
func runEnv(b *Bundle, root string, opts PlaybookOptions) []string {
	cfg := []string{"ANSIBLE_CONFIG=" + root + "/" + ConfigFile}
	if opts.ForeignConfig {
		// ansible.cfg of the working directory applies.
		cfg = []string{
			"ANSIBLE_FORKS=" + fmt.Sprint(b.spec.Forks),
			"ANSIBLE_RETRY_FILES_ENABLED=False",
		}
	}
	env := append(cfg,
		"ANSIBLE_SSH_ARGS="+sshArgs(root),
		"ANSIBLE_STDOUT_CALLBACK="+CallbackName,
		// The bundle's callback first, then Ansible's default places: a
		// foreign ansible.cfg's callbacks (kubespray's profile_tasks) still
		// load.
		"ANSIBLE_CALLBACK_PLUGINS="+root+"/"+CallbackDir+":~/.ansible/plugins/callback:/usr/share/ansible/plugins/callback",
		"ANSIBLE_HOST_KEY_CHECKING=True",
		// No ANSIBLE_SSH_PASSWORD_MECHANISM: 2.19's default, ssh_askpass,
		// starts ssh in a session of its own (setsid), which a stop reaches
		// through the run's marker in its command line (groupGuard,
		// remoteScript). With sshpass, 2.19 reads a module's failure as
		// sshpass's (sshpass passes on the remote command's exit code):
		// every failed task was UNREACHABLE, "Task failed: sshpass error:",
		// exit 3 with the module's message lost (ansible/ansible#86961;
		// TestInterruptedApply under 2.19).
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
		// Ansible leaves flushing to Python: without this the events
		// arrive in 4 KiB bursts instead of live.
		"PYTHONUNBUFFERED=1",
	)
	if opts.Venv != "" {
		// PATH gets its bin/ where the environment is put together (the
		// login's PATH is known there only): withVenvPath, remoteScript.
		env = append(env, "VIRTUAL_ENV="+opts.Venv)
	}
	return env
}

// withVenvPath puts venv's bin/ first in env's PATH (env: NAME=value).
func withVenvPath(env []string, venv string) []string {
	if venv == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+venv+"/bin:"+path)
}

// A run's errors, with their exit codes (package fail).
var (
	// ErrHostFailed: a task failed on at least one host.
	ErrHostFailed = fail.Sentinel(fail.HostFailed, "ansible task failed")
	// ErrUnreachable: ansible could not connect to at least one host.
	ErrUnreachable = fail.Sentinel(fail.Unreachable, "ansible host unreachable")
	// ErrPlaybook: ansible-playbook failed before or outside host tasks
	// (syntax error, bad option, missing file, crash), with no host to
	// blame: heatsible's bug, Internal.
	ErrPlaybook = fail.Sentinel(fail.Internal, "ansible-playbook failed")
)

// HostsError names the hosts that failed or were unreachable.
type HostsError struct {
	// Kind is ErrHostFailed or ErrUnreachable.
	Kind error
	// Hosts are the affected hosts, sorted.
	Hosts []string
	// ExitCode is ansible-playbook's exit status.
	ExitCode int
	// Messages maps a host to the message of its first failure.
	Messages map[string]string
}

// Error lists the hosts and what went wrong on each.
func (e *HostsError) Error() string {
	what := "tasks failed on"
	if errors.Is(e.Kind, ErrUnreachable) {
		what = "could not reach"
	}
	var parts []string
	for _, h := range e.Hosts {
		if m := e.Messages[h]; m != "" {
			parts = append(parts, fmt.Sprintf("%s (%s)", h, truncate(explainSSH(m, h), 700)))
		} else {
			parts = append(parts, h)
		}
	}
	return fmt.Sprintf("ansible %s %d host(s): %s", what, len(e.Hosts), strings.Join(parts, ", "))
}

// Unwrap returns Kind.
func (e *HostsError) Unwrap() error { return e.Kind }

// PlaybookError is a non-zero exit that no host result explains.
type PlaybookError struct {
	ExitCode int
	// Stderr is the tail of ansible-playbook's stderr, masked.
	Stderr string
}

// Error quotes the end of stderr, where ansible says what went wrong.
func (e *PlaybookError) Error() string {
	msg := fmt.Sprintf("ansible-playbook exited with status %d", e.ExitCode)
	if s := lastLines(e.Stderr, 5); s != "" {
		msg += ": " + s
	}
	return msg
}

// Unwrap returns ErrPlaybook.
func (e *PlaybookError) Unwrap() error { return ErrPlaybook }

// Result is what one ansible-playbook run did.
type Result struct {
	// Command is the argv that ran (no secrets in it by construction).
	Command []string
	// Dir is where it ran; StagingDir is the remote bundle (removed).
	Dir        string
	StagingDir string
	// ExitCode is ansible-playbook's: 0 ok, 2 host failed, 4 unreachable
	// (or parser error), others; -1 if it did not finish.
	ExitCode int
	// Recap is per host. RecapComplete is false when the run ended before
	// ansible printed its stats; Recap is then counted from the events.
	Recap         map[string]HostRecap
	RecapComplete bool
	// Events are all events, in order.
	Events []Event
	// Stdout holds stdout lines that were not events (e.g. -v output).
	Stdout []string
	// Stderr is the tail of stderr (up to 64 KiB), masked.
	Stderr string
	// Started and Finished bracket the run.
	Started, Finished time.Time
	// Collected maps each file of PlaybookOptions.Collect that the run wrote to
	// its content. It may hold secrets: it is never marshalled, logged or
	// recorded (the caller takes what it needs and drops the map).
	Collected map[string][]byte `json:"-"`
}

// MaxCollect is the largest file PlaybookOptions.Collect reads back.
const MaxCollect = 1 << 20

// checkCollect refuses a Collect path that is not a plain relative path
// inside the bundle, or that names one of the bundle's own files.
func checkCollect(b *Bundle, rels []string) error {
	for _, rel := range rels {
		clean := path.Clean(rel)
		if clean != rel || path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || b.reserved(clean) {
			return fmt.Errorf("collect %q: want a relative path inside the bundle, outside its own files", rel)
		}
	}
	return nil
}

// FailedHosts returns the hosts with failed tasks, sorted.
func (r *Result) FailedHosts() []string {
	return r.hosts(func(h HostRecap) bool { return h.Failed > 0 })
}

// UnreachableHosts returns the hosts ansible could not reach, sorted.
func (r *Result) UnreachableHosts() []string {
	return r.hosts(func(h HostRecap) bool { return h.Unreachable > 0 })
}

// ChangedHosts returns the hosts where something changed (or would have,
// in check mode), sorted.
func (r *Result) ChangedHosts() []string {
	return r.hosts(func(h HostRecap) bool { return h.Changed > 0 })
}

func (r *Result) hosts(f func(HostRecap) bool) []string {
	var hs []string
	for h, rc := range r.Recap {
		if f(rc) {
			hs = append(hs, h)
		}
	}
	sort.Strings(hs)
	return hs
}

// Err maps the exit code and recap to the typed errors (nil on exit 0).
func (r *Result) Err() error {
	if r.ExitCode == 0 {
		return nil
	}
	firstMsg := func(st Status) map[string]string {
		m := map[string]string{}
		for _, e := range r.Events {
			if e.Kind == KindResult && e.Status == st && m[e.Host] == "" {
				m[e.Host] = e.Task + ": " + e.Msg
			}
		}
		return m
	}
	// ansible-core 2.19 reports a host key it cannot verify, with a
	// password login, as a failed task, not an unreachable host: it is
	// one, for the exit code and the message.
	hostKey := map[string]string{}
	for _, e := range r.Events {
		if e.Kind == KindResult && e.Status == StatusFailed && hostKeyRefusal(e.Msg) && hostKey[e.Host] == "" {
			hostKey[e.Host] = e.Task + ": " + e.Msg
		}
	}
	var failed, unreachable []string
	for _, h := range r.FailedHosts() {
		if hostKey[h] == "" {
			failed = append(failed, h)
		}
	}
	unreachable = r.UnreachableHosts()
	unreachableMsg := firstMsg(StatusUnreachable)
	for h, m := range hostKey {
		if !slices.Contains(unreachable, h) {
			unreachable = append(unreachable, h)
			unreachableMsg[h] = m
		}
	}
	sort.Strings(unreachable)
	var errs []error
	if len(failed) > 0 {
		errs = append(errs, &HostsError{Kind: ErrHostFailed, Hosts: failed, ExitCode: r.ExitCode, Messages: firstMsg(StatusFailed)})
	}
	if len(unreachable) > 0 {
		errs = append(errs, &HostsError{Kind: ErrUnreachable, Hosts: unreachable, ExitCode: r.ExitCode, Messages: unreachableMsg})
	}
	switch len(errs) {
	case 0:
		return &PlaybookError{ExitCode: r.ExitCode, Stderr: r.Stderr}
	case 1:
		return errs[0]
	}
	// Failed and unreachable hosts: the run could not reach them all, and
	// that is its exit code.
	return fail.With(fail.Unreachable, errors.Join(errs...))
}

// refusal tags err (a run's error) with exit code Refused when a role
// refused for safety on purpose: a task failed with the roles' refusal
// marker (the heatsible.nfv.refuse action, e.g. pv_register with a Bound PV),
// whatever the task is called, so that a hook can tell "fix the cluster
// first" from "broken". A task that merely fails stays HostFailed,
// whatever its name.
func refusal(res *Result, err error) error {
	if err == nil || res == nil {
		return err
	}
	for _, e := range res.Events {
		if e.Kind == KindResult && e.Refused {
			return fail.With(fail.Refused, err)
		}
	}
	return err
}

// run is the state shared by both runners while output streams in.
type run struct {
	res    *Result
	parser *eventParser
	out    *lineWriter
	errw   *lineWriter
	mu     sync.Mutex
	tail   []byte
}

const stderrTail = 64 << 10

func newRun(b *Bundle, argv []string, dir string, opts PlaybookOptions) *run {
	r := &run{res: &Result{Command: argv, Dir: dir, ExitCode: -1, Started: time.Now()}}
	r.parser = newEventParser(b.masker, opts.OnEvent)
	r.out = newLineWriter(r.parser.line)
	log := opts.logger()
	r.errw = newLineWriter(func(line string) {
		line = b.masker.Mask(line)
		if opts.Stderr != nil {
			_, _ = io.WriteString(opts.Stderr, line+"\n")
		}
		log.Debug("ansible-playbook stderr", "line", line)
		r.mu.Lock()
		r.tail = append(r.tail, line+"\n"...)
		if len(r.tail) > stderrTail {
			r.tail = r.tail[len(r.tail)-stderrTail:]
		}
		r.mu.Unlock()
	})
	return r
}

// finish flushes the streams and fills in the result.
func (r *run) finish(exitCode int) *Result {
	r.out.Close()
	r.errw.Close()
	r.res.ExitCode = exitCode
	r.res.Finished = time.Now()
	r.res.Events, r.res.Recap, r.res.RecapComplete, r.res.Stdout = r.parser.result()
	r.mu.Lock()
	r.res.Stderr = string(r.tail)
	r.mu.Unlock()
	return r.res
}

// lineWriter calls fn for every complete line written to it; lines may be
// arbitrarily long (a jsonl event with a big diff is one line).
type lineWriter struct {
	mu  sync.Mutex
	fn  func(string)
	buf []byte
}

func newLineWriter(fn func(string)) *lineWriter { return &lineWriter{fn: fn} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(w.buf[:i]), "\r")
		w.buf = w.buf[i+1:]
		w.fn(line)
	}
	return len(p), nil
}

// Close delivers a last unterminated line.
func (w *lineWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.fn(string(w.buf))
		w.buf = nil
	}
}

// explainSSH turns ssh's own failure text, which Ansible passes on with its
// banner, into one line an operator can act on. fallback names the host
// when the text does not. Any other message becomes one line too: its
// non-empty lines joined with " | " (a command's first line is often only
// a heading, e.g. kubeadm's "[preflight] Some fatal errors occurred:",
// with the error itself on the next line).
func explainSSH(msg, fallback string) string {
	switch {
	case hostKeyRefusal(msg):
		return fmt.Sprintf("host key of %s could not be verified: it is not in known_hosts, or it CHANGED (a rebuilt VM, or a man in the middle; ansible-core 2.19 does not say which when it logs in with a password); check its fingerprint on the VM's console, then fix --known-hosts", fallback)
	case strings.Contains(msg, "REMOTE HOST IDENTIFICATION HAS CHANGED"),
		strings.Contains(msg, "Host key verification failed"):
		host := sshHost(msg)
		if host == "" {
			host = fallback
		}
		if strings.Contains(msg, "HAS CHANGED") {
			return fmt.Sprintf("host key of %s CHANGED: it is not the key in known_hosts (a rebuilt VM, or a man in the middle); check its fingerprint on the VM's console, then fix --known-hosts", host)
		}
		return fmt.Sprintf("host key of %s could not be verified: it is not in known_hosts; check its fingerprint on the VM's console, then add it to --known-hosts", host)
	}
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(strings.Trim(l, "@\r")); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " | ")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}

// hostKeyRefusal reports whether msg is ansible-core 2.19's refusal of a
// host key it cannot verify for a password login (its ssh plugin raises it
// from "Host key verification failed", where older versions reported the
// host unreachable with ssh's own words).
func hostKeyRefusal(msg string) bool {
	return strings.Contains(msg, "Using a SSH password instead of a key is not possible because Host Key checking is enabled")
}

// sshHost finds the address a host key failure is about: in Ansible's
// banner for a module ("remote host \"ADDR\""), else in ssh's own text
// ("Host key for ADDR has changed", "host key is known for ADDR and"), which
// is all there is for raw tasks.
func sshHost(msg string) string {
	if i := strings.Index(msg, "remote host \""); i >= 0 {
		host, _, _ := strings.Cut(msg[i+len("remote host \""):], "\"")
		return host
	}
	for _, marker := range []string{"Host key for ", "host key is known for "} {
		if i := strings.Index(msg, marker); i >= 0 {
			if f := strings.Fields(msg[i+len(marker):]); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// Package ansible stages a per-run Ansible bundle (inventory, playbook,
// roles, collections, vars, a 0600 secrets file, known_hosts, a tuned ansible.cfg), runs
// ansible-playbook on it locally or on the Ansible host over SSH, and turns
// the output of heatsible's own stdout callback (CallbackName, staged into
// every bundle) into live events and a per-host recap.
//
// Masking is package redact's job: a bundle holds a redact.Masker that
// knows every form of every secret it stages, and every event, message and
// diff is masked with it before anyone sees it.
//
// Secrets reach ansible-playbook only through the 0600 secrets file passed
// with "-e @file": never argv, never the environment (go-ansible prints the
// environment it was given in its error messages), never the inventory.
package ansible

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heatsible/heatsible/internal/redact"
)

// Bundle layout, relative to the bundle's root.
const (
	InventoryDir = "inventory"
	PlaybookFile = "playbook.yml"
	RolesDir     = "roles"
	// CollectionsDir is the bundle's collections path entry: a collection
	// "ns.name" of BundleSpec.Collections is laid at
	// collections/ansible_collections/ns/name.
	CollectionsDir = "collections"
	GroupVarsDir   = InventoryDir + "/group_vars"
	SecretsFile    = "secrets.yml"
	ConfigFile     = "ansible.cfg"
	KnownHostsFile = "known_hosts"
	// MarkerFile identifies a heatsible staging directory and is held
	// locked (flock) while ansible-playbook runs in it, so CleanupStale can
	// tell abandoned directories from live ones.
	MarkerFile = ".heatsible-run"
	// TmpDir is Ansible's local_tmp, inside the bundle so that it goes
	// away with it.
	TmpDir = ".ansible-tmp"
	// CallbackDir holds heatsible's stdout callback (CallbackName).
	CallbackDir = "callback_plugins"
)

// CallbackName is heatsible's stdout callback, which every ansible-playbook
// heatsible runs uses (heatsible's plays and kubespray's): one JSON object
// per event (events.go). It is heatsible's own, staged into every bundle,
// so that it needs nothing beyond ansible-core and runs under the Ansible
// of any kubespray release (callback_plugins/heatsible_jsonl.py says why).
const CallbackName = "heatsible_jsonl"

//go:embed callback_plugins/heatsible_jsonl.py
var callbackPlugin []byte

// Defaults for BundleSpec.
const (
	DefaultForks   = 50
	DefaultTimeout = 30
)

// BundleSpec is everything a run needs, as produced by the caller.
type BundleSpec struct {
	// Cluster and Operation name the run; they appear in staging directory
	// names ("heatsible-<cluster>-<op>-<random>") and the marker file.
	Cluster   string
	Operation string
	// BaseDir is where the local bundle directory is created
	// (os.TempDir() if empty).
	BaseDir string

	// Inventory is the inventory file's content; InventoryName its file
	// name under inventory/ ("hosts.yml" if empty; ".ini" selects INI).
	Inventory     []byte
	InventoryName string
	// Playbook is playbook.yml. It may be empty when the run uses a
	// playbook outside the bundle (PlaybookOptions.Playbooks, e.g. kubespray's).
	Playbook []byte
	// Roles is copied to roles/ (its top level holds the role directories).
	Roles fs.FS
	// Collections maps an Ansible collection's name ("heatsible.nfv") to
	// its tree (galaxy.yml at its root), copied to
	// collections/ansible_collections/<namespace>/<name>: the first entry
	// of the run's collections_path, so that a collection of the same name
	// installed on the Ansible host never shadows it.
	Collections map[string]fs.FS
	// GroupVars maps a group name ("all", "nfs_server", ...) to the content
	// of inventory/group_vars/<group>.yml. Nothing secret goes here.
	GroupVars map[string][]byte
	// Secrets is secrets.yml (mode 0600), passed with -e @secrets.yml: the
	// passwords that group vars reference, e.g.
	// "{{ heatsible_secrets.master_password }}".
	Secrets []byte
	// SecretValues are masked in events, output and records, on top of
	// every string value of Secrets at least redact.MinLeafSecret bytes
	// long; every form of each (internal/redact) is masked.
	SecretValues []string
	// VarsFiles are more vars files (file name -> content), written 0600
	// at the bundle's top like Secrets, for runs that pass one instead of
	// Secrets (PlaybookOptions.VarsFile), e.g. what heatsible hands kubespray.
	// Their values are not masked as such (most are not secret): list the
	// secrets among them in SecretValues, or in Secrets too.
	VarsFiles map[string][]byte
	// Files are extra files (relative path -> content, mode 0644), e.g.
	// prepared PV manifests under manifests/.
	Files map[string][]byte
	// KnownHosts is the operator's known_hosts; the bundle's known_hosts,
	// which ansible's ssh uses strictly, holds only its lines for the hosts
	// in KnownHostsFor (see SelectKnownHosts).
	KnownHosts []byte
	// KnownHostsFor are the addresses the run connects to ("host",
	// "host:port" or "[host]:port"; port 22 if none). None: the bundle's
	// known_hosts is empty and every connection fails its host key check.
	KnownHostsFor []string

	// Forks is ansible's parallelism (DefaultForks if zero).
	Forks int
	// Timeout is the SSH connect timeout in seconds (DefaultTimeout if 0).
	Timeout int
	// Config adds or overrides ansible.cfg settings: section -> key ->
	// value (e.g. {"defaults": {"force_valid_group_names": "ignore"}}).
	Config map[string]map[string]string
}

// Bundle is a staged run directory. Close removes it.
type Bundle struct {
	// Dir is the bundle's absolute local path (mode 0700).
	Dir string

	spec    BundleSpec
	invName string
	masker  *redact.Masker
	created time.Time

	// lock is the marker file, held locked (flock) from the bundle's
	// creation to its removal: SweepStale leaves a held bundle alone.
	mu   sync.Mutex
	lock *os.File
}

var (
	groupNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	varsFileRE  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\.yml$`)
	nameRE      = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
	// collectionRE is a collection's name, namespace.name (Galaxy's rules:
	// lower-case letters, digits and underscores, not starting with a digit).
	collectionRE = regexp.MustCompile(`^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)$`)
)

// NewBundle writes spec into a fresh directory (os.MkdirTemp, 0700).
func NewBundle(spec BundleSpec) (*Bundle, error) {
	invName := spec.InventoryName
	if invName == "" {
		invName = "hosts.yml"
	}
	switch path.Ext(invName) {
	case ".yml", ".yaml", ".ini", ".json":
	default:
		return nil, fmt.Errorf("inventory name %q: want a .yml, .yaml, .ini or .json file", invName)
	}
	if strings.Contains(invName, "/") {
		return nil, fmt.Errorf("inventory name %q: want a plain file name", invName)
	}
	if len(spec.Inventory) == 0 {
		return nil, errors.New("staging bundle: empty inventory")
	}
	if spec.Forks == 0 {
		spec.Forks = DefaultForks
	}
	if spec.Timeout == 0 {
		spec.Timeout = DefaultTimeout
	}
	masker, err := redact.FromYAML(spec.Secrets, spec.SecretValues)
	if err != nil {
		return nil, err
	}
	base := spec.BaseDir
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, StagingPrefix(spec.Cluster, spec.Operation))
	if err != nil {
		return nil, fmt.Errorf("creating bundle directory: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &Bundle{Dir: dir, spec: spec, invName: invName, masker: masker, created: time.Now().UTC()}
	if err := b.createMarker(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("staging bundle in %s: %w", dir, err)
	}
	if err := b.write(); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("staging bundle in %s: %w", dir, err)
	}
	return b, nil
}

// createMarker writes the marker file first of all and keeps it locked
// until Close: it is locked before it names the cluster, so SweepStale
// never takes a bundle being staged for abandoned (it reads an empty
// marker, or fails to lock it).
func (b *Bundle) createMarker() error {
	if err := os.Chmod(b.Dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(b.Dir, MarkerFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return fmt.Errorf("locking %s: %w", MarkerFile, err)
	}
	marker, _ := json.Marshal(map[string]any{
		"cluster": b.spec.Cluster, "operation": b.spec.Operation,
		"created": b.created.Format(time.RFC3339), "pid": os.Getpid(),
	})
	if _, err := f.Write(append(marker, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	b.lock = f
	return nil
}

// StagingPrefix is the directory name prefix of a run's bundle and remote
// staging directory: "heatsible-<cluster>-<op>-".
func StagingPrefix(cluster, op string) string {
	clean := func(s, def string) string {
		s = strings.Trim(nameRE.ReplaceAllString(s, "_"), "._-")
		if s == "" {
			return def
		}
		if len(s) > 40 {
			s = s[:40]
		}
		return s
	}
	return "heatsible-" + clean(cluster, "cluster") + "-" + clean(op, "run") + "-"
}

func (b *Bundle) write() error {
	if err := os.Chmod(b.Dir, 0o700); err != nil {
		return err
	}
	// Secrets first, created 0600 (never wider, not even briefly).
	if err := writeFile(b.Dir, SecretsFile, orEmptyMap(b.spec.Secrets), 0o600); err != nil {
		return err
	}
	for name, data := range b.spec.VarsFiles {
		if !varsFileRE.MatchString(name) || b.reserved(name) {
			return fmt.Errorf("vars file %q: want a plain .yml file name of its own", name)
		}
		if err := writeFile(b.Dir, name, orEmptyMap(data), 0o600); err != nil {
			return err
		}
	}
	if err := writeFile(b.Dir, InventoryDir+"/"+b.invName, b.spec.Inventory, 0o644); err != nil {
		return err
	}
	if len(b.spec.Playbook) > 0 {
		if err := writeFile(b.Dir, PlaybookFile, b.spec.Playbook, 0o644); err != nil {
			return err
		}
	}
	groups := make([]string, 0, len(b.spec.GroupVars))
	for g := range b.spec.GroupVars {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		if !groupNameRE.MatchString(g) {
			return fmt.Errorf("group_vars: invalid group name %q", g)
		}
		if err := writeFile(b.Dir, GroupVarsDir+"/"+g+".yml", b.spec.GroupVars[g], 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(b.Dir, RolesDir), 0o755); err != nil {
		return err
	}
	if b.spec.Roles != nil {
		if err := copyFS(b.spec.Roles, filepath.Join(b.Dir, RolesDir)); err != nil {
			return fmt.Errorf("copying roles: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(b.Dir, CollectionsDir, "ansible_collections"), 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(b.spec.Collections))
	for name := range b.spec.Collections {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := collectionRE.FindStringSubmatch(name)
		if m == nil {
			return fmt.Errorf("collection %q: want namespace.name (lower-case letters, digits, underscores)", name)
		}
		dst := filepath.Join(b.Dir, CollectionsDir, "ansible_collections", m[1], m[2])
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := copyFS(b.spec.Collections[name], dst); err != nil {
			return fmt.Errorf("copying collection %s: %w", name, err)
		}
	}
	for rel, data := range b.spec.Files {
		clean := path.Clean(rel)
		if _, vars := b.spec.VarsFiles[clean]; vars || path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || b.reserved(clean) {
			return fmt.Errorf("extra file %q: want a relative path outside the bundle's own files", rel)
		}
		if err := writeFile(b.Dir, clean, data, 0o644); err != nil {
			return err
		}
	}
	if err := writeFile(b.Dir, KnownHostsFile, SelectKnownHosts(b.spec.KnownHosts, b.spec.KnownHostsFor), 0o644); err != nil {
		return err
	}
	if err := writeFile(b.Dir, CallbackDir+"/"+CallbackName+".py", callbackPlugin, 0o644); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(b.Dir, TmpDir), 0o700); err != nil {
		return err
	}
	return writeFile(b.Dir, ConfigFile, b.Config(b.Dir), 0o644)
}

func (b *Bundle) reserved(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case InventoryDir, RolesDir, CollectionsDir, SecretsFile, ConfigFile, KnownHostsFile, MarkerFile, TmpDir, PlaybookFile, CallbackDir:
		return true
	}
	return false
}

// orEmptyMap keeps "-e @secrets.yml" valid when there are no secrets
// (ansible rejects an empty extra-vars file).
func orEmptyMap(b []byte) []byte {
	if len(strings.TrimSpace(string(b))) == 0 {
		return []byte("{}\n")
	}
	return b
}

func writeFile(root, rel string, data []byte, perm os.FileMode) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil { // umask-proof
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func copyFS(src fs.FS, dst string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, filepath.FromSlash(p)), 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return writeFile(dst, p, data, 0o644)
	})
}

// Config renders ansible.cfg for a bundle located at root (the local Dir,
// or the staging directory on the Ansible host).
//
// Choices: the bundle's collections first on collections_path, then
// Ansible's default places (~/.ansible/collections, where ansible-galaxy
// installs, and /usr/share/ansible/collections; the collections of
// Python's sys.path, a venv's or Debian's ansible package's, are searched
// after these whatever the setting); heatsible's stdout callback (one JSON object per event,
// streamed);
// smart gathering (facts gathered once per host per run, however many plays
// address it; plays that say gather_facts: false are honoured); pipelining
// and a 60s ControlPersist (fewer SSH round trips per task); strict host key
// checking against the bundle's known_hosts, first on ssh's command line
// (sshArgs).
func (b *Bundle) Config(root string) []byte {
	settings := map[string]map[string]string{
		"defaults": {
			"roles_path": root + "/" + RolesDir,
			// collections_path: the name every ansible-core since 2.10
			// reads (2.14-2.18 also read collections_paths, 2.16-2.18
			// with a deprecation warning, which 2.19 no longer does:
			// TestConfigReadByAnsible). The playbook's own collections/ (this
			// directory, as playbook.yml is beside it) comes first anyway.
			"collections_path":    root + "/" + CollectionsDir + ":~/.ansible/collections:/usr/share/ansible/collections",
			"local_tmp":           root + "/" + TmpDir,
			"forks":               fmt.Sprint(b.spec.Forks),
			"timeout":             fmt.Sprint(b.spec.Timeout),
			"host_key_checking":   "True",
			"gathering":           "smart",
			"stdout_callback":     CallbackName,
			"callback_plugins":    root + "/" + CallbackDir,
			"nocolor":             "True",
			"retry_files_enabled": "False",
			"interpreter_python":  "auto_silent",
			"show_custom_stats":   "False",
			// Lookup results (PV manifests) stay data: allow_unsafe_lookups
			// keeps its default, False, which nothing can change (this is
			// the only ansible.cfg read, and the environment is clean). It
			// is not pinned here: ansible-core 2.19 deprecates the setting
			// (lookups are always untrusted there) and warned on every run.
		},
		"ssh_connection": {
			"pipelining": "True",
			"ssh_args":   sshArgs(root),
		},
	}
	for sec, kv := range b.spec.Config {
		if settings[sec] == nil {
			settings[sec] = map[string]string{}
		}
		for k, v := range kv {
			settings[sec][k] = v
		}
	}
	var sb strings.Builder
	sb.WriteString("# Generated by heatsible for one run; removed with the bundle.\n")
	secs := make([]string, 0, len(settings))
	for s := range settings {
		secs = append(secs, s)
	}
	sort.Slice(secs, func(i, j int) bool { // [defaults] first
		if (secs[i] == "defaults") != (secs[j] == "defaults") {
			return secs[i] == "defaults"
		}
		return secs[i] < secs[j]
	})
	for _, s := range secs {
		fmt.Fprintf(&sb, "\n[%s]\n", s)
		keys := make([]string, 0, len(settings[s]))
		for k := range settings[s] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&sb, "%s = %s\n", k, settings[s][k])
		}
	}
	return []byte(sb.String())
}

// Spec returns the spec the bundle was made from.
func (b *Bundle) Spec() BundleSpec { return b.spec }

// InventoryPath returns the inventory directory (with its group_vars) for a
// bundle located at root.
func (b *Bundle) InventoryPath(root string) string { return root + "/" + InventoryDir }

// Masker returns the bundle's masker: every form of every secret value.
func (b *Bundle) Masker() *redact.Masker { return b.masker }

// Mask replaces every form of every secret value in s with redact.Masked.
func (b *Bundle) Mask(s string) string { return b.masker.Mask(s) }

// MaskedSecrets returns secrets.yml with every value replaced by redact.Masked,
// for run records.
func (b *Bundle) MaskedSecrets() ([]byte, error) { return redact.MaskYAML(b.spec.Secrets) }

// Close removes the bundle directory, then lets its marker's lock go (in
// that order: a bundle that is still there is never unlocked while its run
// lives). It may be called more than once, also concurrently (an exit at
// once on a second signal removes the bundle while the run's own cleanup
// may be doing the same).
func (b *Bundle) Close() error {
	if b == nil || b.Dir == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := os.RemoveAll(b.Dir); err != nil {
		return fmt.Errorf("removing bundle %s: %w", b.Dir, err)
	}
	if b.lock != nil {
		_ = b.lock.Close()
		b.lock = nil
	}
	return nil
}

// SweepStale removes the local bundles of cluster under baseDir
// (os.TempDir() if empty) that no live heatsible holds: those of runs that
// were killed (SIGKILL, the OOM killer, a crash in another goroutine) or
// that exited at once on a second signal before removing theirs. Each
// bundle's marker is locked from its creation to its removal (see
// createMarker), so a bundle whose marker this process can lock has no
// live owner. Only directories of this user named like the cluster's
// bundles, whose marker names exactly this cluster, are considered. It
// returns the directories removed.
func SweepStale(baseDir, cluster string) ([]string, error) {
	base := baseDir
	if base == "" {
		base = os.TempDir()
	}
	prefix := strings.TrimSuffix(StagingPrefix(cluster, "x"), "x-") // "heatsible-<cluster>-"
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("looking for stale run bundles in %s: %w", base, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) { // a symlink is not a directory here
			continue
		}
		dir := filepath.Join(base, e.Name())
		stale, unlock := staleBundle(dir, cluster)
		if !stale {
			continue
		}
		err := os.RemoveAll(dir)
		unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("removing the stale run bundle %s: %w", dir, err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// staleBundle reports whether dir is an abandoned bundle of cluster; when
// it is, its marker stays locked until unlock is called.
func staleBundle(dir, cluster string) (stale bool, unlock func()) {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false, nil
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
		return false, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, MarkerFile), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, nil // no marker: not a bundle, or one being created
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		_ = f.Close()
		return false, nil
	}
	var m struct {
		Cluster string `json:"cluster"`
	}
	if err := json.NewDecoder(f).Decode(&m); err != nil || m.Cluster != cluster {
		_ = f.Close()
		return false, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false, nil // a live run holds it
	}
	return true, func() { _ = f.Close() }
}

package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError says why a host key was refused and what to check. It is
// never wrapped in ErrUnreachable: the host answered, but it may not be the
// host we think it is.
type HostKeyError struct {
	// Host is the "host:port" dialled.
	Host string
	// KeyType is the offered key's type, e.g. "ssh-ed25519".
	KeyType string
	// Fingerprint is the offered key's SHA256 fingerprint ("SHA256:...").
	Fingerprint string
	// KnownHostsFile is the file that was consulted.
	KnownHostsFile string
	// Changed is true when known_hosts holds a different key for the host.
	Changed bool
	// Revoked is true when the offered key is marked @revoked.
	Revoked bool
	// Known are the file:line locations of the keys known_hosts expected.
	Known []string
	// Line is the first known_hosts line that conflicts (0 if unknown).
	Line int
	// Wants are the keys known_hosts holds for the host (Changed only), one
	// per line: the same key may stand on several lines (host name, address,
	// [host]:port), and every one of them must be fixed.
	Wants []KnownKey
	// Err is the underlying knownhosts error, if any.
	Err error
}

// KnownKey is one known_hosts line's key for a host.
type KnownKey struct {
	File        string
	Line        int
	Type        string
	Fingerprint string
}

// Error explains what happened and what the operator has to verify.
func (e *HostKeyError) Error() string {
	host, port, _ := net.SplitHostPort(e.Host)
	switch {
	case e.Revoked:
		return fmt.Sprintf("the host key of %s (%s %s) is marked @revoked in %s: refusing to connect",
			e.Host, e.KeyType, e.Fingerprint, strings.Join(e.Known, ", "))
	case e.Changed && len(e.Wants) > 0:
		return fmt.Sprintf("the host key of %s changed: possible man-in-the-middle or a rebuilt VM; verify %s (%s) out of band and fix %s (%s)",
			e.Host, e.Fingerprint, e.KeyType, wantLines(e.Wants), wantKeys(e.Wants))
	case e.Changed:
		return fmt.Sprintf("the host key of %s changed: possible man-in-the-middle or a rebuilt VM; verify %s (%s) out of band and fix line %d of %s (known: %s)",
			e.Host, e.Fingerprint, e.KeyType, e.Line, e.KnownHostsFile, strings.Join(e.Known, ", "))
	default:
		scan := "ssh-keyscan"
		if port != "" && port != "22" {
			scan += " -p " + port
		}
		if t := keyscanType(e.KeyType); t != "" {
			scan += " -t " + t
		}
		scan += " " + host
		return fmt.Sprintf("the host key of %s is not in %s: add it with %q after verifying the fingerprint %s (%s) out of band",
			e.Host, e.KnownHostsFile, scan+" >> "+e.KnownHostsFile, e.Fingerprint, e.KeyType)
	}
}

// wantLines names every line to fix, per file: "line 3 of F",
// "lines 1, 2 and 5 of F".
func wantLines(wants []KnownKey) string {
	var files []string
	lines := map[string][]string{}
	for _, w := range wants {
		if _, ok := lines[w.File]; !ok {
			files = append(files, w.File)
		}
		lines[w.File] = append(lines[w.File], strconv.Itoa(w.Line))
	}
	parts := make([]string, 0, len(files))
	for _, f := range files {
		l := lines[f]
		if len(l) == 1 {
			parts = append(parts, "line "+l[0]+" of "+f)
			continue
		}
		parts = append(parts, "lines "+strings.Join(l[:len(l)-1], ", ")+" and "+l[len(l)-1]+" of "+f)
	}
	return strings.Join(parts, "; ")
}

// wantKeys names each distinct key those lines hold, once.
func wantKeys(wants []KnownKey) string {
	var keys []string
	seen := map[string]bool{}
	for _, w := range wants {
		k := w.Type + " " + w.Fingerprint
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return "known: " + strings.Join(keys, ", ")
}

// Unwrap returns the knownhosts error.
func (e *HostKeyError) Unwrap() error { return e.Err }

func keyscanType(keyType string) string {
	switch {
	case strings.HasPrefix(keyType, "ssh-ed25519"):
		return "ed25519"
	case strings.HasPrefix(keyType, "ssh-rsa"), strings.HasPrefix(keyType, "rsa-"):
		return "rsa"
	case strings.HasPrefix(keyType, "ecdsa-"):
		return "ecdsa"
	}
	return ""
}

type hostKeyChecker struct {
	file     string
	hostport string
	cb       ssh.HostKeyCallback
	err      error // the *HostKeyError the last callback returned
}

// newHostKeyChecker loads known_hosts; a missing file counts as empty so
// that the caller gets the "unknown host, add it with ..." advice.
func newHostKeyChecker(file, host string, port int) (*hostKeyChecker, error) {
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("locating known_hosts: %w", err)
		}
		file = filepath.Join(home, ".ssh", "known_hosts")
	}
	h := &hostKeyChecker{file: file, hostport: net.JoinHostPort(host, strconv.Itoa(port))}
	cb, err := knownhosts.New(file)
	if errors.Is(err, os.ErrNotExist) {
		cb, err = knownhosts.New(os.DevNull)
	}
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts %s: %w", file, err)
	}
	h.cb = cb
	return h, nil
}

func (h *hostKeyChecker) callback(hostname string, remote net.Addr, key ssh.PublicKey) error {
	err := h.cb(hostname, remote, key)
	if err == nil {
		return nil
	}
	he := &HostKeyError{
		Host:           h.hostport,
		KeyType:        key.Type(),
		Fingerprint:    ssh.FingerprintSHA256(key),
		KnownHostsFile: h.file,
		Err:            err,
	}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		he.Revoked = true
		he.Known = []string{fmt.Sprintf("%s:%d", re.Revoked.Filename, re.Revoked.Line)}
		he.Line = re.Revoked.Line
	case errors.As(err, &ke) && len(ke.Want) > 0:
		he.Changed = true
		he.Line = ke.Want[0].Line
		for _, w := range ke.Want {
			he.Known = append(he.Known, fmt.Sprintf("%s:%d %s %s", w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key)))
			he.Wants = append(he.Wants, KnownKey{File: w.Filename, Line: w.Line, Type: w.Key.Type(), Fingerprint: ssh.FingerprintSHA256(w.Key)})
		}
	case errors.As(err, &ke):
		// unknown host
	default:
		return fmt.Errorf("checking host key of %s: %w", h.hostport, err)
	}
	h.err = he
	return he
}

// algorithms restricts the negotiated host key algorithms to the types
// known_hosts holds for this host. Without it the client may prefer, say,
// the server's ECDSA key while known_hosts only lists its ed25519 key, and
// report a perfectly fine host as "changed".
func (h *hostKeyChecker) algorithms(remote net.Addr) []string {
	err := h.cb(h.hostport, remote, probeKey{})
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		// Unknown host: prefer the key OpenSSH itself would record, so
		// the suggested "ssh-keyscan -t ..." matches the reported key.
		return []string{
			ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
			ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
		}
	}
	var algos []string
	seen := map[string]bool{}
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algos = append(algos, x)
			}
		}
	}
	for _, w := range ke.Want {
		switch t := w.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		case ssh.CertAlgoRSAv01:
			add(ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01)
		default:
			add(t)
		}
	}
	return algos
}

// probeKey is a key no known_hosts line can match; checking it yields the
// list of keys known for a host.
type probeKey struct{}

func (probeKey) Type() string                            { return "heatsible-probe" }
func (probeKey) Marshal() []byte                         { return []byte("heatsible-probe") }
func (probeKey) Verify(_ []byte, _ *ssh.Signature) error { return errors.New("probe key") }

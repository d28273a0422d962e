package ansible

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net"
	"strconv"
	"strings"
)

// SelectKnownHosts returns the lines of the known_hosts data that ssh
// would consult to connect to one of hosts ("host", "host:port" or
// "[host]:port"; port 22 if none), so that a run bundle carries what the
// run needs and not the operator's whole file (every host they ever
// reached). Decisions, following ssh's own reading of the file (sshd(8),
// "SSH_KNOWN_HOSTS FILE FORMAT"):
//   - plain host lists are matched like ssh does: "*" and "?" wildcards,
//     "!" negation, case-insensitively, "[host]:port" for other ports;
//   - hashed entries ("|1|salt|hash") are matched by hashing each target
//     name with the entry's salt;
//   - @cert-authority and @revoked lines are kept when their patterns
//     match a target: a revocation is kept with the keys it revokes, a CA
//     only for the hosts it may vouch for;
//   - comments, blank lines, lines with an unknown marker or too few
//     fields are dropped (ssh ignores them too).
//
// Kept lines are copied byte for byte.
func SelectKnownHosts(data []byte, hosts []string) []byte {
	var names []string
	for _, h := range hosts {
		if n := knownHostsName(h); n != "" {
			names = append(names, n)
		}
	}
	var out bytes.Buffer
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if strings.HasPrefix(f[0], "@") {
			if f[0] != "@cert-authority" && f[0] != "@revoked" {
				continue
			}
			f = f[1:]
		}
		if len(f) < 3 {
			continue
		}
		for _, n := range names {
			if knownHostsMatch(f[0], n) {
				out.WriteString(strings.TrimRight(string(line), "\r"))
				out.WriteByte('\n')
				break
			}
		}
	}
	return out.Bytes()
}

// knownHostsName is the name ssh looks up for addr: "host" for port 22,
// "[host]:port" otherwise, lower case.
func knownHostsName(addr string) string {
	host, port := addr, 22
	if h, p, err := net.SplitHostPort(addr); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil {
			return ""
		}
		host, port = h, n
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	}
	host = strings.ToLower(host)
	if host == "" {
		return ""
	}
	if port == 22 {
		return host
	}
	return "[" + host + "]:" + strconv.Itoa(port)
}

// knownHostsMatch reports whether the host field of a known_hosts line
// covers name.
func knownHostsMatch(field, name string) bool {
	if rest, ok := strings.CutPrefix(field, "|1|"); ok {
		salt64, hash64, ok := strings.Cut(rest, "|")
		if !ok {
			return false
		}
		salt, err1 := base64.StdEncoding.DecodeString(salt64)
		want, err2 := base64.StdEncoding.DecodeString(hash64)
		if err1 != nil || err2 != nil {
			return false
		}
		mac := hmac.New(sha1.New, salt)
		mac.Write([]byte(name))
		return hmac.Equal(mac.Sum(nil), want)
	}
	matched := false
	for _, p := range strings.Split(field, ",") {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if !wildcardMatch(strings.ToLower(p), name) {
			continue
		}
		if neg {
			return false
		}
		matched = true
	}
	return matched
}

// wildcardMatch matches s against pattern with ssh's "*" (any run) and "?"
// (any one character).
func wildcardMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if wildcardMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			pattern, s = pattern[1:], s[1:]
		default:
			if s == "" || pattern[0] != s[0] {
				return false
			}
			pattern, s = pattern[1:], s[1:]
		}
	}
	return s == ""
}

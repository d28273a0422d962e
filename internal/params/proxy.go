package params

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/heatsible/heatsible/internal/topology"
)

// The proxy settings leave heatsible for code it does not own, which runs
// them as root: kubespray writes http_proxy and https_proxy into a shell
// command (bootstrap_os: raw: echo 'Acquire::http::proxy "{{ http_proxy }}";'
// >> /etc/apt/apt.conf, and an unquoted "export http_proxy=..." on Fedora
// CoreOS), into apt.conf, yum.conf and systemd drop-ins
// (Environment="HTTP_PROXY=..." for containerd, cri-o, docker and the
// kubelet, where '%' starts a specifier); no_proxy reaches the same
// drop-ins; Tacker's install_external_lb.sh puts both proxies unquoted on a
// sudo command line (word splitting, globs) and into apt.conf. `!unsafe`
// stops Jinja, not a shell. So each has a grammar that none of those places
// can misread (docs/hostile-input.md, "What heatsible hands to code it does
// not own").

// proxyUserinfo is a proxy URL's user name or password: URL-safe
// characters that mean nothing to a shell, apt.conf or systemd (no '%':
// not even %-encoding, which systemd reads as a specifier).
var proxyUserinfo = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,256}$`)

// proxyURLProblem says what is wrong with a proxy URL, "" when it is
// http:// or https://, an optional user[:password]@, a host (a host name,
// an IPv4 address or a bracketed IPv6 address without a zone), an optional
// port and at most a '/'. The message never shows the user or the password,
// nor anything that might be part of them.
func proxyURLProblem(v string) string {
	const form = "write it as http://[user:password@]host[:port][/]"
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return "is not an http:// or https:// URL; " + form
	}
	// The user information ends at the last '@' (a password may hold '/',
	// '?' or '@' unescaped): everything before it is secret.
	hostPart := rest
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		user, pw, hasPW := strings.Cut(rest[:at], ":")
		if !proxyUserinfo.MatchString(user) || (hasPW && !proxyUserinfo.MatchString(pw)) {
			return "has a user name or password that is empty or holds a character other than ASCII letters, digits and . _ ~ - " +
				"(kubespray writes the URL into a shell command, apt.conf and systemd unit files as root, where quotes, $, ;, spaces and % change its meaning; " +
				"%-encoding is not taken either: systemd reads % as a specifier). Use a proxy account whose name and password have only these characters; the URL is not shown"
		}
		hostPart = rest[at+1:]
	}
	authority, tail := hostPart, ""
	if i := strings.IndexAny(hostPart, "/?#"); i >= 0 {
		authority, tail = hostPart[:i], hostPart[i:]
	}
	if tail != "" && tail != "/" {
		return fmt.Sprintf("has a path, query or fragment (%s); a proxy URL ends after its port, with at most a '/': %s", quote(tail), form)
	}
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.Index(authority, "]")
		if end < 0 {
			return fmt.Sprintf("has the host %s, an IPv6 address without its closing ']'; %s", quote(authority), form)
		}
		host, port = authority[1:end], authority[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return fmt.Sprintf("has %s after the IPv6 address; %s", quote(port), form)
		}
		port = strings.TrimPrefix(port, ":")
		a, err := netip.ParseAddr(strings.ReplaceAll(host, "%25", "%"))
		switch {
		case err != nil || !a.Is6():
			return fmt.Sprintf("has the host [%s], which is not an IPv6 address; %s", quote(host), form)
		case a.Zone() != "":
			return "has an IPv6 host with a zone (%25...); give the proxy's address without it"
		}
	} else {
		if i := strings.LastIndex(authority, ":"); i >= 0 {
			host, port = authority[:i], authority[i+1:]
		}
		if strings.Contains(host, ":") {
			return fmt.Sprintf("has the host %s: write an IPv6 address in brackets, http://[2001:db8::1]:3128", quote(host))
		}
		if a, err := netip.ParseAddr(host); (err != nil || !a.Is4()) && !topology.ValidHostname(host) {
			return fmt.Sprintf("has the host %s, which is not a host name or an IP address; %s", quote(host), form)
		}
	}
	if i := strings.LastIndex(authority, ":"); i >= 0 && !isPort(port) {
		return fmt.Sprintf("has the port %s, which is not a number from 1 to 65535; %s", quote(port), form)
	}
	return ""
}

// noProxyProblem says what is wrong with one entry of no_proxy, "" when it
// is "*", a host name or domain (optionally with a leading "." or "*."), an
// IP address without a zone or a CIDR, the host or IPv4 address optionally
// with ":port", an IPv6 address optionally as "[addr]:port".
func noProxyProblem(item string) string {
	switch {
	case item == "":
		return "has an empty entry (two commas in a row, or one at an end); remove it"
	case strings.Contains(item, "@"):
		// Someone pasted a proxy URL here: it may hold a password.
		return "has an entry with '@', as a proxy URL with user:password@ has; no_proxy lists the hosts, domains and networks reached without the proxy. The entry is not shown"
	case item == "*":
		return ""
	}
	bad := fmt.Sprintf("has the entry %s, which is not a host name, a domain (.example.com or *.example.com), an IP address or a CIDR (with no spaces, zones or wildcards inside)", quote(item))
	if strings.Contains(item, "/") {
		if _, err := netip.ParsePrefix(item); err != nil {
			return bad
		}
		return ""
	}
	if a, err := netip.ParseAddr(item); err == nil {
		if a.Zone() != "" {
			return "has an IPv6 address with a zone (%...); give the address without it"
		}
		return ""
	}
	host, port := item, ""
	if strings.HasPrefix(item, "[") {
		end := strings.Index(item, "]:")
		if end < 0 {
			return bad
		}
		a, err := netip.ParseAddr(item[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" || !isPort(item[end+2:]) {
			return bad
		}
		return ""
	}
	if i := strings.LastIndex(item, ":"); i >= 0 {
		host, port = item[:i], item[i+1:]
		if !isPort(port) {
			return bad
		}
	}
	host = strings.TrimPrefix(host, "*")
	host = strings.TrimPrefix(host, ".")
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() && !strings.HasPrefix(item, ".") && !strings.HasPrefix(item, "*") {
		return ""
	}
	if !topology.ValidHostname(host) {
		return bad
	}
	return ""
}

func validateProxy(ps *Problems, p string, pr *Proxy) {
	for _, f := range []struct{ name, v string }{{"http_proxy", pr.HTTPProxy}, {"https_proxy", pr.HTTPSProxy}} {
		if f.v == "" {
			continue
		}
		if len(f.v) > maxURL {
			ps.add(p+"."+f.name, "is %d characters long; the limit is %d", len(f.v), maxURL)
			continue
		}
		if msg := proxyURLProblem(f.v); msg != "" {
			ps.add(p+"."+f.name, "%s", msg)
		}
	}
	if pr.NoProxy != "" {
		if len(pr.NoProxy) > maxURL {
			ps.add(p+".no_proxy", "is %d characters long; the limit is %d", len(pr.NoProxy), maxURL)
		} else {
			for _, item := range strings.Split(pr.NoProxy, ",") {
				if msg := noProxyProblem(item); msg != "" {
					ps.add(p+".no_proxy", "%s", msg)
					break
				}
			}
		}
	}
	checkCIDR(ps, p+".k8s_node_cidr", pr.K8sNodeCIDR, false)
}

# -*- coding: utf-8 -*-
"""Read, on the first master, what Tacker's Kubernetes VIM needs.

Run as python3 -c "<this file>" TIMEOUT DELAY NAMESPACE SECRET
SERVICE_ACCOUNT ENDPOINT_HOST ENDPOINT_PORT KUBECONFIG KUBECTL... (Python
3.8 or later, nothing but the standard library), as whoever can read the
admin kubeconfig.

Waits, at most TIMEOUT seconds, until the token controller of
kube-controller-manager has filled the token Secret (data.token and
data["ca.crt"], for the ServiceAccount as it is now), then prints one JSON
object on stdout and exits 0:

  server        the admin kubeconfig's server URL
  kubeconfig    KUBECONFIG (the file kubectl read)
  token         the Secret's data.token (base64, as stored)
  ca_crt        the Secret's data["ca.crt"] (base64, as stored)
  secret_uid, service_account_uid
  serving_cert  the certificate (PEM) the API server presents at
                ENDPOINT_HOST:ENDPOINT_PORT (empty host: the server URL's
                host; port 0: its port), read without verifying anything
  cert_from     where that certificate was read ("host:port")
  cert_error    why no certificate was read ("" when one was)

It judges nothing (heatsible does: internal/lcm/vim.go). The token goes to
stdout only: the task that runs this is no_log, and no message on stderr
holds it. Exit 12: no token in time (the reason on stderr); 13: kubectl
failed (its message on stderr); 2: bad arguments.
"""

import json
import socket
import ssl
import subprocess
import sys
import time

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported
    sys.exit(2)


def kubectl(argv, *args):
    """kubectl's stdout; its stderr in the exception."""
    p = subprocess.run(list(argv) + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip() or "kubectl exited %d" % p.returncode)
    return p.stdout


def serving_cert(host, port, sni, timeout=5.0):
    """The PEM of the certificate host:port presents (not verified)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=timeout) as s:
        with ctx.wrap_socket(s, server_hostname=sni or None) as t:
            der = t.getpeercert(binary_form=True)
    return ssl.DER_cert_to_PEM_cert(der)


def split_server(url):
    """(host, port) of a kubeconfig server URL; port 443 when it has none."""
    u = urlsplit(url)
    if u.scheme != "https" or not u.hostname:
        raise ValueError("not an https URL: %r" % url)
    return u.hostname, u.port or 443


def main(argv):
    if len(argv) < 10:
        sys.stderr.write("usage: TIMEOUT DELAY NAMESPACE SECRET SERVICE_ACCOUNT "
                         "ENDPOINT_HOST ENDPOINT_PORT KUBECONFIG KUBECTL...\n")
        return 2
    timeout, delay = float(argv[1]), float(argv[2])
    ns, secret, sa = argv[3], argv[4], argv[5]
    host, port, kubeconfig = argv[6], int(argv[7]), argv[8]
    kc = argv[9:]
    out = {"server": "", "kubeconfig": kubeconfig, "token": "", "ca_crt": "",
           "secret_uid": "", "service_account_uid": "",
           "serving_cert": "", "cert_from": "", "cert_error": ""}
    try:
        out["server"] = kubectl(kc, "config", "view", "--minify", "-o",
                                "jsonpath={.clusters[0].cluster.server}").strip()
    except RuntimeError as e:
        sys.stderr.write("kubectl could not read the server URL of %s: %s\n" % (kubeconfig, e))
        return 13

    deadline = time.time() + timeout
    why = ""
    while True:
        try:
            sa_uid = kubectl(kc, "-n", ns, "get", "serviceaccount", sa, "-o",
                             "jsonpath={.metadata.uid}").strip()
            obj = json.loads(kubectl(kc, "-n", ns, "get", "secret", secret, "-o", "json"))
        except (RuntimeError, ValueError) as e:
            # NotFound right after the apply is not expected, but it is
            # waited for like an empty Secret; anything else is reported
            # at the end with the last error.
            why = "kubectl: %s" % e
        else:
            data = obj.get("data") or {}
            meta = obj.get("metadata") or {}
            owner = (meta.get("annotations") or {}).get("kubernetes.io/service-account.uid", "")
            if data.get("token") and data.get("ca.crt") and owner == sa_uid:
                out.update(token=data["token"], ca_crt=data["ca.crt"],
                           secret_uid=meta.get("uid", ""), service_account_uid=sa_uid)
                break
            if data.get("token") and owner != sa_uid:
                why = ("it holds the token of an earlier ServiceAccount %s/%s (uid %s, now %s); "
                       "the token controller deletes it: re-run" % (ns, sa, owner, sa_uid))
            else:
                why = ("the token controller of kube-controller-manager has not filled it "
                       "(it needs --service-account-private-key-file and --root-ca-file)")
        if time.time() >= deadline:
            sys.stderr.write("the Secret %s/%s has no token for ServiceAccount %s after %d s: %s\n"
                             % (ns, secret, sa, timeout, why))
            return 12
        time.sleep(delay)

    # The serving certificate, where Tacker will connect; if that does not
    # answer from here, the one behind the kubeconfig's URL, asked for the
    # endpoint's name (SNI) as Tacker would.
    try:
        khost, kport = split_server(out["server"])
    except ValueError as e:
        out["cert_error"] = str(e)
        khost, kport = "", 0
    host = host or khost
    port = port or kport
    errors = []
    for h, p in ((host, port), (khost, kport)):
        if not h or not p:
            continue
        where = "[%s]:%d" % (h, p) if ":" in h else "%s:%d" % (h, p)
        if where in [e[0] for e in errors]:
            continue
        try:
            out["serving_cert"] = serving_cert(h, p, host if not _is_ip(host) else None)
            out["cert_from"] = where
            break
        except (OSError, ssl.SSLError, ValueError) as e:
            errors.append((where, str(e) or e.__class__.__name__))
    if not out["serving_cert"]:
        out["cert_error"] = "; ".join("%s: %s" % e for e in errors) or out["cert_error"]
    elif errors:
        out["cert_error"] = "; ".join("%s: %s" % e for e in errors)
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def _is_ip(h):
    for fam in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(fam, h)
            return True
        except (OSError, ValueError):
            pass
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv))

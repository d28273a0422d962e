# -*- coding: utf-8 -*-
"""Prepare, on the first master, what Tacker's Kubernetes VIM needs: one
round trip for the whole role.

Run as python3 -c "<this file>" API_TIMEOUT API_DELAY DRY MANIFESTS_B64
TOKEN_TIMEOUT TOKEN_DELAY NAMESPACE SECRET SERVICE_ACCOUNT ENDPOINT_HOST
ENDPOINT_PORT KUBECONFIG KUBECTL... (Python 3.8 or later, nothing but the
standard library), as whoever can read the admin kubeconfig.

1. Waits, at most API_TIMEOUT seconds, for the API server
   (kubectl get --raw /readyz, every API_DELAY seconds).
2. kubectl apply -f - of MANIFESTS_B64 (base64 of the objects' stream);
   with DRY non-empty (check mode) --dry-run=server, and stops there.
3. Waits, at most TOKEN_TIMEOUT seconds, until the token controller of
   kube-controller-manager has filled the token Secret (data.token and
   data["ca.crt"], for the ServiceAccount as it is now), then reads the
   certificate the API server presents at ENDPOINT_HOST:ENDPOINT_PORT
   (empty host: the server URL's host; port 0: its port), without
   verifying anything; if that does not answer, the one behind the
   kubeconfig's URL, asked for the endpoint's name (SNI) as Tacker would.

Prints one JSON object on stdout, whatever happens:

  server        the admin kubeconfig's server URL
  applied       the lines kubectl apply printed
  and, after step 3 only:
  kubeconfig    KUBECONFIG (the file kubectl read)
  token         the Secret's data.token (base64, as stored)
  ca_crt        the Secret's data["ca.crt"] (base64, as stored)
  secret_uid, service_account_uid
  serving_cert  the certificate (PEM) read as above
  cert_from     where that certificate was read ("host:port")
  cert_error    why no certificate was read there ("" when it was)

It judges nothing (the role's assert and heatsible do: internal/render/vim.go checks the endpoint, internal/lcm/vim.go the VIM it builds).
The token goes to stdout only: the task that runs this is no_log, and no
message on stderr holds it. Exit 10: the API server did not answer within
API_TIMEOUT (kubectl's last error on stderr), nothing applied; 11: kubectl
apply failed (its message on stderr); 12: no token in time (the reason on
stderr); 13: kubectl failed otherwise (its message on stderr); 2: bad
arguments.
"""

import base64
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


class Kubectl(Exception):
    """kubectl failed; the message is its stderr (never a token)."""


# Every call that talks to the API server is bounded: a server that
# accepts connections and never answers must not hold the run (and the
# token wait's own bound) forever.
REQUEST_TIMEOUT = "--request-timeout=30s"


def kubectl(argv, *args, stdin=None):
    """kubectl's stdout; its stderr in the exception."""
    p = subprocess.run(list(argv) + list(args), input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise Kubectl(p.stderr.strip() or "kubectl exited %d" % p.returncode)
    return p.stdout


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def wait_for_api(kc, timeout, delay):
    """None once /readyz answers; else kubectl's last error after timeout."""
    deadline = time.time() + timeout
    while True:
        try:
            kubectl(kc, "get", "--raw", "/readyz", "--request-timeout=5s")
            return None
        except Kubectl as e:
            if time.time() >= deadline:
                return last_line(str(e))
        time.sleep(delay)


def read_token(kc, ns, secret, sa):
    """(token, ca_crt, secret_uid, sa_uid), or a reason string to wait on."""
    try:
        sa_uid = kubectl(kc, "-n", ns, "get", "serviceaccount", sa, "-o",
                         "jsonpath={.metadata.uid}", REQUEST_TIMEOUT).strip()
        obj = json.loads(kubectl(kc, "-n", ns, "get", "secret", secret, "-o", "json", REQUEST_TIMEOUT))
    except (Kubectl, ValueError) as e:
        # NotFound right after the apply is not expected, but it is waited
        # for like an empty Secret; anything else is reported at the end.
        return "kubectl: %s" % e
    data = obj.get("data") or {}
    meta = obj.get("metadata") or {}
    owner = (meta.get("annotations") or {}).get("kubernetes.io/service-account.uid", "")
    if data.get("token") and data.get("ca.crt") and owner == sa_uid:
        return data["token"], data["ca.crt"], meta.get("uid", ""), sa_uid
    if data.get("token") and owner != sa_uid:
        return ("it holds the token of an earlier ServiceAccount %s/%s (uid %s, now %s); "
                "the token controller deletes it: re-run" % (ns, sa, owner, sa_uid))
    return ("the token controller of kube-controller-manager has not filled it "
            "(it needs --service-account-private-key-file and --root-ca-file)")


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


def read_cert(out, host, port):
    """Fill serving_cert, cert_from and cert_error of out."""
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


def _is_ip(h):
    for fam in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(fam, h)
            return True
        except (OSError, ValueError):
            pass
    return False


def run(argv, out):
    api_timeout, api_delay, dry = float(argv[1]), float(argv[2]), argv[3]
    manifests = base64.b64decode(argv[4]).decode("utf-8")
    token_timeout, token_delay = float(argv[5]), float(argv[6])
    ns, secret, sa = argv[7], argv[8], argv[9]
    host, port, kubeconfig = argv[10], int(argv[11]), argv[12]
    kc = argv[13:]
    try:
        out["server"] = kubectl(kc, "config", "view", "--minify", "-o",
                                "jsonpath={.clusters[0].cluster.server}").strip()
    except Kubectl as e:
        sys.stderr.write("kubectl could not read the server URL of %s: %s\n" % (kubeconfig, e))
        return 13

    why = wait_for_api(kc, api_timeout, api_delay)
    if why is not None:
        sys.stderr.write(why + "\n")
        return 10
    try:
        applied = kubectl(kc, "apply", "-f", "-", REQUEST_TIMEOUT, *(["--dry-run=server"] if dry else []),
                          stdin=manifests)
    except Kubectl as e:
        sys.stderr.write("%s\n" % e)
        return 11
    out["applied"] = [l for l in applied.splitlines() if l.strip()]
    if dry:
        return 0

    deadline = time.time() + token_timeout
    while True:
        got = read_token(kc, ns, secret, sa)
        if not isinstance(got, str):
            break
        if time.time() >= deadline:
            sys.stderr.write("the Secret %s/%s has no token for ServiceAccount %s after %d s: %s\n"
                             % (ns, secret, sa, token_timeout, got))
            return 12
        time.sleep(token_delay)
    out.update(kubeconfig=kubeconfig, token=got[0], ca_crt=got[1], secret_uid=got[2],
               service_account_uid=got[3], serving_cert="", cert_from="", cert_error="")
    read_cert(out, host, port)
    return 0


def main(argv):
    if len(argv) < 14:
        sys.stderr.write("usage: API_TIMEOUT API_DELAY DRY MANIFESTS_B64 TOKEN_TIMEOUT TOKEN_DELAY "
                         "NAMESPACE SECRET SERVICE_ACCOUNT ENDPOINT_HOST ENDPOINT_PORT KUBECONFIG KUBECTL...\n")
        return 2
    out = {"server": "", "applied": []}
    try:
        return run(argv, out)
    except ValueError as e:
        sys.stderr.write("bad arguments: %s\n" % e)
        return 2
    finally:
        sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/bin/sh
# standin.sh - install the kubeadm and kubelet STAND-INS (this directory,
# docs/testbed.md "The kubeadm stand-in") into a bed host's root file system,
# or take them out again. Run as root on the machine, with the host's merged
# root (testbed/run/bed/hosts/HOST/root); testbed/bin/bed and the e2e tests
# call it.
#
#   standin.sh on ROOT CREDENTIAL   kubeadm and kubelet in ROOT/usr/bin (where the
#                                   Kubernetes packages put them) and the bed's
#                                   API credential CREDENTIAL (a kubeconfig) as
#                                   ROOT/etc/kubeadm-stand-in/bed.conf (0600)
#   standin.sh off ROOT             a VM image without kubeadm: both binaries go,
#                                   the credential too; records stay
#   standin.sh reset ROOT           a fresh VM from the image: what a join left
#                                   (/etc/kubernetes/kubelet.conf, pki/ca.crt) goes
#   standin.sh purge ROOT           off + reset + the records and issued tokens
#   standin.sh status ROOT          prints "on" or "off" and the join state
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
root=${2:-}
if [ -z "$cmd" ] || [ -z "$root" ]; then echo "usage: $0 on ROOT CREDENTIAL | off ROOT | reset ROOT | purge ROOT | status ROOT" >&2; exit 2; fi
[ -d "$root/etc" ] || { echo "standin.sh: $root is not a host's root file system" >&2; exit 2; }

off() {
  rm -f "$root/usr/bin/kubeadm" "$root/usr/bin/kubelet" "$root/etc/kubeadm-stand-in/bed.conf"
  rmdir "$root/etc/kubeadm-stand-in" 2>/dev/null || true
}
reset() {
  # never admin.conf: the bed's master-0 has the cluster's admin kubeconfig there
  rm -f "$root/etc/kubernetes/kubelet.conf" "$root/etc/kubernetes/pki/ca.crt"
  rmdir "$root/etc/kubernetes/pki" "$root/etc/kubernetes" 2>/dev/null || true
}

case $cmd in
  on)
    cred=${3:-}
    [ -s "$cred" ] || { echo "standin.sh on: no credential file ${cred:-(none given)}" >&2; exit 2; }
    install -D -m 755 "$here/kubeadm" "$root/usr/bin/kubeadm"
    install -D -m 755 "$here/kubelet" "$root/usr/bin/kubelet"
    install -d -m 700 "$root/etc/kubeadm-stand-in"
    install -m 600 "$cred" "$root/etc/kubeadm-stand-in/bed.conf"
    # Records from every user (kubeadm token create runs as the SSH user when
    # it reads the user's kubeconfig); the issued tokens: anyone appends, only
    # root reads.
    st=$root/var/lib/kubeadm-stand-in
    install -d -m 755 "$st"
    install -d -m 1777 "$st/records"
    [ -e "$st/issued" ] || install -m 622 /dev/null "$st/issued"
    [ -e "$st/.lock" ] || install -m 666 /dev/null "$st/.lock"
    ;;
  off) off ;;
  reset) reset ;;
  purge) off; reset; rm -rf "$root/var/lib/kubeadm-stand-in" ;;
  status)
    if [ -x "$root/usr/bin/kubeadm" ] && grep -q 'kubeadm STAND-IN' "$root/usr/bin/kubeadm"; then s=on; else s=off; fi
    if [ -e "$root/etc/kubernetes/kubelet.conf" ]; then j=joined; else j=not-joined; fi
    echo "$s $j"
    ;;
  *) echo "standin.sh: unknown command $cmd" >&2; exit 2 ;;
esac

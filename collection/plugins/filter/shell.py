# -*- coding: utf-8 -*-
"""with_json_encoder: the host-side probes' JSON string encoder, one copy.

The probes (cinder_volume's files/probe.sh, nfs_server's files/state.sh and
files/verify.sh) print JSON with the shell function j(): it is what keeps a
hostile path or blkid value a JSON string. A script sent with raw
(``sh -c SCRIPT``) cannot source another file, so the task hands the
script through this filter, which puts j() in front of it:

    ansible.builtin.raw: "{{ ['sh', '-c', lookup('ansible.builtin.file',
      'probe.sh') | heatsible.nfv.with_json_encoder, 'sh'] | map('quote') | join(' ') }}"

j() itself: printable ASCII without quotes or backslashes (almost every
path and blkid value) takes no process; anything else is escaped by sed
(backslash, quote, tab, other control characters dropped, newlines joined
as \\n). POSIX sh; bash runs it too.
"""

JSON_ENCODER = r'''j() {
  case $1 in
    *[\\\"]* | *[![:print:]]*)
      printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\010\013-\037' |
        sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g')"
      ;;
    *) printf '"%s"' "$1" ;;
  esac
}
'''


def with_json_encoder(script):
    """The script with j() defined before its first line (a shebang line
    after it is a comment to ``sh -c``)."""
    return JSON_ENCODER + "\n" + script


class FilterModule(object):
    """The probes' shared shell code."""

    def filters(self):
        return {"with_json_encoder": with_json_encoder}

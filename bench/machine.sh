#!/usr/bin/env bash
# machine.sh - two figures that explain this machine's bench results, printed
# as "key value" lines (bench/bed.sh puts them in results.md):
#
#   page_fault_us   microseconds per page fault: 64 MiB of fresh anonymous
#                   memory written one byte per 4 KiB page (the kernel zeroes
#                   and maps each page). Ansible forks a worker process per
#                   task and host, and each worker writes tens of MiB of
#                   Python objects (copy-on-write, new allocations), so this
#                   figure drives Ansible's per-task cost;
#   ansible_task_s  seconds per task of ansible-playbook on this machine:
#                   (a play of 41 tasks, 40 of them skipped - no module, no
#                   SSH) minus (a play of the 1 task), divided by 40. This is
#                   the controller's cost of a task that does nothing.
#
# Usage: bench/machine.sh              (needs ansible-playbook; runs on localhost only)
#        bench/machine.sh --page-fault (only the first figure, its number alone:
#                                       bench/bed.sh takes it before every measurement)
set -euo pipefail

page_fault() {
  python3 - <<'PY'
import mmap, time
n = 64 * 1024 * 1024
m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
t = time.perf_counter()
for i in range(0, n, 4096):
    m[i] = 1
print("%.2f" % ((time.perf_counter() - t) / (n // 4096) * 1e6))
PY
}
if [ "${1:-}" = --page-fault ]; then page_fault; exit 0; fi
echo "page_fault_us $(page_fault)"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

{
  printf -- '- hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: first\n      ansible.builtin.debug: {msg: x}\n'
} > "$tmp/one.yml"
cp "$tmp/one.yml" "$tmp/many.yml"
for i in $(seq 1 40); do
  printf -- '    - name: skipped %d\n      ansible.builtin.debug: {msg: x}\n      when: false\n' "$i" >> "$tmp/many.yml"
done
run() { # playbook -> seconds
  local t0 t1
  t0=$(date +%s.%N)
  ANSIBLE_LOCALHOST_WARNING=false ansible-playbook -i localhost, -c local "$1" > /dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'
}
one=$(run "$tmp/one.yml")
many=$(run "$tmp/many.yml")
awk -v o="$one" -v m="$many" 'BEGIN{printf "ansible_task_s %.3f\nansible_start_s %.2f\n", (m-o)/40, o}'

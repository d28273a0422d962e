#!/bin/bash
# A stand-in for the seed's script, which is Tacker's install_external_lb.sh:
# it takes Tacker's options (-m MASTER_IPS -w WORKER_IPS), which is how
# heatsible recognises that contract (docs/external-lb.md). The tests only
# read it, never run it.
while getopts "m:w:" opt; do
  case $opt in m | w) ;; *) exit 2 ;; esac
done
echo external LB install stand-in

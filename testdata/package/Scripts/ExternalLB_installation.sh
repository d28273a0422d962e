#!/bin/sh
# heatsible-external-lb-interface: 1
# A stand-in for a script with heatsible's load-balancer interface
# (docs/external-lb.md); the tests only read it, never run it.
echo external LB install stand-in

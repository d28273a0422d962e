// Package externallb holds the tests of heatsible's sample external
// load-balancer script, haproxy-lb.sh, and of the external_lb role that
// drives such scripts. The script interface is documented in
// docs/external-lb.md. The tests need haproxy (Debian package haproxy) and,
// for the role, ansible-playbook; they skip, saying so, without them.
package externallb

#!/bin/sh
echo external LB install stand-in

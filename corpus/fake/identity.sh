#!/bin/sh
# Fake rewriter for testing check.sh: a plain copy. Usage: identity.sh IN -o OUT
[ "$2" = "-o" ] || { echo "usage: $0 IN -o OUT" >&2; exit 2; }
cp "$1" "$3"

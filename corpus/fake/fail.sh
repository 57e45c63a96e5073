#!/bin/sh
# Fake rewriter for testing check.sh: always fails with a message.
echo "fake rewriter: cannot rewrite $1 (this is a test)" >&2
exit 3

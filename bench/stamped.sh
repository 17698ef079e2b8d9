#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs COMMAND with every line it writes (stdout and stderr) prefixed by the time it came
# (seconds since the epoch, microseconds), after a first line "TIME exec" written just
# before the exec: bench/scaling.sh puts it in front of the daemon ($pinner_wrap) to time
# its start-up from its own log lines. The command keeps this script's pid.
#   bench/stamped.sh COMMAND [ARG...]
echo "$EPOCHREALTIME exec"
exec "$@" > >(while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done) 2>&1

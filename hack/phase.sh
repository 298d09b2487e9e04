#!/usr/bin/env bash
# Runs a command as a named phase (see phase in hack/lib.sh), for the Makefile.
#
# Usage: hack/phase.sh NAME COMMAND [ARGS...]
set -uo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "$0")/lib.sh"
phase "${1:?usage: hack/phase.sh NAME COMMAND [ARGS...]}" "${@:2}"

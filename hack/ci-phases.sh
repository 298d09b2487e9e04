#!/usr/bin/env bash
# Prints the phases of the last .ci/run from its log (.cache/ci/run.log, or the
# file given): each phase's start and end in seconds since the run's start, and
# its time, in the order they started. Phases nest and run side by side; a phase
# that has no end line was cut short (a failure elsewhere, or the run stopped).
#
# Usage: hack/ci-phases.sh [LOG]
set -euo pipefail

log=${1:-$(cd "$(dirname "$0")/.." && pwd)/.cache/ci/run.log}
[[ -f "$log" ]] || { echo "no log of a .ci/run at $log: run bash .ci/run first" >&2; exit 1; }

awk '
	# A log line is "SECONDS TEXT"; phase lines are "==> phase NAME" and
	# "<== phase NAME: Ns" or "<== phase NAME: failed (exit N) after Ns".
	{ t = $1; last = t; sub(/^ *[0-9]+ /, "") }
	/^==> phase / {
		name = substr($0, 11)
		n++; order[n] = name; started[name] = t
		next
	}
	/^<== phase / {
		rest = substr($0, 11)
		i = index(rest, ": ")
		while (i > 0 && !(substr(rest, 1, i - 1) in started)) {
			j = index(substr(rest, i + 2), ": "); i = j ? i + 1 + j : 0
		}
		if (i == 0) next
		name = substr(rest, 1, i - 1)
		ended[name] = t
		status[name] = (substr(rest, i + 2) ~ /^failed/) ? "failed" : "ok"
		next
	}
	/^CI passed in / { total = t }
	END {
		printf "%-72s %7s %7s %7s  %s\n", "phase", "start", "end", "time", "status"
		for (k = 1; k <= n; k++) {
			name = order[k]
			if (name in ended) {
				printf "%-72s %7d %7d %7d  %s\n", name, started[name], ended[name], ended[name] - started[name], status[name]
			} else {
				printf "%-72s %7d %7s %7s  %s\n", name, started[name], "-", "-", "no end"
			}
		}
		if (total != "") printf "%-72s %7s %7d %7d  passed\n", "CI", "0", total, total
		else printf "%-72s %7s %7d %7s  not passed (last line at %ds)\n", "CI", "0", last, "-", last
	}
' "$log"

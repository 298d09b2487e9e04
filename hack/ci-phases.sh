#!/usr/bin/env bash
# Prints the phases of the last .ci/run from its log (.cache/ci/run.log, or the
# file given): each phase's start and end in seconds since the run's start, its
# time, and its CPU time (user and system, of every process it ran; above its
# time when it computed on both cores, below when it waited), in the order they
# started. Phases nest and run side by side, and a
# name may come back (make test builds the distribution again, from the cache);
# an end belongs to the latest start of its name. A phase with no end line was
# cut short (a failure elsewhere, or the run stopped). The tests of a -v run (the
# real-node suite) are rows too, indented, each listed when it ends.
#
# Usage: hack/ci-phases.sh [LOG]
set -euo pipefail

log=${1:-$(cd "$(dirname "$0")/.." && pwd)/.cache/ci/run.log}
[[ -f "$log" ]] || { echo "no log of a .ci/run at $log: run bash .ci/run first" >&2; exit 1; }

awk '
	# A log line is "SECONDS TEXT"; phase lines are "==> phase NAME" and
	# "<== phase NAME: Ns" or "<== phase NAME: failed (exit N) after Ns".
	# A line of a run whose lines come behind "NAME | " (lint, the real-node
	# suite, the race detector) may be a phase line of that run.
	{ t = $1; last = t; sub(/^ *[0-9]+ /, ""); sub(/^[a-z][a-z -]* \| /, "") }
	/^==> phase / {
		n++; name[n] = substr($0, 11); start[n] = t; open[name[n]] = n
		next
	}
	/^<== phase / {
		rest = substr($0, 11)
		# The name is what comes before the last ": " whose prefix is an open phase.
		for (i = length(rest) - 1; i > 0; i--) {
			if (substr(rest, i, 2) == ": " && (substr(rest, 1, i - 1) in open)) break
		}
		if (i == 0) next
		k = open[substr(rest, 1, i - 1)]
		end[k] = t
		status[k] = (substr(rest, i + 2) ~ /^failed/) ? "failed" : "ok"
		if (match(rest, /, CPU [0-9]+s$/)) cpu[k] = substr(rest, RSTART + 6, RLENGTH - 7)
		next
	}
	# A test of a -v run (the real-node suite) is a row of its own, listed when
	# it ends: "--- PASS: TestX (12.34s)".
	/^--- (PASS|FAIL): Test[^ ]* \([0-9.]+s\)$/ {
		d = $4; gsub(/[()s]/, "", d)
		n++; name[n] = "  " $3; end[n] = t; start[n] = t - int(d + 0.5)
		status[n] = ($2 == "PASS:") ? "ok" : "failed"
		next
	}
	/^CI passed in / { total = t }
	END {
		w = 5
		for (k = 1; k <= n; k++) if (length(name[k]) > w) w = length(name[k])
		printf "%-" w "s %6s %6s %6s %6s  %s\n", "phase", "start", "end", "time", "cpu", "status"
		for (k = 1; k <= n; k++) {
			c = (k in cpu) ? cpu[k] : "-"
			if (k in end) printf "%-" w "s %6d %6d %6d %6s  %s\n", name[k], start[k], end[k], end[k] - start[k], c, status[k]
			else printf "%-" w "s %6d %6s %6s %6s  %s\n", name[k], start[k], "-", "-", "-", "no end"
		}
		if (total != "") printf "%-" w "s %6d %6d %6d %6s  %s\n", "CI", 0, total, total, "-", "passed"
		else printf "%-" w "s %6d %6d %6s %6s  %s\n", "CI", 0, last, "-", "-", "not passed (the log ends there)"
	}
' "$log"

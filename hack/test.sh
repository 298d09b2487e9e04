#!/usr/bin/env bash
# Runs every Go test of the module: unit tests, the tests on the real control plane
# (kube-apiserver, etcd, kube-controller-manager from hack/controlplane.sh), the
# tests of the built binary (bin/network-enforcer) and the real-node suite
# (test/cluster, on the cluster of hack/cluster). `make test` builds all first.
# Arguments go to `go test`, after the package patterns below; a package
# argument replaces them: hack/test.sh -run TestX ./api/...
#
# The tests tie what they start to their own process (internal/testproc), so
# that it ends with the test process however that ends. As a second guard, for
# anything a library starts on its own, `go test` runs in a session of its own
# (setsid), whose id is the PID it starts with, and after each run this script
# ends the processes of that session and no others: a control plane that
# something else started (`make demo` in another terminal, another test run) is
# in another session and keeps running.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=hack/lib.sh
source hack/lib.sh

assets=$(hack/controlplane.sh --print)
export KUBEBUILDER_ASSETS="$assets"
# Nothing that the tests need may be missing here: a test that would skip fails.
export NETWORK_ENFORCER_REQUIRE_ALL=1

# The packages come in two runs, side by side. One is every package but the
# real-node suite, with its tests in a random order (-shuffle=on: a test that
# depends on another's leftovers, or on running after it, fails here rather
# than for a user; the seed is printed to run the same order again). The other
# is the real-node suite (test/cluster, behind the tag cluster, which a plain
# `go test ./...` leaves out: it changes the machine's network while it runs),
# in its own order. The real-node suite mostly waits on its cluster (pods to
# start, certificates to renew, the agent to enforce), which leaves the
# machine's cores to the other run: side by side they take about as long as
# the real-node suite alone, where one after the other took both times. Its
# figures of CPU are the enforcer pod's own CPU time, which the other run does
# not change; its figures of time are waits on the cluster, which it can
# lengthen a little. It runs with -v: its tests log what they measure (each
# test's time, the times to learn and enforce), and a CI log keeps them, each
# line behind "real-node | " so that the two runs' lines can be told apart.
# It names the one package (not ./test/cluster/..., which adds the pods'
# program, with no tests): go test prints a test's lines as they come only
# when it tests one package, and the log's times of them are then true.
# A package argument makes it one run of those packages, in their order
# (-shuffle=on to shuffle them too).
#
# A third run, beside them, is the packages with goroutines of their own under
# the race detector: the membership and the extension that hosts it, the
# leader elector, the writers' controllers and their drain, the
# Hubble receiver's nodes mode, the leader receiver and exporter, the
# observed-edge store, the flow sources' batching and the violation buffer.
# It needs cgo (the detector's runtime is C): its compiles are its own, apart
# from the CGO_ENABLED=0 build cache of the rest, and they overlap the
# real-node suite's waits as the unit run does.
#
# The test binaries link without DWARF (-ldflags=-w): a test binary's link
# is most of its build once its packages are compiled, and DWARF about 40% of
# the link (measured building the Hubble receiver's test binary, its packages
# compiled: 11 s of CPU, 6.7 s without it).
# A panic's stack trace needs no DWARF; a debugger does, and runs go test
# itself.
race_packages="./extension/enforcerextension/ ./internal/membership/ ./extension/leaderelectorextension/ ./internal/termwriter/ ./receiver/hubblereceiver/ ./receiver/leaderreceiver/ ./exporter/leaderexporter/ ./internal/observed/ ./internal/flowsource/... ./processor/violationprocessor/"
# The shuffle's seed is chosen here and printed before the run, so that a
# run that passes names its order too, not only one that fails (go test
# prints it only in a failed package's output): TEST_SHUFFLE=SEED runs the
# same order again.
seed=${TEST_SHUFFLE:-$(date +%s%N)}
if [[ ! "$seed" =~ ^[0-9]+$ ]]; then
	echo "TEST_SHUFFLE=$seed: must be a number, the seed that a run printed" >&2
	exit 2
fi
runs=("-ldflags=-w -shuffle=$seed -timeout 20m ./..." "-ldflags=-w -tags cluster -timeout 30m -v ./test/cluster/" "-ldflags=-w -race -timeout 20m $race_packages")
names=("unit, control-plane, browser and binary tests" "real-node suite" "race detector")
prefixes=("" "real-node | " "race | ")
for arg in "$@"; do
	if [[ "$arg" == ./* ]]; then
		runs=("-ldflags=-w -tags cluster -timeout 20m")
		names=("tests")
		prefixes=("")
		break
	fi
done

# session_pids SESSION prints the PIDs of the processes still in the session.
session_pids() { ps -o pid= -s "$1" 2>/dev/null || true; }

# The grace that the session's processes get after SIGTERM. (The real node's
# parts run in sessions of their own: a guard that the suite starts beside it
# cleans the host when the suite's process ends without stopping the node.)
grace=180

# cleanup ends what is left of each run's session, or of the one given.
cleanup() {
	local session list=("$@")
	if (($# == 0)); then list=("${sessions[@]}"); fi
	for session in "${list[@]}"; do
		cleanup_session "$session"
	done
}

cleanup_session() {
	local session=$1 pids i
	pids=$(session_pids "$session")
	[[ -z "$pids" ]] && return 0
	# shellcheck disable=SC2086 # one argument per PID
	kill -TERM $pids 2>/dev/null || true
	for ((i = 0; i < grace * 10; i++)); do
		pids=$(session_pids "$session")
		[[ -z "$pids" ]] && return 0
		if ((i == 50)); then
			echo "hack/test.sh: waiting up to ${grace}s for the test run to end: $(echo $pids)" >&2
		fi
		sleep 0.1
	done
	echo "hack/test.sh: killing what is left of the test run: $(echo $pids)" >&2
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
}
sessions=()
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

starts=()
status=0
if [[ "${runs[0]}" == *-shuffle=* ]]; then
	echo "shuffle seed: $seed (TEST_SHUFFLE=$seed runs the same order again)"
fi
for i in "${!runs[@]}"; do
	phase_begin "${names[$i]}"
	starts[i]=$SECONDS
	# A background job of a script is no process-group leader, so setsid makes
	# the session at once, without a fork: $! is the session's id. Were it
	# not, no process would have that session id and the cleanup would end
	# nothing. A prefixed run is a shell in that session, which keeps go
	# test's status through the pipe.
	if [[ -n "${prefixes[$i]}" ]]; then
		# -race turns cgo on for its run only.
		cgo=0
		if [[ " ${runs[$i]} " == *" -race "* ]]; then cgo=1; fi
		# shellcheck disable=SC2016 # expanded by the session's shell
		CGO_ENABLED=$cgo setsid bash -c 'set -o pipefail; prefix=$1; shift; go test -count=1 "$@" 2>&1 | sed -u "s/^/$prefix/"' \
			_ "${prefixes[$i]}" ${runs[$i]} "$@" &
	else
		# shellcheck disable=SC2086 # the run's flags and packages, one word each
		setsid go test -count=1 ${runs[$i]} "$@" &
	fi
	sessions[i]=$!
done
# Each run's phase ends when it does, whichever ends first.
declare -A index
for i in "${!sessions[@]}"; do index[${sessions[$i]}]=$i; done
pending=("${sessions[@]}")
# A run's CPU time is what this shell's children used from one run's end to
# the next: wait -n reaps the one run, with what it waited for.
children_cpu
reaped_cpu=$CHILDREN_CPU
while ((${#pending[@]} > 0)); do
	s=0
	ended=""
	wait -n -p ended "${pending[@]}" || s=$?
	children_cpu
	cpu=$((CHILDREN_CPU - reaped_cpu))
	if [[ -z "$ended" ]]; then
		# Nothing left to wait for (it cannot happen while a run is pending).
		status=1
		break
	fi
	i=${index[$ended]}
	if ((status == 0)); then status=$s; fi
	cleanup "$ended"
	children_cpu
	reaped_cpu=$CHILDREN_CPU
	phase_end "${names[$i]}" "${starts[$i]}" "$s" "$cpu"
	rest=()
	for p in "${pending[@]}"; do [[ "$p" != "$ended" ]] && rest+=("$p"); done
	pending=("${rest[@]}")
done
exit "$status"

# shellcheck shell=bash
# Sourced by the hack/ scripts: the settings that they share with the Makefile, so
# that a script run alone builds as `make` does and finds what `make` built.

# One set of Go build settings for every build and test (see the Makefile): a
# compile's cache key holds its flags, so that one flag more in one build compiles
# every package a second time.
export CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false"

# The cache of what is built from pinned versions (the tools, the control plane,
# cert-manager's controller, the real node's parts): one folder per version, shared
# by every clone of the project on this machine, as the Go build cache is. A fresh
# clone builds nothing that another clone built already.
NETWORK_ENFORCER_CACHE=${NETWORK_ENFORCER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/network-enforcer}
export NETWORK_ENFORCER_CACHE

# partial_dir DIR makes and prints a new folder beside DIR, for a build that
# moves it to DIR once complete: two clones building the same part at once each
# build into a folder of their own.
partial_dir() {
	mkdir -p "$(dirname "$1")"
	mktemp -d "$1.partial.XXXXXX"
}

# phase NAME COMMAND [ARGS...] runs COMMAND (a program or a function of the
# calling script) as a named phase: a line on stderr when it starts, and one with
# its time and CPU time when it ends, which `make ci-phases` reads from the log of
# the last .ci/run into a table. Phases may nest and run side by side (make -j);
# each line names its phase.
phase() {
	local name=$1 start=$SECONDS status=0 cpu
	shift
	phase_begin "$name"
	children_cpu
	cpu=$CHILDREN_CPU
	"$@" || status=$?
	children_cpu
	phase_end "$name" "$start" "$status" $((CHILDREN_CPU - cpu))
	return "$status"
}

# phase_begin NAME and phase_end NAME START STATUS [CPU] print phase's two lines,
# for a phase that is not one command. CPU is the phase's CPU time in seconds.
phase_begin() { echo "==> phase $1" >&2; }
phase_end() {
	local cpu=""
	if [[ -n "${4:-}" ]]; then cpu=", CPU ${4}s"; fi
	if (($3 == 0)); then
		echo "<== phase $1: $((SECONDS - $2))s$cpu" >&2
	else
		echo "<== phase $1: failed (exit $3) after $((SECONDS - $2))s$cpu" >&2
	fi
}

# children_cpu sets CHILDREN_CPU to the CPU time, user and system, in whole
# seconds, of the processes that this shell started and waited for so far, and
# of theirs: the builtin times, run in this shell itself (a command
# substitution would be a subshell, whose children are its own). A phase's CPU
# time against its time shows whether it waited or computed, and on how many
# cores.
children_cpu() {
	local f="${TMPDIR:-/tmp}/network-enforcer-times.$BASHPID" user sys
	times >"$f"
	{ read -r _ && read -r user sys; } <"$f"
	rm -f "$f"
	CHILDREN_CPU=$(($(cpu_seconds "$user") + $(cpu_seconds "$sys")))
}

# cpu_seconds prints the whole seconds of a time as times prints it (1m2.345s).
cpu_seconds() {
	local t=${1%s} m
	m=${t%%m*}
	t=${t#*m}
	echo $((m * 60 + 10#${t%%.*}))
}

#!/usr/bin/env bash
# Installs headless Chromium from Debian's packages (chromium, and
# chromium-driver beside it) for the review page's browser tests, once: a
# machine that has it already is left as it is. `make test` runs it, so that a
# fresh CI machine (root, apt) gets it too.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && chromium --version >/dev/null 2>&1; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "hack/browser.sh: chromium is missing; install Debian's chromium and chromium-driver as root (apt-get install chromium chromium-driver)" >&2
	exit 1
fi
# shellcheck source=hack/lib.sh
source "$(dirname "$0")/lib.sh"
install() {
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
}
phase "headless Chromium (Debian chromium, chromium-driver)" install
chromium --version

#!/usr/bin/env bash
# Refreshes the browser libraries that the review page embeds, from npm, at the
# versions pinned below: each package is fetched with `npm pack` into a
# temporary folder, and its distribution file and license are copied under
# third_party/<name>/ with a VERSION note. The Go build embeds these files, so
# building the distribution needs Go only; this script is for bumping a version.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# name version distribution-file-in-the-package
packages=(
	"cytoscape 3.35.0 dist/cytoscape.min.js"
	# The layered layout; its build bundles dagre itself.
	"cytoscape-dagre 4.0.1 dist/cytoscape-dagre.min.js"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for entry in "${packages[@]}"; do
	read -r name version file <<<"$entry"
	dir="$tmp/$name"
	mkdir -p "$dir"
	tarball=$(cd "$dir" && npm pack --silent "$name@$version")
	tar -xzf "$dir/$tarball" -C "$dir"
	dest="third_party/$name"
	mkdir -p "$dest"
	cp "$dir/package/$file" "$dest/$(basename "$file")"
	license=$(find "$dir/package" -maxdepth 1 -iname 'LICENSE*' | head -n1)
	if [[ -z "$license" ]]; then
		echo "$name@$version has no LICENSE file" >&2
		exit 1
	fi
	cp "$license" "$dest/LICENSE"
	integrity=$(cd "$dir" && npm view "$name@$version" dist.integrity)
	cat >"$dest/VERSION" <<NOTE
$name $version from npm (npm pack $name@$version), file $file
integrity $integrity
refreshed by make third-party (hack/third-party.sh); do not edit by hand
NOTE
	echo "third_party/$name: $name@$version"
done

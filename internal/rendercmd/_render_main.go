// The distribution's subcommands beside the collector: `make build` and the
// image's build copy this file into ocb's generated sources, next to the main
// that ocb writes, which runs the collector only. The go command leaves it out
// of the module's own packages (its name starts with an underscore).

package main

import "github.com/kubewarden/network-enforcer/internal/rendercmd"

// init runs `network-enforcer render ...` and exits, before main starts the
// collector; with any other arguments it returns at once.
func init() { rendercmd.Main() }

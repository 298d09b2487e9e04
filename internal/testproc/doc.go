// Package testproc starts the processes of tests so that they end with the test
// process, however it ends: a pass, a failure, a panic, -timeout, SIGINT or a
// SIGKILL that leaves it no time to clean up.
//
// On Linux the kernel does it: each child asks for a signal when its parent
// dies (PR_SET_PDEATHSIG). Command sets it on the commands that tests start
// themselves. envtest starts etcd and kube-apiserver itself and offers no way
// to set it, so Tether gives envtest a path to run in their place: a link to
// the test binary, which, run under that name, sets the signal and then execs
// the real binary in the same process (the signal stays set across exec).
package testproc

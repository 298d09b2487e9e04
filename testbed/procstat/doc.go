// Package procstat reads what the measurements report of a process of the
// built binary from /proc: its CPU time (/proc/<pid>/stat) and its resident
// memory now and at its peak (/proc/<pid>/status). replicas (which loadtest
// and scaletest run) and cachemem read the same fields; one reader keeps them
// from parsing them two ways, and keeps the trap of the stat line, a command
// name that may hold spaces and parentheses, in one place with its test.
package procstat

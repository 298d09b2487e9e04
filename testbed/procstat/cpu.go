package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times of /proc/<pid>/stat: USER_HZ, which the
// kernel fixes at 100 on every architecture that Go builds Linux programs for,
// so a constant serves where asking sysconf(_SC_CLK_TCK) would need cgo.
const userHZ = 100

// CPU is the user and system CPU time that process pid has used so far, on
// all its threads.
func CPU(pid int) (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	d, err := parseCPU(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %q", path, err, b)
	}
	return d, nil
}

// parseCPU reads utime and stime, the 14th and 15th fields of a
// /proc/<pid>/stat line, in clock ticks.
func parseCPU(stat []byte) (time.Duration, error) {
	// The command name (the 2nd field) is in parentheses and may itself hold
	// spaces and parentheses, but the kernel writes no ')' after it: the
	// fields are counted from the last one.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	fields := bytes.Fields(stat[i+1:])
	// fields[0] is the 3rd field (state), so utime, the 14th, is fields[11].
	if len(fields) < 13 {
		return 0, errors.New("short line")
	}
	utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

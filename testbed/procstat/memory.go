package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is a process's resident memory, in bytes.
type RSS struct {
	// Now is VmRSS; Peak is VmHWM, the largest Now has been since the
	// process started.
	Now, Peak int64
}

// Memory is the resident memory of process pid.
func Memory(pid int) (RSS, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return RSS{}, err
	}
	m, err := parseMemory(b)
	if err != nil {
		return RSS{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// parseMemory reads VmRSS and VmHWM of a /proc/<pid>/status file, both of
// which the kernel writes in kB.
func parseMemory(status []byte) (RSS, error) {
	var m RSS
	pending := map[string]*int64{"VmRSS": &m.Now, "VmHWM": &m.Peak}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		dst, ok := pending[key]
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return RSS{}, fmt.Errorf("%s is not in kB: %q", key, value)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return RSS{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst = kb << 10
		delete(pending, key)
	}
	if err := sc.Err(); err != nil {
		return RSS{}, err
	}
	// A kernel thread, or a process that has ended but not been reaped, has
	// no memory of its own and no Vm fields: a 0 would read as a measurement.
	for _, key := range []string{"VmRSS", "VmHWM"} {
		if _, missing := pending[key]; missing {
			return RSS{}, errors.New("no " + key)
		}
	}
	return m, nil
}

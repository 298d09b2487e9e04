package procstat

import (
	"os"
	"testing"
)

// status is the head of a /proc/<pid>/status, down to the memory fields.
const status = `Name:	a b) c
Umask:	0022
State:	S (sleeping)
Tgid:	1234
Pid:	1234
VmPeak:	 1283452 kB
VmSize:	 1283452 kB
VmLck:	       0 kB
VmPin:	       0 kB
VmHWM:	   61440 kB
VmRSS:	   40960 kB
RssAnon:	   20480 kB
Threads:	12
`

func TestParseMemory(t *testing.T) {
	got, err := parseMemory([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if want := (RSS{Now: 40 << 20, Peak: 60 << 20}); got != want {
		t.Fatalf("parseMemory = %+v, want %+v", got, want)
	}
}

// TestParseMemoryWithoutMemory: a kernel thread, or a zombie, has no Vm fields;
// its 0 bytes would read as a measurement.
func TestParseMemoryWithoutMemory(t *testing.T) {
	for _, s := range []string{
		"Name:	kthreadd\nState:	S (sleeping)\nThreads:	1\n",
		"Name:	cat\nVmRSS:	   40960 kB\n",
		"Name:	cat\nVmHWM:	   40960 kB\n",
		"Name:	cat\nVmHWM:	   x kB\nVmRSS:	   40960 kB\n",
		"Name:	cat\nVmHWM:	   40960 pages\nVmRSS:	   40960 kB\n",
	} {
		if got, err := parseMemory([]byte(s)); err == nil {
			t.Errorf("parseMemory(%q) = %+v, want an error", s, got)
		}
	}
}

func TestMemoryOfThisProcess(t *testing.T) {
	m, err := Memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A Go test binary holds a few MiB at least; the peak is never below the
	// resident set now.
	if m.Now < 1<<20 || m.Peak < m.Now {
		t.Fatalf("Memory of the test process = %+v: want 1 MiB <= Now <= Peak", m)
	}
}

func TestMemoryOfNoProcess(t *testing.T) {
	if _, err := Memory(-1); err == nil {
		t.Fatal("Memory(-1) read a process")
	}
}

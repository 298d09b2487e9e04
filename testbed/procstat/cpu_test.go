package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{
			name: "plain command name",
			stat: "1234 (cat) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 12345 1000 200\n",
			want: 3 * time.Second,
		},
		{
			// Counted from the first ')', or split on every space, utime
			// and stime would be page fault counts (2 and 3, or 1 and 2).
			name: "command name with spaces and parentheses",
			stat: "1234 (a b) c) 9) S 1 1234 1234 0 -1 4194560 100 1 2 3 250 50 0 0 20 0 1 0 12345 1000 200\n",
			want: 3 * time.Second,
		},
		{
			name: "empty command name",
			stat: "1234 () R 1 1234 1234 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 12345 1000 200\n",
			want: 120 * time.Millisecond,
		},
		{name: "no command name", stat: "1234 cat S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50\n", wantErr: true},
		{name: "short line", stat: "1234 (cat) S 1 1234 1234 0 -1 4194560 100 0 0 0 250\n", wantErr: true},
		{name: "utime not a number", stat: "1234 (cat) S 1 1234 1234 0 -1 4194560 100 0 0 0 x 50 0\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPU([]byte(tc.stat))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseCPU(%q) = %s, want an error", tc.stat, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseCPU(%q) = %s, %v; want %s", tc.stat, got, err, tc.want)
			}
		})
	}
}

// sink keeps the compiler from dropping the work of burn.
var sink uint64

// TestCPUOfThisProcess: the test process's own CPU time grows while it burns
// some, in the kernel's ticks of 10ms.
func TestCPUOfThisProcess(t *testing.T) {
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Bounded by wall time: on a busy machine the process is not always
	// scheduled, so the CPU time it gets per second of waiting varies.
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i := range uint64(1 << 20) {
			sink = sink*31 + i
		}
		after, err := CPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			if after <= 0 {
				t.Fatalf("CPU time %s after burning some", after)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time still %s after burning for 10s", after)
		}
	}
}

func TestCPUOfNoProcess(t *testing.T) {
	if _, err := CPU(-1); err == nil {
		t.Fatal("CPU(-1) read a process")
	}
}

package info

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Uname is the operating system as INFO's os field shows it: uname's
// system, release and machine.
var Uname = sync.OnceValue(func() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return runtime.GOOS + " " + runtime.GOARCH
	}
	str := func(a [65]int8) string {
		var sb strings.Builder
		for _, ch := range a {
			if ch == 0 {
				break
			}
			sb.WriteByte(byte(ch))
		}
		return sb.String()
	}
	return str(u.Sysname) + " " + str(u.Release) + " " + str(u.Machine)
})

// ProcessRSS reads the process's resident set size from /proc (0 if
// unavailable).
func ProcessRSS() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TotalSystemMemory is the machine's memory in bytes (0 if unknown).
func TotalSystemMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// WriteCPU writes the CPU section from the process's resource usage.
func WriteCPU(b *strings.Builder) {
	tv := func(t syscall.Timeval) string {
		return fmt.Sprintf("%d.%06d", t.Sec, t.Usec)
	}
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	fields(b,
		"used_cpu_sys", tv(self.Stime),
		"used_cpu_user", tv(self.Utime),
		"used_cpu_sys_children", tv(children.Stime),
		"used_cpu_user_children", tv(children.Utime),
		"used_cpu_sys_main_thread", tv(self.Stime),
		"used_cpu_user_main_thread", tv(self.Utime))
}

package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ClockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100 on Linux).
const ClockTicks = 100

// DatabaseCPU is the CPU time the local MariaDB (or MySQL) server has used so far, read
// from /proc; -1 when no such process runs on this machine.
func DatabaseCPU() time.Duration { return ServerCPU("mariadbd", "mysqld") }

// RedisCPU is the CPU time the local Redis server has used so far; -1 when none runs
// on this machine.
func RedisCPU() time.Duration { return ServerCPU("redis-server") }

// ServerCPU is the CPU time used so far by the first process found in /proc whose
// command name is one of names; -1 when there is none.
func ServerCPU(names ...string) time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		if comm, cpu, ok := procStat(path); ok && slices.Contains(names, comm) {
			return cpu
		}
	}
	return -1
}

// PIDCPU is the CPU time the process pid has used so far; -1 when /proc does not say.
func PIDCPU(pid int) time.Duration {
	if _, cpu, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid)); ok {
		return cpu
	}
	return -1
}

// procStat reads a process's command name and the CPU time it has used (user and
// system) from its /proc/<pid>/stat file.
func procStat(path string) (comm string, cpu time.Duration, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid … utime stime: fields 14 and 15, counted after the command
	// name, which may hold spaces.
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return "", 0, false
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return s[open+1 : end], time.Duration(utime+stime) * time.Second / ClockTicks, true
}

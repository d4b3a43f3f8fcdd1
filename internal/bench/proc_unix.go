//go:build unix

package bench

import (
	"fmt"
	"syscall"
	"time"
)

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFileLimit raises the soft limit on open files to at least need,
// up to the hard limit.
func raiseFileLimit(need uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= need {
		return nil
	}
	l.Cur = min(need, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur < need {
		return fmt.Errorf("the open-file limit is %d and this needs about %d (raise ulimit -n, or pass fewer --waiters)", l.Cur, need)
	}
	return nil
}

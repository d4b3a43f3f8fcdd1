package bench

import (
	"os/exec"
	"syscall"
)

// orphaned ends cmd with its parent: a bench killed outright leaves no
// redis-server or replica behind.
func orphaned(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd
}

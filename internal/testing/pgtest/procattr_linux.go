package pgtest

import "syscall"

// procAttr runs the server as cred and has the kernel send it SIGQUIT
// (PostgreSQL's immediate shutdown) when the process that started it
// dies, so that a killed test leaves no server behind.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}

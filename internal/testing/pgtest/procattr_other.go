//go:build !linux

package pgtest

import "syscall"

// procAttr runs the server as cred. Outside Linux there is no Pdeathsig:
// a killed test may leave its server running until its directory goes.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

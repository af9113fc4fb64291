//go:build !windows

package vault

import "syscall"

// syscallNotDir is the error of an Lstat below a regular file.
var syscallNotDir error = syscall.ENOTDIR

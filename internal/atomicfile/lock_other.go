//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || windows)

package atomicfile

import "os"

// tryLock: no file locking on this system; ctxkit runs unserialised.
func tryLock(*os.File) (bool, error) { return true, nil }

func unlockFile(*os.File) {}

// Package home locates ctxkit's data directory ($CTXKIT_HOME, or ~/.ctxkit
// when it is unset; created with mode 0700 because it holds stored tool
// results and secrets) and the project root whose .ctxkit/config.json
// records local vaults.
package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvVar names the variable that overrides the data directory.
const EnvVar = "CTXKIT_HOME"

// Dir returns the data directory, creating it (0700) if needed.
func Dir() (string, error) {
	dir := os.Getenv(EnvVar)
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find home directory (set %s): %w", EnvVar, err)
		}
		dir = filepath.Join(h, ".ctxkit")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create data directory %s: %w", dir, err)
	}
	return dir, nil
}

// ProjectRoot returns the project root seen from cwd: the first directory,
// walking up, that holds .ctxkit/config.json (the data directory's own
// config.json is never mistaken for one), or cwd itself when none does.
func ProjectRoot(cwd, dataDir string) string {
	skip := realPath(filepath.Join(dataDir, "config.json"))
	for dir := cwd; ; {
		p := filepath.Join(dir, ".ctxkit", "config.json")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && realPath(p) != skip {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return cwd
		}
		dir = parent
	}
}

// realPath is p with its symlinks resolved, or p when that fails.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

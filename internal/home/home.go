// Package home locates ctxkit's data directory: $CTXKIT_HOME, or ~/.ctxkit
// when it is unset. The directory is created with mode 0700 because it holds
// stored tool results and, later, secrets.
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

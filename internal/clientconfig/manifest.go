package clientconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// manifestRecord is what the manifest keeps about one entry ctxkit changed: the
// entry's exact original text, so uninstall restores it byte for byte, and
// the text ctxkit wrote, so drift (the client or the user changed the entry
// since) is noticed.
type manifestRecord struct {
	Client string   `json:"client"`
	Scope  Scope    `json:"scope"`
	Path   string   `json:"path"`
	Keys   []string `json:"keys"` // from the document root to the servers object
	Server string   `json:"server"`
	// Original is the entry's text before install (a JSON value or a TOML
	// table block); empty when ctxkit add created the entry.
	Original string    `json:"original"`
	Added    bool      `json:"added,omitempty"`
	Lead     string    `json:"lead,omitempty"`  // added TOML block: the separator written before it
	Empty    string    `json:"empty,omitempty"` // added JSON entry: the servers object's text when it was empty
	Wrapped  string    `json:"wrapped"`
	Time     time.Time `json:"time"`
}

func (r manifestRecord) same(o manifestRecord) bool {
	return r.Client == o.Client && r.Path == o.Path && slices.Equal(r.Keys, o.Keys) && r.Server == o.Server
}

type manifest struct {
	Version int              `json:"version"`
	Records []manifestRecord `json:"records"`
}

func manifestPath(dataDir string) string { return filepath.Join(dataDir, "install", "manifest.json") }

func loadManifest(dataDir string) (*manifest, error) {
	p := manifestPath(dataDir)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &manifest{Version: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	m := &manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", p, err)
	}
	return m, nil
}

func (m *manifest) save(dataDir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(manifestPath(dataDir), append(b, '\n'), 0o600, 0o700, nil)
}

func (m *manifest) put(r manifestRecord) {
	for i := range m.Records {
		if m.Records[i].same(r) {
			m.Records[i] = r
			return
		}
	}
	m.Records = append(m.Records, r)
}

func (m *manifest) remove(r manifestRecord) {
	m.Records = slices.DeleteFunc(m.Records, r.same)
}

// at returns the records of one servers object.
func (m *manifest) at(client, path string, keys []string) []manifestRecord {
	var out []manifestRecord
	for _, r := range m.Records {
		if r.Client == client && r.Path == path && slices.Equal(r.Keys, keys) {
			out = append(out, r)
		}
	}
	return out
}

package clientconfig

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// ServerStatus is one server in a configuration file, as Status sees it.
type ServerStatus struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`            // stdio, remote, or "" when gone
	State   string `json:"state"`           // wrapped, not wrapped, unsupported, missing
	Managed bool   `json:"managed"`         // ctxkit's manifest holds its original
	Drift   string `json:"drift,omitempty"` // how the entry changed since install
	Detail  string `json:"detail,omitempty"`
}

// LocationStatus is one configuration file of one client.
type LocationStatus struct {
	Client  string         `json:"client"`
	Scope   Scope          `json:"scope"`
	Path    string         `json:"path"`
	Exists  bool           `json:"exists"`
	Error   string         `json:"error,omitempty"`
	Servers []ServerStatus `json:"servers"`
}

// Status reports every scope of the named clients (all clients when none
// is given). Files that do not exist are listed only for clients named
// explicitly or when the manifest remembers them.
func (in *Installer) Status(ctx context.Context, names ...string) ([]LocationStatus, error) {
	explicit := len(names) > 0
	if !explicit {
		for _, c := range clients {
			names = append(names, c.Name)
		}
	}
	m, err := loadManifest(in.opts.DataDir)
	if err != nil {
		return nil, err
	}
	var out []LocationStatus
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		for _, scope := range c.Scopes() {
			path, err := c.Path(scope, in.opts.Env)
			if err != nil {
				continue
			}
			keys := c.serversPath(scope, in.opts.Env)
			recs := m.at(c.Name, path, keys)
			ls := LocationStatus{Client: c.Name, Scope: scope, Path: path}
			if _, err := os.Stat(path); err == nil {
				ls.Exists = true
			} else if !errors.Is(err, fs.ErrNotExist) {
				ls.Error = err.Error()
			}
			if !ls.Exists && len(recs) == 0 && !(explicit && scope == ScopeUser) {
				continue
			}
			if ls.Exists {
				l, err := in.open(c.Name, scope)
				if err != nil {
					ls.Error = err.Error()
					out = append(out, ls)
					continue
				}
				es, err := l.entries()
				if err != nil {
					ls.Error = err.Error()
					out = append(out, ls)
					continue
				}
				if scope == ScopeLocal && len(es) == 0 && len(recs) == 0 {
					continue
				}
				for _, e := range es {
					ss := ServerStatus{Name: e.name, Kind: "stdio", State: "not wrapped", Detail: e.unsupported}
					if e.server.Remote() {
						ss.Kind = "remote"
					}
					switch {
					case e.wrapped:
						ss.State = "wrapped"
					case e.unsupported != "":
						ss.State = "unsupported"
					}
					for _, r := range recs {
						if r.Server != e.name {
							continue
						}
						ss.Managed = true
						cur := l.text(e)
						switch {
						case cur == r.Wrapped || l.equal(cur, r.Wrapped):
						case !e.wrapped:
							ss.Drift = "unwrapped since install (the client or someone rewrote it); run ctxkit install again"
						default:
							ss.Drift = "changed since install"
						}
					}
					ls.Servers = append(ls.Servers, ss)
				}
			}
			for _, r := range recs {
				found := false
				for _, s := range ls.Servers {
					found = found || s.Name == r.Server
				}
				switch {
				case found:
				case r.Added:
					ls.Servers = append(ls.Servers, ServerStatus{Name: r.Server, State: "missing", Managed: true,
						Detail: "added by ctxkit add and since removed from the file; ctxkit uninstall forgets it"})
				default:
					ls.Servers = append(ls.Servers, ServerStatus{Name: r.Server, State: "missing", Managed: true,
						Drift: "gone from the file since install; ctxkit uninstall --force puts the original back"})
				}
			}
			out = append(out, ls)
		}
	}
	return out, nil
}

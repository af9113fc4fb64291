package guard

import (
	"slices"
	"strings"
)

// backendNames lists the configured backends, for error messages.
func (g *Guard) backendNames() string {
	var names []string
	for k := range g.backends {
		names = append(names, string(k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

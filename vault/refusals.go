package vault

import (
	"context"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Refused accesses are audited, but a caller that keeps being refused must
// not grow a vault's audit log without bound: per vault, caller, operation
// and reason, one refusal is logged per refusalWindow, and the next logged
// one says how many were not (AuditEvent.Repeated).
const (
	refusalWindow  = time.Minute
	maxRefusalKeys = 4096
)

type refusalKey struct{ vault, caller, action, reason string }

type refusalState struct {
	logged     time.Time
	suppressed int
}

// refusalLog remembers recent refusals, in this process.
type refusalLog struct {
	mu sync.Mutex
	m  map[refusalKey]*refusalState
}

// admit reports whether a refusal of k at now is logged, and how many
// like it were suppressed since the last one that was.
func (l *refusalLog) admit(k refusalKey, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[refusalKey]*refusalState{}
	}
	st := l.m[k]
	if st != nil && now.Sub(st.logged) < refusalWindow {
		st.suppressed++
		return false, 0
	}
	if len(l.m) >= maxRefusalKeys {
		for key, s := range l.m {
			if now.Sub(s.logged) >= refusalWindow {
				delete(l.m, key)
			}
		}
		if len(l.m) >= maxRefusalKeys {
			clear(l.m) // bounded memory over exact counts
		}
	}
	repeated := 0
	if st != nil {
		repeated = st.suppressed
	}
	l.m[k] = &refusalState{logged: now}
	return true, repeated
}

// refuse logs a refused access of c to v, coalesced.
func (s *Service) refuse(ctx context.Context, v *Vault, c Caller, action, path, reason string) {
	now := s.now()
	ok, repeated := s.refusals.admit(refusalKey{v.ID, c.String(), action, reason}, now)
	if !ok {
		return
	}
	s.appendAudit(ctx, v, store.AuditEvent{Time: now.UTC(), Agent: c.String(), Action: action, Path: path, Outcome: "refused", Reason: reason, Repeated: repeated,
		Detail: c.withAssertion("")})
}

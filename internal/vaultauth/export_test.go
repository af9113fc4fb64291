package vaultauth

import "time"

// SetClock sets the clock a's failure budgets are counted by, for the
// tests that run a behind the real handlers (package vaultauth_test).
func SetClock(a *Authenticator, now func() time.Time) { a.now = now }

package vault

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Outcomes of an audited event.
const (
	OK      = "ok"
	Refused = "refused"
)

// AuditFile is the audit log's name inside the vault's data folder.
const AuditFile = "audit.jsonl"

// TimeFormat is the audit log's timestamp format: UTC, RFC 3339 with
// microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// Event is one line of a vault's audit log.
type Event struct {
	Time    time.Time `json:"-"`
	Agent   string    `json:"agent"`          // agent name, or Owner
	Action  string    `json:"action"`         // init, attach, write, query, ...
	Path    string    `json:"path,omitempty"` // inside the vault, when there is one
	Outcome string    `json:"outcome"`        // OK or Refused
	Reason  string    `json:"reason,omitempty"`
	Detail  string    `json:"detail,omitempty"`
}

// MarshalJSON writes the time in TimeFormat, first.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		Time string `json:"time"`
		plain
	}{e.Time.UTC().Format(TimeFormat), plain(e)})
}

// UnmarshalJSON reads an Event written by MarshalJSON.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var aux struct {
		Time string `json:"time"`
		plain
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, aux.Time)
	if err != nil {
		return err
	}
	*e = Event(aux.plain)
	e.Time = t
	return nil
}

// Log appends e to the vault's audit log (created 0600 in a 0700 data
// folder), stamping the time when it is zero. Each event is one write of
// one line to a file opened for appending, so lines of concurrent writers
// do not interleave.
func (v *Vault) Log(ctx context.Context, e Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Outcome == "" {
		e.Outcome = OK
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode audit event: %w", err)
	}
	if err := os.MkdirAll(v.DataDir(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", v.DataDir(), err)
	}
	path := filepath.Join(v.DataDir(), AuditFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log %s: %w", path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write audit log %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close audit log %s: %w", path, err)
	}
	return nil
}

// Authorize checks agent's access for op (Allowed) and logs a refusal in
// the audit log, with action and path. It returns Allowed's error.
func (v *Vault) Authorize(ctx context.Context, agent string, op Op, action, path string) error {
	err := v.Allowed(agent, op)
	if err == nil {
		return nil
	}
	reason := "not attached"
	if errors.Is(err, ErrForbidden) {
		reason = "read-only grant"
	}
	if agent == "" {
		reason = "no agent identity"
	}
	if lerr := v.Log(ctx, Event{Agent: agent, Action: action, Path: path, Outcome: Refused, Reason: reason}); lerr != nil {
		return errors.Join(err, lerr)
	}
	return err
}

// Audit returns the last n events of the vault's audit log, oldest first
// (all of them when n <= 0). A vault without a log has none. A line that
// does not parse (a torn write after a crash) is skipped.
func (v *Vault) Audit(ctx context.Context, n int) ([]Event, error) {
	path := filepath.Join(v.DataDir(), AuditFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open audit log %s: %w", path, err)
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		out = append(out, e)
		if n > 0 && len(out) > 2*n {
			out = append(out[:0], out[len(out)-n:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read audit log %s: %w", path, err)
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

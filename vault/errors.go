package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// Error is an error of the service that a caller can act on: its kind (one
// of the sentinel errors, for errors.Is), a message, and where the caller
// can fix it, what to do and which request field is at fault. Front ends
// pass all of it on: a model gets the fix as structured data.
type Error struct {
	Kind  error
	Msg   string
	Fix   string
	Field string
}

func (e *Error) Error() string {
	if e.Fix == "" {
		return e.Msg
	}
	return e.Msg + "; " + e.Fix
}

// Unwrap returns the kind.
func (e *Error) Unwrap() error { return e.Kind }

// invalid returns an ErrInvalid error about field.
func invalid(field, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...), Field: field}
}

// Class names the kind of an error the way every front end reports it.
type Class string

// The classes, each a stable machine-readable code.
const (
	ClassInvalid         Class = "invalid"         // fix the request (HTTP 400)
	ClassUnauthenticated Class = "unauthenticated" // no valid credentials (401)
	ClassForbidden       Class = "forbidden"       // not allowed for this caller (403)
	ClassNotFound        Class = "not_found"       // no such thing, or not visible (404)
	ClassExists          Class = "exists"          // it exists already (409)
	ClassConflict        Class = "conflict"        // someone changed it first (409)
	ClassCanceled        Class = "canceled"        // the caller went away
	ClassInternal        Class = "internal"        // a fault of ours, logged
	ClassUnavailable     Class = "unavailable"     // a dependency (an embedder) is down (503)
)

// Described is what a front end shows of an error.
type Described struct {
	Class Class
	// Message says what is wrong; for ClassInternal it is generic, and
	// the error itself belongs in the server's log, not in the answer.
	Message string
	// Fix says what to do about it, when the caller can.
	Fix   string
	Field string
}

// Describe classifies err for a front end.
func Describe(err error) Described {
	d := Described{Message: hidePaths(err)}
	var e *Error
	if errors.As(err, &e) {
		d.Message, d.Fix, d.Field = e.Msg, e.Fix, e.Field
	}
	switch {
	case d.Fix == "" && errors.Is(err, episodic.ErrConflict):
		d.Fix = "the episode is no longer open: its history shows the open statement that replaced it; act on that one"
	case d.Fix == "" && errors.Is(err, episodic.ErrNotFound):
		d.Fix = "query the vault's episodes (closed ones included) to see their ids"
	}
	switch {
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrOutside), errors.Is(err, ErrWrongType), errors.Is(err, episodic.ErrInvalid),
		errors.Is(err, store.ErrNoScope), errors.Is(err, store.ErrInvalidPath):
		d.Class = ClassInvalid
	case errors.Is(err, ErrUnauthenticated):
		d.Class = ClassUnauthenticated
	case errors.Is(err, ErrForbidden):
		d.Class = ClassForbidden
	case errors.Is(err, ErrNotFound), errors.Is(err, episodic.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, store.ErrNotFound):
		d.Class = ClassNotFound
	case errors.Is(err, ErrExists), errors.Is(err, store.ErrExists):
		d.Class = ClassExists
	case errors.Is(err, episodic.ErrConflict):
		d.Class = ClassConflict
	case errors.Is(err, ErrUnavailable):
		d.Class = ClassUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		d.Class = ClassCanceled
	default:
		d.Class, d.Message, d.Fix, d.Field = ClassInternal, "internal error", "", ""
	}
	return d
}

// ErrUnavailable: a service the vault depends on (its embedder) did not
// answer; retrying later may work.
var ErrUnavailable = errors.New("unavailable")

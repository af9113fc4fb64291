package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runHTTP runs serve (srv.Serve or srv.ServeTLS on its listener) until it
// fails or ctx ends; then it stops accepting connections and lets the
// requests in flight finish, for at most grace. What stops is named on
// log.
func runHTTP(ctx context.Context, srv *http.Server, serve func() error, grace time.Duration, log io.Writer, name string) error {
	done := make(chan error, 1)
	go func() { done <- serve() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(log, "%s: shutting down, letting requests in flight finish\n", name)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

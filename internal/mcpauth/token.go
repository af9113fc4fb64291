package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// maxEarlyRefresh is how long before its expiry a token is refreshed, for
// tokens that live at least four times as long; shorter-lived tokens are
// refreshed in the last quarter of their life.
const maxEarlyRefresh = time.Minute

// persistingSource is the token source the transports use. It refreshes the
// token ahead of its expiry (oauth2.ReuseTokenSourceWithExpiry), writes each
// new token to the token file, and on invalid_grant (a revoked or expired
// refresh token) first adopts a token another process may have stored, then
// drops the stored token so the next 401 runs the flow again.
type persistingSource struct {
	h   *Handler
	ctx context.Context
	oc  *oauth2.Config

	mu      sync.Mutex
	base    oauth2.TokenSource
	saved   string    // access token last written to the file
	refresh string    // refresh token of the current token
	expiry  time.Time // expiry of the current token
	dead    bool      // the grant is gone; only a new flow helps
}

// newSource returns a persisting source that starts with tok.
func (h *Handler) newSource(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) *persistingSource {
	p := &persistingSource{h: h, ctx: ctx, oc: oc}
	p.reset(tok)
	p.saved = tok.AccessToken
	return p
}

// reset makes tok the current token.
func (p *persistingSource) reset(tok *oauth2.Token) {
	t := *tok
	p.base = oauth2.ReuseTokenSourceWithExpiry(&t, p.oc.TokenSource(p.ctx, &t), earlyRefresh(&t))
	p.refresh = t.RefreshToken
	p.expiry = t.Expiry
	p.dead = false
}

// earlyRefresh is how long before tok's expiry to refresh it.
func earlyRefresh(tok *oauth2.Token) time.Duration {
	life := time.Duration(tok.ExpiresIn) * time.Second
	if life <= 0 && !tok.Expiry.IsZero() {
		life = time.Until(tok.Expiry)
	}
	if d := life / 4; d > 0 && d < maxEarlyRefresh {
		return d
	}
	return maxEarlyRefresh
}

// usable reports whether Token may give a token: false once the grant is
// known to be gone, or when the token has expired and there is no refresh
// token (oauth2 would fail the request instead of letting the server's 401
// start a flow).
func (p *persistingSource) usable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return false
	}
	return p.refresh != "" || p.expiry.IsZero() || time.Now().Before(p.expiry)
}

// Token returns a valid token, refreshing and persisting it as needed.
func (p *persistingSource) Token() (*oauth2.Token, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tok, err := p.base.Token()
	if err != nil && isInvalidGrant(err) {
		// A second wrapper for the same server may have refreshed first and
		// rotated the refresh token: use what it stored.
		if rec, lerr := p.h.store.load(); lerr == nil && rec.Token != nil && rec.Token.RefreshToken != "" && rec.Token.RefreshToken != p.refresh {
			p.reset(rec.Token)
			p.saved = rec.Token.AccessToken
			tok, err = p.base.Token()
		}
	}
	if err != nil {
		if isInvalidGrant(err) {
			p.dead = true
			p.forget()
		}
		// %w keeps the *oauth2.RetrieveError visible: the streamable transport
		// sends the request without a token on invalid_grant, and the 401
		// starts a new flow.
		return nil, fmt.Errorf("refresh the token for %s: %w", p.h.cfg.ServerURL, err)
	}
	p.refresh = tok.RefreshToken
	p.expiry = tok.Expiry
	if tok.AccessToken != p.saved {
		p.h.log.Info("oauth: token refreshed", "expiry", tok.Expiry)
		p.save(tok)
	}
	return tok, nil
}

// save writes tok, with the configuration to refresh it, to the token file.
func (p *persistingSource) save(tok *oauth2.Token) {
	oc := p.oc
	err := p.h.store.update(func(r *record) {
		t := *tok
		r.Token = &t
		r.AuthURL = oc.Endpoint.AuthURL
		r.TokenURL = oc.Endpoint.TokenURL
		r.AuthStyle = oc.Endpoint.AuthStyle
		r.Scopes = oc.Scopes
		if r.Client == nil || r.Client.ClientID != oc.ClientID {
			// Cannot happen through NewHandler's paths; keep the file coherent anyway.
			r.Client = &clientRecord{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, RedirectURI: oc.RedirectURL}
		}
	})
	if err != nil {
		p.h.log.Warn("oauth: could not store the token; it is kept in memory only", "err", err)
		return
	}
	p.saved = tok.AccessToken
}

// forget removes the stored token if it is still the one this source holds,
// and stops the handler from offering this source.
func (p *persistingSource) forget() {
	refresh := p.refresh
	err := p.h.store.update(func(r *record) {
		if r.Token != nil && r.Token.RefreshToken == refresh {
			r.Token = nil
		}
	})
	if err != nil {
		p.h.log.Warn("oauth: could not drop the stored token", "err", err)
	}
	p.h.log.Info("oauth: refresh token refused (invalid_grant); authorization will run again")
	p.h.dropSource(p)
}

// isInvalidGrant reports whether err is the token endpoint's invalid_grant.
func isInvalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

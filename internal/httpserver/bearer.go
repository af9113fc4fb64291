package httpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Bearer returns the token of an Authorization: Bearer header.
func Bearer(req *http.Request) (string, bool) {
	h := req.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// TokenMatches compares a token a client sent with the expected one in
// constant time, their lengths included (the digests are compared).
func TokenMatches(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return want != "" && subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

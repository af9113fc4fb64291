// Package e2e holds the end-to-end tests of `ctxkit wrap`: the real ctxkit
// binary, built once by TestMain, proxies real MCP servers and is driven by
// real MCP clients, and every behaviour is compared with the same calls made
// to the upstream directly.
//
// The upstreams are the reference servers @modelcontextprotocol/server-filesystem
// and @modelcontextprotocol/server-everything (run with node), a Go SDK
// server over streamable HTTP started inside the test (package
// e2e/internal/upstream), and the same Go server over stdio for the
// benchmarks. The clients are the official Go SDK and, in one test, the
// official TypeScript SDK (e2e/node/client.mjs). The npm packages are pinned
// in e2e/node/package-lock.json and installed by `npm ci --prefix e2e/node`
// (.ci/run does it); without node or those packages the node-based tests
// skip and say why.
//
// The package has no non-test code besides this comment.
package e2e

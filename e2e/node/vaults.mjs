// vaults.mjs: drives ctxkit's vault MCP server (`ctxkit mcp` over stdio, or
// the streamable HTTP handler) with the official TypeScript SDK, which
// validates every structured result against the outputSchema its tool
// announced. Used by TestVaultMCPTypeScript (package e2e).
//
// Usage: node vaults.mjs CONFIG_JSON, where CONFIG_JSON is
//   {"transport": "stdio", "command": "/path/to/ctxkit", "args": ["mcp", ...], "cwd": "/tmp/x",
//    "calls": [{"name": "list_vaults", "arguments": {}}, ...]}
// or {"transport": "http", "url": "http://127.0.0.1:PORT/", "token": "ctxk_...", "calls": [...]}.
// A string argument of the form "${N.path.to.field}" is replaced by that
// field of call N's result (its structured content, else its text parsed
// as JSON). It prints one JSON summary on stdout and exits 0 whatever
// happened: each call records its outcome, so the Go test says what failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(process.argv[2] ?? "{}");
const summary = { connected: false, tools: [], calls: [] };

function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

function dataOf(call) {
  if (call?.structured !== undefined) return call.structured;
  try {
    return JSON.parse(call?.text ?? "");
  } catch {
    return undefined;
  }
}

// resolve replaces "${N.path}" strings by fields of earlier results.
function resolve(value) {
  if (typeof value === "string") {
    const m = /^\$\{(\d+)\.([^}]+)\}$/.exec(value);
    if (!m) return value;
    let v = dataOf(summary.calls[Number(m[1])]);
    for (const key of m[2].split(".")) v = v?.[key];
    return v;
  }
  if (Array.isArray(value)) return value.map(resolve);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
  }
  return value;
}

let transport;
if (config.transport === "http") {
  transport = new StreamableHTTPClientTransport(new URL(config.url), {
    requestInit: { headers: { Authorization: `Bearer ${config.token}` } },
  });
} else {
  transport = new StdioClientTransport({
    command: config.command,
    args: config.args,
    cwd: config.cwd,
    env: { ...process.env }, // the test's CTXKIT_HOME, HOME and token variable
    stderr: "inherit",
  });
}
const client = new Client({ name: "ctxkit-e2e-vaults", version: "1.0.0" }, { capabilities: {} });

try {
  await client.connect(transport);
  summary.connected = true;
  summary.instructions = client.getInstructions() ?? "";
  const listed = await client.listTools();
  summary.tools = listed.tools.map((t) => t.name).sort();
  for (const c of config.calls ?? []) {
    const entry = { name: c.name };
    try {
      const result = await client.callTool({ name: c.name, arguments: resolve(c.arguments ?? {}) });
      entry.isError = result.isError ?? false;
      entry.text = textOf(result);
      entry.structured = result.structuredContent;
    } catch (err) {
      entry.error = String(err?.message ?? err);
    }
    summary.calls.push(entry);
  }
  await client.close();
} catch (err) {
  summary.error = String(err?.message ?? err);
  await transport.close().catch(() => {});
}
process.stdout.write(JSON.stringify(summary) + "\n");

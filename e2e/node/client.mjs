// client.mjs: a client that is not ctxkit's own, for the end-to-end test
// TestTypeScriptClient (package e2e). It drives `ctxkit wrap` over stdio
// with the official TypeScript SDK (Client + StdioClientTransport), which
// also validates every result against the outputSchema its tool announced.
//
// Usage: node client.mjs CONFIG_JSON, where CONFIG_JSON is
//   {"command": "/path/to/ctxkit", "args": ["wrap", ...],
//    "tool": "read_text_file", "arguments": {...}, "query": "words to search"}
// It lists the tools, calls the tool (whose result should be offloaded),
// reads page 1 of the stored result, searches it for the query and reads
// the page the best passage is on. It prints one JSON summary on stdout and
// exits 0 whatever happened; each step records its error instead of
// stopping the script, so the Go test can say exactly what failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const config = JSON.parse(process.argv[2] ?? "{}");
const summary = { steps: [] };

// step runs fn, records its outcome under name and returns its value.
async function step(name, fn) {
  try {
    const value = await fn();
    summary.steps.push({ name, ok: true });
    return value;
  } catch (err) {
    summary.steps.push({ name, ok: false, error: String(err?.message ?? err) });
    return undefined;
  }
}

function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

// explore calls an exploration tool and decodes its JSON answer.
async function explore(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) {
    throw new Error(`${name} answered a tool error: ${textOf(result)}`);
  }
  return JSON.parse(textOf(result));
}

const transport = new StdioClientTransport({
  command: config.command,
  args: config.args,
  env: { ...process.env }, // the test's CTXKIT_HOME and HOME
  stderr: "inherit",
});
const client = new Client({ name: "ctxkit-e2e-typescript", version: "1.0.0" }, { capabilities: {} });

await step("connect", () => client.connect(transport));
if (summary.steps[0].ok) {
  summary.server = client.getServerVersion();
  summary.instructions = client.getInstructions() ?? "";
  const listed = await step("listTools", () => client.listTools());
  summary.tools = (listed?.tools ?? []).map((t) => t.name).sort();

  const big = await step("callTool", () => client.callTool({ name: config.tool, arguments: config.arguments }));
  if (big) {
    summary.call = {
      isError: big.isError ?? false,
      text: textOf(big),
      hasStructuredContent: big.structuredContent !== undefined,
      json_chars: JSON.stringify(big).length,
    };
    let id;
    try {
      id = JSON.parse(summary.call.text).stored_result;
    } catch {
      // Not a notice: the test reports the text.
    }
    summary.workspace_id = id;
    if (id) {
      summary.page1 = await step("result_read_page", () => explore("result_read_page", { workspace_id: id, page: 1 }));
      const found = await step("result_search_in_text", () =>
        explore("result_search_in_text", { workspace_id: id, query: config.query }));
      const passages = found?.passages ?? [];
      summary.search = { passages: passages.length, page: passages[0]?.page, text: passages[0]?.text };
      if (passages.length > 0) {
        summary.found_page = await step("result_read_page(found)", () =>
          explore("result_read_page", { workspace_id: id, page: passages[0].page }));
      }
    }
  }
  await step("close", () => client.close());
} else {
  await transport.close().catch(() => {});
}
process.stdout.write(JSON.stringify(summary) + "\n");

import type { Command } from "commander";
import { mcpCaller, serveStdio } from "../../src/mcp/stdio";
import { type CommonOptions, withApp, withDbOption } from "../context";
import { CliError, must } from "../errors";

interface McpOptions extends CommonOptions {
  key?: string;
}

/**
 * `mcp --key KEY`: the MCP tools over stdio, for a local client that starts this command (e.g.
 * Claude Desktop). stdout carries the protocol only; logs go to stderr.
 */
export function registerMcp(program: Command): void {
  withDbOption(program.command("mcp"))
    .description("serve the MCP tools over stdio for a local MCP client")
    .option(
      "--key <key>",
      "an svc_mcp_ key of a terminal or terminal_pro account (or SMARTMONEY_MCP_KEY, which keeps it out of the process list)",
    )
    .action((options: McpOptions) => {
      const key = options.key ?? process.env.SMARTMONEY_MCP_KEY;
      if (!key) throw new CliError("no key: pass --key svc_mcp_… or set SMARTMONEY_MCP_KEY");
      return withApp(options, async ({ app }) => {
        must(mcpCaller(app, key));
        await serveStdio(app, key);
      });
    });
}

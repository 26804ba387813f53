/**
 * The ceiling for `npm run bench`: the least a Node HTTP server can do per request (parse it,
 * answer a constant JSON). Started by bench/http.ts, pinned to the same core as the app server;
 * prints `{"port":N}` on stdout once listening, stops on SIGTERM.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { CEILING_BODY } from "./endpoints";

const body = Buffer.from(CEILING_BODY);
const server = createServer((_request, response) => {
  response.writeHead(200, {
    "content-type": "application/json",
    "content-length": body.length,
  });
  response.end(body);
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.once("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});

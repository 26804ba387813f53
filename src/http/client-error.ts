import type { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import { envelope } from "../errors";
import { nextRequestId } from "./middleware/request-id";

/**
 * Requests Node refuses before the router sees them: headers over its 16 KiB limit (431) and
 * unparsable requests (400). Node's own answer is a bare status line; this one carries the error
 * envelope and X-Request-Id like every other error. Other socket errors just close the socket.
 */
export function answerClientErrors(server: EventEmitter): void {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
    if (!tooLarge && !String(error.code ?? "").startsWith("HPE_")) {
      socket.destroy();
      return;
    }
    const requestId = nextRequestId();
    const body = JSON.stringify(
      envelope(
        "bad_request",
        tooLarge ? "request headers exceed 16 KiB" : "malformed HTTP request",
        requestId,
      ),
    );
    const status = tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

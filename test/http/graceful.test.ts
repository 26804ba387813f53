import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { gracefulShutdown } from "../../src/http/graceful";
import { createLog } from "../../src/log";

/**
 * The drain on raw sockets, so each client's state is exact: idle keep-alive, a request in
 * flight, half a request sent. `/slow` answers only when the test releases it.
 */
let server: Server;
let release: () => void = () => {};
/** Requests the handler has seen. */
let seen = 0;
const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  release();
  server?.close();
});

async function start() {
  const shutdown = gracefulShutdown(
    createLog("silent", new Writable({ write: (_c, _e, d) => d() })),
  );
  seen = 0;
  const released = new Promise<void>((resolve) => (release = resolve));
  server = createServer(
    shutdown.track((req, res) => {
      seen += 1;
      if (req.url === "/slow") void released.then(() => res.end("slow done"));
      else res.end("fast");
    }),
  );
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return shutdown;
}

/** A raw connection that collects what it receives and notes when the server closes it. */
async function client() {
  const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
  sockets.push(socket);
  await once(socket, "connect");
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return { socket, closed, received: () => received };
}

const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`;

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("bounded shutdown", () => {
  it("closes idle keep-alive connections at once and answers in-flight requests with Connection: close", async () => {
    const shutdown = await start();
    const idle = await client();
    idle.socket.write(request("/fast"));
    await until(() => idle.received().includes("fast"));
    expect(idle.received()).toMatch(/keep-alive/i);
    const busy = await client();
    busy.socket.write(request("/slow"));
    await until(() => seen === 2);

    // A grace far longer than the test: the idle connection must go without waiting for it.
    const closing = shutdown.close(server, 600_000);
    await idle.closed;
    expect(busy.socket.destroyed).toBe(false);

    release();
    await busy.closed;
    expect(busy.received()).toMatch(/^HTTP\/1\.1 200/);
    expect(busy.received()).toMatch(/\r\nConnection: close\r\n/i);
    expect(busy.received()).toContain("slow done");
    expect(await closing).toEqual({ forced: 0 });
  });

  it("cuts off a request that outlives the grace and a silent half-sent request", async () => {
    const shutdown = await start();
    const stuck = await client();
    stuck.socket.write(request("/slow"));
    await until(() => seen === 1);
    const half = await client();
    half.socket.write("GET /fast HTTP/1.1\r\nHost: te"); // and then nothing

    const result = await shutdown.close(server, 100);
    expect(result.forced).toBe(1);
    await stuck.closed;
    await half.closed;
    expect(stuck.received()).toBe("");
  });
});

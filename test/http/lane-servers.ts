import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { App } from "../../src/app";
import { createRequestListener } from "../../src/http/listener";
import { buildWorld, tradeAfterRefresh, type World } from "./wallet-world";

export type Served = Awaited<ReturnType<typeof laneAndRouter>> & { world: World };

/**
 * The wallet world (./wallet-world.ts), traded after its refresh, served by laneAndRouter;
 * `close` ends the servers and closes the world.
 */
export async function servedWorld(): Promise<Served> {
  const world = buildWorld();
  tradeAfterRefresh(world);
  const servers = await laneAndRouter(world.t.app);
  return {
    ...servers,
    world,
    async close() {
      await servers.close();
      world.t.close();
    },
  };
}

/**
 * One app served over loopback sockets two ways: `laned`, with the answer lane in front of the
 * router, as `smartmoney serve` listens (src/http/listener.ts), and `routed`, by the router
 * alone. `listen` serves another handler; `close` ends them all.
 */
export async function laneAndRouter(app: App) {
  const servers: Server[] = [];
  async function listen(handler: RequestListener): Promise<string> {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  return {
    laned: await listen(createRequestListener(app)),
    routed: await listen(getRequestListener(app.http.fetch)),
    listen,
    async close(): Promise<void> {
      for (const server of servers.splice(0)) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

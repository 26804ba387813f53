import { createRequire } from "node:module";
const S3rver = createRequire(import.meta.url)("s3rver");
const server = new S3rver({ address: "127.0.0.1", port: 0, silent: false, directory: "/tmp/lt3/s3" });
const { port } = await server.run();
console.log("PORT", port);
await new Promise((r) => setTimeout(r, 25000));
await server.close();

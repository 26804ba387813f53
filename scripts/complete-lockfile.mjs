// Adds the missing lock entries for other platforms' optional packages, so `npm ci` accepts the
// lockfile. Run after `npm install` changed package-lock.json:  node scripts/complete-lockfile.mjs
//
// Why: the registry mirror these machines use carries only the Linux builds of packages such as
// @biomejs/cli-darwin-arm64. `npm install` skips an optional dependency it cannot fetch and leaves
// it out of package-lock.json; `npm ci` then refuses the lockfile ("Missing: … from lock file").
// An entry with the package's os/cpu (no tarball, no integrity) is enough: npm ci never fetches a
// package for another platform. Only optional dependencies whose names end in a platform suffix
// (-darwin-arm64, -linux-x64-musl, -win32-x64, …) are added; anything else is reported.
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const PLATFORM =
  /-(android|darwin|freebsd|linux|openbsd|sunos|win32)-(arm|arm64|ia32|x64)(?:-(gnu|musl|msvc))?$/;

const added = [];
const unknown = [];
const entries = Object.entries(lock.packages);
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path === "" ? "" : `${path}/`}node_modules/${name}`;
    const key = `node_modules/${name}`;
    if (lock.packages[nested] || lock.packages[key] || added.includes(`${name}@${version}`))
      continue;
    const match = PLATFORM.exec(name);
    if (!match) {
      unknown.push(`${name}@${version} (needed by ${path || "the project"})`);
      continue;
    }
    const [, os, cpu, abi] = match;
    const stub = {
      version,
      cpu: [cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(os === "linux" ? { libc: [abi === "musl" ? "musl" : "glibc"] } : {}),
      optional: true,
      os: [os],
    };
    // Where npm itself would put it: keys are kept in locale order after the root entry.
    const at = entries.findIndex(([other]) => other !== "" && other.localeCompare(key, "en") > 0);
    entries.splice(at < 0 ? entries.length : at, 0, [key, stub]);
    added.push(`${name}@${version}`);
  }
}
lock.packages = Object.fromEntries(entries);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);

for (const name of added) console.log(`added ${name}`);
if (added.length === 0) console.log("package-lock.json: nothing missing");
if (unknown.length > 0) {
  console.error(
    `missing, not a platform package (run npm install where the registry has it):\n  ${unknown.join("\n  ")}`,
  );
  process.exitCode = 1;
}

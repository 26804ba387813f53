import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as sea from "node:sea";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

/**
 * The web console (docs/console.md): one HTML page, one script and one stylesheet, a client of
 * the public `/v1` API and nothing more. The script and stylesheet are bundled from console/ by
 * esbuild: at build time into the binary's assets (build/build-binary.ts), or, from a checkout,
 * on the first request (esbuild is a devDependency, as the /docs viewer's package is).
 */
export const CONSOLE_PATH = "/console";
/** SEA asset names of the bundled console (see build/build-binary.ts). */
export const CONSOLE_SCRIPT_ASSET = "console.js";
export const CONSOLE_STYLE_ASSET = "console.css";

/**
 * Nothing but this origin's own files, no inline script or style, no framing. `style-src` stays
 * 'self': the charts set positions through the CSSOM (element.style), which CSP does not govern.
 * `img-src data:` is for the empty favicon, which spares the browser a request that would 404.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export interface ConsoleBundle {
  script: string;
  style: string;
}

/** One served file: its bytes, gzipped once, and a validator for conditional requests. */
export interface ConsoleFile {
  body: string;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
  type: string;
}

export interface ConsoleFiles {
  page: ConsoleFile;
  script: ConsoleFile;
  style: ConsoleFile;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ENTRY = join(ROOT, "console", "main.ts");

/**
 * Bundles console/ into one minified script and one stylesheet, in memory. esbuild is loaded
 * through createRequire so that the binary's own bundle never pulls it in: the binary serves the
 * copy made at build time and never calls this.
 */
export async function bundleConsole(): Promise<ConsoleBundle> {
  const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    minify: true,
    format: "iife",
    target: "es2022",
    platform: "browser",
    outdir: join(ROOT, "dist", "console"),
    entryNames: "app",
    write: false,
    legalComments: "none",
    logLevel: "silent",
  });
  const script = result.outputFiles.find((file) => file.path.endsWith(".js"))?.text;
  const style = result.outputFiles.find((file) => file.path.endsWith(".css"))?.text;
  if (script === undefined || style === undefined) {
    throw new Error(`bundling ${ENTRY} gave no script or no stylesheet`);
  }
  return { script, style };
}

/** Where the console cannot be bundled (an install without dev dependencies): a note instead. */
function missingBundle(reason: string): ConsoleBundle {
  const note = `The console is not built here (${reason}). Run it from the single binary (npm run build) or a full checkout (npm ci).`;
  return { script: `document.body.textContent = ${JSON.stringify(note)};\n`, style: "" };
}

async function loadBundle(): Promise<ConsoleBundle> {
  if (sea.isSea()) {
    return {
      script: sea.getAsset(CONSOLE_SCRIPT_ASSET, "utf8"),
      style: sea.getAsset(CONSOLE_STYLE_ASSET, "utf8"),
    };
  }
  try {
    createRequire(import.meta.url).resolve("esbuild");
  } catch {
    return missingBundle("esbuild is not installed");
  }
  return bundleConsole();
}

function file(body: string, type: string): ConsoleFile {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
  return { body, gzip: new Uint8Array(gzipSync(body, { level: 9 })), etag, type };
}

/**
 * Cytoscape adds a <style> element to the page unless one with this id exists, and the CSP would
 * refuse it (a console error): the stylesheet link carries the id, and console/style.css holds
 * the one rule Cytoscape wanted to add.
 */
const CYTOSCAPE_STYLESHEET_ID = "__________cytoscape_stylesheet";

/** The page: no inline script or style, so the CSP above needs no hash or nonce. */
export function consolePage(): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>smartmoney console</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" id="${CYTOSCAPE_STYLESHEET_ID}" href="${CONSOLE_PATH}/app.css">
  <script src="${CONSOLE_PATH}/app.js" defer></script>
</head>
<body>
  <noscript>The smartmoney console needs JavaScript.</noscript>
</body>
</html>
`;
}

let files: Promise<ConsoleFiles> | undefined;

/** The console's files, bundled (or read from the binary) once per process. */
export function consoleFiles(): Promise<ConsoleFiles> {
  files ??= loadBundle().then((bundle) => ({
    page: file(consolePage(), "text/html; charset=utf-8"),
    script: file(bundle.script, "text/javascript; charset=utf-8"),
    style: file(bundle.style, "text/css; charset=utf-8"),
  }));
  // A failed bundle is not kept: the next request tries again (and reports the error again).
  files.catch(() => {
    files = undefined;
  });
  return files;
}

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as sea from "node:sea";

/** SEA asset name of Scalar's standalone viewer (see build/build-binary.ts). */
export const SCALAR_ASSET = "scalar-standalone.js";

let viewer: string | undefined;

/**
 * Scalar's API reference viewer, served from the binary's asset (copied in at build time) or,
 * from a checkout, from the installed package, so /docs works with no internet; by default
 * Scalar would load it, and its fonts, from a CDN. The package is a devDependency (it weighs
 * about 150 MB for this one browser file): an install without dev dependencies serves a note
 * instead, and the OpenAPI document itself is unaffected.
 */
export function scalarViewer(): string {
  if (viewer === undefined) {
    viewer = sea.isSea() ? sea.getAsset(SCALAR_ASSET, "utf8") : installedViewer();
  }
  return viewer;
}

function installedViewer(): string {
  try {
    // The package exports no subpath for the browser bundle: find it beside its main entry.
    const main = createRequire(import.meta.url).resolve("@scalar/api-reference");
    return readFileSync(join(dirname(main), "browser", "standalone.js"), "utf8");
  } catch {
    const note =
      "The API reference viewer is not installed here (npm ci --omit=dev leaves it out). The OpenAPI document is at /v1/openapi.json.";
    return `document.body.textContent = ${JSON.stringify(note)};\n`;
  }
}

export function docsPage(): string {
  const configuration = JSON.stringify({
    withDefaultFonts: false,
    hideClientButton: true,
    telemetry: false,
    metaData: { title: "smartmoney API reference" },
  });
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>smartmoney API reference</title>
  <style>body { margin: 0; font-family: system-ui, sans-serif; }</style>
</head>
<body>
  <script id="api-reference" data-url="/v1/openapi.json" data-configuration='${configuration}'></script>
  <script src="/docs/scalar.js"></script>
</body>
</html>`;
}

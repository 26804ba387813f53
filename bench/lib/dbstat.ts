/**
 * Bytes per object of a database file, from SQLite's dbstat (used pages only: free pages and the
 * WAL are not counted), largest first.
 *
 *   npx tsx bench/lib/dbstat.ts PATH
 */
import { fileURLToPath } from "node:url";
import { openConnection } from "../../src/db/open";

export interface ObjectSize {
  name: string;
  bytes: number;
  rows: number;
}

export function objectSizes(path: string): { objects: ObjectSize[]; usedBytes: number } {
  const db = openConnection(path, { readonly: true });
  try {
    const objects = db
      .prepare(
        `SELECT name, sum(pgsize) AS bytes, sum(CASE WHEN pagetype = 'leaf' THEN ncell ELSE 0 END) AS rows
           FROM dbstat GROUP BY name ORDER BY bytes DESC`,
      )
      .all() as ObjectSize[];
    const usedBytes = objects.reduce((sum, o) => sum + o.bytes, 0);
    return { objects, usedBytes };
  } finally {
    db.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const path = process.argv[2];
  if (!path) {
    console.error("usage: npx tsx bench/lib/dbstat.ts PATH");
    process.exit(2);
  }
  const { objects, usedBytes } = objectSizes(path);
  const db = openConnection(path, { readonly: true });
  const fills = db.prepare("SELECT count(*) FROM trades").pluck().get() as number;
  db.close();
  for (const o of objects.slice(0, 25)) {
    console.log(
      `${o.name.padEnd(36)} ${(o.bytes / 1e6).toFixed(1).padStart(9)} MB ${(o.bytes / fills).toFixed(1).padStart(7)} B/fill ${String(o.rows).padStart(10)} rows`,
    );
  }
  console.log(
    `all-in: ${(usedBytes / 1e6).toFixed(1)} MB, ${fills} fills, ${(usedBytes / fills).toFixed(1)} B/fill`,
  );
}

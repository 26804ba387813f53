import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { Connection } from "../../src/db/open";

/** The pages a WAL holds, by the table or index each belongs to now. */
export interface WalPages {
  /** Frames of the WAL's current generation (a page written twice counts twice). */
  frames: number;
  /** Distinct pages among them. */
  pages: number;
  /** Per table or index (dbstat's name), its distinct pages, largest first. */
  byObject: { name: string; pages: number }[];
}

const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** A WAL's frames as read: how many, and how many of them each page has. */
export interface WalFrames {
  frames: number;
  counts: Map<number, number>;
}

/** The frames of a WAL's current generation (those whose salt matches the header's), by page. */
export function walFrames(dbPath: string): WalFrames {
  const counts = new Map<number, number>();
  let frames = 0;
  const wal = `${dbPath}-wal`;
  if (!existsSync(wal) || statSync(wal).size < WAL_HEADER) return { frames, counts };
  const fd = openSync(wal, "r");
  try {
    const header = Buffer.alloc(WAL_HEADER);
    readSync(fd, header, 0, WAL_HEADER, 0);
    const pageSize = header.readUInt32BE(8);
    const salt = [header.readUInt32BE(16), header.readUInt32BE(20)];
    const frame = Buffer.alloc(FRAME_HEADER);
    const size = statSync(wal).size;
    for (let at = WAL_HEADER; at + FRAME_HEADER + pageSize <= size; at += FRAME_HEADER + pageSize) {
      readSync(fd, frame, 0, FRAME_HEADER, at);
      if (frame.readUInt32BE(8) !== salt[0] || frame.readUInt32BE(12) !== salt[1]) break;
      frames += 1;
      const page = frame.readUInt32BE(0);
      counts.set(page, (counts.get(page) ?? 0) + 1);
    }
  } finally {
    closeSync(fd);
  }
  return { frames, counts };
}

/**
 * The pages of `counts` by the table or index each belongs to now (dbstat: every page read,
 * seconds on the large world). A page no object holds (a free page) counts in none.
 */
function pagesByObject(
  counts: ReadonlyMap<number, number>,
  connection: Connection,
): WalPages["byObject"] {
  const byName = new Map<string, number>();
  const rows = connection.prepare("SELECT name, pageno FROM dbstat").raw().iterate() as Iterable<
    [string, number]
  >;
  for (const [name, page] of rows) {
    if (counts.has(page)) byName.set(name, (byName.get(name) ?? 0) + 1);
  }
  return [...byName]
    .map(([name, pages]) => ({ name, pages }))
    .sort((a, b) => b.pages - a.pages || a.name.localeCompare(b.name));
}

/**
 * Where a database's writes since its WAL last restarted went: every frame of the WAL's current
 * generation, each page mapped to its table or index. A refresh's pages are its cost (each
 * dirty page is a 4 KB write, twice with its checkpoint), and this says which of its rows and
 * ranking entries they were (docs/architecture.md, "Rankings sized to their queries").
 * `connection` reads the same database.
 */
export function walPages(dbPath: string, connection: Connection): WalPages {
  return mapWalFrames(walFrames(dbPath), connection);
}

/**
 * Frames read earlier (walFrames), mapped now: for a caller that must let go of the WAL in
 * between (bench:refresh reads them while a reader pins the WAL, and maps them once it is gone).
 */
export function mapWalFrames({ frames, counts }: WalFrames, connection: Connection): WalPages {
  return { frames, pages: counts.size, byObject: pagesByObject(counts, connection) };
}

/** The map as lines: frames and pages, then the `top` objects by pages. */
export function formatWalPages(map: WalPages, top = 15): string {
  const lines = [`  ${map.frames} frames, ${map.pages} distinct pages`];
  for (const { name, pages } of map.byObject.slice(0, top)) {
    lines.push(`  ${String(pages).padStart(8)}  ${name}`);
  }
  return lines.join("\n");
}

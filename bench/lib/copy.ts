import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, fdatasyncSync, fstatSync, openSync, readSync } from "node:fs";

/**
 * Copies a file and waits until the copy is on disk. A bench measures a copy of its world right
 * after making it, and the kernel writes a fresh copy back to the disk for some seconds after
 * (3.8 GB for the large world): a refresh measured meanwhile shared the disk with that writeback
 * and took 0.5–1 s longer (4.66 and 5.20 s against 4.17 and 4.19 s with the copy synced first,
 * the large world's incremental refresh after 10,000 trades). A server's database has no such
 * copy in flight. (bench:stall flushed its copy this way already.) Nor is it cached as a fresh
 * copy is: it is cached again page by page (cacheAsPages).
 */
export function copyToDisk(from: string, to: string): void {
  copyFileSync(from, to);
  settleCopy(to);
}

/**
 * What a copy made any other way needs before a bench measures it: on disk, then cached page by
 * page. In that order: the kernel drops only the pages already written back.
 */
export function settleCopy(path: string): void {
  syncFile(path);
  cacheAsPages(path);
}

/** Waits until the file's written content is on disk. */
function syncFile(path: string): void {
  const fd = openSync(path, "r+");
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Puts a synced file (settleCopy) in the kernel's page cache the way a server's database is: page
 * by page.
 *
 * A fresh copy sits in the page cache in large folios (Linux 6.x caches a file written in large
 * chunks, as a copy is, in folios of up to megabytes), and a 4 KB page that SQLite then writes
 * into one dirties the whole folio: the kernel counts and writes back all of it. Measured on the
 * large world (300k fills appended, nothing else changed): 352 MB written to the disk for SQLite's
 * 54 MB, against 54 MB with the file cached page by page. A server's database is not a fresh copy:
 * SQLite reads and writes it 4 KB at a time, at scattered places, and the kernel caches those
 * reads in 4 KB folios (a read that does not follow the one before is not read ahead). Dropping
 * the copy from the cache alone would make every read of the bench a disk read (the large import
 * ran at 9.3k fills/s so, against 10.9k cached page by page the same day). So the copy is dropped
 * (coreutils dd, `iflag=nocache`: a POSIX_FADV_DONTNEED over the file, which Node does not offer)
 * and read again backwards, 4 KB at a time: 36 s for the large world's 3.6 GB.
 */
function cacheAsPages(path: string): void {
  const run = spawnSync("dd", [`if=${path}`, "iflag=nocache", "count=0", "status=none"], {
    stdio: ["ignore", "ignore", "pipe"],
    encoding: "utf8",
  });
  if (run.status !== 0) {
    throw new Error(`dd could not drop ${path} from the page cache: ${run.stderr}`);
  }
  const fd = openSync(path, "r");
  try {
    const page = Buffer.alloc(4096);
    for (let at = Math.floor((fstatSync(fd).size - 1) / 4096) * 4096; at >= 0; at -= 4096) {
      readSync(fd, page, 0, 4096, at);
    }
  } finally {
    closeSync(fd);
  }
}

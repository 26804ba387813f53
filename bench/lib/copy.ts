import { closeSync, copyFileSync, fdatasyncSync, openSync } from "node:fs";

/**
 * Copies a file and waits until the copy is on disk. A bench measures a copy of its world right
 * after making it, and the kernel writes a fresh copy back to the disk for some seconds after
 * (3.8 GB for the large world): a refresh measured meanwhile shared the disk with that writeback
 * and took 0.5–1 s longer (4.66 and 5.20 s against 4.17 and 4.19 s with the copy synced first,
 * the large world's incremental refresh after 10,000 trades). A server's database has no such
 * copy in flight. (bench:stall flushed its copy this way already.)
 */
export function copyToDisk(from: string, to: string): void {
  copyFileSync(from, to);
  syncFile(to);
}

/** Waits until the file's written content is on disk. */
export function syncFile(path: string): void {
  const fd = openSync(path, "r+");
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

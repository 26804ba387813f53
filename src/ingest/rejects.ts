import { closeSync, openSync, renameSync, rmSync, writeSync } from "node:fs";

/**
 * The copy of skipped lines (`FILE.rejects.jsonl`). It is written beside its final name and
 * renamed into place only after the import commits, so a crashed import leaves no rejects file
 * that describes an import which never happened. Nothing is created when no line is skipped.
 */
export interface RejectsFile {
  write(line: string): void;
  /** Moves the file into place; returns its path, or null when nothing was written. */
  commit(): string | null;
  /** Removes the partial file if it was not committed. */
  discard(): void;
}

const FLUSH_AT = 64 * 1024;

export function createRejectsFile(path: string): RejectsFile {
  const partial = `${path}.partial`;
  let fd: number | null = null;
  let buffer = "";
  let written = false;

  const flush = () => {
    if (buffer === "") return;
    fd ??= openSync(partial, "w", 0o600);
    writeSync(fd, buffer);
    buffer = "";
  };
  const close = () => {
    flush();
    if (fd !== null) closeSync(fd);
    fd = null;
  };

  return {
    write(line) {
      written = true;
      buffer += `${line}\n`;
      if (buffer.length >= FLUSH_AT) flush();
    },
    commit() {
      if (!written) return null;
      close();
      renameSync(partial, path);
      written = false;
      return path;
    },
    discard() {
      if (fd !== null) closeSync(fd);
      fd = null;
      buffer = "";
      rmSync(partial, { force: true });
    },
  };
}

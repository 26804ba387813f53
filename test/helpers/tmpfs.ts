import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Real full disks for the storage tests: tmpfs mounts, where write(2) fails with ENOSPC.
 * Mounting needs root (or CAP_SYS_ADMIN); elsewhere (CI as a normal user, containers without the
 * capability) `cannotMount()` says why, and the tests that need a mount are skipped with that
 * reason in their name.
 */
export function tmpfsMounts(prefix: string) {
  const base = mkdtempSync(join(tmpdir(), `smartmoney-${prefix}-`));
  const mounted: string[] = [];

  /** A tmpfs of `size` (mount's units: 64k, 16m) at `dir`, or at a new folder `name` in base. */
  function mount(name: string, size: string, dir = join(base, name)): string {
    mkdirSync(dir, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" });
    mounted.push(dir);
    return dir;
  }

  return {
    base,
    mount,
    remount(dir: string, size: string): void {
      execFileSync("mount", ["-o", `remount,size=${size}`, dir], { stdio: "pipe" });
    },
    /** Why mounting cannot be tried here, or null when it works. */
    cannotMount(): string | null {
      if (process.platform !== "linux") return `not Linux (${process.platform})`;
      if (process.getuid?.() !== 0) return "not running as root: mounting a tmpfs needs it";
      try {
        const dir = mount("probe", "64k");
        execFileSync("umount", [dir], { stdio: "pipe" });
        mounted.pop();
        return null;
      } catch (error) {
        return `mount -t tmpfs is not allowed here (${String((error as Error).message).split("\n")[0]})`;
      }
    },
    /** Unmounts every mount, newest first, and removes the base folder. */
    cleanUp(): void {
      for (const dir of mounted.reverse()) {
        try {
          execFileSync("umount", ["-l", dir], { stdio: "pipe" });
        } catch {
          // already gone
        }
      }
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** Writes `file` until the filesystem has no room left. */
export function fillDisk(file: string): void {
  const chunk = Buffer.alloc(64 * 1024);
  for (let size = chunk.length; size >= 512; ) {
    try {
      appendFileSync(file, chunk.subarray(0, size));
    } catch {
      size /= 2;
    }
  }
}

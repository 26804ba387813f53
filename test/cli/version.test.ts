import { afterEach, describe, expect, it, vi } from "vitest";
import { main } from "../../cli/program";
import packageJson from "../../package.json" with { type: "json" };

afterEach(() => vi.restoreAllMocks());

describe("smartmoney --version", () => {
  it("prints the package version and exits 0, as -V does", async () => {
    for (const flag of ["--version", "-V"]) {
      const out: string[] = [];
      vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
        out.push(String(chunk));
        return true;
      });
      expect(await main([flag])).toBe(0);
      vi.restoreAllMocks();
      expect(out.join("")).toBe(`${packageJson.version}\n`);
    }
  });
});

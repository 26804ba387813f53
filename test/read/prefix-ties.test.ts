import { describe, expect, it } from "vitest";
import { prefixTie } from "../../src/read/prefix-ties";

const a = (prefix: string, rest: string) => `0x${prefix}${rest.padStart(32, "0")}`;

describe("prefixTie", () => {
  const value = (row: { value: number }) => row.value;

  it("finds adjacent rows of one value whose different addresses share the 8-digit prefix", () => {
    const rows = [
      { address: a("00000001", "2"), value: 3 },
      { address: a("0000000a", "9"), value: 2 },
      { address: a("0000000a", "1"), value: 2 },
    ];
    expect(prefixTie(rows, value)).toBe(true);
  });

  it("ignores a shared prefix under different values, and one wallet's rows", () => {
    expect(
      prefixTie(
        [
          { address: a("0000000a", "9"), value: 2 },
          { address: a("0000000a", "1"), value: 1 },
        ],
        value,
      ),
    ).toBe(false);
    // The screener's rows: one wallet in two categories with the same edge.
    expect(
      prefixTie(
        [
          { address: a("0000000a", "9"), value: 2 },
          { address: a("0000000a", "9"), value: 2 },
          { address: a("0000000b", "9"), value: 2 },
        ],
        value,
      ),
    ).toBe(false);
    expect(prefixTie([], value)).toBe(false);
  });
});

import { Random } from "../../src/fixtures/random";

/** A seeded uniform [0, 1) stream for synthetic bench data, from the fixture generator's PRNG. */
export function uniform(seed: number): () => number {
  const rng = new Random(seed);
  return () => rng.next();
}

/** `0x` and `digits` random lowercase hex digits (an address is 40, a tx hash 64). */
export function randomHex(rand: () => number, digits: number): string {
  let out = "0x";
  while (out.length < digits + 2) {
    out += Math.floor(rand() * 0x100000000)
      .toString(16)
      .padStart(8, "0");
  }
  return out.slice(0, digits + 2);
}

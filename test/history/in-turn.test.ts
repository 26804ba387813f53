import { describe, expect, it } from "vitest";
import { inTurn } from "../../src/history/reader";

/** A task that records when it starts and ends, and finishes when `finish` is called. */
function gated(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const task = async () => {
    log.push(`start ${name}`);
    await done;
    log.push(`end ${name}`);
    if (name.startsWith("fail")) throw new Error(name);
    return name;
  };
  return { task, finish };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("history queries in turn", () => {
  it("run at most `slots` at once, the rest in the order they came, a failed one freeing its slot", async () => {
    const turn = inTurn(2);
    const log: string[] = [];
    const [a, failB, c, d] = ["a", "fail-b", "c", "d"].map((name) => gated(log, name));
    const results = [a!, failB!, c!, d!].map((g) => turn(g.task).catch((e: Error) => e.message));
    await settle();
    expect(log).toEqual(["start a", "start fail-b"]);
    failB!.finish();
    await settle();
    expect(log).toEqual(["start a", "start fail-b", "end fail-b", "start c"]);
    a!.finish();
    await settle();
    expect(log.slice(4)).toEqual(["end a", "start d"]);
    c!.finish();
    d!.finish();
    expect(await Promise.all(results)).toEqual(["a", "fail-b", "c", "d"]);
  });

  it("starts a task marked first before those waiting: a page's second read", async () => {
    const turn = inTurn(1);
    const log: string[] = [];
    const [a, b, c] = ["a", "b", "c"].map((name) => gated(log, name));
    const results = [turn(a!.task), turn(b!.task), turn(c!.task, true)];
    await settle();
    a!.finish();
    await settle();
    expect(log).toEqual(["start a", "end a", "start c"]);
    c!.finish();
    b!.finish();
    expect(await Promise.all(results)).toEqual(["a", "b", "c"]);
    expect(log.slice(3)).toEqual(["end c", "start b", "end b"]);
  });
});

import type { Clock } from "../../src/clock";

/** A clock tests move by hand. */
export class FakeClock implements Clock {
  constructor(private ms: number = Date.parse("2026-11-01T00:00:00.000Z")) {}
  now(): number {
    return this.ms;
  }
  set(iso: string | number): void {
    this.ms = typeof iso === "number" ? iso : Date.parse(iso);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

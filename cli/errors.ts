/** A failure the operator must fix: printed as one line on stderr, exit status 1. */
export class CliError extends Error {}

/** Unwraps a Result, turning a failure into a CliError. */
export function must<T>(result: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!result.ok) throw new CliError(result.reason);
  return result.value;
}

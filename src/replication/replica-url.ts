import { resolve } from "node:path";
import { fail, ok, type Result } from "../result";

/** One replica in Litestream's configuration (its YAML field names). */
export type ReplicaConfig =
  | { type: "file"; path: string }
  | {
      type: "s3";
      bucket: string;
      path: string;
      region?: string;
      endpoint?: string;
      "force-path-style"?: boolean;
      "skip-verify"?: boolean;
    };

/**
 * A replica URL as the operator writes it: `file:///srv/replica` or
 * `s3://BUCKET/PATH[?endpoint=URL&region=R&force-path-style=true]`. Credentials never go in the
 * URL: Litestream reads LITESTREAM_ACCESS_KEY_ID / LITESTREAM_SECRET_ACCESS_KEY (or the AWS_
 * ones) from the environment it inherits.
 */
export function parseReplicaUrl(text: string): Result<ReplicaConfig> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(`replica URL "${text}" is not a URL: use s3://BUCKET/PATH or file:///PATH`);
  }
  if (url.username || url.password) {
    return fail(
      "put replica credentials in LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY, not in the URL",
    );
  }
  if (url.protocol === "file:") {
    const path = decodeURIComponent(url.pathname);
    if (url.host !== "" || path === "" || path === "/") {
      return fail(`replica URL "${text}" must name an absolute folder: file:///srv/replica`);
    }
    return ok({ type: "file", path: resolve(path) });
  }
  if (url.protocol === "s3:") {
    if (url.hostname === "") return fail(`replica URL "${text}" has no bucket: s3://BUCKET/PATH`);
    const config: ReplicaConfig = {
      type: "s3",
      bucket: url.hostname,
      path: decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, ""),
    };
    for (const [name, value] of url.searchParams) {
      if (name === "endpoint" || name === "region") config[name] = value;
      else if (name === "force-path-style" || name === "skip-verify") {
        if (value !== "true" && value !== "false")
          return fail(`replica URL: ${name} must be true or false`);
        config[name] = value === "true";
      } else {
        return fail(
          `replica URL: unknown parameter "${name}" (endpoint, region, force-path-style, skip-verify)`,
        );
      }
    }
    return ok(config);
  }
  return fail(`replica URL "${text}": only s3:// and file:// replicas are supported`);
}

/** The replica URL without its query, for logs and status. */
export function describeReplica(config: ReplicaConfig): string {
  return config.type === "file"
    ? `file://${config.path}`
    : `s3://${config.bucket}/${config.path}${config.endpoint ? ` at ${config.endpoint}` : ""}`;
}

import { describe, expect, it } from "vitest";
import { litestreamConfig } from "../../src/replication/litestream";
import { describeReplica, parseReplicaUrl } from "../../src/replication/replica-url";

describe("replica URLs", () => {
  it("reads a folder and an S3 bucket with an endpoint, region and path style", () => {
    expect(parseReplicaUrl("file:///srv/replica")).toEqual({
      ok: true,
      value: { type: "file", path: "/srv/replica" },
    });
    const s3 = parseReplicaUrl(
      "s3://backups/smartmoney/prod/?endpoint=https://minio.lan:9000&region=eu-west-1&force-path-style=true",
    );
    expect(s3).toEqual({
      ok: true,
      value: {
        type: "s3",
        bucket: "backups",
        path: "smartmoney/prod",
        endpoint: "https://minio.lan:9000",
        region: "eu-west-1",
        "force-path-style": true,
      },
    });
    if (s3.ok)
      expect(describeReplica(s3.value)).toBe(
        "s3://backups/smartmoney/prod at https://minio.lan:9000",
      );
  });

  it("refuses other schemes, credentials in the URL, unknown parameters and relative folders", () => {
    const reason = (text: string) => {
      const parsed = parseReplicaUrl(text);
      return parsed.ok ? "" : parsed.reason;
    };
    expect(reason("gcs://bucket/db")).toContain("only s3:// and file:// replicas");
    expect(reason("s3://key:secret@bucket/db")).toContain("LITESTREAM_ACCESS_KEY_ID");
    expect(reason("s3://bucket/db?acl=public")).toContain('unknown parameter "acl"');
    expect(reason("s3://bucket/db?skip-verify=yes")).toContain("skip-verify must be true or false");
    expect(reason("file://relative/dir")).toContain("absolute folder");
    expect(reason("not a url")).toContain("is not a URL");
  });

  it("writes Litestream's configuration as JSON (which is YAML) with a 1 s sync and loopback metrics", () => {
    const config = JSON.parse(
      litestreamConfig({
        dbPath: "/data/smartmoney.db",
        replica: { type: "file", path: "/replica" },
        metricsPort: 9999,
      }),
    );
    expect(config).toEqual({
      addr: "127.0.0.1:9999",
      dbs: [
        {
          path: "/data/smartmoney.db",
          replicas: [{ type: "file", path: "/replica", "sync-interval": "1s" }],
        },
      ],
    });
  });
});

import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { AwsClient } from "aws4fetch";
import type { ReplicaConfig } from "../replication/replica-url";

/**
 * The fill history's files on the replica Litestream streams the database to (docs/operations.md,
 * "Replicate"): `<replica>/history/<file>`. Litestream carries only the database, so a seal
 * puts its file here before the transaction that lists it commits (src/refresh/retention.ts): a
 * database restored from the replica never lists a file the replica does not hold. Files never
 * change once written, so a put is a plain upload and a get a plain download. A file no longer
 * listed is deleted once no restore can list it (history_replica_unlisted, sql/0035).
 */
export interface HistoryReplica {
  /** Where the files go, for messages. */
  describe: string;
  put(file: string, localPath: string): Promise<void>;
  /** Downloads `file` to `toPath` (written beside it, then renamed); false when it is absent. */
  get(file: string, toPath: string): Promise<boolean>;
  /** Deletes `file`; one already absent is no error. */
  delete(file: string): Promise<void>;
}

export function historyReplica(config: ReplicaConfig, env = process.env): HistoryReplica {
  return config.type === "file"
    ? folderReplica(join(config.path, "history"))
    : s3Replica(config, env);
}

function folderReplica(dir: string): HistoryReplica {
  return {
    describe: `file://${dir}`,
    async put(file, localPath) {
      mkdirSync(dir, { recursive: true });
      const target = join(dir, file);
      copyFileSync(localPath, `${target}.partial`);
      renameSync(`${target}.partial`, target);
    },
    async get(file, toPath) {
      try {
        copyFileSync(join(dir, file), `${toPath}.partial`);
      } catch (error) {
        if ((error as { code?: string }).code === "ENOENT") return false;
        throw error;
      }
      renameSync(`${toPath}.partial`, toPath);
      return true;
    },
    async delete(file) {
      rmSync(join(dir, file), { force: true });
    },
  };
}

function s3Replica(config: Extract<ReplicaConfig, { type: "s3" }>, env: NodeJS.ProcessEnv) {
  // The credentials Litestream reads, from the same environment.
  const accessKeyId = env.LITESTREAM_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.LITESTREAM_SECRET_ACCESS_KEY ?? env.AWS_SECRET_ACCESS_KEY;
  const region = config.region ?? env.AWS_REGION ?? "us-east-1";
  const client =
    accessKeyId && secretAccessKey
      ? new AwsClient({ accessKeyId, secretAccessKey, region, service: "s3", retries: 2 })
      : null;
  const prefix = [config.path, "history"].filter(Boolean).join("/");
  const base = config.endpoint
    ? config["force-path-style"] === false
      ? config.endpoint.replace("://", `://${config.bucket}.`)
      : `${config.endpoint.replace(/\/+$/, "")}/${config.bucket}`
    : `https://${config.bucket}.s3.${region}.amazonaws.com`;
  const urlOf = (file: string) => `${base}/${prefix}/${encodeURIComponent(file)}`;
  const signed = () => {
    if (!client) {
      throw new Error(
        "the history replica needs LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY (or the AWS_ ones)",
      );
    }
    return client;
  };
  return {
    describe: `s3://${config.bucket}/${prefix}`,
    async put(file: string, localPath: string) {
      const res = await signed().fetch(urlOf(file), {
        method: "PUT",
        body: readFileSync(localPath),
      });
      if (!res.ok) throw new Error(`PUT ${urlOf(file)}: HTTP ${res.status} ${await res.text()}`);
    },
    async get(file: string, toPath: string) {
      const res = await signed().fetch(urlOf(file));
      if (res.status === 404) return false;
      if (!res.ok) throw new Error(`GET ${urlOf(file)}: HTTP ${res.status}`);
      mkdirSync(dirname(toPath), { recursive: true });
      try {
        writeFileSync(`${toPath}.partial`, Buffer.from(await res.arrayBuffer()));
        renameSync(`${toPath}.partial`, toPath);
      } finally {
        rmSync(`${toPath}.partial`, { force: true });
      }
      return true;
    },
    async delete(file: string) {
      const res = await signed().fetch(urlOf(file), { method: "DELETE" });
      // S3 answers 204 whether or not the object was there; 404 from a store that says so.
      if (!res.ok && res.status !== 404)
        throw new Error(`DELETE ${urlOf(file)}: HTTP ${res.status}`);
      await res.body?.cancel();
    },
  } satisfies HistoryReplica;
}

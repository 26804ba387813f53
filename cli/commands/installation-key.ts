import type { Command } from "commander";
import { NEW_SECRET_KEY_ENV, rotateInstallationKey } from "../../src/installation/rotate";
import { type CommonOptions, print, withApp, withDbOption } from "../context";
import { must } from "../errors";

/** `keys rotate-installation-key`: a new installation key, every webhook secret moved to it. */
export function registerInstallationKey(keys: Command): void {
  withDbOption(keys.command("rotate-installation-key"))
    .description(
      `re-encrypt every webhook secret under a new installation key in one transaction (stop serve first; with SMARTMONEY_SECRET_KEY the new key comes from ${NEW_SECRET_KEY_ENV})`,
    )
    .option("--json", "print JSON")
    .action((options: CommonOptions) =>
      withApp(options, ({ db, key }) => {
        const rotation = must(rotateInstallationKey(db, key, process.env, Date.now()));
        print(
          options,
          {
            old_key_id: rotation.oldId,
            new_key_id: rotation.newId,
            reencrypted: rotation.reencrypted,
            key_path: rotation.keyPath,
            retired_key_path: rotation.retiredPath,
          },
          () =>
            [
              `installation key rotated: id ${rotation.oldId} -> ${rotation.newId}; ${rotation.reencrypted} webhook secret${rotation.reencrypted === 1 ? "" : "s"} re-encrypted`,
              rotation.keyPath
                ? `the new key is ${rotation.keyPath}; the old one is kept as ${rotation.retiredPath} until you remove it (back up the new one first)`
                : `now set SMARTMONEY_SECRET_KEY to the value of ${NEW_SECRET_KEY_ENV} before the next start`,
              "page cursors issued under the old key no longer verify; clients start their listings again",
            ].join("\n"),
        );
      }),
    );
}

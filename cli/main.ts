import { main } from "./program";

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`smartmoney: ${String(error)}\n`);
    process.exitCode = 1;
  },
);

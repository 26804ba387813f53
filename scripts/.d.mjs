import Database from "better-sqlite3";

const db = new Database(process.argv[2], { readonly: true });
const fills = db.prepare("select count(*) n from fills").get().n;
const rows = db
  .prepare(`select name, sum(pgsize) bytes from dbstat group by name order by bytes desc limit 25`)
  .all();
const total = db.prepare("select sum(pgsize) t from dbstat").get().t;
console.log(
  "fills",
  fills,
  "total",
  (total / 1e6).toFixed(0),
  "MB",
  (total / fills).toFixed(0),
  "B/fill",
);
for (const r of rows)
  console.log(
    r.name.padEnd(40),
    (r.bytes / 1e6).toFixed(1).padStart(8),
    "MB",
    (r.bytes / fills).toFixed(1).padStart(7),
    "B/fill",
  );

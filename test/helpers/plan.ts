import type { Connection } from "../../src/db/open";

/**
 * SQLite's plan for `sql`, its steps joined by "; ". Each `?` is bound to null: the planner does
 * not see bound values, so any serve.
 */
export function queryPlan(connection: Connection, sql: string): string {
  const rows = connection
    .prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .all(...Array(sql.split("?").length - 1).fill(null)) as { detail: string }[];
  return rows.map((row) => row.detail).join("; ");
}

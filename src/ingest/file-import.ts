import type { Statement } from "../db/open";
import { sealedFilesOf, sealedKeys } from "../history/store";
import { ok, type Result } from "../result";
import type { DeferredFillIndexes } from "./deferred-fill-indexes";
import type { ImportDeps, LineError } from "./import";
import { createIngest, type NewTrade, type NewTransfer } from "./ingest";
import { LINE_TYPES, type Line, type LineType, parseLine } from "./lines";
import type { PastMarkets, PastMarketsSummary } from "./past-markets";
import { type ImportSource, MAX_LINE_CHARS } from "./sources";

/**
 * The line-by-line work of one file inside the importer's transaction: validate each line,
 * route it to the ingest path, and keep the checks that span lines (duplicate keys, markets
 * named before they are defined). See import.ts for the transaction and memory design.
 */

export type ImportCounts = Record<LineType, { new: number; updated: number; present: number }>;

export interface FileImport {
  handle(text: string, line: number): void;
  /** Writes the batched trades and transfers. */
  flush(): void;
  /**
   * Second looks at the file: lines waiting for a later market, where duplicates first were;
   * past markets' trades no longer past stored.
   */
  finish(source: ImportSource): Promise<void>;
  /**
   * Writes past markets' trades to the fill history: once the file is accepted. Fails when the
   * history's replica refuses the file (the file is then refused whole).
   */
  writePast(): Promise<Result<PastMarketsSummary>>;
  /** Leaves nothing of the import's bookkeeping behind; call just before COMMIT. */
  close(): void;
  readonly rows: number;
  readonly errorCount: number;
  readonly counts: ImportCounts;
  /** The stored reasons, by line. */
  errors(): LineError[];
}

interface FileImportOptions {
  /** The ingest hook fires only while this holds (a file already refused keeps quiet). */
  keepHooksWhile(): boolean;
  onReject(line: number, text: string): void;
  maxErrors: number;
  /** The fill indexes an import into an empty store builds after the load, or null. */
  deferred: DeferredFillIndexes | null;
  /** Where past markets' trades are held for the fill history, or null (src/ingest/past-markets.ts). */
  past: PastMarkets | null;
}

/** Rows per ingest call: large enough to amortise a call, small enough to stay bounded. */
const BATCH = 2048;
/** Unknown market ids are remembered up to this many, so a file of junk ids stays bounded. */
const MAX_UNKNOWN_MARKETS = 100_000;

type FillKind = "trade" | "transfer";
type Batch<Row> = { rows: Row[]; lines: number[]; texts: string[] };

export function createFileImport(deps: ImportDeps, options: FileImportOptions): FileImport {
  const writer = deps.db.writer;
  // One scope for the whole file (it is one transaction): signal detection reads each wallet's
  // funding once per file instead of once per batch. Once the hooks fall silent (a refused
  // file) they never speak again in this file, so the scope's caches are never used stale.
  const hooks = deps.hooks?.scope?.() ?? deps.hooks;
  const ingest = createIngest(
    deps.db,
    deps.clock,
    {
      onNewTrades: (trades) => {
        if (options.keepHooksWhile()) hooks?.onNewTrades?.(trades);
      },
      onNewTransfers: (transfers) => hooks?.onNewTransfers?.(transfers),
      onLabelChanged: (address) => hooks?.onLabelChanged?.(address),
    },
    { oneTransaction: true, deferred: options.deferred },
  );
  const seenLineOf = writer
    .prepare("SELECT line FROM import_seen WHERE key = ?")
    .pluck() as Statement<[string], number>;
  const markSeen = writer.prepare("INSERT INTO import_seen (key, line) VALUES (?, ?)");
  const maxId = (table: "fills" | "transfers") =>
    (writer.prepare(`SELECT coalesce(max(id), 0) FROM ${table}`).pluck().get() as number) ?? 0;
  // Fills stored by this file get ids above these: a conflicting key with a higher id was
  // stored by this very file, so the line repeats an earlier one.
  const firstNewId = { trade: maxId("fills"), transfer: maxId("transfers") };

  const counts = Object.fromEntries(
    LINE_TYPES.map((t) => [t, { new: 0, updated: 0, present: 0 }]),
  ) as ImportCounts;
  const stored: LineError[] = [];
  let errorCount = 0;
  let rows = 0;
  const marketIds = new Map<string, number>(); // condition_id -> id, 0 = not known (yet)
  const waiting: number[] = []; // lines naming a market not known when they were read
  const duplicates = new Map<string, LineError[]>(); // fill key -> errors awaiting "also on line"
  const trades: Batch<NewTrade> = { rows: [], lines: [], texts: [] };
  const transfers: Batch<NewTransfer> = { rows: [], lines: [], texts: [] };

  const reject = (line: number, text: string, reason: string): LineError | undefined => {
    errorCount++;
    options.onReject(line, text);
    if (stored.length >= options.maxErrors) return undefined;
    const error = { line, reason };
    stored.push(error);
    return error;
  };

  const marketIdFor = (conditionId: string): number | undefined => {
    let id = marketIds.get(conditionId);
    if (id === undefined) {
      id = ingest.marketIdOf(conditionId) ?? 0;
      if (id !== 0 || marketIds.size < MAX_UNKNOWN_MARKETS) marketIds.set(conditionId, id);
    }
    return id === 0 ? undefined : id;
  };

  // Lines of compacted markets whose fill is not in `fills`: it may be in the fill history, where
  // a compaction sealed it; looked up there once the file is read (finish).
  const sealedLines: {
    line: number;
    text: string;
    marketId: number;
    key: string;
    reason: string;
  }[] = [];
  const sealedFiles = new Map<number, string[]>();
  const compactedReasons = new Map<number, string | null>();
  const compactedReasonOf = (marketId: number): string | null => {
    let reason = compactedReasons.get(marketId);
    if (reason === undefined) {
      reason = ingest.compactedReason(marketId) ?? null;
      if (compactedReasons.size < MAX_UNKNOWN_MARKETS) compactedReasons.set(marketId, reason);
    }
    return reason;
  };

  /** A line naming a market not known yet: read again at the end, or refused on that look. */
  const needsMarket = (line: number, text: string, conditionId: string, secondLook: boolean) => {
    if (!secondLook) {
      waiting.push(line);
      return;
    }
    reject(
      line,
      text,
      `unknown condition_id ${conditionId}: no market line for it in this file or the database`,
    );
  };

  /** Rejects a line whose key an earlier line of this file already used. */
  const repeated = (key: string, line: number, text: string, what: string): boolean => {
    const first = seenLineOf.get(key);
    if (first === undefined) return false;
    reject(line, text, `duplicate ${what}: also on line ${first}`);
    return true;
  };

  const flushFills = <Row extends { tx_hash: string; log_index: number }>(
    kind: FillKind,
    batch: Batch<Row>,
    insert: (rows: Row[]) => readonly { tx_hash: string; log_index: number }[],
    idOf: (txHash: string, logIndex: number) => number | undefined,
  ) => {
    if (batch.rows.length === 0) return;
    const inserted = insert(batch.rows);
    counts[kind].new += inserted.length;
    if (inserted.length < batch.rows.length) {
      // `inserted` keeps input order, so the rows missing from it are the conflicts.
      let next = 0;
      batch.rows.forEach((row, i) => {
        const hit = inserted[next];
        if (hit && hit.tx_hash === row.tx_hash && hit.log_index === row.log_index) {
          next++;
          return;
        }
        if ((idOf(row.tx_hash, row.log_index) ?? 0) <= firstNewId[kind]) {
          counts[kind].present++;
          return;
        }
        const key = `${kind}:${row.tx_hash}:${row.log_index}`;
        const error = reject(
          batch.lines[i]!,
          batch.texts[i]!,
          `duplicate ${kind}: tx_hash ${row.tx_hash} log_index ${row.log_index} appears earlier in the file`,
        );
        if (error) duplicates.set(key, [...(duplicates.get(key) ?? []), error]);
      });
    }
    batch.rows.length = 0;
    batch.lines.length = 0;
    batch.texts.length = 0;
  };
  const flushTransfers = () =>
    flushFills("transfer", transfers, ingest.insertTransfers, ingest.transferIdOf);
  // Transfers first: signal detection on a trade batch reads the wallets' funding, and the
  // transfers read before those trades must already be stored for it.
  const flushTrades = () => {
    flushTransfers();
    flushFills("trade", trades, ingest.insertTrades, ingest.tradeIdOf);
  };

  const apply = (l: Line, line: number, text: string, secondLook: boolean): void => {
    switch (l.type) {
      case "trade": {
        const marketId = marketIdFor(l.condition_id);
        if (marketId === undefined) {
          needsMarket(line, text, l.condition_id, secondLook);
          return;
        }
        const trade: NewTrade = {
          tx_hash: l.tx_hash,
          log_index: l.log_index,
          wallet: l.wallet,
          market_id: marketId,
          outcome: l.outcome,
          side: l.side,
          price: l.price,
          size: l.size,
          usd_value: l.usd_value ?? l.price * l.size,
          ts: l.timestamp,
        };
        // A compacted market's fills are in the fill history but for those a signal names,
        // which stay in `fills`: a line repeating either is present, any other is refused, but
        // when the market is still past: then it is held with past markets' (`release` finds
        // those the history holds).
        const refused = compactedReasonOf(marketId);
        if (refused !== null) {
          if (ingest.tradeIdOf(l.tx_hash, l.log_index) !== undefined) {
            counts.trade.present++;
            return;
          }
          if (!options.past?.appends(marketId)) {
            const files = sealedFiles.get(marketId) ?? sealedFilesOf(writer, marketId);
            if (files.length === 0) return void reject(line, text, refused);
            sealedFiles.set(marketId, files);
            const key = `${l.tx_hash}:${l.log_index}`;
            sealedLines.push({ line, text, marketId, key, reason: refused });
            return;
          }
        }
        const past = options.past;
        if (past && (refused !== null || past.holds(marketId))) {
          const earlier = past.hold(trade, line);
          if (earlier !== undefined) {
            reject(
              line,
              text,
              `duplicate trade: tx_hash ${l.tx_hash} log_index ${l.log_index} is also on line ${earlier}`,
            );
          }
          return;
        }
        trades.rows.push(trade);
        trades.lines.push(line);
        trades.texts.push(text);
        if (trades.rows.length >= BATCH) flushTrades();
        return;
      }
      case "transfer": {
        transfers.rows.push({
          tx_hash: l.tx_hash,
          log_index: l.log_index,
          from_address: l.from,
          to_address: l.to,
          token: l.token,
          amount: l.amount,
          ts: l.timestamp,
        });
        transfers.lines.push(line);
        transfers.texts.push(text);
        if (transfers.rows.length >= BATCH) flushTransfers();
        return;
      }
      case "market": {
        const byCondition = `market:${l.condition_id}`;
        const bySlug = `slug:${l.slug}`;
        if (repeated(byCondition, line, text, `market ${l.condition_id}`)) return;
        if (repeated(bySlug, line, text, `market slug "${l.slug}"`)) return;
        const { type: _, ...facts } = l;
        const result = ingest.upsertMarket(facts);
        if (!result.ok) return void reject(line, text, result.reason);
        markSeen.run(byCondition, line);
        markSeen.run(bySlug, line);
        marketIds.set(l.condition_id, result.id);
        counts.market[result.status]++;
        return;
      }
      case "resolution": {
        const key = `resolution:${l.condition_id}`;
        if (repeated(key, line, text, `resolution of ${l.condition_id}`)) return;
        const marketId = marketIdFor(l.condition_id);
        if (marketId === undefined) {
          needsMarket(line, text, l.condition_id, secondLook);
          return;
        }
        counts.resolution[ingest.resolveMarket(marketId, l.outcome, l.resolved_at)]++;
        markSeen.run(key, line);
        return;
      }
      case "wallet": {
        const key = `wallet:${l.address}`;
        if (repeated(key, line, text, `wallet ${l.address}`)) return;
        const { type: _, ...facts } = l;
        counts.wallet[ingest.upsertWallet(facts)]++;
        markSeen.run(key, line);
        return;
      }
      case "label": {
        const key = `label:${l.address}`;
        if (repeated(key, line, text, `label for ${l.address}`)) return;
        const { type: _, ...label } = l;
        counts.label[ingest.upsertLabel(label)]++;
        markSeen.run(key, line);
        return;
      }
    }
  };

  const handle = (text: string, line: number, secondLook: boolean) => {
    if (isBlank(text)) return;
    if (!secondLook) rows++;
    if (text.length > MAX_LINE_CHARS) {
      return void reject(line, text, `line is longer than ${MAX_LINE_CHARS} characters`);
    }
    const parsed = parseLine(text);
    if (!parsed.ok) return void reject(line, text, parsed.reason);
    apply(parsed.line, line, text, secondLook);
  };

  const flush = () => {
    flushTrades();
  };

  /** Reads again only the lines that waited for a market defined further down. */
  const revisitWaiting = async (source: ImportSource) => {
    await readAgain(source, waiting, (text, line) => handle(text, line, true));
    flush();
  };

  /** Lines of sealed markets: present when the history holds their fill, else refused. */
  const checkSealed = async () => {
    const keys = await sealedKeys(deps.db.path, sealedFiles, 256);
    for (const s of sealedLines) {
      if (keys.get(s.marketId)?.has(s.key)) counts.trade.present++;
      else reject(s.line, s.text, s.reason);
    }
    sealedLines.length = 0;
  };

  /** Refuses these lines (read again for their text): compacted markets' fills past the cut. */
  const refuseLines = async (
    source: ImportSource,
    refused: { line: number; marketId: number }[],
  ) => {
    const marketOf = new Map(refused.map((r) => [r.line, r.marketId]));
    const lines = [...marketOf.keys()].sort((a, b) => a - b);
    await readAgain(source, lines, (text, line) =>
      reject(line, text, compactedReasonOf(marketOf.get(line)!)!),
    );
  };

  /** Completes each duplicate fill's reason with the line that holds the stored one. */
  const locateDuplicates = async (source: ImportSource) => {
    let line = 0;
    for await (const text of source.open()) {
      line++;
      if (isBlank(text) || text.length > MAX_LINE_CHARS) continue;
      const parsed = parseLine(text);
      if (!parsed.ok || (parsed.line.type !== "trade" && parsed.line.type !== "transfer")) continue;
      const fill = parsed.line;
      const key = `${fill.type}:${fill.tx_hash}:${fill.log_index}`;
      const errors = duplicates.get(key);
      if (!errors || errors.some((e) => e.line === line)) continue;
      if (fill.type === "trade" && marketIdFor(fill.condition_id) === undefined) continue;
      for (const error of errors) {
        error.reason = `duplicate ${fill.type}: tx_hash ${fill.tx_hash} log_index ${fill.log_index} is also on line ${line}`;
      }
      duplicates.delete(key);
      if (duplicates.size === 0) break;
    }
  };

  return {
    handle: (text, line) => handle(text, line, false),
    flush,
    async finish(source) {
      flush();
      if (waiting.length > 0) await revisitWaiting(source);
      if (sealedLines.length > 0) await checkSealed();
      // A held trade's text is not kept: it is refused only when another market's line of this
      // file has its key (its market has no stored fill, and repeats were refused as held).
      const released = await options.past?.release((held) => {
        for (const { trade, line } of held) {
          trades.rows.push(trade);
          trades.lines.push(line);
          trades.texts.push("");
          if (trades.rows.length >= BATCH) flushTrades();
        }
        flushTrades();
      });
      if (released) {
        counts.trade.present += released.present;
        if (released.refused.length > 0) await refuseLines(source, released.refused);
      }
      if (duplicates.size > 0) await locateDuplicates(source);
    },
    async writePast() {
      const written = (await options.past?.write()) ?? ok({ markets: 0, fills: 0 });
      if (written.ok) counts.trade.new += written.value.fills;
      return written;
    },
    close() {
      writer.prepare("DELETE FROM import_seen").run();
    },
    get rows() {
      return rows;
    },
    get errorCount() {
      return errorCount;
    },
    counts,
    errors: () => [...stored].sort((a, b) => a.line - b.line),
  };
}

/** Reads the file again for `lines` (ascending), and hands each its text; stops after the last. */
async function readAgain(
  source: ImportSource,
  lines: readonly number[],
  each: (text: string, line: number) => void,
): Promise<void> {
  if (lines.length === 0) return;
  let line = 0;
  let next = 0;
  for await (const text of source.open()) {
    line++;
    if (line !== lines[next]) continue;
    each(text, line);
    if (++next === lines.length) break;
  }
}

function isBlank(text: string): boolean {
  // Nearly every line starts with "{": skip the trim for those.
  return text.charCodeAt(0) !== 123 && text.trim() === "";
}

import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Agent } from "undici";
import { fail, ok, type Result } from "../result";

/**
 * Outbound webhooks must not become a way to reach the operator's own network (SSRF). Two
 * checks: the callback URL at creation (and again before every attempt), and the address
 * actually dialled, inside the connection's DNS lookup, which defeats DNS rebinding.
 */

/** Longest callback URL accepted; real endpoints are far shorter. */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/**
 * Special-purpose IPv4 ranges (IANA registry) that are never a customer's public server. The
 * first match names the reason, so a narrower range comes before a range containing it.
 */
const BLOCKED_V4: ReadonlyArray<[string, number, string]> = [
  ["0.0.0.0", 8, "unspecified (this network)"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignment"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay anycast"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"],
];

/**
 * IPv6 inside global unicast (2000::/3) that is still not a public host. Everything outside
 * 2000::/3 is refused outright, apart from the two forms that embed an IPv4 address.
 */
const BLOCKED_V6_GLOBAL: ReadonlyArray<[string, number, string]> = [
  ["2001::", 23, "IETF protocol assignment (Teredo, benchmarking, ORCHID)"],
  ["2001:db8::", 32, "documentation"],
  ["3fff::", 20, "documentation"],
];

interface Range {
  list: BlockList;
  what: string;
}

function ranges(table: ReadonlyArray<[string, number, string]>, type: "ipv4" | "ipv6"): Range[] {
  return table.map(([net, prefix, what]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, type);
    return { list, what };
  });
}

const V4_RANGES = ranges(BLOCKED_V4, "ipv4");
const V6_GLOBAL_RANGES = ranges(BLOCKED_V6_GLOBAL, "ipv6");

/** Why an address is not public, or null when it is. */
export function nonPublicReason(ip: string): string | null {
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip;
  const family = isIP(bare);
  if (family === 4) return v4Reason(bare);
  if (family === 6) return v6Reason(bare);
  return "not an IP address";
}

/** True when `ip` is a routable public unicast address. Used on every address dialled. */
export function isPublicAddress(ip: string): boolean {
  return nonPublicReason(ip) === null;
}

function v4Reason(ip: string): string | null {
  const hit = V4_RANGES.find((range) => range.list.check(ip, "ipv4"));
  return hit ? `${hit.what} address ${ip}` : null;
}

function v6Reason(ip: string): string | null {
  const h = ipv6Hextets(ip);
  const embedded = () => `${h[6]! >> 8}.${h[6]! & 255}.${h[7]! >> 8}.${h[7]! & 255}`;
  const zeroUpTo = (n: number) => h.slice(0, n).every((x) => x === 0);
  // Forms that carry an IPv4 address: judge the IPv4 address they lead to.
  if (zeroUpTo(5) && h[5] === 0xffff) return embeddedReason("IPv4-mapped", embedded());
  if (h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((x) => x === 0)) {
    return embeddedReason("NAT64", embedded());
  }
  if (h[0] === 0x2002) {
    const v4 = `${h[1]! >> 8}.${h[1]! & 255}.${h[2]! >> 8}.${h[2]! & 255}`;
    return embeddedReason("6to4", v4);
  }
  if (zeroUpTo(7) && h[7] === 0) return `unspecified address ${ip}`;
  if (zeroUpTo(7) && h[7] === 1) return `loopback address ${ip}`;
  if (zeroUpTo(6)) return `IPv4-compatible (deprecated) address ${ip}`;
  const first = h[0]!;
  if ((first & 0xfe00) === 0xfc00) return `unique local address ${ip}`;
  if ((first & 0xffc0) === 0xfe80) return `link-local address ${ip}`;
  if ((first & 0xffc0) === 0xfec0) return `site-local (deprecated) address ${ip}`;
  if ((first & 0xff00) === 0xff00) return `multicast address ${ip}`;
  if ((first & 0xe000) !== 0x2000) return `reserved address ${ip} (outside global unicast)`;
  const hit = V6_GLOBAL_RANGES.find((range) => range.list.check(ip, "ipv6"));
  if (hit) return `${hit.what} address ${ip}`;
  return null;
}

function embeddedReason(form: string, v4: string): string | null {
  const inner = v4Reason(v4);
  return inner === null ? null : `${form} address embedding ${inner}`;
}

/** Expands a valid IPv6 text (per isIP) into its eight 16-bit groups. */
function ipv6Hextets(ip: string): number[] {
  let text = ip.split("%")[0]!.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((x) => parseInt(x, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** Names that only ever mean "this machine" or "this site's own network". */
function internalHostnameReason(host: string): string | null {
  if (host === "localhost" || host.endsWith(".localhost")) return `"${host}" is a localhost name`;
  for (const suffix of ["local", "internal", "localdomain", "home.arpa", "lan"]) {
    if (host === suffix || host.endsWith(`.${suffix}`)) {
      return `"${host}" is an internal name (.${suffix})`;
    }
  }
  // A single label is completed from the resolver's search domains: an intranet name.
  if (!host.includes(".")) return `"${host}" is not a fully qualified domain name`;
  return null;
}

/**
 * Creation-time rules for a callback URL; the reason names the rule broken. WHATWG URL parsing
 * (which undici uses too) already rewrites the numeric IPv4 spellings resolvers accept —
 * decimal `2130706433`, hex `0x7f000001`, octal `0177.0.0.1`, short `127.1` — into dotted
 * quads, and rejects hosts whose last label is an invalid number, so after parsing a host is
 * a dotted quad, a bracketed IPv6 address or a domain name, and each of those is judged here.
 * `allowPrivate` (development only) permits `http:` and private or loopback targets.
 */
export function checkCallbackUrl(url: string, opts: { allowPrivate: boolean }): Result<URL> {
  if (url.length > MAX_CALLBACK_URL_LENGTH) {
    return fail(`callback_url must be at most ${MAX_CALLBACK_URL_LENGTH} characters`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return fail("callback_url must be an absolute URL");
  }
  if (parsed.protocol !== "https:") {
    if (parsed.protocol !== "http:") return fail("callback_url must use https");
    if (!opts.allowPrivate) return fail("callback_url must use https (http is not allowed)");
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return fail("callback_url must not contain credentials (user:password@)");
  }
  if (parsed.hostname === "") return fail("callback_url must name a host");
  if (opts.allowPrivate) return ok(parsed);

  const host = parsed.hostname.toLowerCase().replace(/\.$/, "");
  if (isIP(host.replace(/^\[|\]$/g, "")) !== 0) {
    const reason = nonPublicReason(host);
    return reason === null ? ok(parsed) : fail(`callback_url host is not public: ${reason}`);
  }
  const nameReason = internalHostnameReason(host);
  if (nameReason !== null) return fail(`callback_url host is not public: ${nameReason}`);
  return ok(parsed);
}

/** A resolved address, as dns.lookup({ all: true }) answers. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a hostname to every address it may connect to; injectable so tests need no DNS. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = (hostname) =>
  dnsLookup(hostname, { all: true, order: "verbatim" });

/** Raised inside the connection's lookup when a name resolves to a non-public address. */
export class BlockedAddressError extends Error {
  readonly code = "ERR_WEBHOOK_BLOCKED_ADDRESS";
  constructor(hostname: string, reason: string) {
    super(`${hostname} resolves to a non-public address: ${reason}`);
    this.name = "BlockedAddressError";
  }
}

/**
 * The lookup handed to net/tls connect. Every address is checked, not only the first, because
 * Node may try each of them (happy eyeballs). Node >= 20 asks with `all: true` and expects the
 * array form; the single-address form is kept for callers that disable autoSelectFamily.
 */
export function guardedLookup(opts: { allowPrivate: boolean; resolve?: Resolver }): LookupFunction {
  const resolve = opts.resolve ?? systemResolver;
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
        const addresses = found.filter((a) => wanted === 0 || a.family === wanted);
        if (addresses.length === 0) {
          const error = Object.assign(new Error(`no address found for ${hostname}`), {
            code: "ENOTFOUND",
          });
          callback(error, "", 0);
          return;
        }
        if (!opts.allowPrivate) {
          for (const { address } of addresses) {
            const reason = nonPublicReason(address);
            if (reason !== null) {
              callback(new BlockedAddressError(hostname, reason), "", 0);
              return;
            }
          }
        }
        if (options.all) {
          (callback as unknown as (err: null, all: ResolvedAddress[]) => void)(null, addresses);
        } else {
          const first = addresses[0]!;
          callback(null, first.address, first.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };
}

/**
 * The undici dispatcher for webhook deliveries: its connections resolve names through
 * guardedLookup, so the address actually dialled is the one checked. IP-literal URLs skip the
 * lookup; deliverAttempt checks those itself.
 */
export function createGuardedDispatcher(opts: {
  allowPrivate: boolean;
  timeoutMs: number;
  resolve?: Resolver;
}): Agent {
  return new Agent({
    connect: {
      lookup: guardedLookup(opts),
      timeout: opts.timeoutMs,
    },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
  });
}

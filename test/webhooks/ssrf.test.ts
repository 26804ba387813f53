import type { LookupFunction } from "node:net";
import { describe, expect, it } from "vitest";
import {
  checkCallbackUrl,
  guardedLookup,
  isPublicAddress,
  nonPublicReason,
  type ResolvedAddress,
} from "../../src/webhooks/ssrf";

const strict = { allowPrivate: false };

/** Every form a creation request might use to point a webhook back inside the network. */
const REFUSED: Array<[url: string, reason: RegExp]> = [
  // Not an absolute URL / wrong scheme / credentials
  ["/relative/hook", /absolute URL/],
  ["example.com/hook", /absolute URL/],
  ["", /absolute URL/],
  ["ftp://example.com/hook", /must use https/],
  ["file:///etc/passwd", /must use https/],
  ["javascript:alert(1)", /must use https/],
  ["http://example.com/hook", /must use https \(http is not allowed\)/],
  ["https://user:pw@example.com/hook", /credentials/],
  ["https://user@example.com/hook", /credentials/],
  [`https://example.com/${"a".repeat(2100)}`, /at most 2048 characters/],
  // Internal names, any case, trailing dot tolerated
  ["https://localhost/hook", /localhost name/],
  ["https://LOCALHOST./hook", /localhost name/],
  ["https://api.localhost/hook", /localhost name/],
  ["https://printer.local/hook", /internal name \(\.local\)/],
  ["https://Printer.LOCAL./hook", /internal name \(\.local\)/],
  ["https://metadata.google.internal/hook", /internal name \(\.internal\)/],
  ["https://db.internal./hook", /internal name \(\.internal\)/],
  ["https://router.home.arpa/hook", /internal name/],
  ["https://intranet/hook", /not a fully qualified domain name/],
  // IPv4 literals by range
  ["https://127.0.0.1/hook", /loopback/],
  ["https://127.255.255.254:8443/hook", /loopback/],
  ["https://10.0.0.5/hook", /private/],
  ["https://172.16.0.1/hook", /private/],
  ["https://172.31.255.255/hook", /private/],
  ["https://192.168.1.1/hook", /private/],
  ["https://169.254.169.254/latest/meta-data", /link-local/],
  ["https://100.64.0.1/hook", /carrier-grade NAT/],
  ["https://100.127.255.255/hook", /carrier-grade NAT/],
  ["https://0.0.0.0/hook", /unspecified/],
  ["https://224.0.0.1/hook", /multicast/],
  ["https://239.255.255.250/hook", /multicast/],
  ["https://255.255.255.255/hook", /broadcast/],
  ["https://240.0.0.1/hook", /reserved/],
  ["https://198.18.0.1/hook", /benchmarking/],
  ["https://198.19.255.255/hook", /benchmarking/],
  ["https://192.0.2.10/hook", /documentation/],
  ["https://198.51.100.7/hook", /documentation/],
  ["https://203.0.113.9/hook", /documentation/],
  ["https://192.0.0.8/hook", /IETF protocol assignment/],
  // Numeric spellings resolvers accept for 127.0.0.1 / 10.0.0.1 (WHATWG normalises them)
  ["http://2130706433/hook", /must use https/],
  ["https://2130706433/hook", /loopback address 127\.0\.0\.1/],
  ["https://0x7f000001/hook", /loopback address 127\.0\.0\.1/],
  ["https://0x7F.0x0.0x0.0x1/hook", /loopback address 127\.0\.0\.1/],
  ["https://0177.0.0.1/hook", /loopback address 127\.0\.0\.1/],
  ["https://017700000001/hook", /loopback address 127\.0\.0\.1/],
  ["https://127.1/hook", /loopback address 127\.0\.0\.1/],
  ["https://127.0.1/hook", /loopback address 127\.0\.0\.1/],
  ["https://10.1/hook", /private address 10\.0\.0\.1/],
  ["https://0/hook", /unspecified \(this network\) address 0\.0\.0\.0/],
  ["https://127.0.0.1./hook", /loopback/],
  ["https://%31%32%37.0.0.1/hook", /loopback/],
  ["https://１２７.０.０.１/hook", /loopback/],
  // Hosts that are not valid at all
  ["https://08.0.0.1/hook", /absolute URL/],
  ["https://4294967296/hook", /absolute URL/],
  ["https://[fe80::1%25eth0]/hook", /absolute URL/],
  // IPv6 literals
  ["https://[::1]/hook", /loopback/],
  ["https://[0:0:0:0:0:0:0:1]/hook", /loopback/],
  ["https://[::]/hook", /unspecified/],
  ["https://[fc00::1]/hook", /unique local/],
  ["https://[fd12:3456:789a::1]/hook", /unique local/],
  ["https://[fe80::1]/hook", /link-local/],
  ["https://[febf::1]/hook", /link-local/],
  ["https://[fec0::1]/hook", /site-local/],
  ["https://[ff02::1]/hook", /multicast/],
  ["https://[::ffff:127.0.0.1]/hook", /IPv4-mapped address embedding loopback/],
  ["https://[::ffff:7f00:1]/hook", /IPv4-mapped address embedding loopback/],
  ["https://[0:0:0:0:0:ffff:10.0.0.1]/hook", /IPv4-mapped address embedding private/],
  ["https://[::ffff:169.254.169.254]/hook", /IPv4-mapped address embedding link-local/],
  ["https://[64:ff9b::10.0.0.1]/hook", /NAT64 address embedding private/],
  ["https://[64:ff9b::7f00:1]/hook", /NAT64 address embedding loopback/],
  ["https://[2002:7f00:1::]/hook", /6to4 address embedding loopback/],
  ["https://[2002:c0a8:0101::1]/hook", /6to4 address embedding private/],
  ["https://[::127.0.0.1]/hook", /IPv4-compatible/],
  ["https://[2001::1]/hook", /IETF protocol assignment/],
  ["https://[2001:2::1]/hook", /IETF protocol assignment/],
  ["https://[2001:db8::1]/hook", /documentation/],
  ["https://[3fff::1]/hook", /documentation/],
  ["https://[100::1]/hook", /outside global unicast/],
  ["https://[64:ff9b:1::1]/hook", /outside global unicast/],
];

const ACCEPTED = [
  "https://example.com/hook",
  "https://EXAMPLE.com./hook",
  "https://hooks.example.com:8443/in?source=smartmoney#frag",
  "https://93.184.216.34/x",
  "https://8.8.8.8:444/x",
  "https://[2606:4700:4700::1111]/hook",
  "https://[::ffff:93.184.216.34]/hook",
  "https://[64:ff9b::93.184.216.34]/hook",
  "https://[2002:5db8:d822::1]/hook",
  "https://xn--bcher-kva.example/hook",
  "https://localhost.example.com/hook",
  "https://internal.example.com/hook",
  "https://100.128.0.1/hook",
  "https://172.32.0.1/hook",
  "https://11.0.0.1/hook",
];

describe("checkCallbackUrl at creation", () => {
  it.each(REFUSED)("refuses %s", (url, reason) => {
    const result = checkCallbackUrl(url, strict);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });

  it.each(ACCEPTED)("accepts %s", (url) => {
    const result = checkCallbackUrl(url, strict);
    expect(result).toMatchObject({ ok: true });
    if (result.ok) expect(result.value).toBeInstanceOf(URL);
  });

  it("allowPrivate permits http and private or loopback targets, nothing else", () => {
    const dev = { allowPrivate: true };
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://localhost:3000/hook",
      "https://[::1]/hook",
      "http://receiver/hook",
      "http://192.168.1.20/hook",
    ]) {
      expect(checkCallbackUrl(url, dev), url).toMatchObject({ ok: true });
    }
    expect(checkCallbackUrl("ftp://127.0.0.1/x", dev)).toMatchObject({ ok: false });
    expect(checkCallbackUrl("http://u:p@127.0.0.1/x", dev)).toMatchObject({ ok: false });
    expect(checkCallbackUrl("not a url", dev)).toMatchObject({ ok: false });
  });
});

describe("isPublicAddress", () => {
  it.each([
    ["93.184.216.34", true],
    ["1.1.1.1", true],
    ["2606:4700:4700::1111", true],
    ["::ffff:93.184.216.34", true],
    ["127.0.0.1", false],
    ["10.255.255.255", false],
    ["100.64.0.0", false],
    ["169.254.0.1", false],
    ["::1", false],
    ["::ffff:10.0.0.1", false],
    ["::ffff:7f00:1", false],
    ["64:ff9b::a00:1", false],
    ["fd00::1", false],
    ["fe80::1%eth0", false],
    ["[::1]", false],
    ["localhost", false],
    ["", false],
    ["999.1.1.1", false],
  ])("%s → %s", (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });

  it("names the range of a refused address", () => {
    expect(nonPublicReason("172.20.1.1")).toBe("private address 172.20.1.1");
    expect(nonPublicReason("8.8.8.8")).toBeNull();
  });
});

/** Calls a LookupFunction the way net.connect does and captures its answer. */
function callLookup(
  lookup: LookupFunction,
  hostname: string,
  options: { all?: boolean; family?: number },
): Promise<{ error: NodeJS.ErrnoException | null; answer: unknown; family?: number }> {
  return new Promise((resolve) => {
    lookup(hostname, options as never, (error, answer, family) =>
      resolve({ error, answer, family }),
    );
  });
}

describe("guardedLookup (connect time)", () => {
  const table: Record<string, ResolvedAddress[]> = {
    "public.example.test": [
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 },
    ],
    "rebind.example.test": [
      { address: "93.184.216.34", family: 4 },
      { address: "127.0.0.1", family: 4 },
    ],
    "metadata.example.test": [{ address: "::ffff:169.254.169.254", family: 6 }],
  };
  const resolve = async (hostname: string) => table[hostname] ?? [];

  it("answers the all:true array form Node >= 20 asks for", async () => {
    const lookup = guardedLookup({ allowPrivate: false, resolve });
    const { error, answer } = await callLookup(lookup, "public.example.test", { all: true });
    expect(error).toBeNull();
    expect(answer).toEqual(table["public.example.test"]);
  });

  it("answers the single-address form, honouring the family asked for", async () => {
    const lookup = guardedLookup({ allowPrivate: false, resolve });
    const v6 = await callLookup(lookup, "public.example.test", { family: 6 });
    expect(v6.error).toBeNull();
    expect(v6.answer).toBe("2606:2800:220:1:248:1893:25c8:1946");
    expect(v6.family).toBe(6);
  });

  it("refuses when any resolved address is not public", async () => {
    const lookup = guardedLookup({ allowPrivate: false, resolve });
    const rebind = await callLookup(lookup, "rebind.example.test", { all: true });
    expect(rebind.error?.code).toBe("ERR_WEBHOOK_BLOCKED_ADDRESS");
    expect(rebind.error?.message).toMatch(/rebind\.example\.test .*loopback address 127\.0\.0\.1/);
    const mapped = await callLookup(lookup, "metadata.example.test", { all: true });
    expect(mapped.error?.message).toMatch(/IPv4-mapped address embedding link-local/);
  });

  it("passes private answers through when allowPrivate is set", async () => {
    const lookup = guardedLookup({ allowPrivate: true, resolve });
    const { error, answer } = await callLookup(lookup, "rebind.example.test", { all: true });
    expect(error).toBeNull();
    expect(answer).toEqual(table["rebind.example.test"]);
  });

  it("reports a name with no address as not found", async () => {
    const lookup = guardedLookup({ allowPrivate: false, resolve });
    const { error } = await callLookup(lookup, "nothing.example.test", { all: true });
    expect(error?.code).toBe("ENOTFOUND");
  });
});

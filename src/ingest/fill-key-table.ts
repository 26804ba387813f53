/**
 * The fills one import has stored, by key (tx_hash, log_index), in memory: the duplicate check
 * of an import into an empty fill store, while `fills_by_tx` is not built yet
 * (docs/architecture.md, "An empty store's fill indexes built after the load").
 *
 * An open-addressing table of 8 bytes a slot: 32 bits of the key (the hash's eight 4-byte words
 * folded into one, the log index mixed in, so the fills of one transaction differ) and the
 * fill's id. Equal bits are only a candidate: `find` confirms it with the caller's exact check
 * (the stored row, read by its id), and a probe goes on past a candidate that is not the key,
 * so the answer is exact. Chain hashes are uniform, so two keys share their bits about once in
 * 2^32 comparisons: the exact check is asked, in practice, only of a key that is there. The
 * whole hash is folded and mixed, and the slot is the key's low bits, because a file's hashes
 * need not be uniform: the tests' hashes repeat one 4-byte pattern, and with the first bytes
 * alone every key of such a file fell into one run of slots (each insert a walk along it).
 */
export class FillKeyTable {
  private keys: Int32Array;
  /** The fill's id; 0 marks an empty slot (fill ids start at 1). */
  private ids: Int32Array;
  private mask: number;
  private count = 0;

  constructor(initialSlots = 1 << 16) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(16, initialSlots)));
    this.keys = new Int32Array(slots);
    this.ids = new Int32Array(slots);
    this.mask = slots - 1;
  }

  /** Bytes a table of this many slots takes. */
  static bytesFor(slots: number): number {
    return slots * 8;
  }

  /** Keys held. */
  get size(): number {
    return this.count;
  }

  /** Bytes the table's arrays take. */
  get bytes(): number {
    return FillKeyTable.bytesFor(this.ids.length);
  }

  /**
   * The id of the fill stored under this key, or undefined. `isKey(id)` says whether the fill
   * with that id has this very key; it is asked only of ids whose 32 bits match.
   */
  find(hash: Uint8Array, logIndex: number, isKey: (id: number) => boolean): number | undefined {
    const key = fillKeyBits(hash, logIndex);
    for (let slot = key & this.mask; ; slot = (slot + 1) & this.mask) {
      const id = this.ids[slot]!;
      if (id === 0) return undefined;
      if (this.keys[slot] === key && isKey(id)) return id;
    }
  }

  /** Adds a key that `find` did not find. The table doubles past three quarters full. */
  add(hash: Uint8Array, logIndex: number, id: number): void {
    if (!Number.isInteger(id) || id < 1 || id > 0x7fffffff) {
      throw new RangeError(`fill id ${id} is outside the key table's range`);
    }
    if ((this.count + 1) * 4 > this.ids.length * 3) this.grow();
    this.place(fillKeyBits(hash, logIndex), id);
    this.count++;
  }

  private place(key: number, id: number): void {
    let slot = key & this.mask;
    while (this.ids[slot] !== 0) slot = (slot + 1) & this.mask;
    this.keys[slot] = key;
    this.ids[slot] = id;
  }

  /**
   * Gives the arrays' memory back now. A dead typed array's memory is only freed by V8's next
   * major collection, which the rest of a seed (the full refresh, mostly in a worker thread)
   * may not cause for minutes: 192 MB of a 10M-fill table and the one it outgrew stayed
   * resident through the large seed's refresh. Detaching a buffer frees it at once.
   */
  release(): void {
    detach(this.keys);
    detach(this.ids);
    this.keys = new Int32Array(16);
    this.ids = new Int32Array(16);
    this.mask = 15;
    this.count = 0;
  }

  private grow(): void {
    const { keys, ids } = this;
    const slots = ids.length * 2;
    this.keys = new Int32Array(slots);
    this.ids = new Int32Array(slots);
    this.mask = slots - 1;
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] !== 0) this.place(keys[i]!, ids[i]!);
    }
    detach(keys);
    detach(ids);
  }
}

function detach(array: Int32Array): void {
  (array.buffer as ArrayBuffer).transfer(0);
}

/**
 * The hash's eight 4-byte words folded one after the other, each step mixed (so equal words in
 * other places do not cancel, as they would by XOR alone), then the log index. Exported for the
 * test that finds two keys with the same bits.
 */
export function fillKeyBits(hash: Uint8Array, logIndex: number): number {
  let folded = 0x811c9dc5;
  for (let i = 0; i < 32; i += 4) {
    const word = hash[i]! | (hash[i + 1]! << 8) | (hash[i + 2]! << 16) | (hash[i + 3]! << 24);
    folded = mix(folded ^ word);
  }
  return mix(folded ^ Math.imul(logIndex + 1, 0x9e3779b1));
}

/** MurmurHash3's finaliser: 32 bits to 32, one to one, each output bit on every input bit. */
function mix(bits: number): number {
  let h = bits ^ (bits >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

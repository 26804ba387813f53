/**
 * A typed array twice as long, with `values` at its start: how the bulk refresh's arrays (price
 * series, coordinated timing's entries and meetings) grow when they are full.
 */
export function doubled(values: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer>;
export function doubled(values: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer>;
export function doubled(
  values: Float64Array<ArrayBuffer> | Int32Array<ArrayBuffer>,
): Float64Array<ArrayBuffer> | Int32Array<ArrayBuffer> {
  if (values instanceof Float64Array) {
    const grown = new Float64Array(values.length * 2);
    grown.set(values);
    return grown;
  }
  const grown = new Int32Array(values.length * 2);
  grown.set(values);
  return grown;
}

import fc from "fast-check";

/** The JSON Schema keywords the OpenAPI document uses for parameters and request bodies. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

const YEAR_9999 = Date.parse("9999-12-31T23:59:59.999Z");

/** Instants as RFC 3339 allows them: with Z or a numeric offset, with or without a fraction. */
const dateTime = fc
  .tuple(
    fc.date({ min: new Date(0), max: new Date(YEAR_9999), noInvalidDate: true }),
    fc.constantFrom("Z", "+00:00", "-05:30", "+14:00"),
    fc.boolean(),
  )
  .map(([date, offset, fraction]) => {
    const iso = date.toISOString();
    return `${fraction ? iso.slice(0, 23) : iso.slice(0, 19)}${offset}`;
  });

/**
 * A fast-check arbitrary for every value the schema allows (as far as the keywords above go).
 * It knows nothing of the server: what it draws is what the document promises to accept.
 */
export function arbitraryOf(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return fc.oneof(...union.map(arbitraryOf));
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type) => arbitraryOf({ ...schema, type })));
  }
  switch (schema.type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return fc.integer({
        min: schema.minimum ?? -(2 ** 31),
        max: schema.maximum ?? 2 ** 31,
      });
    case "number":
      return fc.oneof(
        fc.integer({
          min: Math.ceil(schema.minimum ?? -(2 ** 31)),
          max: Math.floor(schema.maximum ?? 2 ** 31),
        }),
        fc.double({
          min: schema.minimum ?? -1e12,
          max: schema.maximum ?? 1e12,
          noNaN: true,
          noDefaultInfinity: true,
        }),
      );
    case "object":
      return fc.record(
        Object.fromEntries(
          Object.entries(schema.properties ?? {}).map(([key, value]) => [key, arbitraryOf(value)]),
        ),
        { requiredKeys: schema.required ?? [] },
      );
    case "string":
    case undefined:
      return stringOf(schema);
    default:
      throw new Error(`schema-arbitrary: no arbitrary for type ${String(schema.type)}`);
  }
}

function stringOf(schema: JsonSchema): fc.Arbitrary<string> {
  const { minLength = 0, maxLength } = schema;
  const fits = (s: string) =>
    s.length >= minLength && (maxLength === undefined || s.length <= maxLength);
  if (schema.format === "date-time") return dateTime;
  if (schema.format === "date") return dateTime.map((s) => s.slice(0, 10));
  if (schema.format === "uri") {
    // Hosts are public names; the pattern, if any, must still hold.
    const pattern = schema.pattern ? new RegExp(schema.pattern) : undefined;
    return fc
      .webUrl({ validSchemes: ["https"], withQueryParameters: true, withFragments: true })
      .filter((url) => fits(url) && (!pattern || pattern.test(url)));
  }
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  return fc.string({ minLength, maxLength: maxLength ?? minLength + 40, unit: "grapheme" });
}

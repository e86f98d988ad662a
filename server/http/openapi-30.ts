/**
 * The OpenAPI document as 3.0.3, for generators that read nothing newer
 * (Swagger Codegen 3 and the typed clients it makes: Go, Java, C#). It is the
 * 3.1 document (openapi.ts, generated from the zod schemas) rewritten, so
 * both describe one API: served at /api/v1/openapi-3.0.json and written to
 * docs/openapi-3.0.json by the build (scripts/openapi.ts).
 *
 * What 3.0 cannot say is said the 3.0 way:
 *
 * - `type: [T, "null"]` and `anyOf: [X, {type: "null"}]` become
 *   `nullable: true` (beside a reference, inside `allOf`: 3.0 ignores a
 *   `$ref`'s siblings);
 * - `const: v` becomes `enum: [v]`, numeric exclusive bounds become
 *   `minimum`/`maximum` with the 3.0 flag, `examples` its first `example`;
 * - a tuple (`prefixItems`) becomes an array of its one item type, its length
 *   kept by minItems and maxItems;
 * - a value of any JSON type (a checkpoint's `value`) or of several (a
 *   metadata value) becomes `type: object`, which is how Swagger Codegen's
 *   clients get their language's any type; the description says what the
 *   value really is (anyValue below);
 * - `propertyNames: {type: string}` is left out (JSON keys are strings);
 * - the 3.1-only `info.summary` and `license.identifier` become the
 *   description's first paragraph and the license's URL.
 *
 * Any other keyword outside 3.0's Schema Object is refused when the document
 * is built, so a new zod construct cannot slip 3.1 into it unnoticed.
 */

import { openApiDocument } from './openapi';

type Json = Record<string, unknown>;

/** The Schema Object's keywords in OpenAPI 3.0.3 (extensions `x-*` aside). */
const SCHEMA_KEYWORDS_30 = new Set([
  'title', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern',
  'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum', 'type', 'allOf', 'oneOf', 'anyOf',
  'not', 'items', 'properties', 'additionalProperties', 'description', 'format', 'default', 'nullable', 'discriminator',
  'readOnly', 'writeOnly', 'xml', 'externalDocs', 'example', 'deprecated', '$ref',
]);

/** Keywords that describe a value without limiting it. */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'example', 'deprecated']);

/** Whether a schema limits its values at all (`{description}` admits anything). */
const constrains = (s: Json): boolean => Object.keys(s).some((k) => !ANNOTATIONS.has(k));

const isNull = (s: unknown): boolean => typeof s === 'object' && s !== null && (s as Json).type === 'null' && Object.keys(s).length === 1;

/**
 * A value of any type, or of several (`types`), as Swagger Codegen can type
 * it. With no `type` its Go client names a type `Object` it never declares,
 * and a reference to a named any-schema becomes an empty struct that cannot
 * decode a string; an unnamed `type: object` is `interface{}` in Go and
 * passes through untouched in Python. So `type: object`, and the description
 * says what the value really is.
 */
function anyValue(types: string[] | undefined, description: unknown): Json {
  const listed = types?.filter((t) => t !== 'null');
  const what = listed?.length ? `a ${listed.join(', ').replace(/, ([^,]*)$/, ' or $1')}` : 'any JSON value';
  const said = typeof description === 'string' && description !== 'Any JSON value' ? `${description}. ` : '';
  return {
    type: 'object',
    ...(listed?.length && !types!.includes('null') ? {} : { nullable: true }),
    description: `${said}The value is ${what}: \`type: object\` only because OpenAPI 3.0 has no any-type that generators read (the 3.1 document says it exactly)`,
  };
}

/**
 * Converts schemas, given the document's named ones (3.1): a reference to a
 * named any-value schema is written in place (see anyValue), and a nullable
 * reference repeats its target's type, which 3.0 wants beside `nullable`.
 */
export function schemaConverter(named: Readonly<Record<string, Json>>): (s: unknown, at: string) => Json {
  const target = (ref: string): Json | undefined => named[ref.replace(/^#\/components\/schemas\//, '')];
  /** One schema, 3.1 (JSON Schema 2020-12) in, 3.0 out. `at` names it in errors. */
  function convert(s: unknown, at: string): Json {
    if (s === true) return anyValue(undefined, undefined);
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw new Error(`OpenAPI 3.0: ${at} is not a schema object`);
    const src = s as Json;
    const out: Json = {};
    let nullable = false;
    for (const [k, v] of Object.entries(src)) {
      switch (k) {
        case 'type':
          if (Array.isArray(v)) {
            const types = v.filter((t) => t !== 'null');
            nullable ||= types.length < v.length;
            // Several types: 3.0 says that only with anyOf, which generators turn into types that cannot hold the value.
            if (types.length === 1) out.type = types[0];
          } else if (v === 'null') throw new Error(`OpenAPI 3.0: ${at} is only ever null`);
          else out.type = v;
          break;
        case 'const':
          out.enum = [v];
          break;
        case 'exclusiveMinimum':
        case 'exclusiveMaximum':
          // A bound in 2020-12, a flag on minimum or maximum in 3.0.
          if (typeof v === 'number') Object.assign(out, { [k === 'exclusiveMinimum' ? 'minimum' : 'maximum']: v, [k]: true });
          else out[k] = v;
          break;
        case 'examples':
          if (Array.isArray(v) && v.length > 0) out.example = v[0];
          break;
        case 'propertyNames':
          if (JSON.stringify(v) !== '{"type":"string"}') throw new Error(`OpenAPI 3.0: ${at} limits its property names, which 3.0 cannot say`);
          break;
        case 'prefixItems': {
          const items = (v as unknown[]).map((x, i) => convert(x, `${at}/prefixItems/${i}`));
          const kinds = new Set(items.map((x) => JSON.stringify(x)));
          out.items = kinds.size === 1 ? items[0] : anyValue(undefined, undefined);
          break;
        }
        case 'items':
          // Beside prefixItems, `items` speaks of the items after them (false: none); maxItems says it in 3.0.
          if (!('prefixItems' in src)) out.items = convert(v, `${at}/items`);
          else if (v !== false) throw new Error(`OpenAPI 3.0: ${at} is a tuple with more items after it`);
          break;
        case 'anyOf':
        case 'oneOf':
        case 'allOf': {
          const parts = v as unknown[];
          const rest = parts.filter((x) => !isNull(x));
          nullable ||= rest.length < parts.length;
          const converted = rest.map((x, i) => convert(x, `${at}/${k}/${i}`));
          // X or null: X itself, made nullable below.
          if (rest.length === 1 && k !== 'allOf') Object.assign(out, converted[0]);
          else out[k] = converted;
          break;
        }
        case 'properties':
          out.properties = Object.fromEntries(Object.entries(v as Json).map(([name, p]) => [name, convert(p, `${at}/properties/${name}`)]));
          break;
        case 'additionalProperties':
          out.additionalProperties = typeof v === 'boolean' ? v : convert(v, `${at}/additionalProperties`);
          break;
        case 'not':
          out.not = convert(v, `${at}/not`);
          break;
        default:
          if (!SCHEMA_KEYWORDS_30.has(k) && !k.startsWith('x-')) throw new Error(`OpenAPI 3.0: ${at} uses \`${k}\`, which 3.0 does not have`);
          out[k] = v;
      }
    }
    if (typeof out.$ref === 'string') {
      const { $ref, ...rest } = out;
      const to = target($ref);
      if (!to) throw new Error(`OpenAPI 3.0: ${at} refers to ${$ref}, which is not a schema of the document`);
      if (!constrains(to)) return anyValue(undefined, rest.description);
      // 3.0 ignores a reference's siblings: the reference alone, or inside allOf when something must stand beside it.
      if (nullable) return { ...(to.type === undefined ? {} : { type: to.type }), ...rest, allOf: [{ $ref }], nullable: true };
      if (constrains(rest)) return { ...rest, allOf: [{ $ref }] };
      return { $ref };
    }
    if (!constrains(out)) return anyValue(Array.isArray(src.type) ? (src.type as string[]) : undefined, out.description);
    if (nullable) out.nullable = true;
    return out;
  }
  return convert;
}

const cache = new Map<string, Json>();

/** The 3.0.3 document for this server version (built once per version); throws if the 3.1 document says something 3.0 cannot. */
export function openApi30Document(version: string): Json {
  const hit = cache.get(version);
  if (hit) return hit;
  const doc = structuredClone(openApiDocument(version)) as Json & { info: Json; paths: Record<string, Record<string, Json>>; components: Json };
  const { summary, license, ...info } = doc.info as { summary?: string; license?: { name: string; identifier?: string } } & Json;
  if (license && license.identifier !== 'MIT') throw new Error('OpenAPI 3.0: a license other than MIT needs its URL here');
  doc.info = {
    ...info,
    description: [summary, info.description].filter(Boolean).join('\n\n'),
    ...(license ? { license: { name: license.name, url: 'https://opensource.org/licenses/MIT' } } : {}),
  };

  const schemas = doc.components.schemas as Record<string, Json>;
  const convert = schemaConverter(schemas);
  // Named any-value schemas are written in place of their references, so they go.
  doc.components.schemas = Object.fromEntries(
    Object.entries(schemas)
      .filter(([, s]) => constrains(s))
      .map(([name, s]) => [name, convert(s, `#/components/schemas/${name}`)]),
  );
  for (const [name, h] of Object.entries(doc.components.headers as Record<string, Json>)) h.schema = convert(h.schema, `#/components/headers/${name}`);

  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const at = `${method.toUpperCase()} ${path}`;
      for (const p of (op.parameters ?? []) as Json[]) p.schema = convert(p.schema, `${at} parameter ${String(p.name)}`);
      for (const body of [op.requestBody as Json | undefined, ...Object.values(op.responses as Record<string, Json>)]) {
        for (const [type, media] of Object.entries((body?.content ?? {}) as Record<string, Json>)) {
          const s = media.schema as Json;
          // The stream's long description stands beside its reference, where 3.0 ignores it: it moves to the answer.
          if (typeof s.$ref === 'string' && typeof s.description === 'string' && Object.keys(s).length === 2) {
            body!.description = `${String(body!.description)}\n\n${s.description}`;
            media.schema = { $ref: s.$ref };
          } else media.schema = convert(s, `${at} ${type}`);
        }
      }
    }
  }
  const out: Json = { ...doc, openapi: '3.0.3' };
  cache.set(version, out);
  return out;
}

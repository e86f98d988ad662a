/**
 * The one route and selector grammar (docs/semantics.md §3), shared by the engine,
 * the HTTP layer, the SDK and the console. Pure: no Node or browser APIs.
 *
 * Every valid selector is equivalent to a triple of literal-or-`*` segments,
 * because every route has exactly three segments. Matching, containment and
 * list planning work on that triple; answers and duplicate detection keep the
 * selector string as given.
 */

export type Route = string & { readonly __brand: 'Route' };
export type Selector = string & { readonly __brand: 'Selector' };

export const SCHEME = 'lease://';
export const MAX_ROUTE_BYTES = 400;
/** A selector has at most five segments (`**` plus two literals, or three), so its size is bounded like a route's. */
export const MAX_SELECTOR_BYTES = 400;

const SEGMENT_RE = /^[A-Za-z0-9\-._~:@]{1,128}$/;

/** One position of the normalized triple: a literal segment, or `*` for any. */
export type Part = string | null;
export type Triple = readonly [Part, Part, Part];

export interface ParsedSelector {
  readonly selector: Selector;
  /** `null` stands for a wildcard position. */
  readonly triple: Triple;
  /** True when every position is a literal: the selector names one route. */
  readonly exact: boolean;
}

export type GrammarResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Is `s` a valid literal segment (charset, length, not `.` or `..`)? */
export function isSegment(s: string): boolean {
  return SEGMENT_RE.test(s) && s !== '.' && s !== '..';
}

function byteLength(s: string): number {
  // Every valid character is ASCII, so a string that passes the charset check
  // has as many bytes as characters; for rejected strings the figure only
  // feeds the error message.
  let n = 0;
  for (let i = 0; i < s.length; i++) n += s.charCodeAt(i) < 0x80 ? 1 : 3;
  return n;
}

function splitBody(input: string): GrammarResult<string[]> {
  if (typeof input !== 'string') return { ok: false, reason: 'must be a string' };
  if (!input.startsWith(SCHEME)) return { ok: false, reason: `must start with ${SCHEME}` };
  const body = input.slice(SCHEME.length);
  if (body.length === 0) return { ok: false, reason: 'has no segments' };
  return { ok: true, value: body.split('/') };
}

/** Parse a concrete route: exactly three literal segments, at most 400 bytes, never normalized. */
export function parseRoute(input: string): GrammarResult<{ route: Route; segments: [string, string, string] }> {
  const split = splitBody(input);
  if (!split.ok) return split;
  if (byteLength(input) > MAX_ROUTE_BYTES) return { ok: false, reason: `is longer than ${MAX_ROUTE_BYTES} bytes` };
  const segs = split.value;
  if (segs.length !== 3) return { ok: false, reason: 'must have exactly three segments (realm/area/resource)' };
  for (const s of segs) {
    if (s === '*' || s === '**') return { ok: false, reason: 'cannot contain wildcards' };
    if (!isSegment(s)) return { ok: false, reason: `has an invalid segment ${JSON.stringify(s.slice(0, 40))}` };
  }
  return { ok: true, value: { route: input as Route, segments: [segs[0]!, segs[1]!, segs[2]!] } };
}

/** Parse a selector (literal, `*` and at most one `**` segments) into its triple. */
export function parseSelector(input: string): GrammarResult<ParsedSelector> {
  const split = splitBody(input);
  if (!split.ok) return split;
  if (byteLength(input) > MAX_SELECTOR_BYTES) return { ok: false, reason: `is longer than ${MAX_SELECTOR_BYTES} bytes` };
  const segs = split.value;
  let globAt = -1;
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i]!;
    if (s === '**') {
      if (globAt >= 0) return { ok: false, reason: 'has more than one **' };
      globAt = i;
    } else if (s !== '*' && !isSegment(s)) {
      return { ok: false, reason: `has an invalid segment ${JSON.stringify(s.slice(0, 40))}` };
    }
  }
  let parts: Part[];
  if (globAt < 0) {
    if (segs.length !== 3) return { ok: false, reason: 'must have exactly three segments without **' };
    parts = segs.map((s) => (s === '*' ? null : s));
  } else {
    const others = segs.length - 1;
    if (others > 2) return { ok: false, reason: 'with ** has at most two other segments' };
    // `**` stands for 3 - others single-segment wildcards at its position.
    const before = segs.slice(0, globAt).map((s) => (s === '*' ? null : s));
    const after = segs.slice(globAt + 1).map((s) => (s === '*' ? null : s));
    parts = [...before, ...Array<Part>(3 - others).fill(null), ...after];
  }
  const triple = [parts[0]!, parts[1]!, parts[2]!] as unknown as Triple;
  const exact = triple.every((p) => p !== null);
  return { ok: true, value: { selector: input as Selector, triple, exact } };
}

/** Does the selector (as a triple) match this route's segments? */
export function matches(triple: Triple, segments: readonly [string, string, string]): boolean {
  return (
    (triple[0] === null || triple[0] === segments[0]) &&
    (triple[1] === null || triple[1] === segments[1]) &&
    (triple[2] === null || triple[2] === segments[2])
  );
}

/** Route string → its segments; the caller guarantees the route is valid. */
export function routeSegments(route: Route | string): [string, string, string] {
  const body = route.slice(SCHEME.length);
  const a = body.indexOf('/');
  const b = body.indexOf('/', a + 1);
  return [body.slice(0, a), body.slice(a + 1, b), body.slice(b + 1)];
}

/**
 * Containment: does `outer` match every route `inner` can match? Position by
 * position, a wildcard contains anything and a literal contains only itself.
 */
export function contains(outer: Triple, inner: Triple): boolean {
  for (let i = 0; i < 3; i++) {
    const o = outer[i];
    if (o !== null && o !== inner[i]) return false;
  }
  return true;
}

/** Parse a selector or throw a plain Error with the reason (for trusted inputs such as config and tests). */
export function selectorOrThrow(input: string): ParsedSelector {
  const r = parseSelector(input);
  if (!r.ok) throw new Error(`invalid selector ${JSON.stringify(input)}: ${r.reason}`);
  return r.value;
}

/**
 * The one rule for names people read (owner ids, token names, metadata
 * keys), shared by the server's request schemas and the console's forms:
 * nothing that can make a name look like another. Refused:
 *
 * - control characters (Unicode category Cc);
 * - format characters (Cf): the bidi controls (U+202A–U+202E, U+2066–U+2069,
 *   U+200E/U+200F, U+061C) that reorder what follows, and the invisible
 *   zero-width ones (U+200B–U+200D, U+2060, U+FEFF) that make two different
 *   names print the same;
 * - unpaired surrogates (not valid Unicode text; they cannot be stored or
 *   shown faithfully).
 */

const CONTROL = /\p{Cc}/u;
const FORMAT = /\p{Cf}/u;
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/** Why `text` is not an acceptable identifier, or undefined when it is. */
export function identifierProblem(text: string): string | undefined {
  if (!text.isWellFormed()) return 'must not contain unpaired surrogates';
  if (CONTROL.test(text)) return 'must not contain control characters';
  if (BIDI.test(text)) return 'must not contain bidirectional control characters';
  if (FORMAT.test(text)) return 'must not contain zero-width or other invisible format characters';
  return undefined;
}

/** Code points, as a person counts characters (a surrogate pair is one). */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

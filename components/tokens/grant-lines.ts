import { parseGrant } from '@/lib/grants';

interface GrantLineError {
  /** 1-based line number in the box. */
  line: number;
  text: string;
  reason: string;
}

/**
 * The grants box, one `selector#permission` a line: blank lines are skipped,
 * each other line is checked against the grammar. Nothing is sent while
 * `errors` is not empty.
 */
export function parseGrantLines(text: string): { grants: string[]; errors: GrantLineError[] } {
  const grants: string[] = [];
  const errors: GrantLineError[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const r = parseGrant(line);
    if (r.ok) {
      if (!grants.includes(line)) grants.push(line);
    } else {
      errors.push({ line: i + 1, text: line, reason: r.reason });
    }
  });
  return { grants, errors };
}

/**
 * SubscriptionIndex: the live registrations of every stream, indexed so that
 * matching one change costs in proportion to the registrations it matches,
 * never to all of them (docs/semantics.md §8).
 *
 * Every selector normalizes to a triple of literal-or-any positions
 * (lib/selector.ts: `**` expands to the wildcards it stands for), so the index
 * is a segment trie of depth three per family, with a literal branch and a
 * `*` branch at each level. A route visits at most 2 + 4 + 8 nodes, whatever
 * the number of registrations; exact and wildcard registrations live in the
 * same trie and match with the same semantics.
 */

import type { Triple } from '@/lib/selector';

const ANY = '*';

interface Node<T> {
  /** Made on first use: most nodes of a large index are leaves. */
  children: Map<string, Node<T>> | undefined;
  /** Registrations ending at this node (level 3 only). */
  items: Set<T> | undefined;
}

function node<T>(): Node<T> {
  return { children: undefined, items: undefined };
}

export class SubscriptionIndex<T> {
  private readonly families = new Map<string, Node<T>>();
  private count = 0;

  /** How many registrations the index holds. */
  get size(): number {
    return this.count;
  }

  /** Add a registration under its family and selector triple (a no-op if already there). */
  add(family: string, triple: Triple, item: T): void {
    let n: Node<T> | undefined = this.families.get(family);
    if (!n) this.families.set(family, (n = node<T>()));
    for (const part of triple) {
      const key = part ?? ANY;
      n.children ??= new Map();
      let next: Node<T> | undefined = n.children.get(key);
      if (!next) n.children.set(key, (next = node<T>()));
      n = next;
    }
    n.items ??= new Set();
    if (!n.items.has(item)) {
      n.items.add(item);
      this.count++;
    }
  }

  /** Remove a registration; empty branches are pruned so memory follows the live registrations. */
  remove(family: string, triple: Triple, item: T): boolean {
    const root = this.families.get(family);
    if (!root) return false;
    const path: Array<[Node<T>, string]> = [];
    let n: Node<T> | undefined = root;
    for (const part of triple) {
      const key = part ?? ANY;
      path.push([n, key]);
      n = n.children?.get(key);
      if (!n) return false;
    }
    if (!n.items?.delete(item)) return false;
    this.count--;
    if (n.items.size === 0) n.items = undefined;
    for (let i = path.length - 1; i >= 0; i--) {
      const [parent, key] = path[i]!;
      const child = parent.children!.get(key)!;
      if (child.items || (child.children?.size ?? 0) > 0) break;
      parent.children!.delete(key);
    }
    if ((root.children?.size ?? 0) === 0) this.families.delete(family);
    return true;
  }

  /** Call `visit` once for every registration of the family whose selector matches the route's segments. */
  match(family: string, segments: readonly [string, string, string], visit: (item: T) => void): void {
    const root = this.families.get(family);
    if (root) this.walk(root, segments, 0, visit);
  }

  private walk(n: Node<T>, segments: readonly [string, string, string], depth: number, visit: (item: T) => void): void {
    if (depth === 3) {
      if (n.items) for (const item of n.items) visit(item);
      return;
    }
    const children = n.children;
    if (!children) return;
    const literal = children.get(segments[depth]!);
    if (literal) this.walk(literal, segments, depth + 1, visit);
    const any = children.get(ANY);
    if (any) this.walk(any, segments, depth + 1, visit);
  }
}

/**
 * Test support: a feed sink (a stream's end of the hub, server/engine/feed/feed.ts)
 * that keeps every frame it is given, never pushes back, and records how the
 * stream ended.
 */

import type { FeedFrame, FeedSink } from '../engine/feed/feed';

export class RecordingSink implements FeedSink {
  frames: FeedFrame[] = [];
  ended: FeedFrame | undefined;
  private listeners: Array<() => void> = [];
  push(f: FeedFrame): boolean {
    this.frames.push(f);
    return true;
  }
  heartbeat(): void {}
  end(last: FeedFrame): number {
    this.ended = last;
    for (const l of this.listeners.splice(0)) l();
    return 0;
  }
  onClose(l: () => void): void {
    this.listeners.push(l);
  }
  /** The revisions of the change frames, in the order given. */
  revisions(): number[] {
    return this.frames.filter((f) => f.event === 'change').map((f) => f.id!);
  }
}

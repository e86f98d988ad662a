/**
 * SecondRing: a fixed window of per-second figures, `capacity` seconds ×
 * `width` series, held in typed arrays allocated once. Each slot belongs to
 * one second (its stamp); writing a second whose slot still holds an older
 * one clears the slot first, so old seconds fall off by themselves and the
 * memory never grows, however long the server runs.
 */

export class SecondRing {
  /** The second each slot holds, or -1. */
  private readonly stamps: Float64Array;
  private readonly values: Float64Array;

  constructor(
    readonly capacity: number,
    readonly width: number,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1 || !Number.isInteger(width) || width < 1) throw new RangeError('capacity and width must be positive integers');
    this.stamps = new Float64Array(capacity).fill(-1);
    this.values = new Float64Array(capacity * width);
  }

  /** Bytes held by the ring: fixed at construction. */
  get bytes(): number {
    return this.stamps.byteLength + this.values.byteLength;
  }

  /**
   * The offset of second `sec`'s values, claiming (and clearing) its slot if
   * it held an older second; -1 when the slot already holds a newer second
   * (a write that late has fallen out of the window).
   */
  private claim(sec: number): number {
    const i = sec % this.capacity;
    const held = this.stamps[i]!;
    if (held > sec) return -1;
    const at = i * this.width;
    if (held !== sec) {
      this.stamps[i] = sec;
      this.values.fill(0, at, at + this.width);
    }
    return at;
  }

  /** Add `v` to a series at second `sec` (a second not held yet starts at zero). */
  add(sec: number, series: number, v: number): void {
    const at = this.claim(sec);
    if (at >= 0) this.values[at + series]! += v;
  }

  /** Set a series at second `sec`. */
  set(sec: number, series: number, v: number): void {
    const at = this.claim(sec);
    if (at >= 0) this.values[at + series] = v;
  }

  /** Mark second `sec` as held (its series zero unless written). */
  touch(sec: number): void {
    this.claim(sec);
  }

  /** Is second `sec` held? */
  has(sec: number): boolean {
    return this.stamps[sec % this.capacity] === sec;
  }

  /** A series' value at second `sec`, or undefined when that second is not held. */
  get(sec: number, series: number): number | undefined {
    const i = sec % this.capacity;
    return this.stamps[i] === sec ? this.values[i * this.width + series] : undefined;
  }
}

'use client';

import { useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent, type PointerEvent } from 'react';
import { formatDuration } from '@/components/lease-detail/format';
import { formatTime, timeTicks } from '@/components/ui/time';
import type { Span, Tenure } from '@/components/lease-detail/lease-history-model';
import { describeTenure, shownEnd } from '@/components/lease-detail/tenure-text';
import { END_LOOK, EndMarker } from '@/components/lease-detail/tenure-look';
import styles from '@/components/lease-detail/lease-history.module.css';

interface TenureTimelineProps {
  tenures: readonly Tenure[];
  view: Span;
  now: number;
  /** Pan by this many ms (drag, Shift+arrows), zoom by a factor around a moment (+, −, Ctrl+wheel), or fit (0). */
  onPan: (ms: number) => void;
  onZoom: (factor: number, at?: number) => void;
  onFit: () => void;
  /** Bring a tenure into view (keyboard moving to one outside it). */
  onReveal: (t: Tenure) => void;
  /** The tenure under the pointer, and the one with keyboard focus (indexes into `tenures`), or null. */
  onHover: (index: number | null) => void;
  onFocusTenure: (index: number | null) => void;
  describedBy?: string;
}

/** Wide enough for "owner · token" inside the bar. */
const LABEL_MIN_PX = 64;

/**
 * The timeline's drawing, in the DOM (no canvas): a time axis on round
 * 24-hour times, one focusable bar per tenure in view (its name is the
 * tenure's description; colour, pattern and end marker by how it ended),
 * lock-delay gaps shaded (each an image named by its span), release
 * requests marked ▼, and a "now" line. Drag to pan, Ctrl+wheel to zoom; on a
 * bar, ← → move between tenures, + − zoom, 0 fits, Shift+← → pan. No
 * focusable part sits inside an element with role="img".
 */
export function TenureTimeline({ tenures, view, now, onPan, onZoom, onFit, onReveal, onHover, onFocusTenure, describedBy }: TenureTimelineProps) {
  const track = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  const [drag, setDrag] = useState<{ x: number; moved: number } | null>(null);
  const [focusWanted, setFocusWanted] = useState<number | null>(null);

  useLayoutEffect(() => {
    const el = track.current;
    if (!el) return;
    setWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const span = Math.max(1, view.to - view.from);
  const x = (t: number) => ((t - view.from) / span) * width;
  const timeAt = (px: number) => view.from + (px / Math.max(1, width)) * span;

  // Ctrl (or ⌘) + wheel zooms around the pointer; a plain wheel scrolls the page as usual.
  // A native listener: React's wheel listener is passive and cannot keep the page from zooming.
  const zoomRef = useRef(onZoom);
  const timeAtRef = useRef(timeAt);
  useEffect(() => {
    zoomRef.current = onZoom;
    timeAtRef.current = timeAt;
  });
  useEffect(() => {
    const el = track.current;
    if (!el) return;
    const wheel = (e: WheelEvent) => {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      const box = el.getBoundingClientRect();
      zoomRef.current(e.deltaY > 0 ? 1.25 : 0.8, timeAtRef.current(e.clientX - box.left));
    };
    el.addEventListener('wheel', wheel, { passive: false });
    return () => el.removeEventListener('wheel', wheel);
  }, []);

  // Focus a tenure the keyboard moved to once it has been brought into view and drawn.
  useEffect(() => {
    if (focusWanted === null) return;
    const el = track.current?.querySelector<HTMLElement>(`[data-index="${focusWanted}"]`);
    if (el) {
      el.focus();
      setFocusWanted(null);
    }
  });

  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    if (e.button !== 0) return;
    e.currentTarget.setPointerCapture(e.pointerId);
    setDrag({ x: e.clientX, moved: 0 });
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    if (!drag || width === 0) return;
    const dx = e.clientX - drag.x;
    if (dx === 0) return;
    onPan((-dx / width) * span);
    setDrag({ x: e.clientX, moved: drag.moved + Math.abs(dx) });
  };
  const endDrag = () => setDrag(null);

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const index = Number((e.target as HTMLElement).dataset.index ?? NaN);
    if (e.key === '+' || e.key === '=') onZoom(0.5);
    else if (e.key === '-' || e.key === '_') onZoom(2);
    else if (e.key === '0') onFit();
    else if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && e.shiftKey) onPan((e.key === 'ArrowLeft' ? -1 : 1) * span * 0.25);
    else if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && !Number.isNaN(index)) {
      const next = index + (e.key === 'ArrowLeft' ? -1 : 1);
      const t = tenures[next];
      if (!t) return;
      if (shownEnd(t, now) < view.from || t.start > view.to) onReveal(t);
      setFocusWanted(next);
    } else return;
    e.preventDefault();
  };

  const ticks = width > 0 ? timeTicks(view.from, view.to, Math.max(2, Math.floor(width / 96)), now > 0 ? now : undefined) : [];
  const visible = (a: number, b: number) => b >= view.from && a <= view.to;

  return (
    <div>
      <div
        ref={track}
        className={styles.track}
        data-dragging={drag ? 'true' : undefined}
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={endDrag}
        onPointerCancel={endDrag}
        onKeyDown={onKeyDown}
      >
        {ticks.map((tk) => (
          <div key={tk.at} aria-hidden="true" className={styles.grid} style={{ left: x(tk.at) }} />
        ))}
        {width > 0 &&
          tenures.map((t, i) => {
            if (t.lockDelayUntil === null || t.lockDelayUntil <= t.end || !visible(t.end, t.lockDelayUntil)) return null;
            const next = tenures[i + 1];
            const until = next ? Math.min(t.lockDelayUntil, Math.max(t.end, next.start)) : t.lockDelayUntil;
            const left = Math.max(-2, x(t.end));
            return (
              <div
                key={`gap-${i}`}
                role="img"
                aria-label={`Lock-delay after ${t.ownerId}'s lease (token ${t.fencingToken ?? '?'}): nobody could acquire the route from ${formatTime(t.end, now)} until ${formatTime(t.lockDelayUntil, now)} (${formatDuration(t.lockDelayUntil - t.end)})`}
                title={`Lock-delay until ${formatTime(t.lockDelayUntil, now)}`}
                className={styles.gap}
                style={{ left, width: Math.max(2, Math.min(width + 2, x(until)) - left) }}
              />
            );
          })}
        {width > 0 &&
          tenures.map((t, i) => {
            const end = shownEnd(t, now);
            if (!visible(t.start, end)) return null;
            const left = Math.max(-4, x(t.start));
            const right = Math.min(width + 4, x(end));
            const w = Math.max(3, right - left);
            const look = END_LOOK[t.endKind];
            return (
              <div key={`${t.fencingToken}-${t.start}`}>
                <button
                  type="button"
                  data-index={i}
                  data-end={t.endKind}
                  data-shape={look.shape}
                  data-pattern={look.pattern}
                  aria-label={describeTenure(t, now)}
                  aria-describedby={describedBy}
                  className={styles.bar}
                  style={{ left, width: w }}
                  onFocus={() => onFocusTenure(i)}
                  onBlur={() => onFocusTenure(null)}
                  onPointerEnter={() => onHover(i)}
                  onPointerLeave={() => onHover(null)}
                />
                {/* Beside the button, not in it: its name is the whole description (axe: label-content-name-mismatch). */}
                {w >= LABEL_MIN_PX && (
                  <span aria-hidden="true" data-end={t.endKind} className={styles.label} style={{ left: left + 3, maxWidth: w - 14 }}>
                    {t.ownerId} · {t.fencingToken ?? '?'}
                  </span>
                )}
                {x(end) <= width + 7 && <EndMarker end={t.endKind} className={styles.endMarker} style={{ left: left + w }} />}
                {t.requests.filter((r) => visible(r.time, r.time)).map((r) => (
                  <span key={r.time} aria-hidden="true" className={styles.request} style={{ left: x(r.time) }} />
                ))}
              </div>
            );
          })}
        {now > 0 && width > 0 && visible(now, now) && (
          <div aria-hidden="true" className={styles.now} style={{ left: x(now) }}>
            <span className={styles.nowLabel}>now</span>
          </div>
        )}
      </div>
      <div aria-hidden="true" className="relative h-4 text-zinc-600 dark:text-zinc-400">
        {ticks.map((tk) => (
          <span key={tk.at} className={styles.tick} style={{ left: x(tk.at) }}>
            {tk.label}
          </span>
        ))}
      </div>
    </div>
  );
}

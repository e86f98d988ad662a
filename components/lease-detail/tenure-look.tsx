import type { TenureEnd } from '@/components/lease-detail/lease-history-model';
import styles from '@/components/lease-detail/lease-history.module.css';

/**
 * How each kind of end looks on the timeline: a colour (lease-history.module.css),
 * a fill pattern and a marker shape at the bar's end, so no two kinds differ
 * by colour alone (expired and force-released were two oranges: now a ring on
 * diagonal stripes against a triangle on cross-hatching).
 */
type EndShape = 'square' | 'ring' | 'dot' | 'triangle' | 'cross' | 'arrow' | 'diamond';
type EndPattern = 'solid' | 'stripes' | 'dots' | 'hatch' | 'bars' | 'fade';

export const END_LOOK: Record<TenureEnd, { shape: EndShape; pattern: EndPattern }> = {
  released: { shape: 'square', pattern: 'solid' },
  expired: { shape: 'ring', pattern: 'stripes' },
  session_closed: { shape: 'dot', pattern: 'dots' },
  force_released: { shape: 'triangle', pattern: 'hatch' },
  revoked: { shape: 'cross', pattern: 'bars' },
  held: { shape: 'arrow', pattern: 'solid' },
  unknown: { shape: 'diamond', pattern: 'fade' },
};

const PATHS: Record<EndShape, React.ReactNode> = {
  square: <rect x="2" y="2" width="10" height="10" />,
  ring: <circle cx="7" cy="7" r="4.25" fill="none" strokeWidth="2.5" className={styles.ink} />,
  dot: <circle cx="7" cy="7" r="5" />,
  triangle: <path d="M7 1.5 12.5 12H1.5Z" />,
  cross: <path d="M2.5 2.5 11.5 11.5M11.5 2.5 2.5 11.5" strokeWidth="3" className={styles.ink} />,
  arrow: <path d="M3 1.5 12 7 3 12.5Z" />,
  diamond: <path d="M7 1 13 7 7 13 1 7Z" />,
};

/** The marker of an end kind (decorative: the bar's name and the list say the kind in words). */
export function EndMarker({ end, className, style }: { end: TenureEnd; className?: string; style?: React.CSSProperties }) {
  const { shape } = END_LOOK[end];
  return (
    <svg aria-hidden="true" viewBox="0 0 14 14" width="14" height="14" data-end={end} data-shape={shape} className={`${styles.marker} ${className ?? ''}`} style={style}>
      {PATHS[shape]}
    </svg>
  );
}

/** A legend swatch: the kind's colour and pattern with its marker. */
export function EndSwatch({ end }: { end: TenureEnd }) {
  return (
    <span aria-hidden="true" className={styles.swatch} data-end={end} data-pattern={END_LOOK[end].pattern}>
      <EndMarker end={end} className={styles.swatchMarker} />
    </span>
  );
}

import type { ReactNode } from 'react';
import './embed.css';

/** Embeddable pages: no console chrome (no navigation, no Sign out), framable (next.config.mjs). */
export default function EmbedLayout({ children }: { children: ReactNode }) {
  return (
    <main data-embed="" className="p-1">
      {children}
    </main>
  );
}

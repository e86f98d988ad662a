import type { Metadata } from 'next';
import { Suspense } from 'react';
import { EmbedInventory } from '@/components/embed/embed-inventory';

export const metadata: Metadata = { title: 'Inventory', robots: { index: false, follow: false } };

/** `/embed/inventory?selector=…#token=…`: the live inventory widget alone, for an iframe (docs/console.md). */
export default function EmbedInventoryPage() {
  return (
    <Suspense fallback={null}>
      <EmbedInventory />
    </Suspense>
  );
}

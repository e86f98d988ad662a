import type { Metadata } from 'next';
import { Suspense } from 'react';
import { LeasesView } from '@/components/leases/leases-view';

export const metadata: Metadata = { title: 'Leases' };

export default function LeasesPage() {
  return (
    <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
      <LeasesView />
    </Suspense>
  );
}

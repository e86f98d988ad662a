import type { Metadata } from 'next';
import { Suspense } from 'react';
import { SessionsView } from '@/components/sessions/sessions-view';
import { PageHeader } from '@/components/ui/states';
import { TableSkeleton } from '@/components/ui/table-skeleton';

export const metadata: Metadata = { title: 'Sessions' };

export default function SessionsPage() {
  return (
    <div className="space-y-6">
      <PageHeader
        title="Sessions"
        description="Open sessions (holder incarnations) of your family: who holds how many leases, and until when unless kept alive."
      />
      <Suspense fallback={<TableSkeleton label="Sessions" columns={['Owner', 'Incarnation', 'Leases', 'Last batched renewal', 'Last batch acquire', 'Created', 'Expires', 'TTL']} />}>
        <SessionsView />
      </Suspense>
    </div>
  );
}

import type { Metadata } from 'next';
import { Suspense } from 'react';
import { AuditView } from '@/components/audit/audit-view';
import { PageHeader } from '@/components/ui/states';
import { TableSkeleton } from '@/components/ui/table-skeleton';

export const metadata: Metadata = { title: 'Audit' };

const COLUMNS = ['Time', 'Event / result', 'Route', 'Owner / incarnation', 'Fencing token', 'Reason', 'Token / correlation id'];

export default function AuditPage() {
  return (
    <div className="space-y-6">
      <PageHeader
        title="Audit"
        description="Who did what to which lease, and why: sessions, leases, operator actions, token changes and refusals, newest first."
      />
      <Suspense fallback={<TableSkeleton label="Audit events" columns={COLUMNS} />}>
        <AuditView />
      </Suspense>
    </div>
  );
}

import type { Metadata } from 'next';
import { Suspense } from 'react';
import { PoliciesView } from '@/components/policies/policies-view';
import { PageHeader } from '@/components/ui/states';

export const metadata: Metadata = { title: 'Policies' };

export default function PoliciesPage() {
  return (
    <div className="space-y-6">
      <PageHeader
        title="Policies"
        description="Per-pattern rules of your family: TTL bounds and default, lifetime cap, lock-delay and waiter cap. The most specific matching selector applies."
      />
      <Suspense fallback={null}>
        <PoliciesView />
      </Suspense>
    </div>
  );
}

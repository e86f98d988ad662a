import type { Metadata } from 'next';
import { Suspense } from 'react';
import { PageHeader } from '@/components/ui/states';
import { MetricsDashboard, MetricsSkeleton } from '@/components/metrics/metrics-dashboard';
import { WindowPicker } from '@/components/metrics/window-picker';

export const metadata: Metadata = { title: 'Metrics' };

export default function MetricsPage() {
  return (
    <div className="space-y-6">
      <PageHeader title="Metrics" description="Acquisitions, leases, sessions, waiters, feed fanout and request latency, second by second.">
        <Suspense fallback={null}>
          <WindowPicker />
        </Suspense>
      </PageHeader>
      <Suspense fallback={<MetricsSkeleton />}>
        <MetricsDashboard />
      </Suspense>
    </div>
  );
}

import { SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Th, THead } from '@/components/ui/table';

/** A whole table in its loading shape, for a page's Suspense fallback (server-rendered, before the view hydrates). */
export function TableSkeleton({ label, columns, rows = 6 }: { label: string; columns: readonly string[]; rows?: number }) {
  return (
    <div className="space-y-4" aria-busy="true">
      <div className="h-15 animate-pulse rounded-lg bg-zinc-100 dark:bg-zinc-900" aria-hidden="true" />
      <Table aria-label={label}>
        <THead>
          <tr>
            {columns.map((c) => (
              <Th key={c}>{c}</Th>
            ))}
          </tr>
        </THead>
        <TBody>
          <SkeletonRows rows={rows} cols={columns.length} />
        </TBody>
      </Table>
    </div>
  );
}

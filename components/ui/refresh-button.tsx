import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';

/** "Refresh" for views that are read on demand rather than live; the icon turns while a read is in flight. */
export function RefreshButton({ busy, onClick }: { busy: boolean; onClick: () => void }) {
  return (
    <Button size="sm" onClick={onClick} disabled={busy}>
      <svg aria-hidden="true" viewBox="0 0 24 24" className={cn('size-3.5', busy && 'animate-spin')} fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round">
        <path d="M21 12a9 9 0 1 1-2.64-6.36" />
        <path d="M21 3v6h-6" />
      </svg>
      Refresh
    </Button>
  );
}

import Link from 'next/link';
import { LeaseholdError } from '@/lib/client';
import { buttonVariants } from '@/components/ui/button';
import { ErrorAlert, PageHeader } from '@/components/ui/states';

/** A detail URL whose segments do not make a lease route: say why, and offer the way back. */
export function InvalidRoute({ route, reason }: { route: string; reason: string }) {
  const error = new LeaseholdError({ code: 'invalid_request', message: `${route} ${reason}.` });
  return (
    <div className="space-y-6">
      <PageHeader title="Invalid lease route" description="A lease route is lease://realm/area/resource; each segment is 1–128 of A–Z a–z 0–9 - . _ ~ : @" />
      <ErrorAlert
        error={error}
        title="This is not a lease route"
        action={
          <Link href="/leases" className={buttonVariants({ size: 'sm' })}>
            Browse leases
          </Link>
        }
      />
    </div>
  );
}

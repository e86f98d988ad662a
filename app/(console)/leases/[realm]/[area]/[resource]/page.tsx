import type { Metadata } from 'next';
import { InvalidRoute } from '@/components/lease-detail/invalid-route';
import { LeaseDetail } from '@/components/lease-detail/lease-detail';
import { routeFromParams, type RouteParams } from '@/components/lease-detail/route-from-params';

type Props = { params: Promise<RouteParams> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const parsed = routeFromParams(await params);
  return { title: parsed.ok ? parsed.route : 'Invalid lease route' };
}

/** One lease route: `/leases/{realm}/{area}/{resource}`. */
export default async function LeaseDetailPage({ params }: Props) {
  const parsed = routeFromParams(await params);
  return parsed.ok ? <LeaseDetail route={parsed.route} /> : <InvalidRoute route={parsed.route} reason={parsed.reason} />;
}

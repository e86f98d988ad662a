import { useQuery } from '@tanstack/react-query';
import { queryKeys } from '@/components/query-keys';
import { fetchHealth } from '@/components/health/fetch-health';

/** Polls the health endpoint; cheap for the server and what the landing page is for. */
export function useHealth() {
  return useQuery({
    queryKey: queryKeys.health(),
    queryFn: ({ signal }) => fetchHealth(signal),
    refetchInterval: 10_000,
    retryDelay: 1_000,
  });
}

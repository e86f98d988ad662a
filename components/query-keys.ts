/** The one factory for react-query keys, so invalidation can target whole families of queries. */
export const queryKeys = {
  health: () => ['health'] as const,
  whoami: () => ['whoami'] as const,
  leases: () => ['leases'] as const,
  leasePage: (q: { selector: string; cursor: string | null; limit: number; owner: string; holder: string }) => ['leases', 'page', q] as const,
  leaseSummary: (q: { selector: string; owner: string; holder: string; expiring: number | null; waiters: boolean; asked: boolean }) => ['leases', 'summary', q] as const,
  lockDelays: (q: { selector: string; cursor: string | null; limit: number }) => ['leases', 'lock-delays', q] as const,
  lease: (route: string) => ['leases', 'one', route] as const,
  sessionLeases: (incarnation: string) => ['leases', 'session', incarnation] as const,
  checkpoint: (route: string) => ['checkpoint', route] as const,
  sessions: (q: { owner: string; cursor: string | null }) => ['sessions', q] as const,
  audit: (q: Record<string, string | null>) => ['audit', q] as const,
  tokens: () => ['tokens'] as const,
  policies: () => ['policies'] as const,
  metricsSummary: (windowS: number) => ['metrics', 'summary', windowS] as const,
};

/** The one factory for react-query keys, so invalidation can target whole families of queries. */
export const queryKeys = {
  health: () => ['health'] as const,
};

/**
 * The change kinds of the held set (docs/semantics.md §8), shared by the engine, the
 * feed and the SDK.
 */
export type ChangeKind =
  | 'acquired'
  | 'released'
  | 'expired'
  | 'session_closed'
  | 'force_released'
  | 'revoked'
  | 'rolled_back';

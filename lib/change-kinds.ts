/**
 * The change kinds of the held set (CONTRACT.md §8), shared by the engine, the
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

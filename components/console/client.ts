'use client';

import { LeaseholdClient } from '@/lib/client';

let client: LeaseholdClient | undefined;

/**
 * The console's one SDK client: the page's own origin, no bearer token, so the
 * browser sends the httpOnly login cookie. Every console call goes through it.
 */
export function consoleClient(): LeaseholdClient {
  client ??= new LeaseholdClient({ baseUrl: '' });
  return client;
}

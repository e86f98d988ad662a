'use client';

import { useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useCallback } from 'react';
import { consoleClient } from '@/components/console/client';
import { stopConsoleFeed } from '@/components/feed/feed';

/** Sign out: end the cookie's session on the server, drop the stream and every cached answer, go to login. */
export function useSignOut(): () => Promise<void> {
  const queryClient = useQueryClient();
  const router = useRouter();
  return useCallback(async () => {
    try {
      await consoleClient().logout();
    } finally {
      stopConsoleFeed();
      queryClient.clear();
      router.replace('/login');
    }
  }, [queryClient, router]);
}

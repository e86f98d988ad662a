import type { Metadata } from 'next';
import { TokensView } from '@/components/tokens/tokens-view';
import { PageHeader } from '@/components/ui/states';

export const metadata: Metadata = { title: 'Tokens' };

export default function TokensPage() {
  return (
    <div className="space-y-6">
      <PageHeader
        title="Tokens"
        description="API tokens of your family: create them with grants, revoke them, and make short-lived embed tokens for the inventory widget."
      />
      <TokensView />
    </div>
  );
}

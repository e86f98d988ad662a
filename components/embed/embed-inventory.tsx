'use client';

import { useSearchParams } from 'next/navigation';
import { useEffect, useMemo, type ReactNode } from 'react';
import { LeaseholdClient } from '@/lib/client';
import { InventoryWidget } from '@/lib/react';
import '@/lib/react/widget.css';
import { parseSelector } from '@/lib/selector';
import { useDarkMode } from '@/components/ui/use-dark-mode';
import { useFragmentToken } from '@/components/embed/use-fragment-token';

/**
 * The embeddable inventory: `?selector=` names the leases, `#token=` carries
 * a read-only embed token, `?theme=light|dark` optionally forces a scheme
 * (otherwise the reader's, as the console's pre-paint script decided). The
 * widget talks to this origin's API with the token as a bearer token; a
 * refused or expired token shows as the widget's own error state.
 */
export function EmbedInventory() {
  const params = useSearchParams();
  const selector = params.get('selector')?.trim() ?? '';
  const forced = params.get('theme');
  const token = useFragmentToken();
  const dark = useDarkMode();
  const client = useMemo(() => (token ? new LeaseholdClient({ baseUrl: '', token }) : undefined), [token]);
  useFramedMark();

  // Before hydration the fragment is unknown: render nothing rather than a false "no token".
  if (token === undefined) return null;

  const problems: ReactNode[] = [];
  if (selector === '') {
    problems.push(
      <>
        Add the leases to show to this address, e.g. <code className="font-mono">?selector=lease://acme/renderers/*</code>.
      </>,
    );
  } else {
    const parsed = parseSelector(selector);
    if (!parsed.ok) {
      problems.push(
        <>
          The selector <code className="font-mono break-all">{selector}</code> is not valid: {parsed.reason}.
        </>,
      );
    }
  }
  if (token === '') {
    problems.push(
      <>
        Add an embed token after the address as <code className="font-mono">#token=…</code> (create one for this selector in the console,
        under Tokens). The fragment never reaches the server, so the token stays out of logs and Referer headers; it is never read from the
        query string.
      </>,
    );
  }
  if (problems.length > 0 || client === undefined) return <EmbedProblem problems={problems} />;

  const theme = forced === 'light' || forced === 'dark' ? forced : dark ? 'dark' : 'light';
  return <InventoryWidget selector={selector} client={client} theme={theme} />;
}

/** Mark the root when the page is inside a frame: only then is its background transparent (app/embed/embed.css). */
function useFramedMark(): void {
  useEffect(() => {
    if (window.self !== window.top) document.documentElement.dataset.framed = '';
  }, []);
}

function EmbedProblem({ problems }: { problems: ReactNode[] }) {
  return (
    <div
      role="alert"
      className="rounded-xl border border-amber-200 bg-amber-50 px-4 py-3 text-sm text-amber-950 dark:border-amber-900 dark:bg-amber-950/60 dark:text-amber-100"
    >
      <p className="font-medium">This inventory widget is not set up yet.</p>
      <ul className="mt-1 list-disc space-y-1 pl-5">
        {problems.map((p, i) => (
          <li key={i}>{p}</li>
        ))}
      </ul>
    </div>
  );
}

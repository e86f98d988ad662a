import type { Metadata, Viewport } from 'next';
import { headers } from 'next/headers';
import Script from 'next/script';
import type { ReactNode } from 'react';
import { Providers } from '@/components/providers';
import { themeScript } from '@/components/ui/theme-script';
import './globals.css';

export const metadata: Metadata = {
  title: { default: 'Leasehold', template: '%s · Leasehold' },
  description: 'Fenced, time-bounded leases for your fleet, with a live operator console.',
};

export const viewport: Viewport = {
  themeColor: [
    { media: '(prefers-color-scheme: light)', color: '#ffffff' },
    { media: '(prefers-color-scheme: dark)', color: '#09090b' },
  ],
};

/**
 * Pages render per request: each gets the fresh nonce of its
 * content-security policy (proxy.ts), which Next puts on its own scripts and
 * this layout on the theme script.
 */
export default async function RootLayout({ children }: { children: ReactNode }) {
  const nonce = (await headers()).get('x-nonce') ?? undefined;
  return (
    // The pre-paint script may add the `dark` class before React hydrates.
    <html lang="en" suppressHydrationWarning>
      <body className="min-h-dvh font-sans">
        <Script id="theme" strategy="beforeInteractive" nonce={nonce}>
          {themeScript}
        </Script>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}

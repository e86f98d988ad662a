import type { Metadata } from 'next';
import { Suspense } from 'react';
import { Brand } from '@/components/console/brand';
import { LoginForm } from '@/components/login/login-form';
import { ThemeToggle } from '@/components/ui/theme-toggle';

export const metadata: Metadata = { title: 'Sign in' };

export default function LoginPage() {
  return (
    <div className="flex min-h-dvh flex-col">
      <header className="mx-auto flex w-full max-w-5xl items-center justify-between px-6 py-5">
        <Brand />
        <ThemeToggle />
      </header>
      <main className="flex flex-1 items-start justify-center px-6 pt-10 sm:pt-20">
        <div className="w-full max-w-md rounded-xl border border-zinc-200 p-6 shadow-sm sm:p-8 dark:border-zinc-800">
          <h1 className="text-xl font-semibold tracking-tight">Sign in to the console</h1>
          <p className="mt-1 mb-6 text-sm text-zinc-600 dark:text-zinc-400">Paste an API token. What you can see and do follows its grants.</p>
          <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
            <LoginForm />
          </Suspense>
        </div>
      </main>
    </div>
  );
}

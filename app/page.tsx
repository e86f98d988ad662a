import { HealthCard } from '@/components/health/health-card';
import { SiteHeader } from '@/components/site-header';

const features = [
  {
    title: 'Fenced by construction',
    body: 'Every acquisition carries a fencing token that only ever grows, across release, expiry and restart, so a paused worker can never write over its successor.',
  },
  {
    title: 'One session, many leases',
    body: 'A worker keeps one session alive; when it stops, every lease it holds is released at once, and waiters are granted in order.',
  },
  {
    title: 'Live inventory',
    body: 'Watch who holds what as it changes, page through thousands of leases with selectors, and free a stuck lease with a recorded reason.',
  },
];

export default function HomePage() {
  return (
    <div className="flex min-h-dvh flex-col">
      <SiteHeader />
      <main className="mx-auto w-full max-w-5xl flex-1 px-6 pt-12 pb-20 sm:pt-20">
        <p className="text-sm font-medium text-teal-700 dark:text-teal-400">Lease coordination service</p>
        <h1 className="mt-3 max-w-3xl text-4xl font-semibold tracking-tight text-balance sm:text-5xl">
          Leasehold <span className="text-zinc-600 dark:text-zinc-400">—</span> fenced leases for your fleet
        </h1>
        <p className="mt-5 max-w-2xl text-lg text-pretty text-zinc-600 dark:text-zinc-400">
          Time-bounded, exclusive leases on named resources, with fencing tokens, sessions and a live
          feed. Workers coordinate through a small HTTP API; operators see everything as it happens.
        </p>

        <div className="mt-12">
          <HealthCard />
        </div>

        <ul className="mt-12 grid gap-8 sm:grid-cols-3">
          {features.map((f) => (
            <li key={f.title}>
              <h2 className="font-semibold">{f.title}</h2>
              <p className="mt-2 text-sm leading-6 text-zinc-600 dark:text-zinc-400">{f.body}</p>
            </li>
          ))}
        </ul>
      </main>
      <footer className="mx-auto w-full max-w-5xl px-6 py-8 text-sm text-zinc-500 dark:text-zinc-400">
        Leasehold · lease routes look like <code className="font-mono">lease://realm/area/resource</code>
      </footer>
    </div>
  );
}

import Link from 'next/link';

export function Brand({ href = '/' }: { href?: string }) {
  return (
    <Link href={href} className="inline-flex items-center gap-2.5 rounded-md font-semibold tracking-tight">
      <svg aria-hidden="true" viewBox="0 0 32 32" className="size-7">
        <rect width="32" height="32" rx="7" className="fill-teal-700 dark:fill-teal-500" />
        <path d="M11 8v13.5h10" fill="none" stroke="#fff" strokeWidth="3.2" strokeLinecap="round" strokeLinejoin="round" />
        <circle cx="21" cy="11" r="2.6" className="fill-teal-300 dark:fill-teal-100" />
      </svg>
      Leasehold
    </Link>
  );
}

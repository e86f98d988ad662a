// Telemetry would try to reach the network from build and CI machines that
// have none; the scripts export this too, the default here covers ad-hoc runs.
process.env.NEXT_TELEMETRY_DISABLED ??= '1';

const common = [
  { key: 'Referrer-Policy', value: 'no-referrer' },
  { key: 'X-Content-Type-Options', value: 'nosniff' },
];

/** Console pages refuse framing; only the embed widget may live in an iframe. */
const noFraming = [
  { key: 'X-Frame-Options', value: 'DENY' },
  { key: 'Content-Security-Policy', value: "frame-ancestors 'none'" },
];

/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native and driver modules stay plain Node requires, never bundled.
  serverExternalPackages: ['better-sqlite3', 'pg'],
  poweredByHeader: false,
  reactStrictMode: true,
  async headers() {
    return [
      { source: '/((?!embed(?:/|$)).*)', headers: [...common, ...noFraming] },
      { source: '/embed/:path*', headers: common },
    ];
  },
};

export default nextConfig;

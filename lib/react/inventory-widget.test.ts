// The widget's markup for given observer snapshots, rendered with
// react-dom/server (no DOM here). Live behaviour against a real server and a
// real browser is e2e/sdk-widget.spec.ts. A .ts file, so createElement.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createElement, type ReactElement } from 'react';
import { renderToStaticMarkup, renderToString } from 'react-dom/server';
import { LeaseholdError, type LeaseholdClient, type LeaseView } from '../client';
import { formatCountdown, InventoryWidget, InventoryWidgetView } from './inventory-widget';
import type { LeaseInventory } from './use-lease-inventory';
import { useLeaseInventory } from './use-lease-inventory';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

function lease(route: string, owner: string, token: number, expiresInMs: number): LeaseView {
  return {
    route,
    owner_id: owner,
    holder_incarnation: `hi_${token}`,
    fencing_token: token,
    acquired_at: new Date(NOW - 1000).toISOString(),
    renewed_at: new Date(NOW - 1000).toISOString(),
    expires_at: new Date(NOW + expiresInMs).toISOString(),
    max_expires_at: new Date(NOW + 3_600_000).toISOString(),
    ttl_ms: 30_000,
    remaining_ms: expiresInMs,
    renewal_count: 0,
    revision: token,
    metadata: null,
    waiters: 0,
    release_request: null,
  };
}

function view(inventory: Partial<LeaseInventory>): string {
  const full: LeaseInventory = { state: 'ready', items: [], error: undefined, stale: false, ...inventory };
  return renderToStaticMarkup(createElement(InventoryWidgetView, { selector: 'lease://acme/renderers/*', inventory: full, now: NOW }));
}

/** The text of the element with `class` (first match), tags stripped. */
function textOf(html: string, cls: string): string {
  const start = html.indexOf(`class="${cls}"`);
  assert.ok(start >= 0, `no element with class ${cls}`);
  const open = html.lastIndexOf('<', start);
  const tag = /^<(\w+)/.exec(html.slice(open))![1];
  const end = html.indexOf(`</${tag}>`, start);
  return html.slice(html.indexOf('>', start) + 1, end).replace(/<[^>]+>/g, '');
}

test('each held lease shows its route with the resource emphasized (the whole route in its title), its owner, fencing token and countdown', () => {
  const html = view({ items: [lease('lease://acme/renderers/doc-1', 'renderer-7', 41, 42_000), lease('lease://acme/renderers/doc-2', 'renderer-9', 42, 125_000)] });
  assert.match(html, /<th scope="row" class="lh-route" title="lease:\/\/acme\/renderers\/doc-1" tabindex="0"><span class="lh-route-base">lease:\/\/acme\/renderers\/<\/span><span class="lh-route-resource">doc-1<\/span><\/th>/);
  assert.match(html, /<td class="lh-owner" title="renderer-7">renderer-7<\/td><td class="lh-num lh-token" data-label="Token">41<\/td>/);
  assert.match(html, /<time dateTime="2026-03-01T12:00:42.000Z">42s<\/time>/);
  assert.match(html, />2m 05s<\/time>/);
  assert.equal(textOf(html, 'lh-count'), '2 held');
  assert.equal(textOf(html, 'lh-status'), 'Live');
});

test('the table has column headers and is named by the title, and the status is a polite live region', () => {
  const html = view({});
  for (const name of ['Route', 'Owner', 'Fencing token', 'Expires in']) assert.match(html, new RegExp(`<th scope="col"[^>]*>${name}</th>`));
  const titleId = /<h2 id="([^"]+)" class="lh-title">Inventory<\/h2>/.exec(html)?.[1];
  assert.ok(titleId);
  assert.match(html, new RegExp(`<table class="lh-table" aria-labelledby="${titleId}"`));
  assert.match(html, /<p class="lh-status" data-tone="ok" role="status" aria-live="polite">/);
  assert.equal(textOf(html, 'lh-empty'), 'No leases held.');
  assert.doesNotMatch(html, /<button/);
});

test('a countdown never goes negative', () => {
  const html = view({ items: [lease('lease://acme/renderers/late', 'w', 3, -5_000)] });
  assert.match(html, /<td class="lh-num lh-expiry" data-label="Expires in" data-soon="true"><time[^>]*>0s<\/time>/);
  assert.equal(formatCountdown(-1), '0s');
  assert.equal(formatCountdown(0), '0s');
  assert.equal(formatCountdown(1), '1s');
  assert.equal(formatCountdown(59_001), '1m 00s');
  assert.equal(formatCountdown(3_600_000), '1h 00m');
  assert.equal(formatCountdown(Number.NaN), '—');
});

test('while resyncing the last known leases stay, marked stale, and the status says it is reconnecting', () => {
  const html = view({ state: 'resyncing', stale: true, items: [lease('lease://acme/renderers/doc-1', 'renderer-7', 41, 10_000)] });
  assert.match(html, /<tbody data-stale="true">/);
  assert.match(html, /doc-1/);
  assert.equal(textOf(html, 'lh-count'), '1 held (last known)');
  assert.equal(textOf(html, 'lh-status'), 'Reconnecting, showing last known');
  assert.match(html, /data-tone="warn"/);
});

test('an error shows the observer\'s message and correlation id', () => {
  const error = new LeaseholdError({ code: 'access_denied', message: 'the token may not read lease://acme/renderers/*', status: 403, correlationId: 'c_123' });
  const html = view({ state: 'error', error });
  assert.equal(textOf(html, 'lh-status'), 'Error: the token may not read lease://acme/renderers/* (correlation id c_123)');
  assert.match(html, /data-tone="down"/);
  assert.doesNotMatch(html, /class="lh-count"/);
  assert.match(html, /This widget’s token was refused/, 'the table area says the token was refused');
  assert.doesNotMatch(html, /Nothing to show/);
});

test('connecting and closed each have their own status line', () => {
  const connecting = view({ state: 'connecting' });
  assert.equal(textOf(connecting, 'lh-status'), 'Connecting…');
  assert.match(connecting, /aria-busy="true"/);
  assert.doesNotMatch(connecting, /class="lh-count"/);
  assert.equal(textOf(view({ state: 'closed' }), 'lh-status'), 'Closed, not updating');
});

test('a server render shows connecting and never opens an observer', () => {
  let observed = 0;
  const client = {
    observeInventory: () => {
      observed++;
      throw new Error('no observer on the server');
    },
  } as unknown as LeaseholdClient;
  const html = renderToString(createElement(InventoryWidget, { selector: 'lease://acme/renderers/*', client, title: 'Renderers', theme: 'dark' }));
  assert.equal(observed, 0);
  assert.match(html, /<section class="lh-widget" data-theme="dark" data-state="connecting"/);
  assert.match(html, /Renderers/);
  assert.match(html, /Connecting…/);
});

test('useLeaseInventory without a client or provider says how to give it one', () => {
  function Probe(): ReactElement {
    useLeaseInventory('lease://acme/renderers/*');
    return createElement('p');
  }
  assert.throws(() => renderToString(createElement(Probe)), /pass options\.client or render inside <LeaseholdProvider/);
});

import { create } from 'zustand';
import type { ChangeEvent, ReleaseRequestNotice, RenewedEvent } from '@/lib/client';
import { mergeRenewal, type Renewal } from '@/components/leases/live-page';

/** Past this many changes since the snapshot, the table asks for a fresh page instead of replaying them. */
export const MAX_PENDING_EVENTS = 2_000;

interface LiveLeasesState {
  /** The view (selector and filters) the events belong to. */
  view: string;
  events: ChangeEvent[];
  renewals: Map<string, Renewal>;
  /** Route → when its last renewal hint arrived (the row flashes). */
  flashes: Map<string, number>;
  /** Route → the fencing token of the lease whose holder was asked to release since the snapshot (the row's badge; a new lease has another token). */
  releaseRequests: Map<string, number>;
  viewOpened: (view: string) => void;
  changeReceived: (e: ChangeEvent) => void;
  renewalReceived: (e: RenewedEvent) => void;
  releaseRequestReceived: (e: ReleaseRequestNotice) => void;
  /** A fresh page at `revision` arrived: what it already holds is dropped. */
  snapshotTaken: (revision: number) => void;
}

/** The feed's changes for the leases table, between one LIST snapshot and the next. */
export const useLiveLeasesStore = create<LiveLeasesState>()((set) => ({
  view: '',
  events: [],
  renewals: new Map(),
  flashes: new Map(),
  releaseRequests: new Map(),
  viewOpened: (view) => set((s) => (s.view === view ? s : { view, events: [], renewals: new Map(), flashes: new Map(), releaseRequests: new Map() })),
  changeReceived: (e) =>
    set((s) => {
      // A renewal hint belongs to the lease it renewed: a change of the route ends it.
      if (!s.renewals.has(e.route)) return { events: [...s.events, e] };
      const renewals = new Map(s.renewals);
      renewals.delete(e.route);
      return { events: [...s.events, e], renewals };
    }),
  renewalReceived: (e) =>
    set((s) => {
      const flashes = new Map(s.flashes);
      flashes.set(e.route, Date.now());
      return { renewals: mergeRenewal(s.renewals, e), flashes };
    }),
  releaseRequestReceived: (e) =>
    set((s) => {
      const releaseRequests = new Map(s.releaseRequests);
      releaseRequests.set(e.route, e.fencing_token);
      return { releaseRequests };
    }),
  snapshotTaken: (revision) =>
    set((s) => {
      const events = s.events.filter((e) => e.revision > revision);
      return events.length === s.events.length ? s : { events };
    }),
}));
